"""Exact additive mechanisms on integers: discrete Laplace (pure DP) and discrete Gaussian (zCDP).

The float siblings (`LaplaceMechanism`, `GaussianMechanism`) add float noise, and float samplers
leak (Mironov, CCS 2012; tests/test_float_leak.py): these add integer noise drawn exactly from a
bit source (`expost.exact`, Canonne–Kamath–Steinke 2020), so the guarantee holds for the integers
released. Values and sensitivities are integers; parameters are exact rationals (`Fraction`;
floats are converted exactly). Reported eps and rho are floats rounded up from the exact values.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    exact_integers,
    exact_sensitivity,
    int_array,
    positive_int,
    rational,
)
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
    "add_exact",
    "exact_sensitivity",
    "integers",
    "rational",
]

IntArray = npt.NDArray[np.int64]


def integers(name: str, value: npt.ArrayLike) -> IntArray:
    """``value`` as exact integers (`expost._validation.exact_integers`), any non-empty shape."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InvalidParameter(name, value, "must be an array of integers") from exc
    if arr.ndim <= 1 and arr.size:
        return exact_integers(name, value)
    return exact_integers(name, arr.reshape(-1)).reshape(arr.shape)


def add_exact(value: IntArray, noise: IntArray) -> IntArray:
    """value + noise in exact integer arithmetic: int64 when every sum fits, else Python ints."""
    if value.dtype == noise.dtype == np.int64 and _within(value) and _within(noise):
        return value + noise
    return int_array(value.astype(object) + noise.astype(object))


def _within(a: IntArray) -> bool:
    """Every entry in (−2**62, 2**62): sums of two such fit in int64."""
    return a.size == 0 or (int(a.min()) > -(2**62) and int(a.max()) < 2**62)


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
        """One release f(x) + noise, shaped like the integer ``value`` (any non-empty shape),
        added exactly (`add_exact`)."""
        v = integers("value", value)
        return add_exact(v, self._noise(bits, v.size).reshape(v.shape))

    def run_batch(self, value: npt.ArrayLike, trials: int, bits: BitSource) -> IntArray:
        """``trials`` independent releases, shape (trials, *value.shape)."""
        v = integers("value", value)
        n = positive_int("trials", trials)
        noise = self._noise(bits, n * v.size).reshape((n, *v.shape))
        return add_exact(np.broadcast_to(v, noise.shape), noise)


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
