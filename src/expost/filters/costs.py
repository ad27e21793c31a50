"""Costs: what a round was, as data (ARCHITECTURE "Filters guard budgets").

A cost describes a round as it happened — a Gaussian with rho, a Brownian mechanism stopped
at time t, a pure-DP round, an ex-post round — never as one filter priced it. Each filter
says which costs it accepts and what each costs in its own unit (rho, eps, ...), citing the
theorem; the ledger and a session's history keep the round's own cost.

As a *request* (before a round runs) a cost is the worst case the round may reach: for a
Brownian mechanism its grid's smallest time, for an ex-post round the largest value its
ex-post function can take. As *realised* (after it ran) it is what the round did.
"""

from __future__ import annotations

import math

from attrs import field, frozen

from expost._validation import (
    as_float,
    nonnegative,
    positive,
    probability,
    sampling_probability,
    validator,
)
from expost.errors import InvalidParameter
from expost.loss import rho_of_sigma, sigma_of_rho

__all__ = [
    "BoundedRangeCost",
    "BrownianCost",
    "Cost",
    "DPCost",
    "ExPostCost",
    "GaussianCost",
    "LaplaceCost",
    "SubsampledGaussianCost",
    "ZCDPCost",
]

_DELTA = field(default=0.0, converter=as_float, validator=validator(probability))


def _optional_nonnegative(_instance: object, attribute: object, value: object) -> None:
    if value is not None:
        nonnegative(getattr(attribute, "name", "value"), value)


def _optional_positive(_instance: object, attribute: object, value: object) -> None:
    if value is not None:
        positive(getattr(attribute, "name", "value"), value)


def _optional_float(value: float | None) -> float | None:
    return None if value is None else as_float(value)


@frozen
class ZCDPCost:
    """A delta-approximate rho-zCDP round (APC Def 2.3): a Gaussian mechanism, a doubling run."""

    rho: float = field(converter=as_float, validator=validator(positive))
    delta: float = _DELTA


@frozen
class GaussianCost(ZCDPCost):
    """A Gaussian round: rho = Δ²/(2σ²) (a Gaussian mechanism, or Gaussian tries composed).

    It is a `ZCDPCost` (every filter prices it as one) that also says where it comes from: a
    Gaussian mechanism is exactly mu-GDP with mu = Δ/σ = sqrt(2·rho) (THEORY §9), which a
    general zCDP round is not, so `GaussianDPFilter` prices only this kind. Its delta is 0.
    """

    def __attrs_post_init__(self) -> None:
        if self.delta != 0.0:
            raise InvalidParameter("delta", self.delta, "must be 0 for a Gaussian round")

    @property
    def mu(self) -> float:
        """sqrt(2·rho) = Δ/σ: the round is exactly mu-GDP (Dong–Roth–Su; THEORY §9)."""
        return math.sqrt(2.0 * self.rho)


@frozen
class SubsampledGaussianCost(GaussianCost):
    """One Poisson-subsampled Gaussian round (a DP-SGD step; THEORY §12): each record kept
    independently with probability ``sampling_prob`` = q, rows clipped to ℓ2 norm Δ and summed,
    N(0, (σ·Δ)²) added, σ the noise multiplier.

    As a `GaussianCost` its rho is 1/(2σ²) rounded up: the Gaussian mechanism without
    subsampling dominates the subsampled one (subsampling is a post-processing of the data
    before a mechanism that would be rho-zCDP and mu-GDP on any neighbours), so every filter
    that prices a Gaussian round prices this one validly; filters that know the subsampled pair
    (`PLDFilter`, RDP filters at the subsampled RDP, Mironov–Talwar–Zhang 2019) price it tighter.
    Build it with `from_sigma`.
    """

    sampling_prob: float = field(
        default=1.0, kw_only=True, converter=as_float, validator=validator(sampling_probability)
    )

    @classmethod
    def from_sigma(cls, sigma: float, sampling_prob: float) -> SubsampledGaussianCost:
        """The round with noise multiplier ``sigma`` and Poisson rate ``sampling_prob``; a
        ``sigma`` whose rho = 1/(2σ²) is beyond the floats is refused, naming ``sigma``."""
        rho = rho_of_sigma(positive("sigma", sigma))
        if math.isinf(rho):
            raise InvalidParameter("sigma", sigma, "gives rho = 1/(2σ²) beyond the floats")
        return cls(rho, sampling_prob=sampling_prob)

    @property
    def sigma(self) -> float:
        """The noise multiplier, rounded down: the largest float s with 1/(2s²) >= rho (a
        smaller σ is a dominating round, so pricing at it is safe)."""
        return sigma_of_rho(self.rho, up=False)


