"""Convolution split into a heavy bulk and light tails, with a smaller error bound.

The FFT's ℓ1 error bound (`expost.pld.convolution.fft_error`) grows as √n·||a||_2·||b||_1 for
transforms of length n: a law whose mass sits in a narrow bulk of a long array (a subsampled
loss, its tails kept down to 1e-16) pays for the whole array's length. Write a = a_B + a_T with
a_B the window [lo, hi) holding all but at most τ of the mass on each side and a_T the rest (zero
on the window), likewise b; by bilinearity

    a * b = a_B * b_B + a_B * b_T + a_T * b_B + a_T * b_T,

each product convolved on its own (`convolve`), so the bound is the sum of the products'
bounds: the bulk's product on a short transform, the others carrying a factor ||a_T||_1 <= 2τ
or ||a_T||_2. τ is chosen per array among `TAUS` by the bound's leading terms; the split is
used only where it at least halves them (any split is sound).

Upper side: each piece is >= a measure within its bound of its exact product, and the pieces
are added with every sum moved up one float, so the total is too. Lower side: each piece is
moved *below* that measure (`convolve` rounds its extended-precision result c' up to float64,
c <= c'·(1 + 2u) + 2^-1074; the direct sum is >= the exact product and within a relative
3γ_{m+1} + 3u of it, Higham 2002 §3.1) and the pieces are added with every sum moved down, so
the total is <= a measure within the bound of a * b: every hockey-stick sum of it is at most
the exact one plus the bound, and no rounding term compounds over the squarings (a relative
2u·Σc per composition did: 2e-9 after 2^22 rounds).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from expost.pld.convolution import DIRECT_MAX, convolve

__all__ = ["TAUS", "split_convolve"]

FloatArray = npt.NDArray[np.float64]
TAUS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-8)  # candidate tail masses on each side of the bulk
_U = 2.0**-53
_TINY = math.ulp(0.0)


def _fft_length(size: int) -> int:
    return 1 << (size - 1).bit_length()


def _window(a: FloatArray, other: int) -> tuple[int, int] | None:
    """The bulk [lo, hi) of ``a`` whose split minimises the error's leading terms, convolved
    with an array of length ``other`` whose bulk is as long (None: no split at least halves
    them). Only a choice: any split is sound."""
    total = float(np.sum(a))
    norm2 = float(np.sqrt(np.dot(a, a)))
    if total <= 0.0 or norm2 <= 0.0:
        return None
    full = math.sqrt(_fft_length(a.size + other - 1)) * norm2
    best, where = 0.5 * full, None
    left, right = np.cumsum(a), np.cumsum(a[::-1])
    for tau in TAUS:
        lo = int(np.searchsorted(left, tau * total, side="right"))
        hi = a.size - int(np.searchsorted(right, tau * total, side="right"))
        if hi - lo < 1 or (lo == 0 and hi == a.size):
            continue
        bulk, tail_mass = (
            a[lo:hi],
            float(left[lo - 1] if lo else 0.0)
            + float(right[a.size - hi - 1] if hi < a.size else 0.0),
        )
        tail2 = math.sqrt(max(0.0, norm2**2 - float(np.dot(bulk, bulk))))
        b2 = float(np.sqrt(np.dot(bulk, bulk)))
        score = math.sqrt(_fft_length(2 * (hi - lo) - 1)) * b2 + full / norm2 * (
            tail2 + b2 * tail_mass / total
        )
        if score < best:
            best, where = score, (lo, hi)
    return where


def _add(out: FloatArray, at: int, piece: FloatArray, lower: bool) -> None:
    """out[at : at + len(piece)] += piece, each sum moved up (down if ``lower``) one float."""
    end = at + piece.size
    if lower:  # moved down, but not below 0 (a sum of masses >= 0)
        out[at:end] = np.maximum(np.nextafter(out[at:end] + piece, -np.inf), 0.0)
    else:
        out[at:end] = np.nextafter(out[at:end] + piece, np.inf)


def _below(c: FloatArray, direct: int) -> FloatArray:
    """``convolve``'s c moved below the measure its bound is about (module doc); ``direct``:
    the shorter input's length if the direct sum was used, else 0."""
    rel = 8.0 * _U + (4.0 * direct * _U / (1.0 - (direct + 1.0) * _U) if direct else 0.0)
    shifted = np.nextafter(c * (1.0 - rel), -np.inf) - (4.0 * direct + 2.0) * _TINY
    return np.maximum(shifted, 0.0)


def _convolve(a: FloatArray, b: FloatArray, lower: bool) -> tuple[FloatArray, float]:
    c, err = convolve(a, b)
    if not lower:
        return c, err
    m = min(a.size, b.size)
    return _below(c, m if m <= DIRECT_MAX else 0), err


def split_convolve(a: FloatArray, b: FloatArray, lower: bool = False) -> tuple[FloatArray, float]:
    """(c, err): c >= (<= if ``lower``) a measure c' with ||c' − a * b||_1 <= err, from the
    bulk and the tails convolved apart where that cuts the bound (module doc)."""
    if min(a.size, b.size) <= DIRECT_MAX:
        return _convolve(a, b, lower)
    wa = _window(a, b.size)
    wb = wa if b is a else _window(b, a.size)
    if wa is None and wb is None:
        return _convolve(a, b, lower)
    pa, pb = _pieces(a, wa), (None if b is a else _pieces(b, wb))
    out = np.zeros(a.size + b.size - 1, dtype=np.float64)
    err = 0.0
    seen: dict[tuple[int, int], tuple[FloatArray, float]] = {}
    for i, (xa, oa) in enumerate(pa):
        for j, (xb, ob) in enumerate(pa if pb is None else pb):
            key = (min(i, j), max(i, j)) if pb is None else (i, j)
            if key not in seen:  # a square: b_B * a_T is a_T * b_B (same float product)
                seen[key] = _convolve(xa, xb, lower)
            c, e = seen[key]
            _add(out, oa + ob, c, lower)
            err += e
    return out, err * (1.0 + 2.0**-40)


def _pieces(a: FloatArray, window: tuple[int, int] | None) -> list[tuple[FloatArray, int]]:
    """(array, offset) pieces summing to ``a``: the bulk and the tails (zero on the bulk)."""
    if window is None:
        return [(a, 0)]
    lo, hi = window
    tail = np.array(a, dtype=np.float64)
    tail[lo:hi] = 0.0
    return [(np.ascontiguousarray(a[lo:hi]), lo), (tail, 0)]
