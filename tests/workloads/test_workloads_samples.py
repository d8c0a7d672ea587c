"""Tests of the shipped sample data and akfviz.workloads.samples."""
import json

import numpy as np
import pytest

from akfviz.errors import InputError
from akfviz.workloads import DEFAULT_SAMPLE, list_samples, load_sample, sample_path
from akfviz.workloads.samples import SAMPLE_DIR

CATALOGUE = json.loads((SAMPLE_DIR / "samples.json").read_text(encoding="utf-8"))["samples"]
FIELDS = {"name", "file", "title", "description", "source", "pruning", "seed", "shape", "nnz", "licence"}


def test_catalogue_fields_and_listing():
    df = list_samples()
    assert list(df.name) == [e["name"] for e in CATALOGUE]
    for e in CATALOGUE:
        assert FIELDS <= set(e), e["name"]
        assert (SAMPLE_DIR / e["file"]).is_file()
    assert DEFAULT_SAMPLE in set(df.name)
    assert len(df.name.unique()) == len(df)


def test_seed_column_is_whole_numbers_or_missing():
    """The generated samples' seed reads 0, not 0.0 (a float column, because the real weights
    have none), in the listing and in the app's provenance line."""
    from akfviz.app_state import sample_provenance

    df = list_samples()
    assert str(df["seed"].dtype) == "Int64"
    for e in CATALOGUE:
        got = df.loc[df.name == e["name"], "seed"].iloc[0]
        line = sample_provenance(e["name"])
        if e["seed"] is None:
            assert got is __import__("pandas").NA
            assert "seed:" not in line
        else:
            assert got == e["seed"]
            assert f"; seed: {e['seed']};" in line and "seed: 0.0" not in line


@pytest.mark.parametrize("entry", CATALOGUE, ids=lambda e: e["name"])
def test_every_sample_loads_and_matches_its_record(entry):
    A = load_sample(entry["name"])
    assert A.dtype == np.float64 and A.has_canonical_format
    assert list(A.shape) == entry["shape"]
    assert A.nnz == entry["nnz"]
    assert sample_path(entry["name"]) == SAMPLE_DIR / entry["file"]


def test_minilm_samples_are_real_pruned_weights():
    ffn = {k: load_sample(f"minilm_ffn0_{k}") for k in ("mag50", "mag90", "mag95", "nm24")}
    total = 1536 * 384
    for key, s in (("mag50", 0.5), ("mag90", 0.9), ("mag95", 0.95)):
        assert abs(1 - ffn[key].nnz / total - s) < 1e-4
    # magnitude pruning is nested: what survives at 95 % survives at 90 % and 50 %, same values
    for sparse, dense in (("mag95", "mag90"), ("mag90", "mag50")):
        S, D = ffn[sparse].tocoo(), ffn[dense].toarray()
        np.testing.assert_array_equal(D[S.row, S.col], S.data)
    # 2:4 along the reduction dimension (columns)
    counts = (ffn["nm24"].toarray() != 0).reshape(1536, 96, 4).sum(axis=2)
    assert np.all(counts == 2)
    # float32 weights of a trained model: typical magnitudes, not synthetic
    assert ffn["mag50"].data.dtype == np.float64
    assert np.array_equal(ffn["mag50"].data.astype(np.float32).astype(np.float64), ffn["mag50"].data)
    assert 0.005 < np.median(np.abs(ffn["mag50"].data)) < 0.5
    assert load_sample(DEFAULT_SAMPLE).shape == (1536, 384)


def test_stencil_sample_is_spd_poisson():
    A = load_sample("stencil5_64x64")
    assert (A != A.T).nnz == 0
    assert np.all(A.diagonal() == 4.0)
    assert set(np.unique(A.data)) == {-1.0, 4.0}


def test_provenance_notice_and_size():
    notice = (SAMPLE_DIR / "NOTICE").read_text(encoding="utf-8")
    assert "Apache" in notice and "all-MiniLM-L6-v2" in notice and "MIT License" in notice
    prov = (SAMPLE_DIR / "PROVENANCE.md").read_text(encoding="utf-8")
    for e in CATALOGUE:
        assert e["name"] in prov
    total = sum(p.stat().st_size for p in SAMPLE_DIR.iterdir() if p.is_file())
    assert total < 10_000_000


def test_unknown_sample():
    with pytest.raises(InputError, match=DEFAULT_SAMPLE):
        load_sample("no_such_sample")