@frozen
class DPCost:
    """An (eps, delta)-DP round (APC Def 2.1): Laplace, AboveThreshold."""

    eps: float = field(converter=as_float, validator=validator(positive))
    delta: float = _DELTA


@frozen
class LaplaceCost(DPCost):
    """A (continuous) Laplace mechanism on a scalar query: pure eps-DP with eps = Δ1/b.

    It is a `DPCost` (every filter prices it as one) that also says where it comes from: it is
    dominated by the Laplace pair (Lap(Δ, b), Lap(0, b)) (THEORY §12), tighter than the
    randomised-response pair that bounds a general eps-DP round, which counting filters use. Vector
    Laplace releases and discrete (exact) Laplace noise are plain `DPCost`. Its delta is 0.
    """

    def __attrs_post_init__(self) -> None:
        if self.delta != 0.0:
            raise InvalidParameter("delta", self.delta, "must be 0 for a Laplace round")


@frozen
class BoundedRangeCost:
    """An eps-bounded-range round (Durfee–Rogers 2019): the exponential mechanism.

    eps is the range (eps_EM for monotone scores, 2·eps_EM otherwise, THEORY §2); such a
    round is eps-DP and eps²/8-zCDP (Cesar–Rogers 2021, APC Sec. 7.2).
    """

    eps: float = field(converter=as_float, validator=validator(positive))


@frozen
class BrownianCost:
    """A Brownian mechanism with sensitivity Δ stopped at time t (APC Def 4.4, Thm 3, Thm 5).

    Stopped at t it is Δ²/(2t)-zCDP in the filters of APC Thm 5 / Lemma 6.2. With a privacy
    boundary ψ (BNR Thm 3.6) ``bound`` = ψ(t) is its ex-post bound, failing with probability
    ``delta``; without one both stay at their defaults (None, 0).
    """

    time: float = field(converter=as_float, validator=validator(positive))
    sensitivity: float = field(default=1.0, converter=as_float, validator=validator(positive))
    bound: float | None = field(default=None, converter=_optional_float)
    delta: float = _DELTA

    @bound.validator
    def _check_bound(self, attribute: object, value: float | None) -> None:
        _optional_nonnegative(self, attribute, value)

    def __attrs_post_init__(self) -> None:
        if self.bound is None and self.delta != 0.0:
            raise InvalidParameter("delta", self.delta, "needs an ex-post bound (a boundary)")

    @classmethod
    def from_eps(cls, eps: float, sensitivity: float = 1.0) -> BrownianCost:
        """The BM stopped at privacy level eps, i.e. at time t = Δ²/eps² (cost eps²/2)."""
        e = positive("eps", eps)
        d = positive("sensitivity", sensitivity)
        return cls(d * d / (e * e), d)


@frozen
class ExPostCost:
    """An ex-post private round: its ex-post bound E and delta (APC Def 4.1).

    ``eps_max``, when given, is a pure-DP level the whole round also has (Laplace noise
    reduction: Δ1/t_min, BNR Prop 4.2), so filters without an ex-post budget can charge it as
    an eps_max-DP round; None: the round has no worst-case guarantee to fall back on.
    """

    bound: float = field(converter=as_float, validator=validator(nonnegative))
    delta: float = _DELTA
    eps_max: float | None = field(default=None, converter=_optional_float)

    @eps_max.validator
    def _check_eps_max(self, attribute: object, value: float | None) -> None:
        _optional_positive(self, attribute, value)


Cost = (
    ZCDPCost
    | GaussianCost
    | SubsampledGaussianCost
    | DPCost
    | LaplaceCost
    | BoundedRangeCost
    | BrownianCost
    | ExPostCost
)
