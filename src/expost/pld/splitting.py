"""Convolution split into a heavy bulk and light tails: a far smaller error bound, or float64.

The FFT's ℓ1 error bound (`expost.pld.convolution.fft_error`) grows as √n·||a||_2·||b||_1 for
transforms of length n, and it is an absolute error: k rounds by squaring double it log2 k times
(2^22 rounds at q = 1e-4 carried 1e-8 of it). Write a = a_B + a_T with a_B the window [lo, hi)
holding all but at most τ of the mass on each side and a_T the rest (zero on the window),
likewise b; by bilinearity

    a * b = a_B * b_B + a_T * b + a_B * b_T,    a * a = a_B * a_B + a_T * (a + a_B),

the square one product shorter (a + a_B is 2a on the window: exact). The products other than
the bulks' carry a factor ||a_T||_1 <= 2τ or ||a_T||_2 in their bounds. `convolve_within` picks
the way by the tail mass t its composition cuts (docs/pld.md, "Counting many rounds", item 6):

- t < `SPLIT_BELOW` (counting): τ the largest of `TAUS` whose tails' terms are at most
  `TAIL_SHARE` of the unsplit bound's; the bulks' product summed directly (`convolve` on
  slices of at most `DIRECT_MAX` points, while it takes at most `DIRECT_WORK` products): >= the
  exact product entrywise and within a relative 3γ_{m+1} + 3u of it (Higham 2002 §3.1), no ℓ1
  error at all; a relative error only scales every hockey-stick sum (by 1 + 2^22·500u ≈
  1 + 3e-7 after 2^22 rounds).
- otherwise, where a bulk of at most half the points leaves tails whose float64 bound is at
  most `FFT64_SHARE`·t: the bulks by one (short) transform, the tails in float64
  (`expost.pld.convolution`: float64 where its bound is within the tolerance).
- otherwise one transform.

Upper side: each piece is >= a measure within its bound of its exact product, and the pieces
are added with every sum moved up one float, so the total is too. Lower side: each piece is
moved *below* that measure (`convolve` returns c' itself in float64 and rounds its extended
precision result c' up, c <= c'·(1 + 2u) + 2^-1074; the direct sum is within the relative error
above) and the pieces are added with every sum moved down, so the total is <= a measure within
the bound of a * b: every hockey-stick sum of it is at most the exact one plus the bound, and
no absolute rounding term compounds over the squarings (a 2u·Σc per composition did: 2e-9
after 2^22 rounds).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from expost.pld.convolution import DIRECT_MAX, FFT64_SHARE, convolve, fft_error_of_norms

__all__ = [
    "DIRECT_WORK",
    "SPLIT_BELOW",
    "TAIL_SHARE",
    "TAUS",
    "convolve_within",
    "split_convolve",
]

FloatArray = npt.NDArray[np.float64]
TAUS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-8)  # candidate tail masses on each side of the bulk
TAIL_SHARE = 1e-3  # the tails' error terms, at most this share of the unsplit bound's
DIRECT_WORK = 4e7  # the bulks' product is summed directly up to this many products
SPLIT_BELOW = 1e-18
"""A composition whose tails may hold less than this (counting: `expost.pld.counting`'s
``COUNT_TAIL``) sums its bulks directly (`convolve_within`)."""
_U = 2.0**-53
_TINY = math.ulp(0.0)


class Split(NamedTuple):
    """A bulk [lo, hi) of an array and its tails' norms ||a_T||_1 and ||a_T||_2^2."""

    lo: int
    hi: int
    tail1: float
    tail2: float


