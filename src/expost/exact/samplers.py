"""Exact batch samplers: integer and ``Fraction`` arithmetic only, no float on the path.

Every sampler takes a `BitSource` and a batch ``size`` and returns a numpy array. Parameters
may be ``Fraction``, ``int`` or ``float``; a float is converted exactly (``Fraction(0.1)`` is
3602879701896397/2**55, not 1/10). Batches are vectorised: each rejection round is one
numpy step over the samples still running (an active mask), never a Python loop per sample.
Integers stay int64 while every intermediate is below 2**62 and switch to Python ints
(object arrays, much slower) beyond that, e.g. for float parameters with 2**50-sized
denominators in the discrete Gaussian's acceptance test.

Algorithms (docs/exact-samplers.md has costs, measurements and timing channels):

- `bernoulli` (p = a/b): one draw below b, output ``U < a``. Constant work.
- `bernoulli_exp` (Bernoulli(exp(−γ)), CKS 2020 Alg. 1): A_k ~ Bern(γ/k) until the first 0
  at K, output [K odd]; exp(−γ) = exp(−floor γ)·exp(−frac γ), the integer part as
  [G >= floor γ] with G the run of Bern(exp(−1)) successes, each one draw below 7!.
- `discrete_laplace`, `discrete_gaussian`: exact inversion from cached CDF bounds
  (`expost.exact.tables`: lazily read bits, exact refinement, exact tails) while the table
  is small enough; else CKS Alg. 2 (scale t/s: U below t accepted with Bern(exp(−U/t)),
  V = G, Y = (U + tV) // s, a sign) and CKS Alg. 3 (discrete Laplace proposal with
  t = floor(σ) + 1, accepted with Bern(exp(−(|Y| − σ²/t)²/(2σ²)))).
- `poisson`: mean < 64: Poisson(1) by Duchon & Duvignau (Electron. J. Combin. 23(4) P4.22,
  2016, Alg. 1), summed floor(λ) times, plus Bin(Poisson(1), frac λ) (Devroye 1986, p. 487);
  64 <= mean < 2**20: window rejection with rational factors (`expost.exact.counts`,
  vectorised), O(sqrt λ); mean >= 2**20: discrete Laplace proposals accepted by an exactly
  decided test (`expost.exact.polylog`), polylog(λ), a Python loop over proposals.
- `binomial`: n < 64: n Bernoulli(p); else window rejection, O(sqrt(np(1 − p))), or from
  variance 2**20 on the polylog sampler (once per distinct n).
- `skellam` (mean λ): Poisson(λ) − Poisson(λ).

Running time never depends on the data (the value is added after sampling); it depends on
the parameter and, to a degree given per sampler in docs/exact-samplers.md, on the noise.
No constant-time claim.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

import expost.exact.counts  # the modules (tests plant twins in them), not the package
import expost.exact.polylog
from expost.errors import InvalidParameter
from expost.exact.bits import SMALL, BitSource
from expost.exact.tables import MAX_BOUNDARIES, Table, cached, invert, reach, table

Rational = Fraction | int | float
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Largest discrete Laplace scale / discrete Gaussian sigma accepted (outputs must fit int64).
MAX_SCALE = 2**40
MIN_SCALE = Fraction(1, 2**40)
"""The smallest discrete Laplace scale (and discrete Gaussian σ, σ² >= 2**-80): below it the
samplers' float set-up (the table's reach) overflows, and the noise is 0 but with probability
below e^(−2**40) anyway. `expost.mechanism_table` refuses such rounds before they are reserved."""
_CHUNK = 2**22  # uniform draws per vectorised step in the counting samplers


def _rational(name: str, value: Rational) -> Fraction:
    """``value`` as an exact Fraction (floats converted bit for bit, never rounded)."""
    if isinstance(value, bool) or not isinstance(value, (Fraction, int, float, np.integer)):
        raise InvalidParameter(name, value, "must be a Fraction, int or float")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidParameter(name, value, "must be finite")
    return Fraction(value) if not isinstance(value, np.integer) else Fraction(int(value))


def _size(size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise InvalidParameter("size", size, "must be an integer >= 0")
    return int(size)


def _ints(values: Any, bound: int) -> Any:
    """``values`` as int64 when ``bound`` < 2**62, else as Python ints (object array)."""
    return np.asarray(values, dtype=np.int64 if bound < SMALL else object)


def bernoulli(p: Rational, bits: BitSource, size: int) -> BoolArray:
    """Bernoulli(p) for rational p in [0, 1]: one uniform draw below p's denominator."""
    q = _rational("p", p)
    if not 0 <= q <= 1:
        raise InvalidParameter("p", p, "must lie in [0, 1]")
    n = _size(size)
    return np.asarray(bits.below(q.denominator, n) < q.numerator, dtype=bool)


