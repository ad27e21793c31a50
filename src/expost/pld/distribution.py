"""`PrivacyLossDistribution`: a safe-sided PLD for both neighbour directions (THEORY §12).

Each direction (remove: P the law with the record; add: the pair for the other neighbour) is
discretised from its own exact PLD (§12 (b)) and composed on its own; the larger δ is taken only
after composing (Lebeda, Regehr, Kamath & Steinke 2024: never compose a per-round maximum).
Every δ and ε reported is an upper bound (`expost.pld.discrete`, `expost.pld.discretise`).
"""

from __future__ import annotations

import functools

from attrs import field, frozen
from attrs.validators import instance_of

from expost._validation import (
    nonnegative,
    open_probability,
    positive,
    positive_int,
    probability,
    sampling_probability,
)
from expost.errors import InvalidParameter
from expost.pld.discrete import DiscreteLoss
from expost.pld.discretise import discretise
from expost.pld.pairs import (
    LossLaw,
    gaussian_laws,
    laplace_laws,
    randomised_response_law,
    ratio_up,
)

__all__ = [
    "DEFAULT_TAIL_MASS",
    "DEFAULT_VALUE_DISCRETIZATION",
    "PrivacyLossDistribution",
    "clear_caches",
]

DEFAULT_VALUE_DISCRETIZATION = 5e-4  # grid spacing h of the losses (connect the dots: error ~h²)
DEFAULT_TAIL_MASS = 1e-16  # mass each cut tail may hold (the upper one goes to +∞: into δ)
_CACHE = 256  # constructors: small arrays
_COMPOSED_CACHE = 32  # compositions and powers: arrays up to a few MB each


def _grid(h: object, tail: object) -> tuple[float, float]:
    step = positive("value_discretization", h)
    if step > 0.1:
        raise InvalidParameter("value_discretization", h, "must be <= 0.1")
    return step, open_probability("tail_mass", tail)


@frozen(eq=False, repr=False)
class PrivacyLossDistribution:
    """The PLDs of a dominating pair in both neighbour directions, discretised safely.

    ``remove`` and ``add`` are `DiscreteLoss` values (the same object for a symmetric pair).
    Constructors and compositions are cached (same arguments, same object); compose only PLDs
    with the same ``value_discretization``. Fixed-size sampling without replacement is not
    offered: the naive mixture pair does not dominate it (THEORY §12).
    """

    remove: DiscreteLoss = field(repr=False, validator=instance_of(DiscreteLoss))
    add: DiscreteLoss = field(repr=False, validator=instance_of(DiscreteLoss))

    def __repr__(self) -> str:
        d = self.remove
        return (
            f"PrivacyLossDistribution(h={d.h}, remove={d.masses.size} points, "
            f"add={self.add.masses.size} points, symmetric={self.symmetric})"
        )

    @property
    def symmetric(self) -> bool:
        """Both directions are the same law (one pair serves both)."""
        return self.remove is self.add

    @classmethod
    def gaussian(
        cls,
        sigma: float,
        sensitivity: float = 1.0,
        sampling_prob: float = 1.0,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """Gaussian noise of standard deviation ``sigma`` on a query of L2 ``sensitivity``,
        optionally on a Poisson sample at rate ``sampling_prob`` (Zhu, Dong & Wang Thm 11)."""
        mu = ratio_up(positive("sensitivity", sensitivity), positive("sigma", sigma))
        step, tail = _grid(value_discretization, tail_mass)
        return _gaussian(mu, sampling_probability("sampling_prob", sampling_prob), step, tail)

    @classmethod
    def laplace(
        cls,
        scale: float,
        sensitivity: float = 1.0,
        sampling_prob: float = 1.0,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """Scalar Laplace noise of ``scale`` b on a query of ``sensitivity``, optionally on a
        Poisson sample at rate ``sampling_prob``."""
        eps0 = ratio_up(positive("sensitivity", sensitivity), positive("scale", scale))
        step, tail = _grid(value_discretization, tail_mass)
        return _laplace(eps0, sampling_probability("sampling_prob", sampling_prob), step, tail)

    @classmethod
    def pure_dp(
        cls,
        eps: float,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """Any eps-DP round, by its dominating pair: randomised response (THEORY §12)."""
        step, tail = _grid(value_discretization, tail_mass)
        return _pure(positive("eps", eps), step, tail)

    def compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """Both rounds, each direction convolved with the same direction of ``other``."""
        if not isinstance(other, PrivacyLossDistribution):
            raise InvalidParameter("other", other, "must be a PrivacyLossDistribution")
        return _compose(self, other)

    def self_compose(self, k: int) -> PrivacyLossDistribution:
        """``k`` rounds of this PLD, by repeated squaring (about 2·log2 k convolutions)."""
        k = positive_int("k", k)
        result: PrivacyLossDistribution | None = None
        j = 0
        while k:
            if k & 1:
                power = _power(self, j)
                result = power if result is None else _compose(result, power)
            k >>= 1
            j += 1
        assert result is not None
        return result

    def delta(self, eps: float) -> float:
        """An upper bound on max over both directions of H_{e^eps}(P‖Q), eps >= 0."""
        e = nonnegative("eps", eps)
        if self.symmetric:
            return self.remove.delta(e)
        return max(self.remove.delta(e), self.add.delta(e))

    def eps(self, delta: float) -> float:
        """An upper bound on the smallest eps >= 0 at which δ(eps) <= delta in both directions
        (THEORY §12 (f)); inf if there is none."""
        d = probability("delta", delta)
        if self.symmetric:
            return self.remove.eps(d)
        return max(self.remove.eps(d), self.add.eps(d))


def _pair(remove: LossLaw, add: LossLaw, h: float, tail: float) -> PrivacyLossDistribution:
    first = discretise(remove, h, tail)
    return PrivacyLossDistribution(first, first if add is remove else discretise(add, h, tail))


@functools.lru_cache(maxsize=_CACHE)
def _gaussian(mu: float, q: float, h: float, tail: float) -> PrivacyLossDistribution:
    return _pair(*gaussian_laws(mu, q, tail), h, tail)


@functools.lru_cache(maxsize=_CACHE)
def _laplace(eps0: float, q: float, h: float, tail: float) -> PrivacyLossDistribution:
    return _pair(*laplace_laws(eps0, q), h, tail)


@functools.lru_cache(maxsize=_CACHE)
def _pure(eps0: float, h: float, tail: float) -> PrivacyLossDistribution:
    law = randomised_response_law(eps0)
    return _pair(law, law, h, tail)


@functools.lru_cache(maxsize=_COMPOSED_CACHE)
def _compose(a: PrivacyLossDistribution, b: PrivacyLossDistribution) -> PrivacyLossDistribution:
    remove = a.remove.compose(b.remove)
    if a.symmetric and b.symmetric:
        return PrivacyLossDistribution(remove, remove)
    return PrivacyLossDistribution(remove, a.add.compose(b.add))


@functools.lru_cache(maxsize=_COMPOSED_CACHE)
def _power(p: PrivacyLossDistribution, j: int) -> PrivacyLossDistribution:
    """p composed with itself 2**j times (squarings, cached)."""
    if j == 0:
        return p
    half = _power(p, j - 1)
    return _compose(half, half)


def clear_caches() -> None:
    """Forget every cached constructor and composition (memory; cold-start timings)."""
    for cached in (_gaussian, _laplace, _pure, _compose, _power):
        cached.cache_clear()
