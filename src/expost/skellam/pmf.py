"""The Skellam pmf, the one implementation: floats (first half) and mpmath (second half).

Y ~ Skellam(mu1, mu2) = P1 − P2 for independent Poisson variables of means mu1, mu2 has
p(y) = exp(−(√mu1 − √mu2)²)·(mu1/mu2)^(y/2)·ive(|y|, x), x = 2√(mu1·mu2) (Skellam 1946), with
ive(n, x) = I_n(x)·e^(−x). Used by `expost.skellam.loss.SkellamLoss` (its safe-sided
hockey-stick and Rényi divergences), `expost.skellam.boundary`, `expost.skellam.crossing` and
the audits (`expost.audit.paper.skellam`).

Floats: `log_ive` (scipy's ive, Debye's expansion where it underflows, so log p is finite
for every integer y), `log_pmf`, `pmf`, `SkellamLogPmf` (a cached window of the symmetric
log pmf), Chernoff tail bounds `log_tail_above` and `tail_bound`. Exact (mpmath, at the working
precision): `mp_pmf` (Miller's backward recurrence) and `mp_tail_above`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from expost._validation import positive

__all__ = [
    "MAX_MEAN",
    "MIN_MEAN",
    "SkellamLogPmf",
    "log_ive",
    "log_pmf",
    "log_tail_above",
    "mp_pmf",
    "mp_tail_above",
    "pmf",
    "tail_bound",
]

FloatArray = npt.NDArray[np.float64]
Mp = Any  # an mpmath number

MIN_MEAN = 1e-3  # the means (λt) where the float log pmf's error was measured (`log_ive`)
MAX_MEAN = 1e6  # (2λt in [2e-3, 2e6], against 30-digit mpmath: expost.skellam.boundary)

_UNDERFLOW = -640.0  # below this log ive, the Debye expansion is used (orders >= 60 there)
_SKIP_SCIPY = _UNDERFLOW - 60.0  # Debye's value below this: ive underflows, scipy is not asked
_MILLER_EXTRA_BITS = 64  # Miller's start: I_N/I_n below 2^-(prec + this) for the orders used

_CACHE_FACTOR = 8  # SkellamLogPmf keeps a window at most this many times the points asked
_CACHE_MIN = 4096  # (plus this many)
_CACHE_LIMIT = 1 << 24  # and never more than this many (128 MiB)

# -- floats ----------------------------------------------------------------------------------


def _debye(nu: FloatArray, x: float) -> FloatArray:
    """log(I_ν(x)·e^(−x)) by Debye's uniform expansion with u_1..u_4 (DLMF 10.41.3), ν >= 1;
    the logs are taken apart so that x/ν may underflow."""
    z = x / nu
    s = np.sqrt(1.0 + z * z)
    p = 1.0 / s
    p2 = p * p
    u1 = p * (3.0 - 5.0 * p2) / 24.0
    u2 = p2 * (81.0 - 462.0 * p2 + 385.0 * p2 * p2) / 1152.0
    u3 = p * p2 * (30375.0 - p2 * (369603.0 - p2 * (765765.0 - 425425.0 * p2))) / 414720.0
    u4 = (
        p2
        * p2
        * (
            4465125.0
            - p2 * (94121676.0 - p2 * (349922430.0 - p2 * (446185740.0 - 185910725.0 * p2)))
        )
        / 39813120.0
    )
    series = 1.0 + (u1 + (u2 + (u3 + u4 / nu) / nu) / nu) / nu
    core = nu / (s + z) + nu * (math.log(x) - np.log(nu) - np.log1p(s))  # ν·η − x, no cancellation
    out: FloatArray = core - 0.5 * np.log(2.0 * math.pi * nu) - 0.5 * np.log(s) + np.log(series)
    return out


def log_ive(n: npt.ArrayLike, x: float) -> FloatArray:
    """log(I_n(x)·e^(−x)): scipy's ive, or where it would underflow Debye's uniform expansion
    (`_debye`; measured within 2e-16·|value| + 1e-12 of mpmath there). Orders whose Debye value
    is below ``_SKIP_SCIPY`` (far below the underflow, whatever the expansion's error at small
    orders) skip scipy, whose ive is slow at huge orders: the result is the same, in bounded time."""
    from scipy.special import ive  # lazy: keeps `import expost` fast

    orders = np.asarray(n, dtype=np.float64)
    flat = np.atleast_1d(orders)
    debye = np.full(flat.shape, np.inf)
    expandable = flat >= 1.0
    with np.errstate(divide="ignore", under="ignore"):
        debye[expandable] = _debye(flat[expandable], x)
        ask = ~(debye < _SKIP_SCIPY)
        out: FloatArray = np.full(flat.shape, -np.inf)
        out[ask] = np.log(ive(flat[ask], x))
    tail = (out < _UNDERFLOW) & expandable
    out[tail] = debye[tail]
    return out.reshape(orders.shape)


def log_pmf(y: npt.ArrayLike, mu1: float, mu2: float) -> FloatArray:
    """log p(y) in floats (error as `log_ive`'s, plus a few ulps)."""
    k = np.asarray(y, dtype=np.float64)
    x = 2.0 * math.sqrt(mu1 * mu2)
    gap = (math.sqrt(mu1) - math.sqrt(mu2)) ** 2
    out: FloatArray = 0.5 * k * math.log(mu1 / mu2) + log_ive(np.abs(k), x) - gap
    return out


def pmf(y: npt.ArrayLike, mu1: float, mu2: float) -> FloatArray:
    """p(y) in floats: exp(`log_pmf`) (relative error that of `log_ive`, an absolute error in
    the log, plus |log p|·2^-53 from the exponential; 0 or subnormal far in the tails)."""
    out: FloatArray = np.exp(log_pmf(y, mu1, mu2))
    return out


class SkellamLogPmf:
    """log p_t(z) for X(t) ~ Skellam(m, m) (`log_pmf` at mu1 = mu2 = m: log ive(|z|, 2m)),
    kept on a window of z. The window grows as asked (only the new part is computed, and at
    least doubling, so a search that widens step by step computes each point once), while it
    stays within ``_CACHE_FACTOR`` times the points asked plus ``_CACHE_MIN`` (and at most
    ``_CACHE_LIMIT``); points farther apart are computed directly, at the cost of the points
    and not of the gap between them."""

    __slots__ = ("_cache", "_lo", "mean")

    def __init__(self, mean: float) -> None:
        self.mean = mean
        self._lo = 0
        self._cache = np.empty(0)

    def _compute(self, lo: int, hi: int) -> FloatArray:
        return log_pmf(np.arange(lo, hi + 1, dtype=np.float64), self.mean, self.mean)

    def at(self, z: npt.NDArray[np.integer] | npt.NDArray[np.int64]) -> FloatArray:
        states = np.asarray(z)
        lo, hi = int(states.min()), int(states.max())
        old_lo, size = self._lo, self._cache.size
        old_hi = old_lo + size - 1
        if size and old_lo <= lo and hi <= old_hi:
            cached: FloatArray = self._cache[states - old_lo]
            return cached
        if not size:
            new_lo, new_hi = lo, hi
        else:  # grow by at least the current size on each side that grows
            new_lo = min(lo, old_lo - size) if lo < old_lo else old_lo
            new_hi = max(hi, old_hi + size) if hi > old_hi else old_hi
        allowed = min(_CACHE_LIMIT, _CACHE_FACTOR * states.size + _CACHE_MIN)
        if new_hi - new_lo + 1 > allowed:
            if hi - lo + 1 > allowed or not size:
                return log_pmf(states.astype(np.float64), self.mean, self.mean)
            new_lo, new_hi = min(lo, old_lo), max(hi, old_hi)  # grow only as far as asked
            if new_hi - new_lo + 1 > allowed:
                return log_pmf(states.astype(np.float64), self.mean, self.mean)
        parts = [self._cache] if size else []
        if size and new_lo < old_lo:
            parts.insert(0, self._compute(new_lo, old_lo - 1))
        if size and new_hi > old_hi:
            parts.append(self._compute(old_hi + 1, new_hi))
        self._cache = np.concatenate(parts) if size else self._compute(new_lo, new_hi)
        self._lo = new_lo
        out: FloatArray = self._cache[states - new_lo]
        return out

    def finite_left(self, lo: int, hi: int) -> int:
        """The smallest z in [lo, hi] with a finite log pmf (the pmf is unimodal at 0)."""
        z = np.arange(lo, hi + 1)
        finite = np.flatnonzero(np.isfinite(self.at(z)))
        return int(z[finite[0]])


def _chernoff_log(k: FloatArray, mu1: float, mu2: float) -> FloatArray:
    """inf over λ >= 0 of mu1(e^λ − 1) + mu2(e^−λ − 1) − λk: log P(Y >= k) is at most this."""
    lam = np.maximum(np.log((k + np.sqrt(k * k + 4.0 * mu1 * mu2)) / (2.0 * mu1)), 0.0)
    out: FloatArray = mu1 * np.expm1(lam) + mu2 * np.expm1(-lam) - lam * k
    return out


def log_tail_above(k: npt.ArrayLike, mu1: float, mu2: float) -> FloatArray:
    """An upper bound (Chernoff, in floats) on log P(Y >= k); 0 for k at or below the mean."""
    return np.minimum(_chernoff_log(np.asarray(k, dtype=np.float64), mu1, mu2), 0.0)


def tail_bound(mean: float, k: int) -> float:
    """Chernoff bound on P(|X| > k) for X ~ Skellam(mean, mean): 2·exp(`log_tail_above`(k + 1)),
    at most 1. With μ1 = μ2 = μ the exponent is −I(k + 1), I(a) = a·asinh(a/(2μ)) −
    sqrt(a² + 4μ²) + 2μ, the Legendre transform of the cumulant generating function."""
    mu = positive("mean", mean)
    log_bound = float(log_tail_above(float(k + 1), mu, mu))
    return min(1.0, 2.0 * math.exp(log_bound))


# -- exact (mpmath) --------------------------------------------------------------------------


def mp_tail_above(k: int, mu1: float, mu2: float) -> Mp:
    """The Chernoff bound on P(Y >= k) in mpmath (at the working precision); 1 at or below the
    mean. Any λ >= 0 gives a bound, so rounding in λ costs nothing."""
    import mpmath as mp  # lazy: keeps `import expost` fast

    m1, m2, kk = mp.mpf(mu1), mp.mpf(mu2), mp.mpf(k)
    lam = mp.log((kk + mp.sqrt(kk * kk + 4 * m1 * m2)) / (2 * m1))
    if lam <= 0:
        return mp.mpf(1)
    return mp.exp(m1 * mp.expm1(lam) + m2 * mp.expm1(-lam) - lam * kk)


def _miller_start(top: int, x: float, bits: int) -> int:
    """An order N > ``top`` with I_N(x)/I_top(x) <= 2^-bits, from Amos's (1974) bound
    I_(n+1)(x)/I_n(x) <= x/(n + sqrt(n² + x²)) (checked against mpmath in the tests)."""
    target = -bits * math.log(2.0)
    total, n, width = 0.0, top, 1024
    while True:
        k = np.arange(n, n + width, dtype=np.float64)
        steps = np.cumsum(np.log(x / (k + np.sqrt(k * k + x * x))))
        done = np.flatnonzero(total + steps <= target)
        if done.size:
            return n + int(done[0]) + 2
        total += float(steps[-1])
        n, width = n + width, 2 * width


def mp_pmf(lo: int, hi: int, mu1: float, mu2: float) -> list[Mp]:
    """p(y) for y = lo..hi at mpmath's working precision.

    I_n(x) by Miller's backward recurrence I_(n−1) = I_(n+1) + (2n/x)·I_n (stable downwards: all
    terms positive) from an order N where I_N is below 2^-(prec+64) of every I_n used, normalised
    by e^x = I_0 + 2·Σ_(n>=1) I_n. Precision doubling by the caller checks the result.
    """
    import mpmath as mp  # lazy: keeps `import expost` fast

    m1, m2 = mp.mpf(mu1), mp.mpf(mu2)
    x = 2 * mp.sqrt(m1 * m2)
    top = max(abs(lo), abs(hi))
    bottom = 0 if lo <= 0 <= hi else min(abs(lo), abs(hi))
    start = _miller_start(top, float(x), mp.mp.prec + _MILLER_EXTRA_BITS)
    two_over_x = 2 / x
    above, here = (
        mp.mpf(0),
        mp.ldexp(mp.mpf(1), -mp.mp.prec),
    )  # I_(n+1), I_n up to one common factor
    orders: dict[int, Mp] = {}
    total = mp.mpf(0)
    for n in range(start, 0, -1):
        if n <= top and n >= bottom:
            orders[n] = here
        total += here
        above, here = here, above + n * two_over_x * here
    orders[0] = here
    scale = mp.exp(x - m1 - m2) / (2 * total + here)
    ratio = mp.sqrt(m1 / m2)
    power = ratio**lo
    out = []
    for y in range(lo, hi + 1):
        out.append(orders[abs(y)] * scale * power)
        power *= ratio
    return out
