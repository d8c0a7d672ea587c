"""akfviz.workloads — the matrices that enter the pipeline (akf-spec §1).

* :mod:`.generators` — seeded synthetic workloads by name: ``generate(kind, n=..., seed=0, **params)``,
  ``generators()``, ``generator_info()``.
* :mod:`.loaders` — ``load(path_or_bytes, fmt=None, tensor=None, *, limits=None, name=None)`` for
  Matrix Market, scipy ``.npz``, ``.npy`` and ``.safetensors``; ``list_tensors``, ``read_tensor``,
  ``matrix_choices`` (what ``tensor=`` can name in a file of several matrices).
* :mod:`.prune` — ``prune(W, method="magnitude"|"nm"|"block", ...)``.
* :mod:`.limits` — ``LoadLimits`` (size limits checked before allocating).
* :mod:`.samples` — the shipped real and generated samples: ``list_samples()``, ``load_sample(name)``,
  ``DEFAULT_SAMPLE``.
* :mod:`.validate` — ``as_csr``, the canonical-form gate.
"""
from .generators import generate, generator_info, generator_params, generators
from .limits import DEFAULT_LIMITS, LoadLimits
from .loaders import formats, list_tensors, load, matrix_choices, read_tensor
from .prune import prune
from .samples import DEFAULT_SAMPLE, list_samples, load_sample, sample_path

__all__ = [
    "generate", "generators", "generator_info", "generator_params",
    "LoadLimits", "DEFAULT_LIMITS",
    "load", "list_tensors", "matrix_choices", "read_tensor", "formats",
    "prune",
    "list_samples", "load_sample", "sample_path", "DEFAULT_SAMPLE",
]
