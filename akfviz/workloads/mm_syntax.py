"""The syntax of a Matrix Market file's entries, checked before scipy's reader sees them.

scipy's reader (fast_matrix_market) parses each token only as far as it can and keeps what it
got: ``1e3`` in an integer file reads as 1, ``1.5.3`` as 1.5, ``2 1.9 3.0`` as the entry
(2, 1) = 0.9, a second value on a line is ignored, and ``0x10`` reads as 0. Such files load
silently with wrong values. :func:`scan_entries` runs one numba pass over the entries
(:func:`_scan`) and refuses every line that is not exactly what the header declares:

* coordinate: ``i j [v]`` — 1-based indices (digits, at most the declared rows / columns),
  then a value unless the field is ``pattern``; skew-symmetric files have no diagonal entries,
  and a symmetric or skew-symmetric file stores one triangle (entries on both sides of the
  diagonal would be mirrored onto each other and counted twice);
* array: one value per line;
* integer values: ``[+-]digits``; real values: ``[+-]`` digits with an optional point and
  exponent (``3``, ``-1.5``, ``.5``, ``2.5e-3``), or nan / inf / infinity (refused later as
  non-finite, with their own message);
* exactly the declared number of entries (blank lines are skipped; a comment line among the
  entries is refused).

This checks the format's grammar only; the numbers themselves are read by scipy.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .._jit import njit_cached, njit_parallel

# result codes of _scan
(OK, BAD_TOKEN, EXTRA_TOKEN, MISSING_TOKEN, OUT_OF_RANGE, SKEW_DIAGONAL, COMMENT, TOO_MANY, TOO_FEW,
 BOTH_TRIANGLES) = range(10)
# token kinds
INDEX, INTEGER, REAL = 0, 1, 2

_SP, _TAB, _CR, _NL = 32, 9, 13, 10
_PLUS, _MINUS, _DOT = 43, 45, 46
_PCT = 37
_MAX_INDEX = 10**15


def layout_tokens(layout: str, field: str) -> tuple:
    """Token kinds of one entry line for a header's ``layout`` and ``field``."""
    value = () if field == "pattern" else ((INTEGER,) if field == "integer" else (REAL,))
    return ((INDEX, INDEX) + value) if layout == "coordinate" else value


@njit_cached
def _is_digit(b):
    return 48 <= b <= 57


@njit_cached
def _lower(b):
    return b + 32 if 65 <= b <= 90 else b


@njit_cached
def _is_word(buf, s, e, word):
    """True when buf[s:e] equals ``word`` (uint8, lower case) ignoring case."""
    if e - s != word.shape[0]:
        return False
    for k in range(e - s):
        if _lower(buf[s + k]) != word[k]:
            return False
    return True


@njit_cached
def _is_delim(b):
    return b == _SP or b == _TAB or b == _CR or b == _NL


@njit_cached
def _token_end(buf, i, n):
    while i < n and not _is_delim(buf[i]):
        i += 1
    return i


@njit_cached
def _real_end(buf, i, n, nan_w, inf_w, infinity_w):
    """End of the decimal real number (or nan / inf / infinity, optionally signed) that starts
    at ``i``, or −1 when the token there is not one. One pass over its bytes."""
    s = i
    if buf[i] == _PLUS or buf[i] == _MINUS:
        i += 1
    digits = 0
    while i < n and _is_digit(buf[i]):
        i += 1
        digits += 1
    if i < n and buf[i] == _DOT:
        i += 1
        while i < n and _is_digit(buf[i]):
            i += 1
            digits += 1
    if digits == 0:
        w = s + 1 if buf[s] == _PLUS or buf[s] == _MINUS else s
        e = _token_end(buf, s, n)
        if _is_word(buf, w, e, nan_w) or _is_word(buf, w, e, inf_w) or _is_word(buf, w, e, infinity_w):
            return e
        return -1
    if i < n and (buf[i] == 101 or buf[i] == 69):  # e E
        i += 1
        if i < n and (buf[i] == _PLUS or buf[i] == _MINUS):
            i += 1
        if i >= n or not _is_digit(buf[i]):
            return -1
        while i < n and _is_digit(buf[i]):
            i += 1
    if i < n and not _is_delim(buf[i]):
        return -1
    return i