def _bern_exp_unit(num: Any, den: int, bits: BitSource, k: int = 1) -> BoolArray:
    """Bernoulli(exp(−num_i/den)) per sample, num_i/den in [0, 1] (CKS Alg. 1, first case).

    Draws A_k ~ Bern(γ/k) = [U < num, U uniform below den·k] for k = ``k``, k + 1, … until
    the first 0 at K and outputs [K odd]; ``k`` > 1 continues a run whose A_1..A_{k−1} were 1.
    """
    out = np.zeros(len(num), dtype=bool)
    alive = np.arange(len(num))
    while alive.size:
        go = bits.below(den * k, alive.size) < num
        if k % 2 == 1:
            out[alive[~go]] = True
        alive, num = alive[go], num[go]
        k += 1
    return out


# One draw U below 7! = 5040 decides A_2..A_7 of a Bern(exp(−1)) run at once: the run passes
# stage k (A_2 = … = A_k = 1, probability 1/k!) iff U < 7!/k!.
_STAGES = np.array([5040 // math.factorial(k) for k in range(7, 1, -1)], dtype=np.int64)


def _bern_exp1(size: int, bits: BitSource) -> BoolArray:
    """``size`` Bernoulli(exp(−1)) (CKS Alg. 1 with γ = 1): one draw below 7! each.

    A_1 = Bern(1) is always 1; the stages passed among k = 2..7 come from one uniform draw
    (K = 2 + passed, output [K odd]); the rare run past A_7 (U = 0, probability 1/7!)
    continues one stage at a time.
    """
    passed = _STAGES.size - np.searchsorted(_STAGES, bits.below(5040, size), side="right")
    out: BoolArray = passed % 2 == 1
    longer = np.flatnonzero(passed == _STAGES.size)
    if longer.size:
        ones = np.ones(longer.size, dtype=np.int64)
        out[longer] = _bern_exp_unit(ones, 1, bits, k=8)
    return out


def _geometric_exp1(size: int, bits: BitSource) -> IntArray:
    """G with P(G >= g) = exp(−g): Bern(exp(−1)) successes before the first failure, 2 at a time."""
    out = np.zeros(size, dtype=np.int64)
    alive = np.arange(size)
    while alive.size:
        block = _bern_exp1(2 * alive.size, bits).reshape(alive.size, 2)
        all_ones = block.all(axis=1)
        out[alive] += np.where(all_ones, 2, np.argmin(block, axis=1))
        alive = alive[all_ones]
    return out


def _bern_exp(num: Any, den: int, bits: BitSource) -> BoolArray:
    """Bernoulli(exp(−num_i/den)) per sample, num_i >= 0 (CKS Alg. 1).

    exp(−γ) = exp(−floor γ)·exp(−frac γ): the fractional part by `_bern_exp_unit`, the
    integer part as [G >= floor γ] with G from `_geometric_exp1` (P(G >= w) = exp(−w)), only
    for the samples whose fractional part came up 1.
    """
    if den >= SMALL:
        num = np.asarray(num, dtype=object)
    whole = num // den
    out = _bern_exp_unit(num - whole * den, den, bits)
    trial = np.flatnonzero(out & (whole > 0))
    if trial.size:
        out[trial] = _geometric_exp1(trial.size, bits) >= whole[trial]
    return out


def bernoulli_exp(gamma: Rational, bits: BitSource, size: int) -> BoolArray:
    """Bernoulli(exp(−γ)) for rational γ >= 0 (CKS 2020 Alg. 1)."""
    g = _rational("gamma", gamma)
    if g < 0:
        raise InvalidParameter("gamma", gamma, "must be >= 0")
    n = _size(size)
    num = np.full(n, g.numerator, dtype=np.int64 if g.numerator < SMALL else object)
    return _bern_exp(num, g.denominator, bits)


def bernoulli_exp_ratio(numerators: npt.ArrayLike, denominator: int, bits: BitSource) -> BoolArray:
    """Bernoulli(exp(−n_i/d)) for each integer n_i >= 0 and one integer d >= 1 (CKS Alg. 1).

    The per-sample form of `bernoulli_exp`, e.g. for permute-and-flip with γ_i = eps·(u* − u_i)
    /(2Δ) over a common denominator. Integers (int64 or Python ints), never floats.
    """
    num = np.asarray(numerators)
    if num.ndim != 1 or not (np.issubdtype(num.dtype, np.integer) or num.dtype == object):
        raise InvalidParameter("numerators", numerators, "must be a 1-d integer array")
    if isinstance(denominator, bool) or not isinstance(denominator, (int, np.integer)):
        raise InvalidParameter("denominator", denominator, "must be an integer >= 1")
    if denominator < 1:
        raise InvalidParameter("denominator", denominator, "must be an integer >= 1")
    if num.dtype == object and not all(isinstance(v, (int, np.integer)) for v in num):
        raise InvalidParameter("numerators", numerators, "must hold integers")
    if num.size and num.min() < 0:
        raise InvalidParameter("numerators", numerators, "must be >= 0")
    return _bern_exp(num, int(denominator), bits)


def _laplace(t: int, s: int, bits: BitSource, size: int) -> IntArray:
    """P(y) ∝ exp(−|y|·s/t) for integers s, t >= 1 (CKS Alg. 2)."""
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        u = bits.below(t, pending.size)
        keep = np.flatnonzero(_bern_exp_unit(u, t, bits))
        v = _geometric_exp1(keep.size, bits)
        top = max(t * (int(v.max(initial=0)) + 1), s)
        x = _ints(u[keep], top) + t * _ints(v, top)
        y = np.asarray(x // s).astype(np.int64)
        negative = bits.below(2, keep.size) == 1
        ok = ~(negative & (y == 0))
        done = pending[keep[ok]]
        out[done] = np.where(negative[ok], -y[ok], y[ok])
        finished = np.zeros(pending.size, dtype=bool)
        finished[keep[ok]] = True
        pending = pending[~finished]
    return out


FREE_BOUNDARIES = 1024
"""Boundaries of a table built whatever the batch size (its set-up is about 2 ms at most)."""


def _table_for(e1: Fraction, e2: Fraction, size: int) -> Table | None:
    """The inversion table when cached, or cheap enough to pay for itself on ``size`` draws.

    Set-up costs about 2 µs per boundary, a rejection sample about 1 µs (the 2-core sandbox);
    without draws to pay for it a table is built only for a narrow law (`FREE_BOUNDARIES`), so a
    law used once (a doubling's 1,024 tries at as many variances) costs no large set-up.
    """
    if not cached(e1, e2) and 2 * reach(e1, e2) + 2 > min(
        MAX_BOUNDARIES, FREE_BOUNDARIES + size // 2
    ):
        return None
    return table(e1, e2)


def _half(t: int, s: int, bits: BitSource, size: int) -> IntArray:
    """G >= 0 with P(G = g) ∝ exp(−g·s/t): `_laplace` draws, the negative ones drawn again."""
    out = _laplace(t, s, bits, size)
    negative = np.flatnonzero(out < 0)
    while negative.size:
        out[negative] = _laplace(t, s, bits, negative.size)
        negative = negative[out[negative] < 0]
    return out


def _from_table(
    tab: Table, tail: Callable[[int], IntArray], bits: BitSource, size: int
) -> IntArray:
    """Values of the symmetric law of ``tab`` (`tables.invert`); |x| > K from ``tail``(m) + K + 1."""
    idx = invert(tab, bits, size)
    out = idx - (tab.k + 1)
    far = np.flatnonzero((idx == 0) | (idx == 2 * tab.k + 2))
    if far.size:
        beyond = tail(far.size) + (tab.k + 1)
        out[far] = np.where(idx[far] == 0, -beyond, beyond)
    return out


def discrete_laplace(scale: Rational, bits: BitSource, size: int) -> IntArray:
    """Discrete Laplace: P(x) ∝ exp(−|x|/scale) on the integers, rational scale > 0.

    Exact inversion from a cached CDF table (`tables`) when the table has at most
    MAX_BOUNDARIES entries (scale up to about 2300), tails by memorylessness (|X| − K − 1 is
    again geometric); otherwise CKS Alg. 2.
    """
    b = _rational("scale", scale)
    if not MIN_SCALE <= b <= MAX_SCALE:
        raise InvalidParameter("scale", scale, "must lie in [2**-40, 2**40]")
    t, s, n = b.numerator, b.denominator, _size(size)
    tab = _table_for(1 / b, Fraction(0), n)
    if tab is None:
        return _laplace(t, s, bits, n)
    return _from_table(tab, lambda m: _half(t, s, bits, m), bits, n)


def _gaussian_tail(p: int, q: int, k: int, bits: BitSource, size: int) -> IntArray:
    """G >= 0 with P(G = g) ∝ exp(−(k + 1 + g)²/(2σ²)), σ² = p/q: geometric proposal
    exp(−g(k + 1)/σ²), accepted with Bern(exp(−g²/(2σ²))) (their product is the target)."""
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        g = _half(p, (k + 1) * q, bits, pending.size)
        top = int(g.max(initial=0))
        accept = _bern_exp(_ints(g, top * top * q) ** 2 * q, 2 * p, bits)
        out[pending[accept]] = g[accept]
        pending = pending[~accept]
    return out


def discrete_gaussian(sigma2: Rational, bits: BitSource, size: int) -> IntArray:
    """Discrete Gaussian: P(x) ∝ exp(−x²/(2σ²)) on the integers, rational σ² > 0.

    Exact inversion from a cached CDF table (`tables`) when it has at most MAX_BOUNDARIES
    entries (σ up to about 8700), the tails |x| > K by `_gaussian_tail`; otherwise CKS Alg. 3.
    """
    v = _rational("sigma2", sigma2)
    if not MIN_SCALE**2 <= v <= MAX_SCALE**2:
        raise InvalidParameter("sigma2", sigma2, "must lie in [2**-80, 2**80]")
    p, q = v.numerator, v.denominator
    tab = _table_for(Fraction(q, 2 * p), Fraction(q, p), _size(size))
    if tab is not None:
        k = tab.k
        return _from_table(tab, lambda m: _gaussian_tail(p, q, k, bits, m), bits, _size(size))
    t = math.isqrt(p // q) + 1
    den = 2 * p * q * t * t
    n = _size(size)
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        y = _laplace(t, 1, bits, pending.size)
        top = int(np.abs(y).max(initial=0)) * t * q + p
        a = _ints(np.abs(y), top * top) * (t * q) - p
        accept = _bern_exp(a * a, den, bits)
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out


def _by_sample(counts: IntArray, draw: Callable[[int], IntArray]) -> IntArray:
    """Per sample i, the sum of ``counts[i]`` draws from ``draw(m)`` (m int64 draws at once)."""
    out = np.zeros(counts.size, dtype=np.int64)
    start = 0
    while start < counts.size:
        cum = np.cumsum(counts[start:])
        stop = start + max(1, int(np.searchsorted(cum, _CHUNK, side="right")))
        part = counts[start:stop]
        values = draw(int(part.sum()))
        nonzero = np.flatnonzero(part)
        if nonzero.size:
            offsets = (np.cumsum(part) - part)[nonzero]
            out[start + nonzero] = np.add.reduceat(values, offsets)
        start = stop
    return out


def _poisson1(bits: BitSource, size: int) -> IntArray:
    """Poisson(1) by Duchon & Duvignau (2016), Alg. 1: integer uniform draws only."""
    k = np.ones(size, dtype=np.int64)
    g = np.zeros(size, dtype=np.int64)
    out = np.empty(size, dtype=np.int64)
    alive = np.arange(size)
    n = 1
    while alive.size:
        i = bits.below(n + 1, alive.size) + 1
        up = i == n + 1
        down = ~up & (i > g[alive])
        k[alive[up]] += 1
        k[alive[down]] -= 1
        g[alive[down]] = n + 1
        stop = ~(up | down)
        out[alive[stop]] = k[alive[stop]]
        alive = alive[~stop]
        n += 1
    return out


def _binomial_counts(counts: IntArray, p: Fraction, bits: BitSource) -> IntArray:
    if p == 0:
        return np.zeros(counts.size, dtype=np.int64)
    if p == 1:
        return counts.astype(np.int64)
    return _by_sample(
        counts,
        lambda m: (bits.below(p.denominator, m) < p.numerator).astype(np.int64),
    )


#: Means (and binomial counts) from which the O(sqrt) rejection sampler (`counts`) is used.
LARGE = 64
#: Means (binomial variances) from which the polylog sampler (`polylog`) is used: there its
#: 0.2 ms per sample beats the vectorised window sampler (0.27 ms at 2**20, batches of 1000).
POLYLOG = 2**20


def poisson(mean: Rational, bits: BitSource, size: int) -> IntArray:
    """Poisson(λ), rational λ >= 0, exact.

    λ < 64: floor(λ) Poisson(1) (Duchon–Duvignau) + Bin(Poisson(1), frac λ), O(λ) draws;
    64 <= λ < 2**20: rejection from a flat window and geometric tails with rational factors
    (`counts`), O(sqrt λ) draws; λ >= 2**20: `polylog`, polylog(λ) work per sample.
    """
    lam = _rational("mean", mean)
    if lam < 0:
        raise InvalidParameter("mean", mean, "must be >= 0")
    n = _size(size)
    whole = int(lam)
    if lam >= POLYLOG:
        return expost.exact.polylog.poisson(lam, bits, n, discrete_laplace)
    if lam >= LARGE:
        m = np.full(n, whole, dtype=np.int64)
        w = np.full(n, expost.exact.counts.half_width(float(lam)), dtype=np.int64)
        factor = expost.exact.counts.poisson_factor(lam.numerator, lam.denominator)
        return expost.exact.counts.window(factor, m, w, None, bits)
    total = _by_sample(np.full(n, whole, dtype=np.int64), lambda m: _poisson1(bits, m))
    frac = lam - whole
    if frac:
        total += _binomial_counts(_poisson1(bits, n), frac, bits)
    return total


def _counts(n: int | npt.ArrayLike, size: int) -> IntArray:
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
        if n < 0:
            raise InvalidParameter("n", n, "must be >= 0")
        return np.full(size, int(n), dtype=np.int64)
    arr = np.asarray(n)
    if arr.shape != (size,) or not np.issubdtype(arr.dtype, np.integer):
        raise InvalidParameter("n", n, f"must be an int or an integer array of shape ({size},)")
    if np.any(arr < 0):
        raise InvalidParameter("n", n, "counts must be >= 0")
    return arr.astype(np.int64)


def _binomial_large(n: IntArray, p: Fraction, bits: BitSource) -> IntArray:
    """Bin(n_i, p), p <= 1/2: by `window` (mode ⌊(n+1)p⌋, O(sqrt(np(1−p))) draws), or by
    `polylog.binomial` once per distinct n_i whose variance is at least `POLYLOG`."""
    a, b = p.numerator, p.denominator
    variance = n.astype(float) * float(p * (1 - p))
    out = np.empty(n.size, dtype=np.int64)
    huge = variance >= POLYLOG
    for value in np.unique(n[huge]).tolist():
        at = np.flatnonzero(n == value)
        out[at] = expost.exact.polylog.binomial(value, p, bits, at.size, discrete_laplace)
    rest = np.flatnonzero(~huge)
    if rest.size:
        c = n[rest]
        m = np.asarray((_ints(c + 1, (int(c.max()) + 1) * a) * a) // b).astype(np.int64)
        w = expost.exact.counts.half_widths(variance[rest])
        factor = expost.exact.counts.binomial_factor(c, a, b)
        out[rest] = expost.exact.counts.window(factor, m, w, c, bits)
    return out


def binomial(n: int | npt.ArrayLike, p: Rational, bits: BitSource, size: int) -> IntArray:
    """Binomial(n, p), rational p in [0, 1]; n an int or per-sample int array.

    n < 64: n Bernoulli(p); larger n: Bin(n, p) = n − Bin(n, 1 − p) to make p <= 1/2, then
    exact rejection with rational factors (`counts`), O(sqrt(np(1 − p))) draws, or from
    variance 2**20 on `polylog` (polylog work per sample).
    """
    q = _rational("p", p)
    if not 0 <= q <= 1:
        raise InvalidParameter("p", p, "must lie in [0, 1]")
    m = _size(size)
    c = _counts(n, m)
    large = np.flatnonzero(c >= LARGE)
    if large.size == 0 or q in (0, 1):
        return _binomial_counts(c, q, bits)
    out = np.zeros(m, dtype=np.int64)
    small = np.flatnonzero(c < LARGE)
    out[small] = _binomial_counts(c[small], q, bits)
    big = c[large]
    if q <= Fraction(1, 2):
        out[large] = _binomial_large(big, q, bits)
    else:
        out[large] = big - _binomial_large(big, 1 - q, bits)
    return out


def skellam(mean: Rational, bits: BitSource, size: int) -> IntArray:
    """Skellam(λ, λ) = Poisson(λ) − Poisson(λ), rational λ >= 0 (variance 2λ)."""
    first = poisson(mean, bits, size)
    return first - poisson(mean, bits, size)
