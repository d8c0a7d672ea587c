"""Requests too large for the memory this process may use are refused with a readable
ResourceLimitError before allocating (held-out memory probe), and a MemoryError that escapes
the estimates still reaches the user as one."""
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import akfviz
from akfviz import memory
from akfviz.errors import ResourceLimitError, checked_call


@pytest.fixture
def tiny_memory(monkeypatch):
    """Every estimate is checked, against 1 kB: a small case stands in for a huge one."""
    monkeypatch.setattr(memory, "CHECK_FROM_BYTES", 0)
    monkeypatch.setattr(memory, "available_memory", lambda: 1 << 10)


@pytest.fixture(scope="module")
def plan():
    A = akfviz.generate("clustered", n=512, seed=1)
    return akfviz.select(akfviz.analyze(A, tile=32))


def test_the_address_space_limit_counts_as_available_memory():
    """ulimit -v (RLIMIT_AS): only /proc/meminfo was read, so a capped process passed every check."""
    code = ("import resource; from akfviz import memory; "
            "resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, resource.getrlimit(resource.RLIMIT_AS)[1])); "
            "left = memory._rlimit_left(); print(left, memory.available_memory())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    left, avail = int(out[0]), int(out[1])
    assert 0 < left < 6 * 2**30 and avail <= left


def test_available_memory_is_the_least_known_limit(monkeypatch):
    monkeypatch.setattr(memory, "_system_available", lambda: 20 << 30)
    monkeypatch.setattr(memory, "_rlimit_left", lambda: 3 << 30)
    monkeypatch.setattr(memory, "_cgroup_left", lambda: 5 << 30)
    assert memory.available_memory() == 3 << 30
    monkeypatch.setattr(memory, "_rlimit_left", lambda: None)
    assert memory.available_memory() == 5 << 30
    for name in ("_system_available", "_cgroup_left"):
        monkeypatch.setattr(memory, name, lambda: None)
    assert memory.available_memory() is None


def test_a_memory_error_inside_a_public_function_becomes_a_readable_refusal():
    @checked_call
    def work(n=1):
        raise MemoryError("Unable to allocate 1.12 GiB for an array")

    with pytest.raises(ResourceLimitError, match=r"work\(\) ran out of memory \(Unable to allocate 1.12 GiB"):
        work()


def test_select_refuses_a_selection_beyond_memory(tiny_memory, plan):
    with pytest.raises(ResourceLimitError, match="cluster granularity"):
        akfviz.select(plan.pa, granularity="tile")


def test_simulate_refuses_to_record_beyond_memory_and_runs_without_recording(monkeypatch, plan):
    from akfviz.npu import simulate as sim

    x = np.ones((plan.shape[1], 8))
    hw = akfviz.HardwareConfig(rows=8, cols=8)        # its per-PE memory is far below the recording's
    est = sim.recorded_intervals_estimate(plan.npu_work(), x != 0, plan.pa.tile)
    full = akfviz.simulate(plan, hw, x=x)
    assert len(full.intervals["pe"]) <= est                  # an upper bound of what is kept
    monkeypatch.setattr(memory, "CHECK_FROM_BYTES", 0)
    monkeypatch.setattr(memory, "available_memory",
                        lambda: int((sim.BYTES_PER_INTERVAL * est - 1) / memory.MEMORY_SHARE))
    with pytest.raises(ResourceLimitError, match="record=False"):
        akfviz.simulate(plan, hw, x=x)
    quiet = akfviz.simulate(plan, hw, x=x, record=False)
    assert quiet.cycles == full.cycles and not quiet.intervals and quiet.meta["recorded"] is False


def test_simulate_refuses_a_grid_beyond_memory(monkeypatch, plan):
    from akfviz.npu import simulate as sim

    monkeypatch.setattr(memory, "CHECK_FROM_BYTES", 0)
    monkeypatch.setattr(memory, "available_memory", lambda: int((sim.BYTES_PER_PE * 256 * 256 - 1) / memory.MEMORY_SHARE))
    with pytest.raises(ResourceLimitError, match="256×256 PE grid .* smaller PE grid"):
        akfviz.simulate(plan, record=False)
    assert akfviz.simulate(plan, akfviz.HardwareConfig(rows=128, cols=128), record=False).cycles > 0


def test_generate_refuses_beyond_memory(tiny_memory):
    with pytest.raises(ResourceLimitError, match="lower density"):
        akfviz.generate("uniform", n=2000, density=0.5)
    with pytest.raises(ResourceLimitError, match="dense intermediate"):
        akfviz.generate("llm", n=2000)


def test_matmat_refuses_an_output_beyond_memory(tiny_memory, plan):
    X = np.broadcast_to(np.ones(1), (plan.shape[1], 10**6))   # no memory of its own: only Y and the copy
    with pytest.raises(ResourceLimitError, match="fewer columns"):
        plan.matmat(X)


def test_annealing_and_descent_lengths_are_bounded(plan):
    from akfviz.npu.mapping import MAX_ANNEAL_ITERATIONS, map_tiles
    from akfviz.selection.fusion_weights import MAX_STEPS, optimize_fusion_weights

    with pytest.raises(akfviz.InputError, match="annealing proposals"):
        map_tiles(plan.npu_work(), akfviz.HardwareConfig(), iterations=MAX_ANNEAL_ITERATIONS + 1)
    with pytest.raises(akfviz.InputError, match="steps must be"):
        optimize_fusion_weights(np.ones((2, 2)), np.ones(2), np.ones((2, 2)), 1e6, steps=MAX_STEPS + 1)


def test_record_limit_runs_without_the_timeline_above_it(plan):
    from akfviz.npu.simulate import recorded_intervals_estimate

    est = recorded_intervals_estimate(plan.npu_work(), np.ones((plan.shape[1], 1), bool), plan.pa.tile)
    kept = akfviz.simulate(plan, record_limit=est)
    dropped = akfviz.simulate(plan, record_limit=est - 1)
    assert kept.meta["recorded"] and len(kept.intervals["pe"]) > 0
    assert not dropped.meta["recorded"] and not dropped.intervals and dropped.cycles == kept.cycles
    with pytest.raises(akfviz.InputError, match="record_limit"):
        akfviz.simulate(plan, record_limit=-1)


def test_analyze_of_a_very_wide_matrix_says_what_the_columns_cost(monkeypatch):
    """The pass keeps per-thread counters over the column blocks; 1e11 columns at T = 32 asked for
    23 GiB and ended in "did not foresee this"."""
    import akfviz

    monkeypatch.setattr(memory, "available_memory", lambda: 16 << 30)   # any machine: a 16 GB one
    A = sp.csr_array((np.ones(4), ([0, 1, 2, 2], [0, 5, 5 * 10**10 + 7, 10**11 - 1])), shape=(3, 10**11))
    with pytest.raises(akfviz.InputError, match=r"3,125,000,000 column blocks.*drop the empty columns"):
        akfviz.analyze(A)


def test_simulate_refuses_a_random_batch_beyond_memory_before_drawing_it(monkeypatch):
    """Held-out memory probe: a 100 × 2,000,000 matrix simulated with batch=1024 and ρ_x = 0.5 drew
    ≈ 32 GB of random x with no estimate (86 s, then a MemoryError under a ulimit)."""
    import time

    import akfviz
    from akfviz.npu import simulate as sim

    A = akfviz.generate("uniform", n=100, m=2_000_000, density=1e-5, seed=0)
    plan = akfviz.select(akfviz.analyze(A))
    monkeypatch.setattr(memory, "CHECK_FROM_BYTES", 0)
    monkeypatch.setattr(memory, "available_memory", lambda: 4 << 30)
    drawn = []
    monkeypatch.setattr(sim, "random_input", lambda *a, **k: drawn.append(a) or None)
    t = time.perf_counter()
    with pytest.raises(ResourceLimitError, match=r"random input x \(2,000,000 rows × 1024 columns\).*smaller batch"):
        akfviz.simulate(plan, batch=1024, rho_x=0.5, record=False)
    assert not drawn and time.perf_counter() - t < 30


def test_random_input_columns_are_the_single_column_draws_in_order():
    # the batch is filled column by column (no list of columns to stack): same numbers as before
    from akfviz.npu.simulate import random_input

    rng = np.random.default_rng(5)
    n, keep_n = 1000, 300
    want = np.zeros((n, 3))
    for b in range(3):
        values = rng.standard_normal(n)
        keep = rng.permutation(n)[:keep_n]
        want[keep, b] = values[keep]
    assert np.array_equal(random_input(n, 0.3, 5, 3), want)
    assert np.array_equal(random_input(n, 0.3, 5), want[:, 0])


def test_recording_estimate_reads_only_the_routed_columns():
    """Held-out memory probe: on a 10 × 2.2e9 matrix the estimate summed every column of the
    pattern (a 16.4 GiB int64 array) to count the few that tiles store."""
    from akfviz.npu.simulate import recorded_intervals_estimate

    import akfviz

    A = akfviz.generate("banded", n=300, seed=1)
    work = akfviz.select(akfviz.analyze(A, tile=32)).npu_work()
    active = np.random.default_rng(0).random((300, 4)) < 0.5
    gcol = np.repeat(work.bj.astype(np.int64) * 32, np.diff(work.col_ptr)) + work.col_local
    want = int(active.sum(axis=1)[gcol].sum()) + 2 * work.n_tiles
    assert recorded_intervals_estimate(work, active, 32) == want          # more routed columns than columns
    wide = np.zeros((3000, 4), bool)
    wide[:300] = active                                                  # fewer: the allocation-free loop
    assert recorded_intervals_estimate(work, wide, 32) == want


def test_recording_estimate_allocates_neither_per_column_nor_per_routed_pair():
    """Review: gathering the routed rows built a (routed pairs × batch) bool array before the
    recording's memory check (264 MB at batch 256 on a 1M-nonzero matrix)."""
    import tracemalloc

    from akfviz.npu.simulate import recorded_intervals_estimate

    A = akfviz.generate("uniform", n=2000, m=400_000, density=1e-4, seed=3)
    work = akfviz.select(akfviz.analyze(A, tile=32)).npu_work()
    active = np.ones((A.shape[1], 256), bool)
    recorded_intervals_estimate(work, active, 32)                        # compile outside the trace
    tracemalloc.start()
    try:
        got = recorded_intervals_estimate(work, active, 32)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    routed = int(np.diff(work.col_ptr).sum())
    assert got == routed * 256 + 2 * work.n_tiles
    assert peak < 64 * routed + (1 << 20), (peak, routed)   # a few arrays of routed size, not × 256


def test_analyze_refuses_minhash_values_beyond_memory(monkeypatch):
    """Held-out memory probe: 1024 hashes over 753k distinct outlines asked for 5.7 GB of MinHash
    values that analyze's up-front estimate left out."""
    A = akfviz.generate("uniform", n=2000, density=0.01, seed=0)
    lsh = {"num_hashes": 1024, "bands": 1024}
    ok = akfviz.analyze(A, tile=8, lsh=lsh)      # fits: the check passes with the real memory
    u = len(np.unique(ok.signatures))
    monkeypatch.setattr(memory, "CHECK_FROM_BYTES", 0)
    monkeypatch.setattr(memory, "available_memory", lambda: int(8 * u * 1024 / memory.MEMORY_SHARE) - 1)
    with pytest.raises(ResourceLimitError, match=rf"MinHash values of {u:,} distinct tile outlines × 1024 hashes"):
        akfviz.analyze(A, tile=8, lsh=lsh)
    assert akfviz.analyze(A, tile=8).n_tiles == ok.n_tiles      # 32 hashes need 32× less


def test_block_pruning_checks_its_padded_copy_and_builds_the_mask_row_first(monkeypatch):
    """Held-out memory probe: llm_block with n=1, m=500,000, block=4096 padded the matrix to
    4096 × 503,808 (16 GB of address space) with no estimate, and built the block mask at that size."""
    import tracemalloc

    tracemalloc.start()
    try:
        A = akfviz.generate("llm_block", n=1, m=20_000, block=1024, sparsity=0.5, seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert A.shape == (1, 20_000) and A.nnz > 0
    # the padded copy (1024 × 20,480 float64: 168 MB of address space, calloc'd, touched only in row 0)
    # is counted by tracemalloc; the mask is no longer 1024 × 20,480 bools on top of it
    assert peak < 8 * 1024 * 20_480 + 10e6, peak
    monkeypatch.setattr(memory, "CHECK_FROM_BYTES", 0)
    monkeypatch.setattr(memory, "available_memory", lambda: 100_000_000)
    with pytest.raises(ResourceLimitError, match=r"padded to 1,024 × 20,480"):
        akfviz.generate("llm_block", n=1, m=20_000, block=1024, sparsity=0.5, seed=0)


def test_frame_digest_tells_apart_tables_that_differ_beyond_ten_decimals():
    import pandas as pd

    from akfviz.app_cache import frame_digest

    a = pd.DataFrame({"runs": [[1, 2]], "x": [1.00000000001]})     # a list column: the text fallback
    b = pd.DataFrame({"runs": [[1, 2]], "x": [1.00000000002]})
    assert frame_digest(a) != frame_digest(b) and frame_digest(a) == frame_digest(a.copy())
    # array cells: repr kept 8 digits and summarised arrays past 1,000 values
    c = pd.DataFrame({"runs": [np.array([1.000000001, 2.0])]})
    d = pd.DataFrame({"runs": [np.array([1.000000002, 2.0])]})
    e = pd.DataFrame({"runs": [np.arange(2000.0)]})
    f = pd.DataFrame({"runs": [np.r_[np.arange(1999.0), 5.0]]})
    assert frame_digest(c) != frame_digest(d) and frame_digest(e) != frame_digest(f)