@njit_cached
def _integer_end(buf, i, n):
    """End of the optionally signed integer that starts at ``i``, or −1."""
    if buf[i] == _PLUS or buf[i] == _MINUS:
        i += 1
    s = i
    while i < n and _is_digit(buf[i]):
        i += 1
    if i == s or (i < n and not _is_delim(buf[i])):
        return -1
    return i


@njit_cached
def _index_end(buf, i, n):
    """``(end, value)`` of the index (digits, optional leading +) at ``i``; end −1 when the
    token is not one; the value is capped above."""
    if buf[i] == _PLUS:
        i += 1
    s = i
    v = 0
    while i < n and _is_digit(buf[i]):
        if v < _MAX_INDEX:
            v = v * 10 + (buf[i] - 48)
        i += 1
    if i == s or (i < n and not _is_delim(buf[i])):
        return -1, 0
    return i, v


@njit_cached
def body_start(buf):
    """Offset just after the size line (banner line, then blank or ``%`` lines, then the size
    line), or −1 when there is none."""
    n = buf.shape[0]
    i = 0
    while i < n and buf[i] != _NL:  # the banner line
        i += 1
    i += 1
    while i < n:
        j = i
        while j < n and (buf[j] == _SP or buf[j] == _TAB or buf[j] == _CR):
            j += 1
        e = j
        while e < n and buf[e] != _NL:
            e += 1
        if j < e and buf[j] != _PCT:
            return e + 1 if e < n else n
        i = e + 1
    return -1


@njit_cached
def _scan(buf, start, stop, kinds, nrows, ncols, skew, sym, expect, nan_w, inf_w, infinity_w):
    """Check every entry line in ``buf[start:stop]`` (``stop`` at a line end or the end of the
    text): ``(code, position, entries, plus_signs)``.

    ``position`` is the offset of the offending token (or line); ``plus_signs`` counts tokens
    that start with ``+`` (valid, but scipy's reader refuses them). With ``sym`` (a symmetric or
    skew-symmetric coordinate file) the first entry on the other side of the diagonal from the
    entries before it is refused (``BOTH_TRIANGLES``).
    """
    n = stop
    side = 0  # 1: entries below the diagonal seen, 2: above
    ntok = kinds.shape[0]
    i = start
    count = 0
    plus = 0
    while i < n:
        line = i
        tok = 0
        row = -1
        col = -1
        while True:
            while i < n and (buf[i] == _SP or buf[i] == _TAB or buf[i] == _CR):
                i += 1
            if i >= n or buf[i] == _NL:
                break
            s = i
            if tok == 0 and buf[s] == _PCT:
                return COMMENT, s, count, plus
            if tok >= ntok:
                return EXTRA_TOKEN, s, count, plus
            if buf[s] == _PLUS:
                plus += 1
            k = kinds[tok]
            if k == INDEX:
                i, v = _index_end(buf, s, n)
                if i < 0:
                    return BAD_TOKEN, s, count, plus
                if v < 1 or v > (nrows if tok == 0 else ncols):
                    return OUT_OF_RANGE, s, count, plus
                if tok == 0:
                    row = v
                else:
                    col = v
            elif k == INTEGER:
                i = _integer_end(buf, s, n)
                if i < 0:
                    return BAD_TOKEN, s, count, plus
            else:
                i = _real_end(buf, s, n, nan_w, inf_w, infinity_w)
                if i < 0:
                    return BAD_TOKEN, s, count, plus
            tok += 1
        if tok > 0:
            if tok < ntok:
                return MISSING_TOKEN, line, count, plus
            if skew and row == col and row > 0:
                return SKEW_DIAGONAL, line, count, plus
            if sym and row != col:
                s_now = 1 if row > col else 2
                if side == 0:
                    side = s_now
                elif side != s_now:
                    return BOTH_TRIANGLES, line, count, plus
            count += 1
            if count > expect:
                return TOO_MANY, line, count, plus
        i += 1
    if count < expect:
        return TOO_FEW, n, count, plus
    return OK, n, count, plus


