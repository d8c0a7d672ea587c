"""The SRAM penalty of the fusion weights never trades accuracy and never acts when the argmin fits
(a fuzzing probe of the public API, twenty-sixth session; akf-spec §5: "when the SRAM constraint does
not bind, the result must equal the per-cluster argmin")."""
import numpy as np
import pytest

import akfviz
from akfviz.selection.fusion_weights import optimize_fusion_weights


@pytest.mark.parametrize("penalty", [10.0, 1e3, 1e6, 1e9])
def test_a_one_tile_plan_that_fits_keeps_its_argmin_at_any_penalty(penalty):
    """QUANT8 needs 94 B of a 159 B chip: not binding. From the uniform start the weights' expected
    footprint overflows the chip, and at a penalty of 1e6 the tile was dropped (SKIP, 100 % error)."""
    A = akfviz.generate("uniform", n=16, density=0.1, seed=0)
    pa = akfviz.analyze(A, tile=16)
    hw = akfviz.HardwareConfig(rows=1, cols=1, sram_bytes_per_pe=159)
    plain = akfviz.select(pa, hw=hw, fusion=False)
    p = akfviz.select(pa, hw=hw, sram_penalty=penalty)
    f = p.selection.fusion
    assert not f.binding and f.sram_bytes_argmin < 159
    assert list(p.tile_kernels) == list(plain.tile_kernels) == ["QUANT8"]
    assert p.relative_error == plain.relative_error < 0.01
    np.testing.assert_array_equal(f.choice, f.argmin)
    assert (f.trajectory["penalty"] == 0).all()       # the penalty term is off, as the choice shows


def test_many_tiles_that_fit_keep_their_argmins_at_a_large_penalty():
    """Tile mode, 4 PEs of 512 B: the argmin needs 1176 of 2048 B, yet at penalty 1e3 45 tiles moved
    to NM1:4 (cost +31 %, resource +35 %)."""
    A = akfviz.generate("uniform", n=64, density=0.02, seed=1)
    pa = akfviz.analyze(A, tile=4)
    hw = akfviz.HardwareConfig(rows=1, cols=4, sram_bytes_per_pe=512)
    p = akfviz.select(pa, hw=hw, sram_penalty=1e3, granularity="tile")
    q = akfviz.select(pa, hw=hw, fusion=False, granularity="tile")
    assert not p.selection.fusion.binding
    assert list(p.tile_kernels) == list(q.tile_kernels) and p.resource == q.resource


@pytest.mark.parametrize("penalty", [1e3, 1e9])
def test_a_kernel_outside_allowed_is_never_chosen_however_large_the_penalty(penalty):
    """One unit: its argmin (cost 0) needs 100 B of a 50 B chip (binding); the other kernel needs no
    SRAM but is not allowed. As a capped cost (10⁶ decision gaps) it lost to a penalty of 1e9; now
    its weight is 0 from start to end."""
    C = np.array([[0.0, 1.0]])
    b = np.array([[100.0, 0.0]])
    res = optimize_fusion_weights(C, np.array([1.0]), b, 50.0, penalty=penalty,
                                  allowed=np.array([[True, False]]))
    assert res.binding
    assert res.choice.tolist() == [0] and res.weights[0, 1] == 0.0
    assert np.all(res.weights_trajectory[:, :, 1] == 0.0)
    # allowed, the same kernel takes over under the same penalty (so the check above is about the mask)
    free = optimize_fusion_weights(C, np.array([1.0]), b, 50.0, penalty=1e9)
    assert free.choice.tolist() == [1]


def test_a_binding_chip_still_trades_resource_for_capacity():
    """The penalty still works where it should: two equally accurate kernels, the cheaper one (cost 0)
    overflows the chip, the other fits; the descent takes the one that fits."""
    C = np.array([[0.0, 0.1]] * 4)
    b = np.array([[100.0, 10.0]] * 4)
    res = optimize_fusion_weights(C, np.ones(4), b, 100.0, penalty=100.0)
    assert res.binding and res.sram_bytes_argmin == 400.0
    assert res.sram_bytes_final < 400.0 and (res.choice == 1).any()


@pytest.mark.parametrize("seed", range(8))
def test_units_descend_in_parallel_with_the_serial_numbers(seed, monkeypatch):
    """Without a binding SRAM constraint the units descend independently (in parallel); weights,
    choice and the whole trajectory are those of the serial descent, bit for bit."""
    from akfviz.selection import fusion_weights as F

    rng = np.random.default_rng(seed)
    nu, K = int(rng.integers(2, 60)), int(rng.integers(2, 18))
    C = rng.random((nu, K)) * 10.0 ** rng.uniform(-3, 3)
    size = rng.integers(1, 1000, nu).astype(float)
    b = rng.integers(0, 5000, (nu, K)).astype(float)
    allowed = rng.random((nu, K)) < 0.8
    am = np.argmin(C, axis=1)
    allowed[np.arange(nu), am] = True
    cap = float((size * b[np.arange(nu), am]).sum()) * (2.0 if seed % 2 else 1.0)  # not binding
    every = int(rng.integers(1, 9))
    par = F.optimize_fusion_weights(C, size, b, cap, argmin=am, allowed=allowed, record_every=every)
    monkeypatch.setattr(F, "FREE_DESCENT_MAX_BYTES", -1)  # the serial, coupled descent
    ser = F.optimize_fusion_weights(C, size, b, cap, argmin=am, allowed=allowed, record_every=every)
    assert not par.binding
    np.testing.assert_array_equal(par.weights, ser.weights)
    np.testing.assert_array_equal(par.choice, ser.choice)
    np.testing.assert_array_equal(par.weights_trajectory, ser.weights_trajectory)
    assert par.trajectory.equals(ser.trajectory)


def test_thousands_of_units_descend_in_parallel_with_the_serial_numbers(monkeypatch):
    """Tile mode of a matrix of a few thousand tiles: the recorded sums are one per unit (not per
    unit and kernel), so the units still descend in parallel; the numbers are the serial ones."""
    from akfviz.selection import fusion_weights as F

    rng = np.random.default_rng(42)
    nu, K = 3000, 17
    assert 24 * 32 * nu * K > F.FREE_DESCENT_MAX_BYTES >= 24 * 32 * nu   # the old limit refused it
    C = rng.random((nu, K))
    size = np.ones(nu)
    b = rng.integers(0, 5000, (nu, K)).astype(float)
    calls = []
    free = F._descend_free
    monkeypatch.setattr(F, "_descend_free", lambda *a: calls.append(1) or free(*a))
    par = F.optimize_fusion_weights(C, size, b, 1e12)
    assert calls == [1] and not par.binding
    monkeypatch.setattr(F, "FREE_DESCENT_MAX_BYTES", -1)
    ser = F.optimize_fusion_weights(C, size, b, 1e12)
    assert calls == [1]
    np.testing.assert_array_equal(par.weights, ser.weights)
    np.testing.assert_array_equal(par.choice, ser.choice)
    np.testing.assert_array_equal(par.weights_trajectory, ser.weights_trajectory)
    assert par.trajectory.equals(ser.trajectory)
