"""The GDP of a pure eps-DP round: mu(eps) = 2·Φ⁻¹(e^eps/(1 + e^eps)), the smallest mu with
G_mu <= f_(eps,0) (Dong, Roth & Su 2022; THEORY §9), rounded up for every positive float eps.
`GaussianDPFilter` prices pure-DP and bounded-range rounds by it; the costs' ``gdp()`` too.
"""

from __future__ import annotations

import math
from fractions import Fraction

from expost._validation import positive
from expost.rounding import up_exact

__all__ = ["pure_dp_mu", "pure_dp_mu_squared"]

_MU_MARGIN = 1 + Fraction(1, 2**44)  # relative, far above the few-ulp error of erfinv / ndtri
_MARGIN = 1 + Fraction(1, 2**40)  # on mu(eps)², kept as before (mu is already rounded up)


_TINY = Fraction(1, 2**20)
_SQRT_HALF_PI_UP = Fraction(math.nextafter(math.sqrt(math.pi / 2.0), math.inf))  # > sqrt(π/2)
_HUGE = 700.0  # above this, e^−eps is near the subnormals: Φ⁻¹ from its logarithm


def _mu_up(e: Fraction) -> float:
    """mu(e) rounded up, e > 0 exact (e.g. eps/2 of a subnormal eps); +inf past the floats.

    - e < 2⁻²⁰: sqrt(π/2)·e (`_SQRT_HALF_PI_UP`, rounded up exactly). mu(e)/e decreases from
      sqrt(π/2) (its series is sqrt(π/2)·(1 + (π − 4)·e²/48 + O(e⁴))), so this bounds mu(e)
      above, within a relative 2⁻⁴⁰ at e = 2⁻²⁰; scipy would see e among the subnormals, where
      ``tanh`` and ``erfinv`` keep few bits (DPCost(5e-324) was priced 0).
    - e < 1: 2·sqrt(2)·erfinv(tanh(e/2)) (no cancellation near 1/2); e <= 700:
      −2·Φ⁻¹(1/(1 + e^e)) (no rounding of the probability to 1); above: −2·Φ⁻¹ of the
      probability's logarithm −(e + log1p(e^−e)) (``ndtri_exp``: the probability itself would
      be subnormal, then 0). Each rounded up by a relative 2⁻⁴⁴ (`_MU_MARGIN`), far above the
      few-ulp error of scipy's ``erfinv`` / ``ndtri`` / ``ndtri_exp``.
    """
    from scipy.special import erfinv, expit, ndtri, ndtri_exp  # lazy: keeps `import expost` fast

    if e < _TINY:
        return up_exact(e * _SQRT_HALF_PI_UP)
    x = float(e)  # exact: e >= 2⁻²¹ is eps or eps/2 of a float
    if x < 1.0:
        mu = float(2.0 * math.sqrt(2.0) * erfinv(math.tanh(x / 2.0)))
    elif x <= _HUGE:
        mu = float(-2.0 * ndtri(expit(-x)))
    else:
        mu = float(-2.0 * ndtri_exp(-(x + math.log1p(math.exp(-x)))))
    if not math.isfinite(mu):
        return math.inf
    return up_exact(Fraction(mu) * _MU_MARGIN)


def pure_dp_mu(eps: float) -> float:
    """mu(eps) = 2·Φ⁻¹(e^eps/(1 + e^eps)): the smallest mu with G_mu <= f_(eps,0) (THEORY §9).

    Rounded up for every positive float eps, subnormal to the largest (`_mu_up`); never 0.
    """
    return _mu_up(Fraction(positive("eps", eps)))


def pure_dp_mu_squared(e: Fraction) -> float:
    """mu(e)² enlarged by the relative margin, rounded up exactly; +inf past the floats."""
    mu = _mu_up(e)
    if math.isinf(mu):
        return math.inf
    return up_exact(Fraction(mu) ** 2 * _MARGIN)