def _splits(a: FloatArray) -> tuple[float, float, list[Split]]:
    """(||a||_1, ||a||_2^2, the splits): for each of `TAUS`, the bulk leaving at most that share
    of the mass on each side, with its tails' norms from prefix sums (float sums: only a
    choice rests on them). None for an array of mass 0."""
    n = a.size
    left, right = np.cumsum(a), np.cumsum(a[::-1])
    squares = a * a
    left2, right2 = np.cumsum(squares), np.cumsum(squares[::-1])
    total, total2 = float(left[-1]), float(left2[-1])
    out = []
    for tau in TAUS if total > 0.0 else ():
        lo = int(np.searchsorted(left, tau * total, side="right"))
        hi = n - int(np.searchsorted(right, tau * total, side="right"))
        if hi - lo < 1:
            continue
        tail1 = (float(left[lo - 1]) if lo else 0.0) + (float(right[n - hi - 1]) if hi < n else 0.0)
        tail2 = (float(left2[lo - 1]) if lo else 0.0) + (
            float(right2[n - hi - 1]) if hi < n else 0.0
        )
        out.append(Split(lo, hi, tail1, tail2))
    return total, total2, out


def _window(a: FloatArray) -> tuple[int, int]:
    """The narrowest bulk [lo, hi) of ``a`` among the `TAUS` splits whose tails' error terms
    ||a_T||_2 + ||a_B||_2·||a_T||_1/||a||_1 are at most `TAIL_SHARE`·||a||_2 (the whole array
    if none). Only a choice: any split is sound."""
    total, total2, splits = _splits(a)
    norm2 = math.sqrt(total2)
    for split in splits:
        if math.sqrt(split.tail2) + norm2 * split.tail1 / total <= TAIL_SHARE * norm2:
            return split.lo, split.hi
    return 0, a.size


def _add(out: FloatArray, at: int, piece: FloatArray, lower: bool) -> None:
    """out[at : at + len(piece)] += piece, each sum moved up (down if ``lower``) one float."""
    end = at + piece.size
    if lower:  # moved down, but not below 0 (a sum of masses >= 0)
        out[at:end] = np.maximum(np.nextafter(out[at:end] + piece, -np.inf), 0.0)
    else:
        out[at:end] = np.nextafter(out[at:end] + piece, np.inf)


def _below(c: FloatArray, direct: int) -> FloatArray:
    """``convolve``'s c moved below the measure its bound is about (module doc): by 8u, plus
    4γ_{m+1} for a direct sum (``direct`` = m, the shorter input's length; 0 for the FFT)."""
    rel = 8.0 * _U + (4.0 * (direct + 1.0) * _U / (1.0 - (direct + 1.0) * _U) if direct else 0.0)
    shifted = np.nextafter(c * (1.0 - rel), -np.inf) - (4.0 * direct + 2.0) * _TINY
    return np.maximum(shifted, 0.0)


def _convolve(
    a: FloatArray, b: FloatArray, lower: bool, tolerance: float
) -> tuple[FloatArray, float]:
    c, err = convolve(a, b, tolerance)
    if not lower:
        return c, err
    direct = min(a.size, b.size) if err == 0.0 else 0  # only the direct sum has no error term
    return _below(c, direct), err


def _direct(
    a: FloatArray, b: FloatArray, lower: bool, tolerance: float
) -> tuple[FloatArray, float]:
    """a * b from slices of at most `DIRECT_MAX` points of ``a`` (each summed directly by
    `convolve`, so with no ℓ1 error; any error it reports is kept): (c, err) as `convolve`."""
    out = np.zeros(a.size + b.size - 1, dtype=np.float64)
    err = 0.0
    for i in range(0, a.size, DIRECT_MAX):
        c, e = _convolve(a[i : i + DIRECT_MAX], b, lower, tolerance)
        _add(out, i, c, lower)
        err += e
    return out, err


def split_convolve(
    a: FloatArray, b: FloatArray, lower: bool = False, tolerance: float = 0.0
) -> tuple[FloatArray, float]:
    """(c, err): c >= (<= if ``lower``) a measure c' with ||c' − a * b||_1 <= err: the bulks'
    product summed directly, the tails' by FFT, in float64 where its bound is at most
    ``tolerance`` (module doc)."""
    pa = _pieces(a)
    pb = pa if b is a else _pieces(b)
    return _joined(a, b, pa, pb, lower, tolerance, direct=True)


