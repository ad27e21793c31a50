"""Exact additive mechanisms on integers: discrete Laplace (pure DP) and discrete Gaussian (zCDP).

The float siblings (`LaplaceMechanism`, `GaussianMechanism`) add float noise, and float samplers
leak (Mironov, CCS 2012; tests/test_float_leak.py): these add integer noise drawn exactly from a
bit source (`expost.exact`, Canonne–Kamath–Steinke 2020), so the guarantee holds for the integers
released. Values and sensitivities are integers; parameters are exact rationals (`Fraction`;
floats are converted exactly). Reported eps and rho are floats rounded up from the exact values.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import positive_int
from expost.errors import InvalidParameter
from expost.exact.bits import BitSource
from expost.exact.samplers import discrete_gaussian, discrete_laplace
from expost.filters.costs import DPCost, ZCDPCost
from expost.guarantees import ZCDP, PureDP
from expost.mechanisms.discrete_gaussian_dp import discrete_gaussian_delta, discrete_gaussian_eps
from expost.rounding import up_exact

__all__ = [
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "exact_sensitivity",
    "integers",
    "rational",
]

IntArray = npt.NDArray[np.int64]


def rational(name: str, value: object) -> Fraction:
    """``value`` as an exact positive `Fraction` (a float is converted exactly, never rounded)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise InvalidParameter(name, value, "must be an int, a float or a Fraction")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidParameter(name, value, "must be finite")
    q = Fraction(value)
    if q <= 0:
        raise InvalidParameter(name, value, "must be > 0")
    return q


def integers(name: str, value: npt.ArrayLike) -> IntArray:
    """``value`` as an int64 array; refuses anything that is not integer-valued."""
    v = np.asarray(value)
    if v.dtype.kind not in "iub":
        raise InvalidParameter(name, value, "must be integers (exact mechanisms release integers)")
    return v.astype(np.int64)


def exact_sensitivity(value: object) -> int:
    """A positive integer sensitivity; an integral float (1.0) is taken as its int."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameter("sensitivity", value, "must be a positive integer")
    return positive_int("sensitivity", value)


def _eps(value: Fraction | float) -> Fraction:
    return rational("eps", value)


def _sigma2(value: Fraction | float) -> Fraction:
    return rational("sigma2", value)


class _ExactAdditive(ABC):
    """f(x) + integer noise: ``run`` shaped like the value, ``run_batch`` with a trials axis."""

    __slots__ = ()

    @abstractmethod
    def _noise(self, bits: BitSource, size: int) -> IntArray:
        """``size`` draws of the noise."""

    def run(self, value: npt.ArrayLike, bits: BitSource) -> IntArray:
        """One release f(x) + noise, shaped like the integer ``value``."""
        v = integers("value", value)
        return v + self._noise(bits, v.size).reshape(v.shape)

    def run_batch(self, value: npt.ArrayLike, trials: int, bits: BitSource) -> IntArray:
        """``trials`` independent releases, shape (trials, *value.shape)."""
        v = integers("value", value)
        n = positive_int("trials", trials)
        return v + self._noise(bits, n * v.size).reshape((n, *v.shape))


@frozen
class DiscreteLaplaceMechanism(_ExactAdditive):
    """f(x) + discrete Laplace noise, P(z) ∝ exp(−|z|·eps/Δ1), on integer f (CKS Alg. 2).

    eps-DP for ℓ1 sensitivity Δ1 (the two-sided geometric mechanism, Ghosh–Roughgarden–Sundararajan
    2009; CKS Sec. 2): between neighbours the pmf ratio of every integer output is at most
    exp(Δ1/scale) = e^eps exactly, and the support (all integers) is the same. Same cost as
    `LaplaceMechanism`: DPCost(eps).
    """

    sensitivity: int = field(converter=exact_sensitivity)
    eps: Fraction = field(converter=_eps)

    @property
    def scale(self) -> Fraction:
        """The noise scale Δ1/eps, exactly."""
        return self.sensitivity / self.eps

    def guarantee(self) -> PureDP:
        """eps-DP, eps rounded up to a float."""
        return PureDP(up_exact(self.eps))

    def cost(self) -> DPCost:
        """DPCost(eps), as `LaplaceMechanism`."""
        return DPCost(up_exact(self.eps))

    def _noise(self, bits: BitSource, size: int) -> IntArray:
        return discrete_laplace(self.scale, bits, size)


@frozen
class DiscreteGaussianMechanism(_ExactAdditive):
    """f(x) + discrete Gaussian noise N_Z(0, σ²), P(z) ∝ exp(−z²/(2σ²)), on integer f (CKS Alg. 3).

    rho-zCDP with rho = Δ2²/(2σ²) for ℓ2 sensitivity Δ2 (CKS Thm 4 for one coordinate; the
    coordinates are independent, so rho adds over them as for the continuous Gaussian).

    Its cost is ZCDPCost(rho), not `GaussianCost`: the discrete Gaussian is not exactly
    mu-GDP with mu = Δ/σ (its privacy loss is a discrete variable, not N(rho, 2rho)), so
    `GaussianDPFilter`, which prices only Gaussian rounds, refuses it; every zCDP-based filter
    prices it as the continuous Gaussian of the same rho. Its exact (eps, delta) curve on a scalar
    query (CKS Thm 7), tighter than the zCDP conversion: `delta_for_eps`, `eps_for_delta`.
    """

    sensitivity: int = field(converter=exact_sensitivity)
    sigma2: Fraction = field(converter=_sigma2)

    @classmethod
    def from_rho(cls, sensitivity: float, rho: Fraction | float) -> DiscreteGaussianMechanism:
        """The mechanism with σ² = Δ2²/(2·rho) exactly (Δ2 an int; a float rho is taken exactly)."""
        return cls(
            sensitivity, Fraction(exact_sensitivity(sensitivity) ** 2) / (2 * rational("rho", rho))
        )

    @property
    def rho(self) -> float:
        """Δ2²/(2σ²), rounded up to a float."""
        return up_exact(Fraction(self.sensitivity**2) / (2 * self.sigma2))

    def guarantee(self) -> ZCDP:
        """rho-zCDP (CKS Thm 4), rho rounded up."""
        return ZCDP(self.rho)

    def cost(self) -> ZCDPCost:
        """ZCDPCost(rho): priced as a zCDP round by every filter that takes one (not as GDP)."""
        return ZCDPCost(self.rho)

    def delta_for_eps(self, eps: float) -> float:
        """delta(eps) on a scalar query, exactly by CKS Thm 7, rounded up
        (`discrete_gaussian_dp.discrete_gaussian_delta`; σ² <= 1e10)."""
        return discrete_gaussian_delta(self.sigma2, self.sensitivity, eps)

    def eps_for_delta(self, delta: float) -> float:
        """The smallest eps with delta_for_eps(eps) <= delta on a scalar query (CKS Thm 7), rounded
        up. For vector queries use the zCDP guarantee (`guarantee`)."""
        return discrete_gaussian_eps(self.sigma2, self.sensitivity, delta)

    def _noise(self, bits: BitSource, size: int) -> IntArray:
        return discrete_gaussian(self.sigma2, bits, size)
