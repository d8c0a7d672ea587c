"""Seeded workload generators, registered by name (akf-spec §1, issue 2 item 2).

``generate(kind, n=..., seed=0, **params)`` looks ``kind`` up in :data:`GENERATORS`,
validates every parameter against the generator's declared :class:`ParamSpec` list,
estimates the size of what it is about to allocate (checked against
:class:`~akfviz.workloads.limits.LoadLimits`), then builds the matrix with
``numpy.random.default_rng(seed)`` and returns it through
:func:`~akfviz.workloads.validate.as_csr` (canonical float64 ``csr_array``). Same seed, same
matrix, bit for bit. The shape is always exactly ``(n, m)`` (``m`` defaults to ``n``;
square-only kinds have no ``m``).

Adding a generator is adding one function and one :class:`Generator` entry.
"""
from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..arguments import SEED_MAX, choice, shown, to_float
from ..errors import InputError, ResourceLimitError, checked_call
from ..memory import check_memory
from .limits import LoadLimits, resolve_limits
from .prune import PRUNERS, parse_pattern, prune, sorted_unique
from .validate import as_csr

DEFAULT_N = 1024


# --------------------------------------------------------------------------- parameter specs
@dataclass(frozen=True)
class ParamSpec:
    """A generator parameter: name, default, type and accepted range.

    ``kind`` is one of ``"int"``, ``"float"``, ``"choice"``, ``"pattern"``; ``optional`` means
    ``None`` is accepted (and means "derived default", described in ``help``).
    """

    name: str
    default: Any
    kind: str
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    optional: bool = False
    low_open: bool = False

    def describe_range(self) -> str:
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind == "pattern":
            return "an 'N:M' pattern such as '2:4', '1:4' or '4:8'"
        what = "a whole number" if self.kind == "int" else "a number"
        lo = "" if self.low is None else (f"> {self.low}" if self.low_open else f">= {self.low}")
        hi = "" if self.high is None else f"<= {self.high}"
        rng = " and ".join(x for x in (lo, hi) if x)
        return f"{what} {rng}".strip() + (" (or None)" if self.optional else "")

    def validate(self, value, kind_name: str):
        if value is None and self.optional:
            return None
        bad = InputError(
            f"Generator {kind_name!r}: parameter {self.name}={shown(value, digits=30)} is not accepted; "
            f"it must be {self.describe_range()}."
        )
        if self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise bad
            return value
        if self.kind == "pattern":
            try:
                n_keep, group = parse_pattern(value)
            except InputError:
                raise bad from None
            return f"{n_keep}:{group}"
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise bad
        if self.kind == "int":
            if isinstance(value, numbers.Integral):
                value = int(value)
            elif to_float(value).is_integer():
                value = int(value)
            else:
                raise bad
        else:
            # a number beyond float64's range (10**400, a huge Fraction) is inf here: refused
            value = to_float(value)
            if not math.isfinite(value):
                raise bad
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            raise bad
        if self.high is not None and value > self.high:
            raise bad
        return value


@dataclass(frozen=True)
class Generator:
    """A registered generator: ``func(rng, n, m, limits, **params) -> sparse/dense matrix``."""

    name: str
    description: str
    func: Callable
    params: tuple[ParamSpec, ...] = field(default_factory=tuple)
    rectangular: bool = True
    #: Optional cross-parameter check ``check(kind, n, m, values, given)`` run after every
    #: parameter has been validated (``given``: the names the caller set); raises InputError.
    check: Callable | None = None

    def defaults(self) -> dict:
        out = {"n": DEFAULT_N, "seed": 0}
        if self.rectangular:
            out["m"] = None
        out.update({p.name: p.default for p in self.params})
        return out


def _m_spec():
    return ParamSpec("m", None, "int", "number of columns (default: n)", low=1, optional=True)


# --------------------------------------------------------------------------- size checks
#: Peak memory of generating one stored entry (coordinates, values, the sort into CSR, the result):
#: measured ≈ 41 bytes on 196M entries.
BYTES_PER_GENERATED_ENTRY = 48
#: Peak memory per element of a dense intermediate (values, magnitudes, the pruning mask).
BYTES_PER_DENSE_ELEMENT = 24
_SMALLER = "Use a smaller n (or m) or a lower density."


def _check_nnz(limits: LoadLimits, kind: str, estimate: float, stored: float | None = None) -> None:
    """Refuse a generator call whose ``estimate`` entries (drawn, before duplicates are merged)
    would exhaust memory, or whose ``stored`` entries (default: ``estimate``) exceed the limits."""
    stored = estimate if stored is None else min(stored, estimate)
    limits.check_nnz(int(math.ceil(stored)), what=f"generated {kind!r} matrix")
    check_memory(int(BYTES_PER_GENERATED_ENTRY * estimate),
                 f"Generating the {kind!r} matrix (about {estimate:,.0f} entries)", _SMALLER)


def _check_dense(limits: LoadLimits, kind: str, elements: int) -> None:
    limits.check_dense(int(elements), what=f"generated {kind!r} matrix")
    check_memory(BYTES_PER_DENSE_ELEMENT * int(elements),
                 f"Generating the {kind!r} matrix (a dense intermediate of {int(elements):,} values)", _SMALLER)


def _values(rng, size):
    """Nonzero values: standard normal draws (never exactly zero in practice)."""
    return rng.standard_normal(size)