def convolve_within(
    a: FloatArray, b: FloatArray, tail_mass: float, lower: bool = False
) -> tuple[FloatArray, float]:
    """(c, err) as `split_convolve`, the way chosen by the tail mass the caller cuts (module
    doc): below `SPLIT_BELOW` the split with direct bulks; else the split with float64 tails
    where a bulk of at most half the points leaves tails whose float64 bound is at most
    `FFT64_SHARE`·``tail_mass``; else one transform."""
    tolerance = FFT64_SHARE * tail_mass
    if tail_mass < SPLIT_BELOW:
        return split_convolve(a, b, lower, tolerance)
    pa = _fast_pieces(a, tolerance)
    pb = pa if b is a else _fast_pieces(b, tolerance)
    if len(pa) == 1 or len(pb) == 1:
        return _convolve(a, b, lower, tolerance)
    return _joined(a, b, pa, pb, lower, tolerance, direct=False)


Pieces = list[tuple[FloatArray, int]]


def _joined(
    a: FloatArray,
    b: FloatArray,
    pa: Pieces,
    pb: Pieces,
    lower: bool,
    tolerance: float,
    direct: bool,
) -> tuple[FloatArray, float]:
    """a * b = a_B * b_B + a_T * b + a_B * b_T (a square: a_B * a_B + a_T * (a + a_B), one
    product fewer; a + a_B is exact, 2a on the bulk): the bulks' product summed directly
    (``direct``, up to `DIRECT_WORK` products) or by `convolve`, the others by `convolve` with
    ``tolerance``; each piece's error added."""
    out = np.zeros(a.size + b.size - 1, dtype=np.float64)
    (ba, oa), (bb, ob) = pa[0], pb[0]
    bulks = direct and ba.size * bb.size <= DIRECT_WORK
    products = [((_direct if bulks else _convolve)(ba, bb, lower, tolerance), oa + ob)]
    if pb is pa and len(pa) == 2:
        twice = np.array(a, dtype=np.float64)
        twice[oa : oa + ba.size] *= 2.0
        products.append((_convolve(pa[1][0], twice, lower, tolerance), 0))
    else:
        if len(pa) == 2:
            products.append((_convolve(pa[1][0], b, lower, tolerance), 0))
        if len(pb) == 2:
            products.append((_convolve(ba, pb[1][0], lower, tolerance), oa))
    err = 0.0
    for (c, e), at in products:
        _add(out, at, c, lower)
        err += e
    return out, err * (1.0 + 2.0**-40)


def _pieces(a: FloatArray) -> Pieces:
    """(array, offset) pieces summing to ``a``: the bulk first, then the tails (zero on the
    bulk) if any."""
    return _cut_at(a, *_window(a))


def _fast_pieces(a: FloatArray, tolerance: float) -> Pieces:
    """``a`` split at the narrowest `TAUS` window of at most half its points whose tails' float64
    bound against ``a`` itself, T * (a + a_B), is at most ``tolerance`` (unsplit if none); the
    norms of a + a_B = 2a − T are ||a||_1 + ||a_B||_1 and √(4||a||_2² − 3||T||_2²). Only a
    choice: `convolve` checks each product's bound again."""
    if tolerance <= 0.0:
        return [(a, 0)]
    total, total2, splits = _splits(a)
    n = 1 << (2 * a.size - 2).bit_length()
    for split in splits:
        if split.hi - split.lo > a.size // 2:
            continue
        tail = (split.tail1, math.sqrt(split.tail2))
        twice = (2.0 * total - split.tail1, math.sqrt(max(0.0, 4.0 * total2 - 3.0 * split.tail2)))
        if fft_error_of_norms(tail, twice, n, _U) <= tolerance:
            return _cut_at(a, split.lo, split.hi)
    return [(a, 0)]


def _cut_at(a: FloatArray, lo: int, hi: int) -> Pieces:
    if hi - lo == a.size:
        return [(a, 0)]
    tail = np.array(a, dtype=np.float64)
    tail[lo:hi] = 0.0
    return [(np.ascontiguousarray(a[lo:hi]), lo), (tail, 0)]
