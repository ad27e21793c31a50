"""Exact inversion from cached CDF bounds: the fast path of the discrete Laplace and Gaussian.

For a symmetric law P(x) ∝ w(|x|) on the integers with w(0) = 1 and w(k+1)/w(k) =
exp(−e1)·exp(−e2)^k (discrete Laplace: e1 = 1/scale, e2 = 0; discrete Gaussian: e1 =
1/(2σ²), e2 = 1/σ²), the sample is X = the x with F(x − 1) <= R < F(x), R a uniform real
in [0, 1) read lazily: inversion of the exact CDF F, so the law is exact whatever the table.

The table keeps the boundaries b_i = F(−K − 1 + i), i = 0..2K+1, as integer bounds
lo_i <= b_i·2**62 <= hi_i, computed once per parameter with integer arithmetic only:
exp(−x) for rational x from its alternating Taylor series (consecutive partial sums bracket
it), the weights by the product recurrence with floors for lower and ceilings for upper
bounds, the tail beyond K by the geometric bound w(K+1)/(1 − w(K+2)/w(K+1)) (the ratios
decrease). The index #{i : b_i <= R} is decided by a prefix of R when no bound interval
meets the prefix's interval:

1. a first w-bit prefix (w = 8, 16 or, for tables over 4096 boundaries, 20: whichever
   minimises expected bits plus a time penalty for the second stage) looks its cell up in a
   precomputed 2**w-entry array (the decided index, or −1);
2. undecided cells (a boundary may lie inside) draw 62 − w more bits of the *same* R and
   search the 62-bit bounds;
3. still undecided (a boundary within one unit of 2**−62), 64 more bits at a time against
   bounds recomputed at 62 + 64j bits (cached) until decided: exact refinement, with
   probability about 2K·2**−62 per sample.

Index 0 and 2K + 2 are the tails (|X| > K, mass below 2**−40 by the choice of K): the
caller samples them exactly by rejection. Cost: one 2**w table lookup per sample, plus
rarely a binary search; set-up O(K) big-integer products (benchmarks/bench_exact.py).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from fractions import Fraction
from functools import lru_cache
from itertools import accumulate

import attrs
import numpy as np
import numpy.typing as npt

from expost.exact.bits import BitSource

PREC = 62
#: Largest table (boundaries 2K + 2) built; larger parameters use the rejection samplers.
MAX_BOUNDARIES = 1 << 17
#: Tail mass targeted by the reach K (the tails are sampled exactly, only rarely).
TAIL_BITS = 40


def _exp_unit(x: Fraction, work: int) -> tuple[int, int]:
    """lo <= exp(−x)·2**work <= hi for 0 <= x <= 1: consecutive alternating partial sums."""
    total, term, i = Fraction(1), Fraction(1), 0
    tiny = Fraction(1, 1 << (work + 2))
    while True:
        i += 1
        term = -term * x / i
        nxt = total + term
        if abs(term) < tiny or term == 0:
            low, high = min(total, nxt), max(total, nxt)
            return math.floor(low * (1 << work)), math.ceil(high * (1 << work))
        total = nxt


def exp_bounds(x: Fraction, work: int) -> tuple[int, int]:
    """Integers lo <= exp(−x)·2**work <= hi for rational x >= 0 (integer arithmetic only).

    exp(−x) = exp(−1)**n · exp(−f), n = floor x: both factors bracketed by their alternating
    Taylor series, the power by squaring with floors (lower) and ceilings (upper).
    """
    n = math.floor(x)
    lo, hi = _exp_unit(x - n, work)
    if n:
        one_lo, one_hi = _exp_unit(Fraction(1), work)
        p_lo = p_hi = 1 << work
        while n:
            if n & 1:
                p_lo = p_lo * one_lo >> work
                p_hi = -(-p_hi * one_hi >> work)
            one_lo = one_lo * one_lo >> work
            one_hi = -(-one_hi * one_hi >> work)
            n >>= 1
        lo, hi = lo * p_lo >> work, -(-hi * p_hi >> work)
    return lo, hi


def reach(e1: Fraction, e2: Fraction) -> int:
    """K with w(K + 1) about 2**−TAIL_BITS (floats: only the table's size depends on it)."""
    target = TAIL_BITS * math.log(2)
    if e2 == 0:
        return max(1, math.ceil(target / float(e1)))
    # (K+1)·e1 + K(K+1)/2·e2 >= target
    a, b = float(e2) / 2, float(e1) + float(e2) / 2
    return max(1, math.ceil((-b + math.sqrt(b * b + 4 * a * target)) / (2 * a)))


def _tail(
    lo: int, hi: int, ratios: tuple[int, int, int, int], work: int, prec: int
) -> tuple[int, int]:
    """Bounds of the tail sum Σ_{j>k} w(j) from w(k+1) in [lo, hi] (scale 2**work).

    Constant ratio (g = 1, Laplace): the geometric sum w(k+1)/(1 − f), exact up to the bounds
    of f. Decreasing ratios (Gaussian): terms summed until negligible at ``prec`` bits, the
    rest bounded by the geometric series of the current (largest remaining) ratio.
    """
    f_lo, f_hi, g_lo, g_hi = ratios
    one = 1 << work
    if g_lo == one:
        return (lo << work) // (one - f_lo), -(-(hi << work) // (one - min(f_hi, one - 1)))
    t_lo = t_hi = 0
    small = 1 << max(0, work - prec - 40)
    while hi > small:
        t_lo, t_hi = t_lo + lo, t_hi + hi
        lo, hi = lo * f_lo >> work, -(-hi * f_hi >> work)
        f_lo, f_hi = f_lo * g_lo >> work, -(-f_hi * g_hi >> work)
    return t_lo, t_hi - (-(hi << work) // (one - min(f_hi, one - 1)))


@lru_cache(maxsize=8)
def bounds(e1: Fraction, e2: Fraction, k: int, prec: int) -> tuple[list[int], list[int]]:
    """Lower and upper bounds of b_i·2**prec, i = 0..2k+1 (Python ints, nondecreasing)."""
    work = prec + 64 + k.bit_length()
    one = 1 << work
    f_lo, f_hi = exp_bounds(e1, work)
    g_lo, g_hi = exp_bounds(e2, work)
    w_lo, w_hi = [one], [one]
    for _ in range(k + 1):  # w(1..k+1); f ends as the ratio w(k+2)/w(k+1)
        w_lo.append(w_lo[-1] * f_lo >> work)
        w_hi.append(-(-w_hi[-1] * f_hi >> work))
        f_lo, f_hi = f_lo * g_lo >> work, -(-f_hi * g_hi >> work)
    t_lo, t_hi = _tail(w_lo[k + 1], w_hi[k + 1], (f_lo, f_hi, g_lo, g_hi), work, prec)
    c_lo = list(accumulate(w_lo[k:0:-1] + w_lo[: k + 1], initial=t_lo))
    c_hi = list(accumulate(w_hi[k:0:-1] + w_hi[: k + 1], initial=t_hi))
    z_lo, z_hi = c_lo[-1] + t_lo, c_hi[-1] + t_hi
    top = 1 << prec
    lo = [(c << prec) // z_hi for c in c_lo]
    hi = [min(top, -(-(c << prec) // z_lo)) for c in c_hi]
    return lo, hi


@attrs.frozen(eq=False)
class Table:
    """The 62-bit bounds of one law's CDF boundaries and the first-stage lookup array."""

    e1: Fraction
    e2: Fraction
    k: int
    width: int
    first: npt.NDArray[np.int32]
    lo: npt.NDArray[np.int64]
    hi: npt.NDArray[np.int64]


Index = npt.NDArray[np.intp]


def _decide(
    lo: npt.ArrayLike, hi: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike
) -> tuple[Index, Index]:
    """Per interval [a, b): (#{hi_i <= a}, #{lo_i < b}); equal iff the index is decided."""
    return np.searchsorted(hi, a, side="right"), np.searchsorted(lo, b, side="left")


_TABLES: dict[tuple[Fraction, Fraction], Table] = {}
_MAX_TABLES = 16


def cached(e1: Fraction, e2: Fraction) -> bool:
    """Is the table of this law already built?"""
    return (e1, e2) in _TABLES


def table(e1: Fraction, e2: Fraction) -> Table:
    """The table of the law with ratios exp(−e1)·exp(−e2)**k, cached (at most 16 laws)."""
    key = (e1, e2)
    if key not in _TABLES:
        if len(_TABLES) >= _MAX_TABLES:
            del _TABLES[next(iter(_TABLES))]
        _TABLES[key] = _build(e1, e2)
    return _TABLES[key]


def _build(e1: Fraction, e2: Fraction) -> Table:
    """Set-up O(K): the 62-bit bounds and the cheaper (in expected bits) first stage."""
    k = reach(e1, e2)
    lo_list, hi_list = bounds(e1, e2, k, PREC)
    lo, hi = np.array(lo_list, dtype=np.int64), np.array(hi_list, dtype=np.int64)
    best: tuple[float, int, npt.NDArray[np.int32]] | None = None
    for width in (8, 16, 20) if lo.size > 4096 else (8, 16):
        step = 1 << (PREC - width)
        cells = np.arange(1 << width, dtype=np.int64) * step
        a, b = _decide(lo, hi, cells, cells + step)
        first = np.where(a == b, a, -1).astype(np.int32)
        open_ = float(np.mean(first < 0))
        cost = width + open_ * (PREC - width) + 64 * open_  # bits, plus the second stage's time
        if best is None or cost < best[0]:
            best = (cost, width, first)
    assert best is not None
    return Table(e1, e2, k, best[1], best[2], lo, hi)


def _refine(t: Table, u: int, bits: BitSource) -> int:
    """Stage 3: extend the 62-bit prefix u of R by 64 bits at a time until decided."""
    prec = PREC
    while True:
        prec += 64
        u = (u << 64) + int(bits.below(1 << 64, 1)[0])
        lo, hi = bounds(t.e1, t.e2, t.k, prec)
        a, b = bisect_right(hi, u), bisect_left(lo, u + 1)
        if a == b:
            return a


def invert(t: Table, bits: BitSource, size: int) -> npt.NDArray[np.int64]:
    """``size`` indices #{i : b_i <= R} (0 and 2K + 2: the tails), R read lazily from ``bits``."""
    cell = bits.below(1 << t.width, size)
    idx = t.first[cell].astype(np.int64)
    open_ = np.flatnonzero(idx < 0)
    if open_.size:
        shift = PREC - t.width
        u = (cell[open_] << shift) + bits.below(1 << shift, open_.size)
        a, b = _decide(t.lo, t.hi, u, u + 1)
        done = a == b
        idx[open_[done]] = a[done]
        for i, v in zip(open_[~done], u[~done], strict=True):
            idx[i] = _refine(t, int(v), bits)
    return idx
