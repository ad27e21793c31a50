"""Additive-noise mechanisms: Gaussian (zCDP) and Laplace (pure DP) (THEORY §2).

Each is a frozen description of the noise; the private value is an argument of ``run`` and
``run_batch``, never stored. ``run`` returns an array shaped like the value (0-d for a scalar),
``run_batch`` the same with a leading trials axis.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    check_scale,
    generator,
    point,
    positive,
    positive_int,
    validator,
)
from expost.errors import InvalidParameter
from expost.filters.costs import DPCost, GaussianCost
from expost.guarantees import ZCDP, PureDP
from expost.loss import GaussianLoss, LaplaceLoss

__all__ = ["GaussianMechanism", "LaplaceMechanism"]

FloatArray = npt.NDArray[np.float64]


def _distance(distance: float | None, sensitivity: float) -> float:
    return sensitivity if distance is None else positive("distance", distance)


class _Additive(ABC):
    """f(x) + noise: ``run`` shaped like the value, ``run_batch`` with a leading trials axis."""

    __slots__ = ()

    @abstractmethod
    def _noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> FloatArray:
        """Independent noise of the given shape."""

    def run(self, value: npt.ArrayLike, rng: np.random.Generator) -> FloatArray:
        """One release f(x) + noise, shaped like ``value``."""
        v = point("value", value)
        return np.asarray(v + self._noise(generator(rng), v.shape))

    def run_batch(self, value: npt.ArrayLike, trials: int, rng: np.random.Generator) -> FloatArray:
        """``trials`` independent releases, shape (trials, *value.shape)."""
        v = point("value", value)
        return v + self._noise(generator(rng), (positive_int("trials", trials), *v.shape))


def _rounded_up_sigma(sensitivity: float, rho: float) -> float:
    """The least float σ >= Δ/sqrt(2·rho) with Δ²/(2σ²) <= rho exactly (`GaussianMechanism.sigma`);
    0 or inf as computed when not representable (the constructor's check refuses them)."""
    sigma = sensitivity / math.sqrt(2.0 * rho)
    if not 0.0 < sigma < math.inf:
        return sigma
    while Fraction(sensitivity) ** 2 > 2 * Fraction(rho) * Fraction(sigma) ** 2:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


@frozen
class GaussianMechanism(_Additive):
    """f(x) + N(0, σ²I) with σ = Δ2/sqrt(2·rho): rho-zCDP for ℓ2 sensitivity Δ2 (THEORY §2).

    Its privacy loss at neighbour distance Δ2 is exactly N(rho, 2rho).
    """

    sensitivity: float = field(converter=as_float, validator=validator(positive))
    rho: float = field(converter=as_float, validator=validator(positive))
    _sigma: float = field(init=False, repr=False, eq=False)  # derived once: see `sigma`

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_sigma", _rounded_up_sigma(self.sensitivity, self.rho))
        check_scale("rho", self.rho, self._sigma)

    @classmethod
    def from_sigma(cls, sensitivity: float, sigma: float) -> GaussianMechanism:
        """The mechanism with noise standard deviation ``sigma``: rho = Δ2²/(2σ²)."""
        s = positive("sensitivity", sensitivity)
        with np.errstate(over="ignore", under="ignore"):
            rho = float(np.float64(s) ** 2 / (2.0 * np.float64(positive("sigma", sigma)) ** 2))
        if not (math.isfinite(rho) and rho > 0.0):
            raise InvalidParameter("sigma", sigma, f"gives rho = Δ²/(2σ²) = {rho!r}, not in (0, ∞)")
        return cls(s, rho)

    @property
    def sigma(self) -> float:
        """The noise standard deviation Δ2/sqrt(2·rho), rounded up: never less noise than rho pays.

        The float quotient can fall an ulp below the exact value; it is raised until
        Δ2²/(2σ²) <= rho holds in exact arithmetic.
        """
        return self._sigma

    def guarantee(self) -> ZCDP:
        """rho-zCDP (Bun–Steinke; THEORY §2)."""
        return ZCDP(self.rho)

    def cost(self) -> GaussianCost:
        """The round as a cost: GaussianCost(rho), a zCDP round that is also Δ/σ-GDP (THEORY §9)."""
        return GaussianCost(self.rho)

    def loss(self, distance: float | None = None) -> GaussianLoss:
        """The loss for neighbours at ℓ2 distance d (default Δ2): N(r, 2r), r = d²/(2σ²) = rho·(d/Δ2)²."""
        d = _distance(distance, self.sensitivity)
        return GaussianLoss(self.rho * (d / self.sensitivity) ** 2)

    def _noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> FloatArray:
        return rng.normal(0.0, self.sigma, shape)


@frozen
class LaplaceMechanism(_Additive):
    """f(x) + Lap(b) per coordinate with b = Δ1/eps: eps-DP for ℓ1 sensitivity Δ1 (THEORY §2).

    Its privacy loss lies in [−Δ1/b, Δ1/b] = [−eps, eps].
    """

    sensitivity: float = field(converter=as_float, validator=validator(positive))
    eps: float = field(converter=as_float, validator=validator(positive))

    def __attrs_post_init__(self) -> None:
        check_scale("eps", self.eps, self.scale)

    @property
    def scale(self) -> float:
        """The Laplace scale b = Δ1/eps."""
        return self.sensitivity / self.eps

    def guarantee(self) -> PureDP:
        """eps-DP (THEORY §2)."""
        return PureDP(self.eps)

    def cost(self) -> DPCost:
        """The round as a cost: DPCost(eps) (THEORY §2)."""
        return DPCost(self.eps)

    def loss(self, distance: float | None = None) -> LaplaceLoss:
        """The loss for neighbours at ℓ1 distance d (default Δ1): bounded by d/b (APC Lemma C.1)."""
        return LaplaceLoss(self.scale, _distance(distance, self.sensitivity))

    def _noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> FloatArray:
        return rng.laplace(0.0, self.scale, shape)
