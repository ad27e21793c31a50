"""Rényi DP of mechanisms whose RDP curve is known before they run (THEORY §12; issue 35).

ε_α = D_α(P‖Q) = log(E_Q[(dP/dQ)^α])/(α−1) of each mechanism's worst pair, at any order α > 1,
rounded **up** (`expost.rounding`): evaluated in mpmath interval arithmetic (`iv_eval`) at
128 bits, the precision doubled (up to 2048) until the enclosure is within a few ulps, and the
upper end rounded up (`up_mp`); never above the simpler bound each one improves on (a minimum
of two valid bounds is one).

- Pure eps-DP (`pure_dp_renyi`): randomised response P = (e^eps, 1)/(1 + e^eps), Q reversed, is
  the worst eps-DP pair — every eps-DP pair is a post-processing of it (its trade-off function
  is f_(eps,0): Kairouz, Oh & Viswanath 2015; Blackwell's theorem, Dong, Roth & Su 2022
  Thm 2.10) and Rényi divergence obeys data processing (van Erven & Harremoës 2014 Thm 9):
  ε_α = log((e^(α·eps) + e^((1−α)·eps))/(1 + e^eps))/(α−1). At most min(eps, α·eps²/2)
  (Bun & Steinke 2016 Prop 3.3), up to 34% below it.
- The continuous Laplace mechanism on a scalar query, eps = Δ/b (`laplace_renyi`): Mironov
  2017 Prop 6, ε_α = log(α/(2α−1)·e^((α−1)·eps) + (α−1)/(2α−1)·e^(−α·eps))/(α−1), symmetric
  in the two directions and increasing in the shift, so the shift Δ is the worst neighbour.
- The Poisson-subsampled Gaussian (`subsampled_gaussian_renyi`; a DP-SGD step: rate q, noise
  multiplier σ, rho = Δ²/(2σ²)): at an integer order n (Mironov, Talwar & Zhang 2019 §3.3)
  ε_n = log(A_n)/(n−1), A_n = Σ_(k=0..n) C(n,k)·(1−q)^(n−k)·q^k·exp((k²−k)·rho), the remove
  direction D_n((1−q)Q + qP‖Q), which bounds the add direction D_n(Q‖(1−q)Q + qP) too
  (MTZ 2019 §3: A_α >= B_α; checked by numerical integration in tests/guarantees/test_renyi.py). At a fractional order α in (n, n+1): log A_α = (α−1)·ε_α is the cumulant
  generating function of the privacy loss under Q, which is convex in α (Hölder), and
  log A_1 = 0; so log A_α <= (n+1−α)·log A_n + (α−n)·log A_(n+1) — an upper bound, not the
  exact value (up to 1.8× it at small q; issue 40). The add direction's (α−1)·D_α is convex in α
  too and at most log A at the integers, so the same line bounds it.
  At q = 1 it is the Gaussian's α·rho; at every q at most α·rho (subsampling does not add
  privacy loss, the bound kept where the sum is not evaluated: orders above `MAX_ORDER`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from expost._validation import positive, renyi_order, sampling_probability
from expost.rounding import down_mp, iv_eval, up, up_exact, up_mp

__all__ = ["MAX_ORDER", "laplace_renyi", "pure_dp_renyi", "subsampled_gaussian_renyi"]

MAX_ORDER = 1024
"""The largest order at which `subsampled_gaussian_renyi` evaluates the sum (n + 1 terms); above
it the unsampled Gaussian's α·rho is returned (a valid bound)."""

_PRECISIONS = (128, 256, 512, 1024, 2048)  # bits, tried in turn (`_enclosed_up`)
_CACHE = 4096  # values kept per function: a filter prices the same rounds at the same orders

Compute = Callable[[Any], Any]


def _enclosed_up(compute: Compute) -> float | None:
    """The upper end of ``compute(iv)``'s enclosure rounded up, at the first precision at which
    it is within 4 ulps of the lower end; None if none is (then the caller's simpler bound)."""
    for prec in _PRECISIONS:
        x = iv_eval(compute, prec)
        hi, lo = up_mp(x), down_mp(x)
        if lo > 0.0 and hi <= up(lo, 4):
            return hi
    return None


