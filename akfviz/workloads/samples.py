"""The sample matrices shipped in ``sample_data/`` (akf-spec §1, issue 2 item 4).

``sample_data/samples.json`` is the catalogue written by ``scripts/make_sample_data.py``;
every entry records the file, a title, a one-line description, the source, how it was pruned,
the seed, the shape, the nnz and the licence. The app opens with :data:`DEFAULT_SAMPLE`,
the all-MiniLM-L6-v2 layer-0 FFN up-projection pruned to 90 % by magnitude.
"""
from __future__ import annotations

import json
import pathlib
from functools import lru_cache

import pandas as pd
import scipy.sparse as sp

from ..errors import InputError
from .loaders import load

DEFAULT_SAMPLE = "minilm_ffn0_mag90"

SAMPLE_DIR = pathlib.Path(__file__).resolve().parents[2] / "sample_data"

_COLUMNS = ["name", "title", "description", "file", "shape", "nnz", "source", "pruning", "seed",
            "licence"]


@lru_cache(maxsize=1)
def _catalogue() -> tuple:
    path = SAMPLE_DIR / "samples.json"
    if not path.is_file():
        raise InputError(
            f"The sample catalogue {str(path)!r} is missing; run scripts/make_sample_data.py."
        )
    data = json.loads(path.read_text(encoding="utf-8"))
    return tuple(data["samples"])


def list_samples() -> pd.DataFrame:
    """The shipped samples, one row each: ``name, title, description, file, shape (tuple),
    nnz, source, pruning, seed, licence``, in catalogue order (``seed`` is a nullable integer,
    ``<NA>`` for the real weights)."""
    rows = [dict(e, shape=tuple(e["shape"])) for e in _catalogue()]
    table = pd.DataFrame(rows, columns=_COLUMNS)
    # a nullable integer: the real weights have no seed, and a float column would show 0.0
    table["seed"] = table["seed"].astype("Int64")
    return table


def sample_path(name: str) -> pathlib.Path:
    """Absolute path of sample ``name``'s file."""
    by_name = {e["name"]: e for e in _catalogue()}
    if not isinstance(name, str) or name not in by_name:
        raise InputError(f"Unknown sample {name!r}; choose one of: {', '.join(by_name)}.")
    return SAMPLE_DIR / by_name[name]["file"]


def load_sample(name: str = DEFAULT_SAMPLE) -> sp.csr_array:
    """Load a shipped sample as a canonical float64 ``csr_array`` (never touches the network).

    Examples
    --------
    >>> A = load_sample()          # the MiniLM FFN up-projection, 90 % magnitude-pruned
    >>> A.shape
    (1536, 384)
    """
    return load(sample_path(name))
