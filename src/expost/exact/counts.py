"""Poisson and binomial at large means: exact rejection with O(sqrt(variance)) uniform draws.

For a log-concave law p on the integers with mode m, f(k) = p(k)/p(m) <= 1 is a product of
rational factors, each <= 1: r_j = p(j)/p(j−1) for m < j <= k, q_j = p(j−1)/p(j) for
k < j <= m (Poisson(a/b): r_j = a/(bj), q_j = bj/a; Bin(n, a/b): r_j = (n−j+1)a/(j(b−a)),
q_j = j(b−a)/((n−j+1)a)). Proposal (an envelope e >= f, Devroye 1986 §II.3): uniform on the
window |k − m| <= W (e = 1) plus two geometric tails e(m + W + d) = ρ_up^d with ρ_up =
r_{m+W+1} and e(m − W − d) = ρ_dn^d with ρ_dn = q_{m−W}; log-concavity makes every later
factor at most ρ, so f <= e. The masses (2W + 1, ρ/(1 − ρ)) are rational, the tails are
geometric with rational ratio, and the acceptance f(k)/e(k) is again a product of rational
factors <= 1 (r_j/ρ_up beyond the window): one uniform draw per factor, accepted when all
succeed. Everything is integer arithmetic, so the law is exact.

With W = ⌈3·sqrt(variance)⌉ + 1 about 2.7 proposals per sample, each costing |k − m| <= W
(typically about sqrt(variance)) draws, all vectorised: O(sqrt(mean)) work, not O(mean).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from expost.exact.bits import SMALL, BitSource

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
#: Factors drawn per vectorised step (bounds memory; a sample's factors stay in one step).
CHUNK = 1 << 22
# (j, sample, up, reference or None) -> (numerator, denominator) arrays of one factor each
Factor = Callable[[Any, IntArray, BoolArray, Any], tuple[Any, Any]]


def _obj(x: Any) -> Any:
    return np.asarray(x).astype(object)


def below_each(n: Any, bits: BitSource) -> Any:
    """One uniform integer below each n_i >= 1, by rejection within n_i's own power of two.

    For n_i <= 2**62: the top k_i bits of a 62-bit draw, k_i >= bit_length(n_i − 1) (the
    float exponent of n_i − 1 never undershoots it), redrawn when >= n_i (probability < 3/4).
    Larger n: the same with Python ints (k_i = bit_length(n_i − 1) exactly).
    """
    n = np.asarray(n)
    if n.size == 0:
        return np.zeros(0, dtype=np.int64)
    top = int(n.max())
    if top > SMALL:
        n = _obj(n)
        k = [(int(v) - 1).bit_length() for v in n]
        widest = max(k)
        gap = _obj([widest - x for x in k])
        out = _obj(bits.below(1 << widest, n.size)) >> gap
        bad = np.flatnonzero(out >= n)
        while bad.size:
            out[bad] = _obj(bits.below(1 << widest, bad.size)) >> gap[bad]
            bad = bad[out[bad] >= n[bad]]
        return out
    n = n.astype(np.int64)
    shift = 62 - np.frexp((n - 1).astype(float))[1].astype(np.int64)
    out = bits.below(SMALL, n.size) >> shift
    bad = np.flatnonzero(out >= n)
    while bad.size:
        out[bad] = bits.below(SMALL, bad.size) >> shift[bad]
        bad = bad[out[bad] >= n[bad]]
    return out


def _geometric(x: Any, y: Any, bits: BitSource) -> IntArray:
    """G_i >= 0 with P(G_i >= g) = (x_i/y_i)**g: Bern(x_i/y_i) successes before a failure,
    drawn in blocks of about twice the mean per step."""
    out = np.zeros(len(x), dtype=np.int64)
    alive = np.arange(len(x))
    while alive.size:
        xa, ya = x[alive], y[alive]
        mean = max(float(xi) / float(yi - xi) for xi, yi in zip(xa, ya, strict=True))
        block = int(min(max(4.0, 2 * mean), CHUNK // alive.size + 1))
        u = below_each(np.repeat(ya, block), bits).reshape(alive.size, block)
        fail = u >= xa[:, None]
        stopped = fail.any(axis=1)
        out[alive] += np.where(stopped, fail.argmax(axis=1), block)
        alive = alive[~stopped]
    return out


def poisson_factor(a: int, b: int) -> Factor:
    """Factors of Poisson(a/b): r_j = a/(bj), q_j = bj/a; relative to ρ = r_J: J/j, q_j/q_J = j/J."""
    big = max(a, b) * b >= SMALL // (1 << 32)

    def factor(j: Any, s: IntArray, up: BoolArray, ref: Any) -> tuple[Any, Any]:
        if ref is not None:
            return np.where(up, ref, j), np.where(up, j, ref)
        bj = (_obj(j) if big else j) * b
        return np.where(up, a, bj), np.where(up, bj, a)

    return factor


def binomial_factor(n: IntArray, a: int, b: int) -> Factor:
    """Factors of Bin(n_s, a/b): r_j = (n−j+1)a/(j(b−a)), q_j its inverse; relative to ρ = r_J:
    (n−j+1)J/(j(n−J+1)) and its inverse (a and b cancel)."""
    big = (int(n.max(initial=0)) + 2) ** 2 * b >= SMALL

    def factor(j: Any, s: IntArray, up: BoolArray, ref: Any) -> tuple[Any, Any]:
        ns = n[s]
        if big:
            j, ns = _obj(j), _obj(ns)
        if ref is not None:
            top, bottom = (ns - j + 1) * ref, j * (ns - ref + 1)
        else:
            top, bottom = (ns - j + 1) * a, j * (b - a)
        return np.where(up, top, bottom), np.where(up, bottom, top)

    return factor


def _accept(
    factor: Factor, m: IntArray, w: IntArray, s: IntArray, k: IntArray, bits: BitSource
) -> BoolArray:
    """Bern(f(k_i)/e(k_i)) per proposal: the AND of |k_i − m_i| rational factors, drawn from
    the far end (the smallest factors) in blocks that double, stopping at a failure (the AND
    is decided then; the factors are independent, so the order does not change the law)."""
    length = np.abs(k - m)
    ok = np.ones(k.size, dtype=bool)
    done = np.zeros(k.size, dtype=np.int64)
    alive = np.flatnonzero(length > 0)
    block = 64
    while alive.size:
        take = np.minimum(length[alive] - done[alive], max(1, min(block, CHUNK // alive.size)))
        total = int(take.sum())
        offsets = np.cumsum(take) - take
        rep = np.repeat(np.arange(alive.size), take)
        pos = done[alive][rep] + (np.arange(total) - offsets[rep])
        kk, mm, ww, ss = k[alive][rep], m[alive][rep], w[alive][rep], s[alive][rep]
        up = kk > mm
        j = np.where(up, kk - pos, kk + 1 + pos)
        num, den = factor(j, ss, up, None)
        tail = np.flatnonzero(np.where(up, j > mm + ww, j <= mm - ww))
        if tail.size:
            ref = np.where(up[tail], mm[tail] + ww[tail] + 1, mm[tail] - ww[tail])
            tn, td = factor(j[tail], ss[tail], up[tail], ref)
            num, den = _obj(num), _obj(den)
            num[tail], den[tail] = tn, td
        passed = np.logical_and.reduceat(below_each(den, bits) < num, offsets)
        ok[alive[~passed]] = False
        done[alive] += take
        alive = alive[passed & (done[alive] < length[alive])]
        block *= 2
    return ok


def window(
    factor: Factor, m: IntArray, w: IntArray, top: IntArray | None, bits: BitSource
) -> IntArray:
    """One exact draw per sample i of the law with mode m_i, window half-width w_i, support
    [0, top_i] (None: unbounded), by rejection from the flat window and geometric tails."""
    size = m.size
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        mi, wi = m[pending], w[pending]
        lo = np.maximum(mi - wi, 0)
        hi = mi + wi if top is None else np.minimum(mi + wi, top[pending])
        has_dn = mi - wi - 1 >= 0
        has_up = np.ones(pending.size, dtype=bool) if top is None else hi < top[pending]
        xu, yu = factor(mi + wi + 1, pending, np.ones(pending.size, dtype=bool), None)
        xd, yd = factor(np.maximum(mi - wi, 1), pending, np.zeros(pending.size, dtype=bool), None)
        xu, yu = np.where(has_up, _obj(xu), 0), np.where(has_up, _obj(yu), 1)
        xd, yd = np.where(has_dn, _obj(xd), 0), np.where(has_dn, _obj(yd), 1)
        # component weights (2W + 1, ρu/(1 − ρu), ρd/(1 − ρd)) over the common denominator
        w_win = _obj(hi - lo + 1) * (yu - xu) * (yd - xd)
        w_up, w_dn = xu * (yd - xd), xd * (yu - xu)
        c = below_each(w_win + w_up + w_dn, bits)
        in_win, in_up = c < w_win, (c >= w_win) & (c < w_win + w_up)
        in_dn = ~(in_win | in_up)
        k = np.empty(pending.size, dtype=np.int64)
        k[in_win] = lo[in_win] + np.asarray(
            below_each(hi[in_win] - lo[in_win] + 1, bits), dtype=np.int64
        )
        if in_up.any():
            k[in_up] = (mi + wi + 1)[in_up] + _geometric(xu[in_up], yu[in_up], bits)
        if in_dn.any():
            k[in_dn] = (mi - wi - 1)[in_dn] - _geometric(xd[in_dn], yd[in_dn], bits)
        ok = _accept(factor, mi, wi, pending, k, bits)
        out[pending[ok]] = k[ok]
        pending = pending[~ok]
    return out


def half_width(variance: float) -> int:
    """W = ⌈3·sqrt(variance)⌉ + 1 (efficiency only: any W >= 0 gives the exact law)."""
    return int(half_widths(np.array([variance]))[0])


def half_widths(variance: npt.NDArray[np.float64]) -> IntArray:
    """`half_width` of each variance, vectorised."""
    widths: IntArray = (np.ceil(3 * np.sqrt(variance)) + 1).astype(np.int64)
    return widths