def _at_most(value: float | None, bound: float) -> float:
    """The smaller of two valid upper bounds (``value`` None: not computed)."""
    return bound if value is None else min(value, bound)


def _times(alpha: float, x: Fraction) -> float:
    return up_exact(Fraction(alpha) * x)


@functools.lru_cache(maxsize=_CACHE)
def _pure_dp(eps: float, alpha: float) -> float:
    def compute(iv: Any) -> Any:
        e, a = iv.mpf(eps), iv.mpf(alpha)
        moment = (iv.exp(a * e) + iv.exp((1 - a) * e)) / (1 + iv.exp(e))
        return iv.log(moment) / (a - 1)

    return _at_most(_enclosed_up(compute), min(eps, _times(alpha, Fraction(eps) ** 2 / 2)))


def pure_dp_renyi(eps: float, alpha: float) -> float:
    """ε_α of any pure ``eps``-DP mechanism: randomised response's, rounded up (module
    docstring); never above min(eps, α·eps²/2)."""
    return _pure_dp(positive("eps", eps), renyi_order(alpha))


@functools.lru_cache(maxsize=_CACHE)
def _laplace(eps: float, alpha: float) -> float:
    def compute(iv: Any) -> Any:
        e, a = iv.mpf(eps), iv.mpf(alpha)
        moment = (a * iv.exp((a - 1) * e) + (a - 1) * iv.exp(-a * e)) / (2 * a - 1)
        return iv.log(moment) / (a - 1)

    return _at_most(_enclosed_up(compute), _pure_dp(eps, alpha))


def laplace_renyi(eps: float, alpha: float) -> float:
    """ε_α of the scalar Laplace mechanism with eps = Δ/b (Mironov 2017 Prop 6), rounded up;
    never above `pure_dp_renyi` (it is eps-DP)."""
    return _laplace(positive("eps", eps), renyi_order(alpha))


def _log_moment(iv: Any, rho: float, q: float, n: int) -> Any:
    """log A_n (module docstring) as an interval; term k from term k−1 by the exact ratios
    (n−k+1)/k·q/(1−q) and exp(2(k−1)·rho) (one exp: no n exps)."""
    if n == 1:
        return iv.mpf(0)
    p, r = iv.mpf(q), iv.mpf(rho)
    ratio, step_growth = p / (1 - p), iv.exp(2 * r)
    weight, growth, step = (1 - p) ** n, iv.mpf(1), iv.mpf(1)
    total = weight
    for k in range(1, n + 1):
        weight = weight * ratio * (n - k + 1) / k
        growth, step = growth * step, step * step_growth  # exp(k(k−1)·rho), exp(2k·rho)
        total = total + weight * growth
    return iv.log(total)


@functools.lru_cache(maxsize=_CACHE)
def _subsampled(rho: float, q: float, alpha: float) -> float:
    gaussian = _times(alpha, Fraction(rho))
    if q == 1.0 or alpha > MAX_ORDER:
        return gaussian
    n = math.floor(alpha)

    def compute(iv: Any) -> Any:
        low = _log_moment(iv, rho, q, n)
        if alpha == n:
            return low / (n - 1)
        a = iv.mpf(alpha)
        high = _log_moment(iv, rho, q, n + 1)
        return ((n + 1 - a) * low + (a - n) * high) / (a - 1)

    return _at_most(_enclosed_up(compute), gaussian)


def subsampled_gaussian_renyi(rho: float, sampling_prob: float, alpha: float) -> float:
    """ε_α of the Poisson-subsampled Gaussian: rate ``sampling_prob`` = q, rho = Δ²/(2σ²) of
    the Gaussian it samples for (``SubsampledGaussianCost.rho``), both neighbour directions;
    exact at integer orders (MTZ 2019 §3.3), a proven upper bound between them (module
    docstring), rounded up; never above α·rho."""
    r = positive("rho", rho)
    return _subsampled(r, sampling_probability("sampling_prob", sampling_prob), renyi_order(alpha))