def _distinct_keys(rng, total: int, k: int, limits: LoadLimits, kind: str) -> np.ndarray:
    """``k`` distinct integers drawn uniformly from ``[0, total)``, sorted (int64).

    Dense requests (``k > total/50``) use ``rng.choice(total, k, replace=False)``, which needs
    O(total) memory (checked against the dense limit). Sparse requests draw with replacement,
    drop repeats and top up until at least ``k`` distinct keys exist, then keep a uniformly
    random ``k`` of them: by symmetry every ``k``-subset is equally likely, in O(k) memory.
    """
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k > total // 50:
        _check_dense(limits, kind, total)
        return np.sort(rng.choice(total, size=k, replace=False).astype(np.int64))
    keys = sorted_unique(rng.integers(0, total, size=k, dtype=np.int64))
    while keys.size < k:
        extra = rng.integers(0, total, size=int((k - keys.size) * 1.1) + 16, dtype=np.int64)
        keys = sorted_unique(np.concatenate([keys, extra]))
    if keys.size > k:
        keys = np.sort(rng.choice(keys, size=k, replace=False))
    return keys


# --------------------------------------------------------------------------- generators
def _uniform(rng, n, m, limits, *, density):
    """Uniform random pattern: ``round(density·n·m)`` distinct positions, N(0,1) values."""
    total = n * m
    k = int(round(density * total))
    _check_nnz(limits, "uniform", k)
    keys = _distinct_keys(rng, total, k, limits, "uniform")
    vals = _values(rng, k)
    return sp.coo_array((vals, (keys // m, keys % m)), shape=(n, m))


def _banded(rng, n, m, limits, *, bandwidth, density):
    """Banded matrix (akf-spec §1): the band ``|i − j| <= bandwidth``; the main diagonal is
    always full, other band entries are kept with probability ``density``, N(0, 1) values.

    Notes
    -----
    Diagonal ``d = j − i`` runs over the rows ``max(0, −d) <= i < min(n, m − d)``; only the
    diagonals with at least one entry, ``max(−bw, 1 − n) <= d <= min(bw, m − 1)``, are listed.
    All band positions are built at once (diagonal by diagonal, rows ascending, the order of the
    keep draws) with ``np.repeat``, in O(nnz) time whatever the shape: each listed diagonal
    holds at least one entry, so their number never exceeds the band's size.
    """
    bw = min(bandwidth, max(n, m) - 1)
    _check_nnz(limits, "banded", min(n, m) * (2 * bw + 1))
    ds = np.arange(max(-bw, 1 - n), min(bw, m - 1) + 1, dtype=np.int64)
    i0 = np.maximum(0, -ds)
    lens = np.minimum(n, m - ds) - i0  # >= 1 for every listed diagonal
    starts = np.cumsum(lens) - lens
    rows = np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(starts - i0, lens)
    cols = rows + np.repeat(ds, lens)
    keep = (rng.random(rows.size) < density) | (rows == cols)
    rows, cols = rows[keep], cols[keep]
    return sp.coo_array((_values(rng, rows.size), (rows, cols)), shape=(n, m))


def _stencil_offsets(points: int):
    if points == 5:
        return [(-1, 0), (1, 0), (0, -1), (0, 1)], 4.0
    return [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)], 8.0


def _stencil(points):
    def build(rng, n, m, limits, *, nx, density=1.0):
        nx_ = int(round(math.sqrt(n))) if nx is None else nx
        nx_ = max(1, min(nx_, n))
        if nx is not None and nx > n:
            raise InputError(
                f"Generator 'stencil{points}': the grid row length nx ({shown(nx)}) is larger than "
                f"n={n}; it must be between 1 and n."
            )
        _check_nnz(limits, f"stencil{points}", n * (points))
        offsets, diag = _stencil_offsets(points)
        i = np.arange(n, dtype=np.int64)
        r, c = i // nx_, i % nx_
        rows, cols, vals = [i], [i], [np.full(n, diag)]
        for dr, dc in offsets:
            cc = c + dc
            j = (r + dr) * nx_ + cc
            ok = (cc >= 0) & (cc < nx_) & (j >= 0) & (j < n)
            rows.append(i[ok])
            cols.append(j[ok])
            vals.append(np.full(int(ok.sum()), -1.0))
        if density < 1.0:
            # thin the couplings in symmetric pairs: each edge i < j is kept with probability
            # ``density`` together with its mirror, so the operator stays symmetric and
            # diagonally dominant (still SPD); the diagonal is always kept
            ri = np.concatenate(rows[1:])
            ci = np.concatenate(cols[1:])
            up = ri < ci
            ri, ci = ri[up], ci[up]
            keep = rng.random(ri.size) < density
            ri, ci = ri[keep], ci[keep]
            rows, cols = [i, ri, ci], [i, ci, ri]
            vals = [np.full(n, diag), np.full(2 * ri.size, -1.0)]
        return sp.coo_array(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
        )

    build.__doc__ = (
        f"{points}-point 2-D Poisson/Jacobi operator: unknown i at grid (i // nx, i % nx), "
        f"diagonal {4 if points == 5 else 8}, neighbours -1. With ``density`` < 1 each "
        f"neighbour coupling is kept with that probability, in symmetric pairs (still SPD)."
    )
    return build


def _block_diagonal(rng, n, m, limits, *, block, density):
    """Square blocks of side ``block`` on the diagonal (last one partial), each entry kept
    with probability ``density``."""
    b = min(block, n)
    _check_nnz(limits, "block_diagonal", n * b)
    full, rest = divmod(n, b)
    rows, cols = [], []
    for count, size, start in ((full, b, 0), (1 if rest else 0, rest, full * b)):
        if count == 0:
            continue
        base = start + np.arange(count, dtype=np.int64)[:, None, None] * size
        local = np.arange(size, dtype=np.int64)
        rows.append(np.broadcast_to(base + local[None, :, None], (count, size, size)).ravel())
        cols.append(np.broadcast_to(base + local[None, None, :], (count, size, size)).ravel())
    rows = np.concatenate(rows)
    cols = np.concatenate(cols)
    keep = rng.random(rows.size) < density
    rows, cols = rows[keep], cols[keep]
    return sp.coo_array((_values(rng, rows.size), (rows, cols)), shape=(n, n))


# In-block fill draws made per step of the clustered generator (8 bytes each: 32 MB).
_CLUSTER_DRAWS_PER_STEP = 1 << 22
#: Largest accepted ``min_block`` / ``max_block`` of the clustered generator: the largest side
#: ``rng.integers`` draws as an int64. Blocks are clipped to the matrix, so a side beyond the
#: matrix's acts as the matrix's side (the draws, and so the seeded output, are those of the
#: side given).
CLUSTER_BLOCK_MAX = 2**63 - 1


def _clustered(rng, n, m, limits, *, blocks, min_block, max_block, density, noise):
    """Clustered blocks (akf-spec §1): ``blocks`` dense-ish blocks plus uniform noise.

    Block ``b`` has height ``h_b`` and width ``w_b`` uniform in ``[min_block, max_block]``
    (clipped to ``n`` and ``m``; given the other way round, ``min_block > max_block``, the two
    are swapped), top-left corner uniform among the positions that fit, and each
    of its ``h_b·w_b`` entries is kept with probability ``density``; then ``round(noise·n·m)``
    distinct uniform background positions are added. Positions hit twice are kept once;
    values are N(0, 1).

    Notes
    -----
    The fill draws of consecutive blocks are made together, about ``2**22`` at a time (one
    ``rng.random`` call per step, not per block), so the time is linear in the number of
    drawn entries however many blocks there are; the draws are the same, in the same order,
    as block after block.

    Every position of every block gets one draw whatever the density (a few nanoseconds each),
    so the total block area ``Σ h_b·w_b`` (after clipping; overlaps counted again) is bounded by
    ``limits.max_dense_elements`` (default 400 million, a few seconds of draws): above it,
    :class:`~akfviz.errors.ResourceLimitError` is raised before any fill draw, even at a low
    density such as 0 (10 000 blocks of 1000 × 1000 would take a minute, a million of them
    hours).
    """
    k_blocks = max(1, n // 64) if blocks is None else blocks
    lo, hi = min(min_block, max_block), max(min_block, max_block)
    # blocks are clipped to the matrix, and overlapping blocks share positions: at most n·m stored
    kept = k_blocks * min(hi, n) * min(hi, m) * density + noise * n * m
    _check_nnz(limits, "clustered", kept, stored=n * m)
    heights = np.minimum(rng.integers(lo, hi + 1, size=k_blocks), n)
    widths = np.minimum(rng.integers(lo, hi + 1, size=k_blocks), m)
    # one fill draw per block position, whatever the density (float: the sum cannot overflow)
    area = float(np.dot(heights.astype(np.float64), widths.astype(np.float64)))
    if area > limits.max_dense_elements:
        raise ResourceLimitError(
            f"Generator 'clustered': the {k_blocks:,} blocks cover {area:,.0f} positions in total "
            f"(height × width of each block, clipped to the {n:,} × {m:,} matrix, overlaps counted "
            f"again), and each position is drawn whatever the density; that is over the limit of "
            f"{limits.max_dense_elements:,} positions (LoadLimits.max_dense_elements). Use fewer "
            f"blocks (blocks=...) or smaller ones (max_block=...), or pass custom limits "
            f"(limits=akfviz.LoadLimits(max_dense_elements=...)).")
    r0 = rng.integers(0, n - heights + 1)
    c0 = rng.integers(0, m - widths + 1)
    sizes = (heights * widths).astype(np.int64)
    ends = np.cumsum(sizes)
    rows, cols = [], []
    b0 = 0
    while b0 < k_blocks:
        base = int(ends[b0 - 1]) if b0 else 0
        # blocks b0..b1-1 together hold at most the step's draws (always at least one block)
        b1 = max(b0 + 1, int(np.searchsorted(ends, base + _CLUSTER_DRAWS_PER_STEP, side="right")))
        local_ends = ends[b0:b1] - base
        flat = np.flatnonzero(rng.random(int(local_ends[-1])) < density)
        blk = np.searchsorted(local_ends, flat, side="right")  # block of each kept draw
        within = flat - (local_ends - sizes[b0:b1])[blk]
        w = widths[b0:b1][blk]
        rows.append(r0[b0:b1][blk] + within // w)
        cols.append(c0[b0:b1][blk] + within % w)
        b0 = b1
    keys = _distinct_keys(rng, n * m, int(round(noise * n * m)), limits, "clustered")
    rows.append(keys // m)
    cols.append(keys % m)
    rows = np.concatenate(rows).astype(np.int64)
    cols = np.concatenate(cols).astype(np.int64)
    # overlapping blocks hit a position twice: keep each position once
    key = sorted_unique(rows * m + cols)
    return sp.coo_array((_values(rng, key.size), (key // m, key % m)), shape=(n, m))


# The power-law generator keeps its classic sample-mean rescaling when the matrix it gives has a
# mean row length within POWERLAW_MEAN_TOLERANCE of the requested one (sparse requests with the
# default exponent: the outputs of earlier versions, e.g. sample_data/powerlaw_4096.npz).
POWERLAW_MEAN_TOLERANCE = 0.05

#: Parameters a given ``density`` stands for (``sparsity = 1 − density`` of the ``llm`` kinds,
#: ``avg_nnz = density·m`` of ``powerlaw``): giving both is refused.
DENSITY_ALTERNATIVES = ("sparsity", "avg_nnz")


def _powerlaw(rng, n, m, limits, *, avg_nnz, exponent, density=None):
    """Power-law row lengths, graph-like (akf-spec §1).

    Row ``i`` gets length ``L_i = clip(round(s·X_i), 1, m)`` where ``X_i = (1 − u_i)^(−1/(a−1))``,
    ``u_i ~ U[0, 1)``, is a Pareto draw with tail ``p(L) ∝ L^(−a)`` (``a`` = ``exponent``), and the
    scale ``s`` brings the mean row length to ``avg_nnz`` (``density``, when given, sets
    ``avg_nnz = density·m``); columns are uniform per row, values N(0, 1).

    Notes
    -----
    The scale is first the classic ``s = avg_nnz / mean(X)`` with the columns of a row drawn
    with replacement (repeats merged). That result is returned when its mean row length is within
    :data:`POWERLAW_MEAN_TOLERANCE` (5 %) of the target ``clip(avg_nnz, 1, m)`` (a sparse request
    with the default exponent: the matrix of earlier versions). Otherwise — a dense request, where
    rows clipped at ``m`` and merged repeats leave the mean short (``density=1`` gave 46 % fill),
    or a heavy tail (``a`` near 1 or 2), where one huge draw dominates ``mean(X)``, which has no
    finite expectation for ``a <= 2`` and overflows for ``a`` near 1 — the same draws ``X_i``
    are used with ``s`` found by bisection on ``log s`` (from ``log X_i = −log1p(−u_i)/(a−1)``,
    so nothing overflows) such that ``Σ L_i`` is as close to ``n·clip(avg_nnz, 1, m)`` as the
    lengths allow, and each row gets exactly ``L_i`` distinct uniform columns. For exponents
    close to 1 almost all rows then have length 1 or ``m``: the power-law body ``1 < L < m``
    holds only a few rows.
    """
    if density is not None:
        avg_nnz = max(density * m, 1e-9)
    _check_nnz(limits, "powerlaw", n * min(avg_nnz, m))
    target = min(max(avg_nnz, 1.0), float(m))
    u = rng.random(n)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        raw = (1.0 - u) ** (-1.0 / (exponent - 1.0))
        raw_mean = raw.mean()
    if np.isfinite(raw_mean):
        with np.errstate(over="ignore"):  # avg_nnz near 1e308: lengths overflow to inf, clipped to m
            lengths = np.clip(np.round(raw / raw_mean * avg_nnz), 1, m).astype(np.int64)
        _check_nnz(limits, "powerlaw", lengths.sum())
        rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
        cols = rng.integers(0, m, size=rows.size, dtype=np.int64)
        key = sorted_unique(rows * m + cols)
        if abs(key.size / n - target) <= POWERLAW_MEAN_TOLERANCE * target:
            return sp.coo_array((_values(rng, key.size), (key // m, key % m)), shape=(n, m))
        del rows, cols, key
    log_x = -np.log1p(-u) / (exponent - 1.0)
    lengths = _powerlaw_lengths(log_x, target * n, m)
    _check_nnz(limits, "powerlaw", lengths.sum())
    key = _distinct_per_row(rng, lengths, m)
    return sp.coo_array((_values(rng, key.size), (key // m, key % m)), shape=(n, m))


def _powerlaw_lengths(log_x: np.ndarray, target_total: float, m: int) -> np.ndarray:
    """Row lengths ``L_i = clip(round(exp(c + log_x_i)), 1, m)`` with ``c = log s`` chosen by
    bisection so that ``Σ L_i`` is as close to ``target_total`` as possible.

    ``Σ L_i`` is non-decreasing in ``c``: it is ``n`` for ``c < −max(log_x)`` and ``n·m`` for
    ``c > log m``. During the bisection only the rows with ``0 <= c + log_x_i <= log m`` are
    evaluated (the others have length 1 or ``m``), found in the sorted ``log_x``.
    """
    n = log_x.size
    srt = np.sort(log_x)
    log_m = math.log(m)

    def total(c: float) -> int:
        i0 = int(np.searchsorted(srt, -c, side="left"))
        i1 = int(np.searchsorted(srt, log_m - c, side="right"))
        mid = np.clip(np.rint(np.exp(srt[i0:i1] + c)), 1, m)
        return i0 + (n - i1) * m + int(mid.sum())

    lo, hi = -float(srt[-1]) - 1.0, log_m + 1.0
    if target_total <= n:
        c = lo
    elif target_total >= n * m:
        c = hi
    else:
        t_lo, t_hi = n, n * m
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:
                break
            t = total(mid)
            if t < target_total:
                lo, t_lo = mid, t
            else:
                hi, t_hi = mid, t
        c = lo if target_total - t_lo <= t_hi - target_total else hi
    return np.clip(np.rint(np.exp(np.minimum(log_x + c, log_m + 1.0))), 1, m).astype(np.int64)


def _distinct_per_row(rng, counts: np.ndarray, m: int) -> np.ndarray:
    """Sorted keys ``row·m + col``: row ``i`` gets exactly ``counts[i]`` distinct columns,
    a uniformly random ``counts[i]``-subset of ``range(m)``.

    Rows with ``counts[i] <= m/2`` draw columns with replacement, merge repeats and top up the
    rows still short with twice their shortfall (at least half the columns are still free, so
    a few rounds suffice), then drop a uniformly random surplus; longer rows draw the
    ``m − counts[i]`` columns they leave out the same way. By symmetry every subset of the
    requested size is equally likely. Time and memory O(Σ counts + n).
    """
    n = counts.size
    dense = counts > m // 2
    want = np.where(dense, m - counts, counts).astype(np.int64)
    row_ids = np.arange(n, dtype=np.int64)
    key = sorted_unique(np.repeat(row_ids, want) * m
                        + rng.integers(0, m, size=int(want.sum()), dtype=np.int64))
    while True:
        missing = want - np.bincount(key // m, minlength=n)
        short = np.maximum(missing, 0)
        if not short.any():
            break
        extra = np.repeat(row_ids, 2 * short)
        key = sorted_unique(np.concatenate(
            [key, extra * m + rng.integers(0, m, size=extra.size, dtype=np.int64)]))
    have = want - missing
    if np.any(have > want):  # drop a uniformly random surplus from the rows that overshot
        row = key // m
        order = np.lexsort((rng.random(key.size), row))
        first = np.cumsum(have) - have
        rank = np.empty(key.size, dtype=np.int64)
        rank[order] = np.arange(key.size, dtype=np.int64) - first[row[order]]
        key = key[rank < want[row]]
    if dense.any():  # long rows: every column except the ones drawn
        d_rows = np.flatnonzero(dense)
        in_dense = dense[key // m]
        out = key[in_dense]
        grid = np.ones((d_rows.size, m), dtype=bool)
        grid[np.searchsorted(d_rows, out // m), out % m] = False
        r, c = np.nonzero(grid)
        key = np.sort(np.concatenate([key[~in_dense], d_rows[r] * m + c]))
    return key


# N:M groups whose position choices number at most this many are drawn from the enumerated
# list of combinations (the original method: its outputs are kept bit for bit, e.g. 2:4, 1:4,
# 4:8, 8:16); above it the positions come from ranking random keys, which never enumerates.
NM_ENUMERATE_MAX = 100_000
# Random keys drawn per step of the ranking method (8 bytes each: 32 MB), whatever n and m.
_NM_KEYS_PER_STEP = 1 << 22


def _nm_group_positions(rng, n_groups: int, width: int, k: int) -> np.ndarray:
    """Positions of ``k`` of ``width`` slots in each of ``n_groups`` groups, ``(n_groups, k)``.

    Every ``k``-subset is equally likely (akf-spec §1, N:M structured). When there are at most
    :data:`NM_ENUMERATE_MAX` subsets, ``C(width, k) <= NM_ENUMERATE_MAX``, one of the enumerated
    subsets is picked per group with ``rng.integers`` (the original method, outputs unchanged).
    Otherwise each slot gets a uniform key ``u ~ U[0, 1)`` and the ``k`` slots with the smallest
    keys are kept (a uniformly random ``k``-subset by symmetry); keys are drawn in steps of
    about ``2**22`` so memory stays bounded, and the draws follow the same row-major order
    whatever the step, so the result depends on the seed only.
    """
    if math.comb(width, k) <= NM_ENUMERATE_MAX:
        combos = np.array(list(itertools.combinations(range(width), k)), dtype=np.int64)
        return combos[rng.integers(0, combos.shape[0], size=n_groups)]
    out = np.empty((n_groups, k), dtype=np.int64)
    step = max(1, _NM_KEYS_PER_STEP // width)
    for g0 in range(0, n_groups, step):
        g1 = min(n_groups, g0 + step)
        keys = rng.random((g1 - g0, width))
        order = np.argsort(keys, axis=1, kind="stable")[:, :k]
        out[g0:g1] = np.sort(order, axis=1)
    return out


def _nm(rng, n, m, limits, *, pattern, density=None):
    """N:M structured matrix (akf-spec §1): every group of M consecutive columns of every row
    holds exactly N nonzeros (the last, shorter group of width ``w = m mod M`` holds
    ``min(N, w)``) at uniformly random positions, N(0, 1) values.

    Parameters
    ----------
    pattern : str
        ``"N:M"`` with ``1 <= N < M <= 256``.
    density : float, optional
        At most N/M: ``round(density·n·m)`` of the N:M positions are kept, chosen uniformly;
        groups then hold *at most* N nonzeros, still N:M compliant.

    Notes
    -----
    The positions of a group are a uniform ``k``-subset of its ``w`` columns (see
    :func:`_nm_group_positions`): for ``C(w, k) <= NM_ENUMERATE_MAX`` (2:4, 1:4, 4:8, 8:16 …) by
    picking one of the enumerated subsets, above it (16:32, 128:256 …) by keeping the ``k``
    smallest of ``w`` uniform keys, in O(n·m) time and bounded extra memory.
    """
    n_keep, group = parse_pattern(pattern)
    n_full, rest = divmod(m, group)
    _check_nnz(limits, "nm", n * (n_full * n_keep + min(n_keep, rest)))
    rows, cols = [], []
    for width, count, offset in ((group, n_full, 0), (rest, 1 if rest else 0, n_full * group)):
        if count == 0 or width == 0:
            continue
        k = min(n_keep, width)
        pos = _nm_group_positions(rng, n * count, width, k).reshape(n, count, k)
        gcol = offset + np.arange(count, dtype=np.int64)[None, :, None] * group + pos
        rows.append(np.broadcast_to(np.arange(n, dtype=np.int64)[:, None, None], gcol.shape).ravel())
        cols.append(gcol.ravel())
    rows = np.concatenate(rows)
    cols = np.concatenate(cols)
    if density is not None:
        keep = _nm_target(density, n, m, rows.size, pattern)
        if keep < rows.size:  # density = N/M gives the default matrix, bit for bit
            pick = np.sort(rng.choice(rows.size, size=keep, replace=False))
            rows, cols = rows[pick], cols[pick]
    return sp.coo_array((_values(rng, rows.size), (rows, cols)), shape=(n, m))


def _nm_target(density, n, m, full, pattern) -> int:
    """Entries kept when an N:M matrix with ``full`` entries is thinned to ``density``."""
    keep = int(round(density * n * m))
    if keep > full:
        n_keep, group = parse_pattern(pattern)
        raise InputError(
            f"An N:M {n_keep}:{group} matrix of this size holds at most {full:,} nonzeros "
            f"(density {full / (n * m):.3g}); density={density:g} asks for {keep:,}. Use a "
            f"density of at most {full / (n * m):.3g}, or a pattern with a larger N/M.")
    return keep


def _llm_dense(rng, n, m, limits, kind, df, outlier_frac, outlier_scale):
    """Heavy-tailed dense weights: Student-t(df)·0.02, with ``outlier_frac`` of the rows and
    of the columns scaled by ``outlier_scale``."""
    _check_dense(limits, kind, n * m)
    W = rng.standard_t(df, size=(n, m)) * 0.02
    k_rows = int(round(outlier_frac * n))
    k_cols = int(round(outlier_frac * m))
    if k_rows:
        W[rng.choice(n, size=k_rows, replace=False), :] *= outlier_scale
    if k_cols:
        W[:, rng.choice(m, size=k_cols, replace=False)] *= outlier_scale
    return W


def _llm_with(method):
    def build(rng, n, m, limits, *, df, outlier_frac, outlier_scale, prune=method,
              sparsity=0.9, pattern="2:4", block=4, density=None):
        if density is not None:  # density = fraction kept = 1 - sparsity
            sparsity = 1.0 - density
        W = _llm_dense(rng, n, m, limits, "llm", df, outlier_frac, outlier_scale)
        P = _prune_fn(W, prune, sparsity=sparsity, pattern=pattern, block=block)
        if prune == "nm" and density is not None:
            # N:M first, then the smallest survivors removed down to ``density`` (still N:M)
            keep = _nm_target(density, n, m, P.nnz, pattern)
            if keep < P.nnz:
                P = sp.csr_array(P)
                order = np.argsort(-np.abs(P.data), kind="stable")
                P.data[order[keep:]] = 0.0
                P.eliminate_zeros()
        return P

    return build


_prune_fn = prune


def _check_block_pruning(kind, n, m, values, given):
    """Refuse block pruning that could only give a whole or an all-zero matrix (akf-spec §1).

    Block pruning cuts the ``n × m`` matrix into ``⌈n/b⌉·⌈m/b⌉`` blocks of side ``b`` and keeps
    ``round((1 − sparsity)·⌈n/b⌉·⌈m/b⌉)`` of them. When the caller chose ``block`` and it is at
    least as large as the matrix in both directions, one block covers everything: refused. When
    the caller chose ``block``, ``sparsity``, ``density`` or ``prune`` and no block would be
    kept, the result would be an all-zero matrix: refused too. (Defaults alone on a tiny matrix
    are left alone: an ``n = 1`` matrix cannot be block-pruned to 90 % either way.)

    Raises
    ------
    InputError
        In the two cases above, saying how many blocks there are and what to change.
    """
    if values.get("prune", "block") != "block":
        return
    b = values["block"]
    sparsity = values["sparsity"] if values.get("density") is None else 1.0 - values["density"]
    n_blocks = (-(-n // b)) * (-(-m // b))
    keep = int(round((1.0 - sparsity) * n_blocks))
    if "block" in given and b >= n and b >= m:
        outcome = "nothing: an all-zero matrix" if keep == 0 else "all of it: no pruning"
        raise InputError(
            f"Generator {kind!r}: block={b} is not smaller than the {n}×{m} matrix, so one "
            f"{b}×{b} block would cover the whole matrix and block pruning could only keep all of "
            f"it or nothing ({outcome} at sparsity {sparsity:g}). "
            + (f"Choose a block side smaller than the matrix (at most {max(n, m) - 1}; 4 to 32 is "
               f"typical)." if max(n, m) > 1 else "A 1×1 matrix cannot be block-pruned.")
        )
    if keep == 0 and given & {"block", "sparsity", "density", "prune"}:
        raise InputError(
            f"Generator {kind!r}: block={b} cuts the {n}×{m} matrix into only {n_blocks} "
            f"block(s), and sparsity {sparsity:g} keeps round({1.0 - sparsity:g} × {n_blocks}) = 0 "
            f"of them, so the result would be an all-zero matrix. Use a smaller block or a lower "
            f"sparsity (a higher density)."
        )


_LLM_COMMON = (
    ParamSpec("df", 3.0, "float", "Student-t degrees of freedom (smaller = heavier tails)",
              low=1.0, high=1000.0),
    ParamSpec("outlier_frac", 0.005, "float", "fraction of rows and of columns that are outliers",
              low=0.0, high=0.5),
    ParamSpec("outlier_scale", 10.0, "float", "magnitude factor of outlier rows/columns",
              low=1.0, high=1e6),
)
_SPARSITY = ParamSpec("sparsity", 0.9, "float", "fraction of weights removed (0.5–0.95 typical)",
                      low=0.0, high=0.999)
_BLOCK_SPARSITY = ParamSpec("sparsity", 0.9, "float", "fraction of blocks removed",
                            low=0.0, high=0.999)
_STENCIL_DENSITY = ParamSpec("density", 1.0, "float",
                             "fill probability of the neighbour couplings (kept in symmetric "
                             "pairs; the diagonal is always there)", low=0.0, high=1.0)
_DENSITY_ALIAS = ParamSpec("density", None, "float",
                           "fraction kept, 1 - sparsity (alternative to sparsity)",
                           low=0.001, high=1.0, optional=True)
_PATTERN = ParamSpec("pattern", "2:4", "pattern", "N:M pattern, e.g. '2:4', '1:4', '4:8'")
_NM_DENSITY = ParamSpec("density", None, "float",
                        "fraction of nonzeros, at most N/M (groups then hold at most N); "
                        "default N/M", low=0.001, high=1.0, optional=True)
_PRUNE_BLOCK = ParamSpec("block", 4, "int", "side b of the pruned b×b blocks", low=1, high=4096)

GENERATORS: dict[str, Generator] = {
    g.name: g
    for g in (
        Generator(
            "uniform", "uniform random pattern, N(0,1) values", _uniform,
            (_m_spec(), ParamSpec("density", 0.01, "float", "fraction of nonzero entries",
                                  low=0.0, high=1.0)),
        ),
        Generator(
            "banded", "band |i-j| <= bandwidth, full diagonal, band filled with density", _banded,
            (_m_spec(),
             ParamSpec("bandwidth", 8, "int", "half-bandwidth (max |i-j|)", low=0),
             ParamSpec("density", 1.0, "float", "fill probability inside the band",
                       low=0.0, high=1.0)),
        ),
        Generator(
            "stencil5", "2-D 5-point Poisson/Jacobi operator (diag 4, neighbours -1) on n grid points in rows of nx, SPD",
            _stencil(5),
            (ParamSpec("nx", None, "int", "grid row length (default round(sqrt(n))); the n points fill rows of nx, "
                       "so an n that is not a multiple of nx leaves the last row short", low=1, optional=True),
             _STENCIL_DENSITY),
            rectangular=False,
        ),
        Generator(
            "stencil9", "2-D 9-point operator (diag 8, 8 neighbours -1) on n grid points in rows of nx, SPD",
            _stencil(9),
            (ParamSpec("nx", None, "int", "grid row length (default round(sqrt(n))); the n points fill rows of nx, "
                       "so an n that is not a multiple of nx leaves the last row short", low=1, optional=True),
             _STENCIL_DENSITY),
            rectangular=False,
        ),
        Generator(
            "block_diagonal", "square diagonal blocks of side `block` with in-block density",
            _block_diagonal,
            (ParamSpec("block", 32, "int", "block side", low=1),
             ParamSpec("density", 1.0, "float", "fill probability inside a block",
                       low=0.0, high=1.0)),
            rectangular=False,
        ),
        Generator(
            "clustered", "dense-ish blocks of varying size at random positions + light noise",
            _clustered,
            (_m_spec(),
             ParamSpec("blocks", None, "int", "number of blocks (default max(1, n // 64))",
                       low=1, high=1_000_000, optional=True),
             ParamSpec("min_block", 8, "int", "smallest block side (clipped to the matrix)",
                       low=1, high=CLUSTER_BLOCK_MAX),
             ParamSpec("max_block", 64, "int", "largest block side (clipped to the matrix)",
                       low=1, high=CLUSTER_BLOCK_MAX),
             ParamSpec("density", 0.6, "float", "fill probability inside a block",
                       low=0.0, high=1.0),
             ParamSpec("noise", 0.0005, "float", "density of the uniform background",
                       low=0.0, high=0.1)),
        ),
        Generator(
            "powerlaw", "graph-like: power-law (Zipf-like) row lengths, uniform columns",
            _powerlaw,
            (_m_spec(),
             ParamSpec("avg_nnz", 8.0, "float", "average nonzeros per row", low=0.0,
                       low_open=True),
             ParamSpec("exponent", 2.5, "float", "power-law exponent of p(L) ∝ L^-exponent",
                       low=1.0, high=10.0, low_open=True),
             ParamSpec("density", None, "float", "sets avg_nnz = density·m (alternative to avg_nnz)",
                       low=0.0, high=1.0, low_open=True, optional=True)),
        ),
        Generator(
            "nm", "N:M structured along the reduction dimension (groups of M columns per row)",
            _nm, (_m_spec(), _PATTERN, _NM_DENSITY),
        ),
        Generator(
            "llm", "LLM-like weights (Student-t, outlier rows/cols) pruned by magnitude/nm/block",
            _llm_with("magnitude"),
            (_m_spec(),
             ParamSpec("prune", "magnitude", "choice", "pruning method",
                       choices=tuple(sorted(PRUNERS))),
             _SPARSITY, _DENSITY_ALIAS, _PATTERN, _PRUNE_BLOCK, *_LLM_COMMON),
            check=_check_block_pruning,
        ),
        Generator(
            "llm_magnitude", "LLM-like weights, unstructured magnitude pruning",
            _llm_with("magnitude"), (_m_spec(), _SPARSITY, _DENSITY_ALIAS, *_LLM_COMMON),
        ),
        Generator(
            "llm_nm", "LLM-like weights, N:M pruning (keep N largest of every M)",
            _llm_with("nm"), (_m_spec(), _PATTERN, _NM_DENSITY, *_LLM_COMMON),
        ),
        Generator(
            "llm_block", "LLM-like weights, block pruning (keep the b×b blocks of largest norm)",
            _llm_with("block"), (_m_spec(), _BLOCK_SPARSITY, _DENSITY_ALIAS, _PRUNE_BLOCK,
                                 *_LLM_COMMON),
            check=_check_block_pruning,
        ),
    )
}

_SIZE_INT = ParamSpec("n", DEFAULT_N, "int", "rows", low=1)
#: Positions ``row·m + col`` are int64: ``n·m`` must not exceed this.
_INT64_MAX = 2**63 - 1
_SEED = ParamSpec("seed", 0, "int", "seed of numpy.random.default_rng", low=0, high=SEED_MAX)


@checked_call
def generators() -> list[str]:
    """Names of the registered generators, sorted (akf-spec §9: ``akfviz.generators()``)."""
    return sorted(GENERATORS)


def generator_params(kind: str) -> dict:
    """Parameters of generator ``kind`` with their defaults (``n``, ``seed``, ``m`` included)."""
    return _lookup(kind).defaults()


def generator_specs(kind: str) -> tuple[ParamSpec, ...]:
    """The :class:`ParamSpec` list of generator ``kind`` (for building forms, e.g. in the app)."""
    g = _lookup(kind)
    return (_SIZE_INT, _SEED, *g.params)


def generator_info() -> pd.DataFrame:
    """One row per generator: ``name``, ``description``, ``parameters`` (text with defaults),
    ``rectangular`` (accepts ``m``) and ``defaults`` (a dict)."""
    rows = []
    for name in generators():
        g = GENERATORS[name]
        d = g.defaults()
        rows.append({
            "name": name,
            "description": g.description,
            "parameters": ", ".join(f"{k}={v!r}" for k, v in d.items()),
            "rectangular": g.rectangular,
            "defaults": d,
        })
    return pd.DataFrame(rows, columns=["name", "description", "parameters", "rectangular", "defaults"])


def _lookup(kind) -> Generator:
    name = choice(kind, GENERATORS)
    if name is None:
        raise InputError(
            f"Unknown generator kind {kind!r}; choose one of: {', '.join(generators())}."
        )
    return GENERATORS[name]


@checked_call
def generate(kind: str, n: int = DEFAULT_N, density: float | None = None, seed: int = 0, *,
             limits: LoadLimits | None = None, **params) -> sp.csr_array:
    """Generate a seeded synthetic workload matrix (akf-spec §1, §9).

    Parameters
    ----------
    kind : str
        A name from :func:`generators` (see :func:`generator_info` for each one's parameters).
    n : int
        Number of rows (default 1024).
    density : float, optional
        The generator's ``density`` parameter (every kind has one; its meaning is the kind's own,
        see :func:`generator_info`). ``None`` keeps the kind's default.
    seed : int
        Seed for ``numpy.random.default_rng``, ``0 … 2**63 − 1``; the same seed gives the same
        matrix bit for bit.
    limits : LoadLimits, optional
        Size limits; the expected nnz (and any dense intermediate) is checked before allocating
        and :class:`~akfviz.errors.ResourceLimitError` raised when over.
    **params
        The generator's own parameters, e.g. ``m`` (columns, rectangular kinds),
        ``bandwidth``, ``pattern``, ``sparsity``. Unknown names are rejected.

    Returns
    -------
    scipy.sparse.csr_array
        Shape exactly ``(n, m)`` (``(n, n)`` for square kinds), canonical float64.

    Examples
    --------
    >>> A = generate("stencil5", n=16)
    >>> A.shape, A.nnz
    ((16, 16), 64)
    """
    g = _lookup(kind)
    if density is not None:
        params["density"] = density
    lim = resolve_limits(limits)
    n = _SIZE_INT.validate(n, kind)
    seed = _SEED.validate(seed, kind)
    allowed = {p.name: p for p in g.params}
    if g.rectangular:
        allowed.setdefault("m", _m_spec())
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise InputError(
            f"Generator {kind!r} does not take parameter(s) {', '.join(unknown)}; it accepts n, seed"
            + (", " + ", ".join(allowed) if allowed else "") + "."
        )
    for b in DENSITY_ALTERNATIVES:
        a = "density"
        if a in params and b in params and params[a] is not None and b in allowed:
            raise InputError(
                f"Generator {kind!r}: give either {a} or {b}, not both ({a}={params[a]!r}, "
                f"{b}={params[b]!r})."
            )
    values = {name: spec.validate(params.get(name, spec.default), kind) for name, spec in allowed.items()}
    m = values.pop("m", None)
    m = n if m is None else m
    lim.check_shape(n, m, what=f"generated {kind!r} matrix")
    if n * m > _INT64_MAX:
        raise InputError(
            f"Generator {kind!r}: the {shown(n)} × {shown(m)} matrix has n·m = "
            f"{shown(n * m, digits=30)} positions, "
            f"more than the generators can number (positions are int64, at most 2**63 - 1 = "
            f"{_INT64_MAX:,}). Use a smaller n or m.")
    if g.check is not None:
        g.check(kind, n, m, values, frozenset(k for k, v in params.items() if v is not None))
    rng = np.random.default_rng(seed)
    A = g.func(rng, n, m, lim, **values)
    _check_generated_shape(g, A, n, m)
    A = as_csr(A, name=f"generated {kind!r} matrix", copy=False)
    return A


def _check_generated_shape(g: Generator, A, n: int, m: int) -> None:
    """Refuse a generator result whose shape is not the requested ``(n, m)`` (akf-spec §1).

    ``generate`` promises ``A.shape == (n, m)`` (``m = n`` for square kinds). A registered
    generator that returns another shape, e.g. one that ignores ``m`` because it was declared
    ``rectangular=True`` by mistake, is a bug in that generator, not a bad user input, so this
    raises :class:`RuntimeError` (not :class:`~akfviz.errors.InputError`) naming the generator.

    Raises
    ------
    RuntimeError
        If ``A`` has no 2-D ``shape`` equal to ``(n, m)``.
    """
    shape = getattr(A, "shape", None)
    if shape is None or tuple(int(s) for s in shape) != (n, m):
        square = "" if g.rectangular else " (a square-only kind, so m = n)"
        raise RuntimeError(
            f"Generator {g.name!r} ({getattr(g.func, '__name__', g.func)!r}) returned a matrix of "
            f"shape {None if shape is None else tuple(shape)} for n={n}, m={m}{square}; it must "
            f"return exactly ({n}, {m}). This is a bug in the generator: a square-only "
            "generator must be registered with rectangular=False, a rectangular one must use m."
        )
