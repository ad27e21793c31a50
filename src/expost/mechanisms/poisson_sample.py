"""A Poisson sample of range(n) in O(q·n) expected draws, each row kept with probability T/2⁵³.

The law is that of `SubsampledGaussianMechanism`'s sample: row i is kept, independently of the
others, with probability p = T/2⁵³, T = floor(q·2⁵³), so p <= q exactly (a smaller rate is
dominated, THEORY §12). Instead of one uniform per row, the sampler skips from one kept row to
the next: the gaps G between kept rows are independent geometric variables, P(G = g) = s^g·p
with s = 1 − p, and the binary digits of a geometric variable are independent (P(G = g) ∝
Π_j (s^(2^j))^(g_j)): digit j is 1 with probability a_j = s^(2^j)/(1 + s^(2^j)), and G >= 2^m
(a digit >= m set) has probability s^(2^m), since Π_(j>=m) (1 + s^(2^j)) = 1/(1 − s^(2^m)).
Given G >= 2^m, G − 2^m is again geometric (memorylessness). So a gap is m + 1 coins: first
"at least 2^m" (then skip 2^m rows and draw again), else the m digits. m is the smallest with
2^m·p >= 4 (the first coin is 1 with probability at most e⁻⁴), so a kept row costs about
log2(4/p) + 1 coins — O(q·n·log(1/q)) uniforms in all, independent of n at fixed q·n.

Each coin is an exact Bernoulli variable: a uniform 63-bit integer U against its probability
enclosed in [L, H]·2⁻⁶³ by interval arithmetic (`expost.rounding.iv_eval`): 1 if U < L, 0 if
U >= H, and in between (probability at most 2⁻⁶³ a coin) decided by drawing further bits of
the uniform against finer enclosures (`_refine`). So the kept rows have exactly the law above.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from expost.rounding import iv_eval

__all__ = ["SCALE", "coin_enclosure", "poisson_indices", "skip_digits"]

SCALE = 1 << 53
"""Keep probabilities are T/2⁵³ (`SubsampledGaussianMechanism.threshold`)."""
_BITS = 63
_ONE = 1 << _BITS
_PREC = 128  # bits of the first enclosures; `_refine` doubles them as it needs


def skip_digits(threshold: int) -> int:
    """m: the smallest m >= 1 with 2^m·p >= 4, p = threshold/2⁵³ (0 < threshold < 2⁵³)."""
    m = 1
    while (threshold << m) < 4 * SCALE:
        m += 1
    return m


def _fraction(x: Any) -> Fraction:
    from mpmath import libmp  # lazy: comes with sympy

    p, q = libmp.to_rational(x)
    return Fraction(int(p), int(q))


def coin_enclosure(threshold: int, coin: int, prec: int = _PREC) -> tuple[Fraction, Fraction]:
    """Rationals lo <= P(coin) <= hi for p = threshold/2⁵³: coin 0 is "G >= 2^m", P = s^(2^m);
    coin j + 1 is digit j, P = a_j = s^(2^j)/(1 + s^(2^j)) (module docstring)."""
    m = skip_digits(threshold)
    power = m if coin == 0 else coin - 1

    def compute(iv: Any) -> Any:
        t = 1 - iv.mpf(threshold) / SCALE  # exact: 53-bit numbers
        for _ in range(power):
            t = t * t  # s^(2^power), enclosed
        return t if coin == 0 else t / (1 + t)

    box = iv_eval(compute, prec)
    return _fraction(box._mpi_[0]), _fraction(box._mpi_[1])


@lru_cache(maxsize=64)
def _thresholds(threshold: int, prec: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Integers L <= P(coin)·2⁶³ <= H for the m + 1 coins, as uint64 vectors."""
    lows, highs = [], []
    for coin in range(skip_digits(threshold) + 1):
        lo, hi = coin_enclosure(threshold, coin, prec)
        lows.append(int(lo * _ONE))  # floor: lo >= 0
        highs.append(-int(-hi * _ONE))  # ceil
    return np.array(lows, dtype=np.uint64), np.array(highs, dtype=np.uint64)


def _refine(threshold: int, coin: int, head: int, rng: np.random.Generator, prec: int) -> bool:
    """The coin whose uniform starts with the 63 bits ``head`` (ambiguous against the first
    enclosure), decided exactly: further bits are drawn, enclosures refined, until the uniform's
    interval lies on one side of the probability."""
    bits, prefix = _BITS, head
    while True:
        prec, bits = 2 * prec, bits + _BITS
        prefix = (prefix << _BITS) | int(rng.integers(0, _ONE, dtype=np.uint64))
        lo, hi = coin_enclosure(threshold, coin, max(prec, bits + 16))
        low = Fraction(prefix, 1 << bits)
        if low + Fraction(1, 1 << bits) <= lo:
            return True
        if low >= hi:
            return False


def _coins(threshold: int, rows: int, rng: np.random.Generator, prec: int) -> npt.NDArray[Any]:
    """``rows`` × (m + 1) independent exact coins (module docstring)."""
    lows, highs = _thresholds(threshold, prec)
    u = rng.integers(0, _ONE, size=(rows, lows.size), dtype=np.uint64)
    out = u < lows
    for r, c in zip(*np.nonzero((u >= lows) & (u < highs)), strict=True):
        out[r, c] = _refine(threshold, int(c), int(u[r, c]), rng, prec)
    return out


def poisson_indices(
    n: int, threshold: int, rng: np.random.Generator, prec: int = _PREC
) -> npt.NDArray[np.int64]:
    """The sorted indices of range(n) kept, each independently with probability
    threshold/2⁵³ (module docstring); ``prec`` sets the first enclosures (tests coarsen it)."""
    if threshold <= 0:
        return np.zeros(0, dtype=np.int64)
    if threshold >= SCALE:
        return np.arange(n, dtype=np.int64)
    m = skip_digits(threshold)
    weights = np.left_shift(np.int64(1), np.arange(m, dtype=np.int64))
    p = threshold / SCALE
    found, position = [], 0  # position: the first row not yet decided
    while position < n:
        mean = (n - position) * p
        rows = min(1 << 20, int(1.05 * mean + 6.0 * mean**0.5) + 16)
        coins = _coins(threshold, rows, rng, prec)
        skip = coins[:, 0]
        gaps = coins[:, 1:].astype(np.int64) @ weights
        ends = position + np.cumsum(np.where(skip, np.int64(1) << m, gaps + 1))
        kept = ends[~skip] - 1  # a kept row ends its gap
        found.append(kept[kept < n])
        position = int(ends[-1])
    return np.concatenate(found)