@njit_parallel
def _scan_chunks(buf, bounds, kinds, nrows, ncols, skew, sym, nan_w, inf_w, infinity_w):
    """:func:`_scan` on each chunk ``buf[bounds[c]:bounds[c+1]]`` in parallel (chunks end at
    line ends), without the entry-count limit: one row ``(code, position, entries, plus)``
    per chunk."""
    nch = bounds.shape[0] - 1
    out = np.zeros((nch, 4), dtype=np.int64)
    for c in prange(nch):
        code, pos, count, plus = _scan(buf, bounds[c], bounds[c + 1], kinds, nrows, ncols, skew, sym,
                                       np.int64(2**62), nan_w, inf_w, infinity_w)
        out[c, 0] = OK if code == TOO_FEW else code  # no count limit here: running out is fine
        out[c, 1] = pos
        out[c, 2] = count
        out[c, 3] = plus
    return out


_WORDS = tuple(np.frombuffer(w, dtype=np.uint8) for w in (b"nan", b"inf", b"infinity"))
#: Below this many bytes of entries the scan runs on one thread.
PARALLEL_FROM_BYTES = 4 << 20


def _chunk_bounds(buf: np.ndarray, start: int, parts: int) -> np.ndarray:
    """``parts`` + 1 offsets from ``start`` to the end, each inner one just after a newline."""
    n = buf.shape[0]
    cuts = [start]
    for k in range(1, parts):
        at = start + (n - start) * k // parts
        nl = np.flatnonzero(buf[at:at + (1 << 16)] == 10)
        at = at + int(nl[0]) + 1 if nl.size else cuts[-1]  # a line over 64 kB: merge the chunks
        cuts.append(max(at, cuts[-1]))
    cuts.append(n)
    return np.array(cuts, dtype=np.int64)


def scan_entries(buf: np.ndarray, start: int, layout: str, field: str, rows: int, cols: int,
                 skew: bool, expect: int, sym: bool = False):
    """Run :func:`_scan` on the uint8 text ``buf`` (entries from ``start``); see the module
    docstring for what is checked. Returns ``(code, position, entries, plus_signs)``.

    From :data:`PARALLEL_FROM_BYTES` the text is cut at line ends into chunks scanned in
    parallel (:func:`_scan_chunks`); the first chunk with an error reports it, and a count
    over ``expect`` is located by a serial scan (an error path only).
    """
    kinds = np.array(layout_tokens(layout, field), dtype=np.int64)
    args = (kinds, np.int64(rows), np.int64(cols), bool(skew), bool(sym) and layout == "coordinate")
    n = buf.shape[0]
    # the triangle rule spans chunks: symmetric files are scanned on one thread
    if n - start >= PARALLEL_FROM_BYTES and numba.get_num_threads() > 1 and not args[-1]:
        bounds = _chunk_bounds(buf, start, 4 * numba.get_num_threads())
        out = _scan_chunks(buf, bounds, *args, *_WORDS)
        bad = np.flatnonzero(out[:, 0] != OK)
        total = int(out[:, 2].sum())
        if bad.size == 0 and total <= expect:
            plus = int(out[:, 3].sum())
            return (OK, n, total, plus) if total == expect else (TOO_FEW, n, total, plus)
        if bad.size and int(out[:bad[0], 2].sum()) + int(out[bad[0], 2]) <= expect:
            c = bad[0]
            return int(out[c, 0]), int(out[c, 1]), int(out[:c + 1, 2].sum()), int(out[:c + 1, 3].sum())
    code, pos, count, plus = _scan(buf, np.int64(start), np.int64(n), *args, np.int64(expect), *_WORDS)
    return int(code), int(pos), int(count), int(plus)


def expected_entries(layout: str, symmetry: str, rows: int, cols: int, entries: int) -> int:
    """Entry lines a Matrix Market file must have: the declared count (coordinate) or the
    stored part of the array (all of it, the lower triangle, or below the diagonal)."""
    if layout == "coordinate":
        return int(entries)
    if symmetry == "general":
        return int(rows) * int(cols)
    n = int(rows)
    return n * (n + 1) // 2 if symmetry == "symmetric" else n * (n - 1) // 2


def without_leading_plus(buf: np.ndarray, start: int) -> bytes:
    """The text with the ``+`` that starts a token (after ``start``) replaced by a space:
    ``+5`` is a valid entry that scipy's reader refuses; ``1e+5`` keeps its sign."""
    out = buf.copy()
    body = out[start:]
    at = np.flatnonzero(body == _PLUS)
    if at.size:
        prev = np.where(at > 0, body[np.maximum(at - 1, 0)], _NL)
        lead = at[(prev == _SP) | (prev == _TAB) | (prev == _NL) | (prev == _CR)]
        body[lead] = _SP
    return out.tobytes()
