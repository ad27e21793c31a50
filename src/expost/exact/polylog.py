"""Poisson and binomial at large means: exact rejection with polylog(mean) expected work.

Law. p is Poisson(λ) or Bin(n, p), log-concave on the integers with mode m (⌊λ⌋, ⌊(n + 1)p⌋);
f(k) = p(k)/p(m) <= 1. Ratios r_j = p(j)/p(j − 1) decrease in j (log-concavity), r_j <= 1
above the mode and >= 1 at or below it. Fix a window W >= 1 and the first ratios outside it,
ρ_up = r_{m+W+1} and ρ_dn = 1/r_{m−W} (both < 1). For k = m + W + d, d >= 1: f(k) =
f(m + W)·r_{m+W+1}···r_k <= ρ_up^d; for k = m − W − d likewise f(k) <= ρ_dn^d.

Envelope. With an integer t >= 1/(1 − ρ) for both ρ: ρ <= 1 − 1/t <= exp(−1/t), so
f(k) <= exp(−(|k − m| − W)/t) for |k − m| > W, and inside the window f(k) <= 1 <= the same
exponential. Hence A(k) = f(k)·exp((|k − m| − W)/t) <= 1 for every k. Proposal k = m + Y,
Y discrete Laplace of scale t (P(Y = y) ∝ exp(−|y|/t), exact, `samplers.discrete_laplace`),
accepted with probability A(k) (k outside the support: A = 0): the accepted k has law
∝ exp(−|k − m|/t)·A(k) ∝ f(k) ∝ p(k), exactly (Devroye 1986, §II.3). Proposals per sample:
Σ exp(−(|y| − W)/t) / Σ f ≈ 2t·exp(W/t)/sqrt(2π var); with W = ⌊sqrt(var/2)⌋, t ≈ var/W this
is 2·sqrt(2)·e^(1/2)/sqrt(2π) ≈ 1.86.

Deciding U < A(k) exactly. U is a uniform real in [0, 1) read lazily, 62 bits at a time
(u its prefix: U ∈ [u, u + 1)/2^L). Stage 1: an interval [lo, hi] ∋ A(k) from Robbins' bounds
S(k) + 1/(12k + 1) < ln k! < S(k) + 1/(12k), S(k) = (k + 1/2)ln k − k + ln(2π)/2, k >= 1
(Amer. Math. Monthly 62 (1955) 26–29), in mpmath interval arithmetic (directed rounding),
widened by `MARGIN` on each side so that a last-bit error of mpmath's log/exp/pi (computed
with 20 guard bits, then rounded in the chosen direction) cannot matter: accept when
(u + 1)/2^62 <= lo, reject when u/2^62 >= hi. Stage 2, only when U's prefix meets [lo, hi]
(probability about its width, at most 2^-88 + 1/(30 k²)): f(k), a product of |k − m|
rational factors, bracketed by integer products with directed truncation (`product`,
`power`: lower bounds rounded down, upper bounds up, binary splitting), times integer bounds
on exp((|k − m| − W)/t) (`tables.exp_bounds`, alternating Taylor series), at 248, 496, …
bits, with 62 more bits of U each round, until decided: the brackets shrink to A(k), so the
loop ends with probability 1. Every decision is certain, so the law is exact; stage 2 costs
O(|k − m|) small integer products (0.12 s at |k − m| = 10**6), so its expected share is
negligible. Stage 1 assumes only that mpmath's log, exp and pi at p bits are within
2**(60 − p) relative of the truth (they are within an ulp); stage 2 is integers only. When
ln A < −1000 stage 1 answers [0, 2**−1000 + MARGIN] without the exponential.

Cost: one discrete Laplace draw, one 62-bit word, one or two mpmath logarithms and one
exponential per proposal; a Python loop over proposals (about 0.1–0.3 ms per sample on the
2-core sandbox, flat in the mean: docs/exact-samplers.md). The window sampler
(`expost.exact.counts`, vectorised) stays in use below `samplers.POLYLOG`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from expost.exact.bits import SMALL, BitSource
from expost.exact.tables import exp_bounds

IntArray = npt.NDArray[np.int64]
WORD_BITS = 62
#: Absolute widening of the stage-1 interval (covers a few-ulp error of mpmath at ``prec``).
MARGIN = Fraction(1, 2**90)


def _ctx(prec: int) -> Any:
    from mpmath.ctx_iv import MPIntervalContext  # lazily: mpmath ships with sympy

    ctx = MPIntervalContext()
    ctx.prec = prec
    return ctx


def ends(x: Any) -> tuple[Fraction, Fraction]:
    """The exact rational end points of an mpmath interval."""
    from mpmath.libmp import to_rational

    lo, hi = x._mpi_
    return Fraction(*to_rational(lo)), Fraction(*to_rational(hi))


def ln_factorial(ctx: Any, k: int) -> Any:
    """An interval containing ln k! (Robbins 1955; exact 0 for k <= 1)."""
    if k <= 1:
        return ctx.mpf(0)
    kk = ctx.mpf(k)
    s = (kk + ctx.mpf(0.5)) * ctx.log(kk) - kk + ctx.log(2 * ctx.pi) / 2
    lower = s + ctx.mpf(1) / (12 * kk + 1)
    upper = s + ctx.mpf(1) / (12 * kk)
    return ctx.mpf([lower.a, upper.b])


Bounds = tuple[int, int, int]  # (lo, hi, e): lo·2**e <= x <= hi·2**e


def _cut(lo: int, hi: int, e: int, prec: int) -> Bounds:
    """The same bounds with at most ``prec`` bits (lo rounded down, hi up)."""
    s = max(0, hi.bit_length() - prec)
    return lo >> s, -(-hi >> s), e + s


def _times(x: Bounds, y: Bounds, prec: int) -> Bounds:
    return _cut(x[0] * y[0], x[1] * y[1], x[2] + y[2], prec)


def product(lo: int, hi: int, prec: int) -> Bounds:
    """Bounds of lo·(lo + 1)···(hi − 1) (1 when empty) at ``prec`` bits, by binary splitting
    with directed truncation: O(hi − lo) small products, never a number over 2·prec bits."""
    if hi - lo <= 16:
        p = math.prod(range(lo, hi))
        return _cut(p, p, 0, prec)
    mid = (lo + hi) // 2
    return _times(product(lo, mid, prec), product(mid, hi, prec), prec)


def power(a: int, d: int, prec: int) -> Bounds:
    """Bounds of a**d at ``prec`` bits (square and multiply, directed truncation)."""
    out, base = (1, 1, 0), _cut(a, a, 0, prec)
    while d:
        if d & 1:
            out = _times(out, base, prec)
        base = _times(base, base, prec)
        d >>= 1
    return out


def quotient(num: Bounds, den: Bounds) -> tuple[Fraction, Fraction]:
    """lo <= x/y <= hi for x in ``num``, y >= 1 in ``den``."""
    scale = Fraction(2) ** (num[2] - den[2])
    return Fraction(num[0], den[1]) * scale, Fraction(num[1], den[0]) * scale


@attrs.frozen
class Law:
    """A log-concave law on [0, top] (top None: unbounded) as the sampler needs it.

    ``log_f(ctx, k)``: an interval containing ln f(k); ``exact_f(k, prec)``: rational bounds
    of f(k) (relative width about (|k − m| + 2)·2**(1 − prec)); m the mode, w the window, t the proposal's scale (`scale`).
    """

    m: int
    w: int
    t: int
    top: int | None
    log_f: Callable[[Any, int], Any]
    exact_f: Callable[[int, int], tuple[Fraction, Fraction]]
    ctx: Any  # the mpmath interval context of log_f, at `_prec` of the largest likely k


def scale(rho_up: Fraction | None, rho_dn: Fraction | None) -> int:
    """t = max ⌈1/(1 − ρ)⌉ over the sides with support: then ρ <= exp(−1/t) on both."""
    t = 1
    for rho in (rho_up, rho_dn):
        if rho is not None:
            if not 0 <= rho < 1:
                raise ValueError(f"ratio {rho} outside the mode's window is not < 1")
            t = max(t, math.ceil(1 / (1 - rho)))
    return t


def envelope_exponent(law: Law, k: int) -> Fraction:
    """(|k − m| − W)/t: A(k) = f(k)·exp(this)."""
    return Fraction(abs(k - law.m) - law.w, law.t)


def exact_bounds(law: Law, k: int, work: int) -> tuple[Fraction, Fraction]:
    """lo <= A(k) <= hi, integer arithmetic only; hi − lo = O(2**−work)·A(k) + tiny."""
    prec = work + 64 + abs(k - law.m).bit_length()
    (f_lo, f_hi), extra = law.exact_f(k, prec), envelope_exponent(law, k)
    lo, hi = exp_bounds(abs(extra), work)  # lo <= exp(−|extra|)·2**work <= hi
    one = 1 << work
    if extra < 0:
        return f_lo * Fraction(lo, one), min(Fraction(1), f_hi * Fraction(hi, one))
    if lo == 0:  # exp(extra) > 2**work: only A <= 1 is known above
        return f_lo, Fraction(1)
    return f_lo * Fraction(one, hi), min(Fraction(1), f_hi * Fraction(one, lo))


def fast_bounds(law: Law, k: int) -> tuple[Fraction, Fraction]:
    """Stage 1: [lo, hi] ∋ A(k) from the Robbins interval, widened by `MARGIN`."""
    if 2 * k.bit_length() + 2 * WORD_BITS > law.ctx.prec:  # far beyond the mode: stage 2
        return Fraction(0), Fraction(1)
    extra = envelope_exponent(law, k)
    log_a = law.log_f(law.ctx, k) + law.ctx.mpf(extra.numerator) / extra.denominator
    if log_a.b < -1000:  # A < exp(−1000) < 2**−1000, no exp of a huge argument needed
        return Fraction(0), Fraction(1, 2**1000) + MARGIN
    lo, hi = ends(law.ctx.exp(log_a))
    return lo - MARGIN, hi + MARGIN


def decide(
    lo: Fraction,
    hi: Fraction,
    refine: Callable[[int], tuple[Fraction, Fraction]],
    u: int,
    bits: BitSource,
) -> bool:
    """U < A, exactly: u is U's first 62 bits and lo <= A <= hi. While U's prefix meets
    [lo, hi], ``refine(work)`` brackets A again (work = 248, 496, …) and 62 more bits of U
    are read."""
    length, work = WORD_BITS, 2 * WORD_BITS
    while True:
        if (u + 1) <= lo * 2**length:
            return True
        if u >= hi * 2**length:
            return False
        work *= 2
        lo, hi = refine(work)
        u = (u << WORD_BITS) | int(bits.below(SMALL, 1)[0])
        length += WORD_BITS


#: The exact discrete Laplace sampler (scale, bits, size) -> draws (`samplers.discrete_laplace`,
#: passed in: samplers imports this module).
Laplace = Callable[[int, BitSource, int], IntArray]


def sample(
    law: Law, bits: BitSource, size: int, laplace: Laplace, slack: Fraction = Fraction(0)
) -> IntArray:
    """``size`` exact draws of ``law``: discrete Laplace proposals around the mode (drawn in
    vectorised batches), each accepted with probability A(k) by `decide`. ``slack`` widens
    stage 1 (the tests force stage 2 with it)."""
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        need = size - filled
        batch = 2 * need + 2  # about 1.9 proposals per sample
        ks = law.m + laplace(law.t, bits, batch)
        us = bits.below(SMALL, batch)
        for k, u in zip(ks.tolist(), us.tolist(), strict=True):
            if k < 0 or (law.top is not None and k > law.top):
                continue
            lo, hi = fast_bounds(law, k)

            def refine(work: int, k: int = k) -> tuple[Fraction, Fraction]:
                return exact_bounds(law, k, work)

            if decide(lo - slack, hi + slack, refine, u, bits):
                out[filled] = k
                filled += 1
                if filled == size:
                    break
    return out


def _prec(top: int) -> int:
    """Working precision: ln k! ~ k·ln k needs about bit_length(k) + log2 ln k bits more than
    the 2**−90 margin; 2·WORD_BITS + 2·bit_length leaves dozens of bits to spare."""
    return 2 * WORD_BITS + 2 * max(top, 2).bit_length()


@lru_cache(maxsize=16)
def poisson_law(lam: Fraction) -> Law:
    """Poisson(λ), λ >= 64: ln f(k) = (k − m)ln λ + ln m! − ln k!, r_j = λ/j (cached: the
    set-up, ln λ and ln m!, is about 0.5 ms)."""
    m = int(lam)
    w = max(1, math.isqrt(int(lam / 2)))
    a, b = lam.numerator, lam.denominator
    ctx = _ctx(_prec(4 * m))
    ln_lam, ln_m = ctx.log(ctx.mpf(a)) - ctx.log(ctx.mpf(b)), ln_factorial(ctx, m)

    def log_f(ctx: Any, k: int) -> Any:
        return (k - m) * ln_lam + (ln_m - ln_factorial(ctx, k))

    def exact_f(k: int, prec: int) -> tuple[Fraction, Fraction]:
        if k >= m:  # λ^d/((m + 1)···k)
            den = _times(power(b, k - m, prec), product(m + 1, k + 1, prec), prec)
            return quotient(power(a, k - m, prec), den)
        num = _times(product(k + 1, m + 1, prec), power(b, m - k, prec), prec)
        return quotient(num, power(a, m - k, prec))

    t = scale(lam / (m + w + 1), Fraction(m - w) / lam)
    return Law(m, w, t, None, log_f, exact_f, ctx)


@lru_cache(maxsize=16)
def binomial_law(n: int, p: Fraction) -> Law:
    """Bin(n, p), 0 < p <= 1/2, n·p(1 − p) >= 64: mode m = ⌊(n + 1)p⌋, r_j = (n − j + 1)p
    /(j(1 − p)), ln f(k) = ln m! + ln(n − m)! − ln k! − ln(n − k)! + (k − m)ln(p/(1 − p))."""
    m = (n + 1) * p.numerator // p.denominator
    w = max(1, math.isqrt(int(n * p * (1 - p) / 2)))
    odds = p / (1 - p)
    ctx = _ctx(_prec(n))
    ln_odds = ctx.log(ctx.mpf(odds.numerator)) - ctx.log(ctx.mpf(odds.denominator))
    base = ln_factorial(ctx, m) + ln_factorial(ctx, n - m)

    def log_f(ctx: Any, k: int) -> Any:
        return (k - m) * ln_odds + (base - ln_factorial(ctx, k) - ln_factorial(ctx, n - k))

    x, y = odds.numerator, odds.denominator

    def exact_f(k: int, prec: int) -> tuple[Fraction, Fraction]:
        if k >= m:  # (n − k + 1)···(n − m)·x^d / ((m + 1)···k·y^d)
            num = _times(product(n - k + 1, n - m + 1, prec), power(x, k - m, prec), prec)
            den = _times(product(m + 1, k + 1, prec), power(y, k - m, prec), prec)
        else:
            num = _times(product(k + 1, m + 1, prec), power(y, m - k, prec), prec)
            den = _times(product(n - m + 1, n - k + 1, prec), power(x, m - k, prec), prec)
        return quotient(num, den)

    def r(j: int) -> Fraction:  # p(j)/p(j − 1)
        return Fraction(n - j + 1, j) * odds

    rho_up = r(m + w + 1) if m + w + 1 <= n else None
    rho_dn = 1 / r(m - w) if m - w - 1 >= 0 else None
    return Law(m, w, scale(rho_up, rho_dn), n, log_f, exact_f, ctx)


def poisson(
    lam: Fraction, bits: BitSource, size: int, laplace: Laplace, slack: Fraction = Fraction(0)
) -> IntArray:
    """``size`` exact Poisson(λ) draws, λ >= 64 (`poisson_law`, `sample`)."""
    return sample(poisson_law(lam), bits, size, laplace, slack)


def binomial(
    n: int,
    p: Fraction,
    bits: BitSource,
    size: int,
    laplace: Laplace,
    slack: Fraction = Fraction(0),
) -> IntArray:
    """``size`` exact Bin(n, p) draws, 0 < p <= 1/2 (`binomial_law`, `sample`)."""
    return sample(binomial_law(n, p), bits, size, laplace, slack)
