"""Additive-noise mechanisms: Gaussian (zCDP) and Laplace (pure DP) (THEORY §2).

One class per idea; the noise is a property of the mechanism (issue 28, item 4). With
``exact=False`` (the default) the noise is float, drawn from a numpy Generator. With
``exact=True`` it is integer noise drawn exactly from a `BitSource` (`expost.exact`,
Canonne–Kamath–Steinke 2020): float samplers leak (Mironov, CCS 2012; tests/session/test_float_leak.py),
exact ones release integers for which the guarantee holds as proven. Exact mechanisms take an
integer sensitivity and exact rational parameters (`Fraction`; a float is taken exactly, never
rounded), release integer values plus integer noise exactly (`add_exact`), and report eps and rho
rounded up from the exact values.

Each is a frozen description of the noise; the private value is an argument of ``run`` and
``run_batch``, never stored. ``run`` returns an array shaped like the value (0-d for a scalar),
``run_batch`` the same with a leading trials axis.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from fractions import Fraction
from typing import Any, NoReturn, cast

import numpy as np
import numpy.typing as npt
from attrs import Converter, field, frozen

from expost._validation import (
    as_float,
    check_scale,
    exact_sensitivity,
    flag,
    noise_source,
    point,
    positive,
    positive_int,
    rational,
    validator,
)
from expost.errors import InvalidParameter
from expost.exact.bits import BitSource
from expost.exact.samplers import discrete_gaussian, discrete_laplace
from expost.filters.costs import (
    DiscreteGaussianCost,
    DiscreteLaplaceCost,
    DPCost,
    GaussianCost,
    LaplaceCost,
    ZCDPCost,
)
from expost.guarantees import ZCDP, PureDP
from expost.loss import GaussianLoss, LaplaceLoss, sigma_of_rho
from expost.mechanisms.discrete_gaussian_dp import discrete_gaussian_delta, discrete_gaussian_eps
from expost.mechanisms.exact_additive import add_exact, integers
from expost.rounding import sqrt_up_exact, up_exact

__all__ = ["GaussianMechanism", "LaplaceMechanism"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
RoundCost = DPCost | ZCDPCost | DiscreteLaplaceCost | DiscreteGaussianCost


def _distance(distance: float | None, sensitivity: float) -> float:
    return sensitivity if distance is None else positive("distance", distance)


def _exact(mechanism: Any) -> bool:
    """The ``exact`` flag, checked before the converters below read it (attrs validates after
    converting)."""
    return flag("exact", mechanism.exact)


def _sensitivity(value: Any, self: Any) -> float | int:
    """A positive float, or a positive integer for exact noise (`exact_sensitivity`)."""
    return exact_sensitivity(value) if _exact(self) else positive("sensitivity", as_float(value))


def _level(name: str) -> Converter[Any, float | Fraction]:
    """rho or eps: a positive float, or an exact positive `Fraction` for exact noise."""

    def convert(value: Any, self: Any) -> float | Fraction:
        return rational(name, value) if _exact(self) else positive(name, as_float(value))

    return Converter(convert, takes_self=True)


def _reported(level: float | Fraction) -> float:
    """A level as reported: a float as stored, an exact one rounded up (`up_exact`). Exact noise
    keeps its levels as Fractions, float noise as floats (the converters above), so below
    ``isinstance(level, Fraction)`` is ``self.exact``, narrowed for the type checker."""
    return up_exact(level) if isinstance(level, Fraction) else level


def _no_loss_law(noise: str) -> NoReturn:
    raise InvalidParameter(
        "exact",
        True,
        f"loss() is the law of the float {noise} noise's privacy loss; the discrete noise's "
        "loss is a different (discrete) law that this library does not provide: use guarantee()",
    )


class _Additive(ABC):
    """f(x) + noise: ``run`` shaped like the value, ``run_batch`` with a leading trials axis."""

    __slots__ = ()
    exact: bool

    @abstractmethod
    def _noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> FloatArray:
        """Independent float noise of the given shape."""

    @abstractmethod
    def _exact_noise(self, bits: BitSource, size: int) -> IntArray:
        """``size`` independent exact integer draws."""

    @abstractmethod
    def cost(self) -> DPCost | ZCDPCost:
        """The round as a cost."""

    def cost_for(self, size: int) -> RoundCost:
        """The cost of a release of ``size`` coordinates (`cost` unless a subclass knows a
        tighter pair for some sizes)."""
        return self.cost()

    def run(
        self, value: npt.ArrayLike, source: np.random.Generator | BitSource
    ) -> npt.NDArray[Any]:
        """One release f(x) + noise, shaped like ``value``; ``source`` a numpy Generator for float
        noise, a `BitSource` for exact noise (then ``value`` is integer, any non-empty shape, and
        the sum is exact: `add_exact`)."""
        src = noise_source(self.exact, source)  # checked against the noise: cast below
        if self.exact:
            v = integers("value", value)
            return add_exact(v, self._exact_noise(cast("BitSource", src), v.size).reshape(v.shape))
        f = point("value", value)
        return np.asarray(f + self._noise(cast("np.random.Generator", src), f.shape))

    def run_batch(
        self, value: npt.ArrayLike, trials: int, source: np.random.Generator | BitSource
    ) -> npt.NDArray[Any]:
        """``trials`` independent releases, shape (trials, *value.shape)."""
        src = noise_source(self.exact, source)  # checked against the noise: cast below
        n = positive_int("trials", trials)
        if self.exact:
            v = integers("value", value)
            noise = self._exact_noise(cast("BitSource", src), n * v.size).reshape((n, *v.shape))
            return add_exact(np.broadcast_to(v, noise.shape), noise)
        f = point("value", value)
        return f + self._noise(cast("np.random.Generator", src), (n, *f.shape))


@frozen
class GaussianMechanism(_Additive):
    """f(x) + noise of variance σ² = Δ2²/(2·rho) per coordinate: rho-zCDP for ℓ2 sensitivity Δ2.

    Float noise (``exact=False``): N(0, σ²I), σ rounded up (`sigma`); rho-zCDP (Bun–Steinke;
    THEORY §2), and its privacy loss at neighbour distance Δ2 is exactly N(rho, 2rho).

    Exact noise (``exact=True``): the discrete Gaussian N_Z(0, σ²), P(z) ∝ exp(−z²/(2σ²)), on
    integer f (CKS Alg. 3), σ² = Δ2²/(2·rho) exactly for an integer Δ2 and an exact rho. rho-zCDP
    (CKS Thm 4 for one coordinate; the coordinates are independent, so rho adds over them as for
    the continuous Gaussian). Its privacy loss (2YΔ + Δ²)/(2σ²), Y ~ N_Z(0, σ²), is a discrete
    variable, not N(rho, 2rho): it is not claimed mu-GDP, so its cost is a `ZCDPCost` (`cost`),
    and on one coordinate a `DiscreteGaussianCost`, priced by `PLDFilter` at its own pair
    (`cost_for`).
    """

    exact: bool = field(default=False, kw_only=True, validator=validator(flag))
    sensitivity: float | int = field(
        converter=Converter(_sensitivity, takes_self=True),  # type: ignore[misc]  # mypy attrs plugin: no Converter
    )
    rho: float | Fraction = field(converter=_level("rho"))  # type: ignore[misc]  # mypy attrs plugin: no Converter
    # derived once: σ (float noise; exact noise: None, `sigma` computes it when asked) and σ²
    _sigma: float | None = field(init=False, repr=False, eq=False)
    _sigma2: Fraction = field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if isinstance(self.rho, Fraction):
            sigma2 = Fraction(int(self.sensitivity) ** 2) / (2 * self.rho)
            object.__setattr__(self, "_sigma", None)
            object.__setattr__(self, "_sigma2", sigma2)
            return
        sigma = sigma_of_rho(self.rho, self.sensitivity)
        object.__setattr__(self, "_sigma", sigma)
        check_scale("rho", self.rho, sigma)
        object.__setattr__(self, "_sigma2", Fraction(sigma) ** 2)

    @classmethod
    def from_sigma(
        cls, sensitivity: float, sigma: float | Fraction, *, exact: bool = False
    ) -> GaussianMechanism:
        """The mechanism with noise standard deviation ``sigma``: rho = Δ2²/(2σ²) (exact noise:
        σ² = σ·σ exactly, `from_sigma2`)."""
        if flag("exact", exact):
            return cls.from_sigma2(sensitivity, rational("sigma", sigma) ** 2, exact=True)
        s = positive("sensitivity", sensitivity)
        with np.errstate(over="ignore", under="ignore"):
            rho = float(np.float64(s) ** 2 / (2.0 * np.float64(positive("sigma", sigma)) ** 2))
        if not (math.isfinite(rho) and rho > 0.0):
            raise InvalidParameter("sigma", sigma, f"gives rho = Δ²/(2σ²) = {rho!r}, not in (0, ∞)")
        return cls(s, rho)

    @classmethod
    def from_sigma2(
        cls, sensitivity: float, sigma2: float | Fraction, *, exact: bool = False
    ) -> GaussianMechanism:
        """The mechanism with noise variance ``sigma2``: exact noise has σ² = ``sigma2`` exactly
        (rho = Δ2²/(2σ²) kept exact, a float taken exactly); float noise `from_sigma` of
        sqrt(sigma2)."""
        if flag("exact", exact):
            d = exact_sensitivity(sensitivity)
            return cls(d, Fraction(d * d) / (2 * rational("sigma2", sigma2)), exact=True)
        return cls.from_sigma(sensitivity, math.sqrt(positive("sigma2", sigma2)))

    @property
    def sigma(self) -> float:
        """The noise standard deviation sqrt(σ²), rounded up: never less noise than rho pays.

        Float noise: Δ2/sqrt(2·rho), raised from the float quotient until Δ2²/(2σ²) <= rho holds
        in exact arithmetic; this is the σ drawn with. Exact noise: the least float >=
        sqrt(`sigma2`), for display (the sampler uses σ² exactly).
        """
        return sqrt_up_exact(self._sigma2) if self._sigma is None else self._sigma

    @property
    def sigma2(self) -> Fraction:
        """The variance parameter σ² of the noise drawn, exactly: Δ2²/(2·rho) for exact noise,
        the square of the float `sigma` for float noise."""
        return self._sigma2

    def guarantee(self) -> ZCDP:
        """rho-zCDP (Bun–Steinke; THEORY §2. Exact noise: CKS Thm 4, rho rounded up)."""
        return ZCDP(_reported(self.rho))

    def cost(self) -> GaussianCost | ZCDPCost:
        """The round as a cost. Float noise: GaussianCost(rho), a zCDP round that is also
        Δ/σ-GDP (THEORY §9). Exact noise: ZCDPCost(rho), rho rounded up: the discrete Gaussian
        is rho-zCDP (CKS Thm 4) but not claimed GDP (its loss is not N(rho, 2rho)), so
        `GaussianDPFilter` refuses it and every zCDP-based filter charges the same rho."""
        if isinstance(self.rho, Fraction):
            return ZCDPCost(up_exact(self.rho))
        return GaussianCost(self.rho)

    def cost_for(self, size: int) -> RoundCost:
        """The cost of a release of ``size`` coordinates: exact noise on one coordinate is a
        `DiscreteGaussianCost` (σ the least float >= sqrt(σ²), rho as in `cost`), priced by
        `PLDFilter` at the discrete Gaussian pair; otherwise `cost` (for a vector the pair of
        one coordinate at Δ2 is not claimed to dominate: zCDP, rho adding over coordinates)."""
        if size == 1 and isinstance(self.rho, Fraction):
            return DiscreteGaussianCost(self.sigma, int(self.sensitivity), rho=up_exact(self.rho))
        return self.cost()

    def loss(self, distance: float | None = None) -> GaussianLoss:
        """The loss for neighbours at ℓ2 distance d (default Δ2): N(r, 2r), r = d²/(2σ²) =
        rho·(d/Δ2)². Float noise only: exact noise is refused (its loss law is discrete)."""
        if isinstance(self.rho, Fraction):
            _no_loss_law("Gaussian")
        d = _distance(distance, self.sensitivity)
        return GaussianLoss(self.rho * (d / self.sensitivity) ** 2)

    def delta_for_eps(self, eps: float) -> float:
        """delta(eps) at neighbour distance Δ2, rounded up. Float noise: the analytic Gaussian
        (Balle–Wang 2018, `GaussianLoss.delta_for_eps`). Exact noise, on a scalar query: exactly
        by CKS Thm 7 (`discrete_gaussian_dp.discrete_gaussian_delta`; σ² <= 1e10)."""
        if isinstance(self.rho, Fraction):
            return discrete_gaussian_delta(self.sigma2, int(self.sensitivity), eps)
        return self.loss().delta_for_eps(eps)

    def eps_for_delta(self, delta: float) -> float:
        """The smallest eps with delta_for_eps(eps) <= delta, rounded up (exact noise: a scalar
        query, CKS Thm 7; for vector queries use the zCDP guarantee, `guarantee`)."""
        if isinstance(self.rho, Fraction):
            return discrete_gaussian_eps(self.sigma2, int(self.sensitivity), delta)
        return self.loss().eps_for_delta(delta)

    def _noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> FloatArray:
        return rng.normal(0.0, self.sigma, shape)

    def _exact_noise(self, bits: BitSource, size: int) -> IntArray:
        return discrete_gaussian(self.sigma2, bits, size)


@frozen
class LaplaceMechanism(_Additive):
    """f(x) + Laplace noise of scale b = Δ1/eps per coordinate: eps-DP for ℓ1 sensitivity Δ1.

    Float noise (``exact=False``): Lap(b); its privacy loss lies in [−Δ1/b, Δ1/b] = [−eps, eps]
    (THEORY §2). Exact noise (``exact=True``): the discrete Laplace law P(z) ∝ exp(−|z|/b) on
    integer f (CKS Alg. 2), eps exact, Δ1 an integer: the two-sided geometric mechanism
    (Ghosh–Roughgarden–Sundararajan 2009; CKS Sec. 2), eps-DP since between neighbours the pmf
    ratio of every integer output is at most exp(Δ1/b) = e^eps exactly and the support (all
    integers) is the same. Both cost DPCost(eps); on one coordinate float noise costs
    `LaplaceCost` and exact noise `DiscreteLaplaceCost`, each priced by `PLDFilter` at its own
    pair (`cost_for`).
    """

    exact: bool = field(default=False, kw_only=True, validator=validator(flag))
    sensitivity: float | int = field(
        converter=Converter(_sensitivity, takes_self=True),  # type: ignore[misc]  # mypy attrs plugin: no Converter
    )
    eps: float | Fraction = field(converter=_level("eps"))  # type: ignore[misc]  # mypy attrs plugin: no Converter

    def __attrs_post_init__(self) -> None:
        if isinstance(self.eps, float):
            check_scale("eps", self.eps, float(self.scale))

    @property
    def scale(self) -> float | Fraction:
        """The Laplace scale b = Δ1/eps (exact noise: a `Fraction`, exactly)."""
        if isinstance(self.eps, Fraction):
            return int(self.sensitivity) / self.eps
        return self.sensitivity / self.eps

    def guarantee(self) -> PureDP:
        """eps-DP (THEORY §2; exact noise: CKS Alg. 2, eps rounded up)."""
        return PureDP(_reported(self.eps))

    def cost(self) -> DPCost:
        """The round as a cost: DPCost(eps), the same for both noises (eps rounded up)."""
        return DPCost(_reported(self.eps))

    def cost_for(self, size: int) -> RoundCost:
        """The cost of a release of ``size`` coordinates, on one coordinate at its own pair
        (THEORY §12): `LaplaceCost` for float noise, `DiscreteLaplaceCost` for exact noise
        (scale the least float >= Δ1/eps, eps as in `cost`); `cost` otherwise (neither scalar
        pair is claimed for a vector query: randomised response at eps)."""
        if size != 1:
            return self.cost()
        if isinstance(self.eps, Fraction):
            scale = up_exact(Fraction(self.scale))
            return DiscreteLaplaceCost(scale, int(self.sensitivity), eps=up_exact(self.eps))
        return LaplaceCost(self.eps)

    def loss(self, distance: float | None = None) -> LaplaceLoss:
        """The loss for neighbours at ℓ1 distance d (default Δ1): bounded by d/b (APC Lemma C.1).
        Float noise only: exact noise is refused (its loss law is discrete)."""
        if isinstance(self.eps, Fraction):
            _no_loss_law("Laplace")
        return LaplaceLoss(float(self.scale), _distance(distance, self.sensitivity))

    def _noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> FloatArray:
        return rng.laplace(0.0, float(self.scale), shape)

    def _exact_noise(self, bits: BitSource, size: int) -> IntArray:
        return discrete_laplace(self.scale, bits, size)
