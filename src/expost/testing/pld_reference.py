"""Exact privacy profiles in 50-digit arithmetic: references for the PLD audits (THEORY §12).

Each returns an mpmath number: the exact H_{e^ε} of a pair (P the law with the record), for
checking `expost.pld.PrivacyLossDistribution` (tests/pld/test_pld.py) and any other accountant.

- `gaussian_delta`: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018); k Gaussian rounds are
  one Gaussian round with μ√k.
- `subsampled_gaussian_delta`: Poisson subsampling at rate q of N(μ, 1) vs N(0, 1), remove
  direction ((1−q)Q + qP, Q) or add direction (Q, (1−q)Q + qP): the loss is monotone in the
  noise, so the optimal set is a half-line x > x* (remove) or x < x* (add).
- `subsampled_laplace_delta`: the same for Lap(ε0, 1) vs Lap(0, 1) (loss monotone in the noise,
  laws in closed form).
- `laplace_delta`: k in {1, 2} Laplace rounds (ε0 = Δ/b): one round in closed form, two by
  one-dimensional quadrature over the first round's continuous part.
- `randomised_response_delta`: k rounds of randomised response, a binomial sum.
"""

from __future__ import annotations

from typing import Any

import mpmath as mp

__all__ = [
    "DIGITS",
    "Mp",
    "gaussian_delta",
    "laplace_delta",
    "randomised_response_delta",
    "ratio",
    "subsampled_gaussian_delta",
    "subsampled_laplace_delta",
]

DIGITS = 50
Mp = Any  # an mpmath number


def _mpf(x: float | Mp) -> Mp:
    return mp.mpf(x)


def ratio(numerator: float, denominator: float) -> Mp:
    """numerator/denominator of two floats in 50 digits (e.g. μ = Δ/σ, ε0 = Δ/b)."""
    with mp.workdps(DIGITS):
        return mp.mpf(numerator) / mp.mpf(denominator)


def gaussian_delta(mu: Mp, eps: float, k: int = 1) -> Mp:
    """k rounds of the Gaussian pair with μ = Δ/σ: δ(ε) of μ√k."""
    with mp.workdps(DIGITS):
        m, e = _mpf(mu) * mp.sqrt(k), _mpf(eps)
        return +(mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2))


def subsampled_gaussian_delta(mu: Mp, q: float, eps: float, direction: str) -> Mp:
    """One Poisson-subsampled Gaussian round, ``direction`` "remove" or "add"."""
    with mp.workdps(DIGITS):
        m, r, e = _mpf(mu), _mpf(q), _mpf(eps)
        if direction == "remove":
            base = mp.exp(e) - (1 - r)
            x = (mp.log(base / r) + m * m / 2) / m if base > 0 else mp.ninf
            upper = (1 - r) * mp.ncdf(-x) + r * mp.ncdf(m - x) if x != mp.ninf else mp.mpf(1)
            return +(upper - mp.exp(e) * (mp.ncdf(-x) if x != mp.ninf else 1))
        base = mp.exp(-e) - (1 - r)
        if base <= 0:
            return mp.mpf(0)
        x = (mp.log(base / r) + m * m / 2) / m
        return +(mp.ncdf(x) - mp.exp(e) * ((1 - r) * mp.ncdf(x) + r * mp.ncdf(x - m)))


def subsampled_laplace_delta(eps0: Mp, q: float, eps: float, direction: str) -> Mp:
    """One Poisson-subsampled Laplace round (ε0 = Δ/b), ``direction`` "remove" or "add": the
    optimal set is x > x* (remove) or x < x* (add), where 2x − ε0 = log((e^{±ε} − (1−q))/q)."""
    with mp.workdps(DIGITS):
        e0, r, e = _mpf(eps0), _mpf(q), _mpf(eps)

        def q_above(t: Mp) -> Mp:  # Q(x > t), Q = Lap(0, 1), 0 <= t <= ε0
            return mp.exp(-t) / 2

        def p_above(t: Mp) -> Mp:  # P(x > t), P = Lap(ε0, 1), 0 <= t <= ε0
            return 1 - mp.exp(t - e0) / 2

        if direction == "remove":
            base = mp.exp(e) - (1 - r)
            g = mp.log(base / r) if base > 0 else mp.ninf
            if g >= e0:
                return mp.mpf(0)
            if g < -e0:
                return +(1 - mp.exp(e))
            x = (g + e0) / 2
            return +((1 - r) * q_above(x) + r * p_above(x) - mp.exp(e) * q_above(x))
        base = mp.exp(-e) - (1 - r)
        if base <= 0 or mp.log(base / r) <= -e0:
            return mp.mpf(0)
        x = (mp.log(base / r) + e0) / 2
        return +(1 - q_above(x) - mp.exp(e) * (1 - (1 - r) * q_above(x) - r * p_above(x)))


def _laplace_one(eps0: Mp, c: Mp) -> Mp:
    """E[(1 − e^{c − L})_+] for one Laplace round's loss L (atoms ±ε0, density on (−ε0, ε0))."""
    out = mp.mpf(0)
    if c < eps0:
        out += (1 - mp.exp(c - eps0)) / 2
        a = max(c, -eps0)
        out += (1 - mp.exp((a - eps0) / 2)) / 2
        out -= mp.exp(c - eps0 / 2) * (mp.exp(-a / 2) - mp.exp(-eps0 / 2)) / 2
    if c < -eps0:
        out += mp.exp(-eps0) * (1 - mp.exp(c + eps0)) / 2
    return out


def laplace_delta(eps0: Mp, eps: float, k: int = 1) -> Mp:
    """k in {1, 2} rounds of the Laplace pair with ε0 = Δ/b."""
    if k not in (1, 2):
        raise ValueError("k must be 1 or 2")
    with mp.workdps(DIGITS):
        e0, e = _mpf(eps0), _mpf(eps)
        if k == 1:
            return _laplace_one(e0, e)
        atoms = _laplace_one(e0, e - e0) / 2 + mp.exp(-e0) * _laplace_one(e0, e + e0) / 2
        points = sorted({-e0, e0, *(p for p in (e - e0, e + e0) if -e0 < p < e0)})
        inner = mp.quad(lambda t: mp.exp((t - e0) / 2) / 4 * _laplace_one(e0, e - t), points)
        return +(atoms + inner)


def randomised_response_delta(eps0: float, eps: float, k: int = 1) -> Mp:
    """k rounds of randomised response with parameter ε0: a binomial sum."""
    with mp.workdps(DIGITS):
        e0, e = _mpf(eps0), _mpf(eps)
        p = mp.exp(e0) / (1 + mp.exp(e0))
        total = mp.mpf(0)
        for j in range(k + 1):
            loss = (2 * j - k) * e0
            if loss > e:
                total += mp.binomial(k, j) * p**j * (1 - p) ** (k - j) * (1 - mp.exp(e - loss))
        return total
