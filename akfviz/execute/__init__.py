"""The fused CPU executor (akf-spec §3, §9): :class:`FusionPlan`."""
from .plan import FusionPlan

__all__ = ["FusionPlan"]
