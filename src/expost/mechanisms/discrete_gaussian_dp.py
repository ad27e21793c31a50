"""The exact (eps, delta) of the discrete Gaussian mechanism on a scalar query (CKS 2020, Thm 7).

For f(x) + Y, Y ~ N_Z(0, σ²), integer sensitivity Δ and eps >= 0,

    delta(eps) = P[Y > eps·σ²/Δ − Δ/2] − e^eps · P[Y > eps·σ²/Δ + Δ/2],

the hockey-stick divergence of the pair N_Z(0, σ²), N_Z(Δ, σ²): tight, and smaller than what the
rho = Δ²/(2σ²) zCDP conversion gives. With m the least integer above a = eps·σ²/Δ − Δ/2 and
g(z) = exp(−z²/(2σ²)), delta·S = Σ_{z >= m} g(z)·(1 − exp(eps − (2zΔ + Δ²)/(2σ²))), S = Σ_z g(z):
a sum of positive terms, free of cancellation.

Rounding: up. The terms are summed in floats relative to g(m); each term's relative error is at
most (4E + 16)·u (u = 2⁻⁵³, E its exponent: the exponent's own rounding, exp and expm1 within 4 ulps
each, the product), so the float sum is raised by that weighted error plus (log2 K + 2)·u of the
summation. The sum is cut after K = 16σ + Δ + 26 terms and the rest bounded by
(1 + σ·sqrt(π/2))·g(M)/g(m) (M the first term left out; Σ_{z>=M} g <= g(M) + ∫_M^∞ g and
erfc(x) <= exp(−x²)). S is bounded below by σ·sqrt(2π) (Poisson summation: S =
σ·sqrt(2π)·Σ_k exp(−2π²σ²k²)) or, for σ < 2, by its sum up to |z| = 40. The pieces are joined in
mpmath at 96 bits, widened by 2⁻⁶⁰ and rounded up (`expost.rounding.up_mp`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from expost._validation import nonnegative
from expost.errors import InvalidParameter
from expost.loss import eps_for_delta_of
from expost.rounding import up_mp

__all__ = ["discrete_gaussian_delta", "discrete_gaussian_eps"]

_U = 2.0**-53
_MAX_SIGMA2 = Fraction(10**10)  # the sum has about 16σ terms: σ <= 1e5 keeps it to 1.6e6
_CUT_SDS = 16  # terms kept: 16σ + Δ + 26 (the rest is below e^-128 relative)


def _arguments(sigma2: Fraction, sensitivity: int) -> tuple[Fraction, int]:
    if not 0 < sigma2 <= _MAX_SIGMA2:
        raise InvalidParameter(
            "sigma2", sigma2, f"must be in (0, {_MAX_SIGMA2}] for the exact sum (else use zCDP)"
        )
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
        raise InvalidParameter("sensitivity", sensitivity, "must be an integer >= 1")
    return sigma2, sensitivity


def _normaliser_lower(sigma2: Fraction) -> float:
    """A lower bound on S = Σ_z exp(−z²/(2σ²))."""
    if sigma2 >= 4:
        return math.sqrt(2.0 * math.pi * float(sigma2)) * (1.0 - 8.0 * _U)
    z = np.arange(1, 41, dtype=np.float64)  # σ < 2: terms beyond 40 are below e^-200
    total = 1.0 + 2.0 * float(np.exp(-(z * z) / (2.0 * float(sigma2))).sum())
    return total * (1.0 - 64.0 * _U)


def discrete_gaussian_delta(sigma2: Fraction, sensitivity: int, eps: float) -> float:
    """delta(eps) of N_Z(0, σ²) noise on a scalar query of integer sensitivity Δ (CKS Thm 7),
    rounded up (module docstring)."""
    import mpmath as mp  # lazy: keeps `import expost` fast

    s2, d = _arguments(sigma2, sensitivity)
    e = Fraction(nonnegative("eps", eps))
    a = e * s2 / d - Fraction(d, 2)
    m = math.floor(a) + 1  # the least integer z > a
    # d_z = (2zΔ + Δ²)/(2σ²) − eps > 0 for z >= m; exactly at m, then in steps of Δ/σ²
    first = float((2 * m * d + d * d) / (2 * s2) - e)
    step = float(Fraction(d) / s2)
    cut = _CUT_SDS * math.isqrt(math.ceil(s2)) + _CUT_SDS + d + 10
    k = np.arange(cut + 1, dtype=np.float64)
    exponent = (k * k + 2.0 * m * k) / (2.0 * float(s2))  # log g(m) − log g(m + k)
    terms = np.exp(-exponent) * -np.expm1(-(first + k * step))
    error = float(np.dot(terms, 4.0 * _U * np.abs(exponent) + 16.0 * _U))
    total = float(terms.sum()) * (1.0 + (math.log2(cut + 1) + 2.0) * _U) + error * (1.0 + 1e-6)
    left_out = m + cut + 1  # > 0: m >= 1 − Δ/2
    tail = (left_out * left_out - m * m) / (2.0 * float(s2))
    # the bound with 1% to spare for its own rounding; 2⁻¹⁰⁰⁰ for a first factor that underflowed
    total += 1.01 * (1.0 + math.sqrt(math.pi * float(s2) / 2.0)) * math.exp(-min(tail, 745.0))
    total += 2.0**-1000
    with mp.workprec(96):
        scale = mp.exp(-mp.mpf(m * m) / (2 * mp.mpf(s2.numerator) / s2.denominator))
        value = scale * mp.mpf(total) / mp.mpf(_normaliser_lower(s2))
        return min(up_mp(value * (1 + mp.mpf(2) ** -60)), 1.0)


def discrete_gaussian_eps(sigma2: Fraction, sensitivity: int, delta: float) -> float:
    """The smallest eps with delta(eps) <= delta (CKS Thm 7), rounded up: the profile's root,
    moved up until the rounded-up `discrete_gaussian_delta` is <= delta (`eps_for_delta_of`)."""
    _arguments(sigma2, sensitivity)
    return eps_for_delta_of(lambda e: discrete_gaussian_delta(sigma2, sensitivity, e), delta)
