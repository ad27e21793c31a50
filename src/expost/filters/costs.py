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
from fractions import Fraction
from typing import Final

from attrs import Factory, field, frozen

from expost._validation import (
    as_float,
    nonnegative,
    positive,
    positive_int,
    probability,
    validator,
)
from expost.costs.model import Mechanism, Price, times_up
from expost.costs.pairs import ClosedPair, Pair
from expost.costs.wrappers import Composed, PairCost, PoissonSampled
from expost.errors import InvalidParameter
from expost.filters._exact import rho_of_brownian
from expost.loss import rho_of_sigma, sigma_of_rho
from expost.rounding import up_exact

__all__ = [
    "BoundedRangeCost",
    "BrownianCost",
    "Composed",
    "Cost",
    "DPCost",
    "DiscreteGaussianCost",
    "DiscreteLaplaceCost",
    "ExPostCost",
    "GaussianCost",
    "LaplaceCost",
    "PairCost",
    "PoissonSampled",
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
class ZCDPCost(Mechanism):
    """A delta-approximate rho-zCDP round (APC Def 2.3): a Gaussian mechanism, a doubling run."""

    rho: float = field(converter=as_float, validator=validator(positive))
    delta: float = _DELTA

    def zcdp(self) -> Price:
        """(rho, delta) as stated (FAC Thm 1)."""
        return self.rho, self.delta


@frozen
class GaussianCost(ZCDPCost):
    """A Gaussian round: rho = Δ²/(2σ²) (a Gaussian mechanism, or Gaussian tries composed).

    A zCDP round that also says where it comes from: a Gaussian mechanism is exactly mu-GDP with
    mu = Δ/σ = sqrt(2·rho) (THEORY §9), which a general zCDP round is not, and is dominated by
    the Gaussian pair (N(1, σ²), N(0, σ²)) (THEORY §12). ``sigma``, when known (`from_sigma`,
    which sets rho = 1/(2σ²) rounded up), is the noise multiplier σ/Δ itself: the pair is built
    from it, not from rho rounded back (each representation is the one the cost declares).
    Its delta is 0.
    """

    sigma: float | None = field(default=None, kw_only=True, converter=_optional_float)

    @sigma.validator
    def _check_sigma(self, attribute: object, value: float | None) -> None:
        _optional_positive(self, attribute, value)

    def __attrs_post_init__(self) -> None:
        if self.delta != 0.0:
            raise InvalidParameter("delta", self.delta, "must be 0 for a Gaussian round")

    @classmethod
    def from_sigma(cls, sigma: float) -> GaussianCost:
        """The round with noise multiplier ``sigma`` = σ/Δ: rho = 1/(2σ²) rounded up, σ kept."""
        s = positive("sigma", sigma)
        rho = rho_of_sigma(s)
        if math.isinf(rho):
            raise InvalidParameter("sigma", sigma, "gives rho = 1/(2σ²) beyond the floats")
        return cls(rho, sigma=s)

    @property
    def mu(self) -> float:
        """sqrt(2·rho) = Δ/σ: the round is exactly mu-GDP (Dong–Roth–Su; THEORY §9)."""
        return math.sqrt(2.0 * self.rho)

    @property
    def noise_multiplier(self) -> float:
        """σ/Δ: ``sigma`` when known, else the largest float s with 1/(2s²) >= rho (a smaller σ
        is a dominating round, so pricing at it is safe)."""
        return self.sigma if self.sigma is not None else sigma_of_rho(self.rho, up=False)

    def pair(self) -> Pair:
        """The Gaussian pair at σ/Δ (`noise_multiplier`)."""
        return ClosedPair("gaussian", self.noise_multiplier)

    def gdp(self) -> float:
        """mu² = 2·rho (exact doubling of rho rounded up)."""
        return 2.0 * self.rho

    def sampled_rdp(self, rate: float, alpha: float) -> float:
        """ε_α of this Gaussian on a Poisson sample at ``rate`` (Mironov–Talwar–Zhang 2019)."""
        from expost.rdp_curves import subsampled_gaussian_renyi

        return subsampled_gaussian_renyi(self.rho, rate, alpha)


@frozen
class DPCost(Mechanism):
    """An (eps, delta)-DP round (APC Def 2.1): Laplace, AboveThreshold."""

    eps: float = field(converter=as_float, validator=validator(positive))
    delta: float = _DELTA

    def dp(self) -> Price:
        """(eps, delta) as stated."""
        return self.eps, self.delta


@frozen
class LaplaceCost(DPCost):
    """A (continuous) Laplace mechanism on a scalar query: pure eps-DP with eps = Δ1/b.

    An eps-DP round that also says where it comes from: it is dominated by the Laplace pair
    (Lap(Δ, b), Lap(0, b)) (THEORY §12), tighter than the randomised-response pair that bounds
    a general eps-DP round, and has the Laplace mechanism's Rényi curve (Mironov 2017 Prop 6).
    Vector Laplace releases and discrete (exact) Laplace noise are plain `DPCost`. Its delta
    is 0.
    """

    def __attrs_post_init__(self) -> None:
        if self.delta != 0.0:
            raise InvalidParameter("delta", self.delta, "must be 0 for a Laplace round")

    def pair(self) -> Pair:
        """The Laplace pair at eps."""
        return ClosedPair("laplace", self.eps)

    def rdp(self, alpha: float) -> float:
        """The Laplace mechanism's ε_α (`expost.rdp_curves.laplace_renyi`)."""
        from expost.rdp_curves import laplace_renyi

        return laplace_renyi(self.eps, alpha)


def _eps_of_discrete_laplace(cost: DiscreteLaplaceCost) -> float:
    """Δ/scale rounded up (the default, computed before the validators run)."""
    d, scale = positive_int("sensitivity", cost.sensitivity), positive("scale", cost.scale)
    return up_exact(Fraction(d) / Fraction(scale))


@frozen
class DiscreteLaplaceCost(Mechanism):
    """Discrete Laplace noise, P(x) ∝ e^{−|x|/scale}, on an integer query of integer
    ``sensitivity`` Δ (the secure-mode Laplace): ``eps``-DP for every eps >= Δ/scale (by
    default Δ/scale rounded up), dominated by its own pair
    (`expost.pld.PrivacyLossDistribution.discrete_laplace`) — also for neighbours at any shift
    below Δ (a log-concave location family, THEORY §12) — tighter than randomised response for
    Δ >= 2 (for Δ = 1 the loss takes ±1/scale only: it is randomised response). An exact rational
    scale is given as the least float above it: the pair's pmf bounds hold within 2u of it
    (`expost.pld.mechanisms`)."""

    scale: float = field(converter=as_float, validator=validator(positive))
    sensitivity: int = field(default=1, validator=validator(positive_int))
    eps: float = field(
        default=Factory(_eps_of_discrete_laplace, takes_self=True),
        kw_only=True,
        converter=as_float,
        validator=validator(positive),
    )

    def __attrs_post_init__(self) -> None:
        least = Fraction(self.sensitivity) / Fraction(self.scale)
        if Fraction(self.eps) < least:
            raise InvalidParameter("eps", self.eps, f"must be at least Δ/scale = {float(least)!r}")

    def dp(self) -> Price:
        """(eps, 0): at least Δ/scale, rounded up."""
        return self.eps, 0.0

    def pair(self) -> Pair:
        """The discrete Laplace pair (scale, Δ)."""
        return ClosedPair("discrete_laplace", self.scale, extra=(self.sensitivity,))


def _rho_of_discrete_gaussian(cost: DiscreteGaussianCost) -> float:
    """Δ²/(2σ²) rounded up (the default, computed before the validators run)."""
    d, sigma = positive_int("sensitivity", cost.sensitivity), positive("sigma", cost.sigma)
    return up_exact(Fraction(d * d) / (2 * Fraction(sigma) ** 2))


@frozen
class DiscreteGaussianCost(Mechanism):
    """Discrete Gaussian noise N_Z(0, σ²), P(x) ∝ e^{−x²/(2σ²)}, σ = ``sigma``, on an integer
    query of integer ``sensitivity`` Δ (the secure-mode Gaussian; Canonne, Kamath & Steinke
    2020): ``rho``-zCDP for every rho >= Δ²/(2σ²) (CKS Thm 4; by default Δ²/(2σ²) rounded up),
    and dominated by its own pair N_Z(Δ, σ²) vs N_Z(0, σ²)
    (`expost.pld.PrivacyLossDistribution.discrete_gaussian`) — also for neighbours at any shift
    below Δ (a log-concave location family, THEORY §12). Not claimed mu-GDP: its privacy loss is
    a discrete variable, not N(rho, 2rho). An exact σ² is given as the least float σ above
    sqrt(σ²): the pair's pmf bounds hold within 2u of σ (`expost.pld.mechanisms`)."""

    sigma: float = field(converter=as_float, validator=validator(positive))
    sensitivity: int = field(default=1, validator=validator(positive_int))
    rho: float = field(
        default=Factory(_rho_of_discrete_gaussian, takes_self=True),
        kw_only=True,
        converter=as_float,
        validator=validator(positive),
    )

    def __attrs_post_init__(self) -> None:
        least = Fraction(self.sensitivity**2) / (2 * Fraction(self.sigma) ** 2)
        if Fraction(self.rho) < least:
            raise InvalidParameter(
                "rho", self.rho, f"must be at least Δ²/(2σ²) = {float(least)!r} (CKS Thm 4)"
            )

    def zcdp(self) -> Price:
        """(rho, 0): at least Δ²/(2σ²), rounded up (CKS Thm 4)."""
        return self.rho, 0.0

    def pair(self) -> Pair:
        """The discrete Gaussian pair (σ, Δ)."""
        return ClosedPair("discrete_gaussian", self.sigma, extra=(self.sensitivity,))


@frozen
class BoundedRangeCost(Mechanism):
    """An eps-bounded-range round (Durfee–Rogers 2019): the exponential mechanism.

    eps is the range (eps_EM for monotone scores, 2·eps_EM otherwise, THEORY §2); such a
    round is eps-DP and eps²/8-zCDP (Cesar–Rogers 2021, APC Sec. 7.2), and dominated in both
    neighbour directions by the bounded-range pair (`expost.pld.PrivacyLossDistribution.
    bounded_range`; docs/theory/12-privacy-loss-distributions.md), tighter than randomised
    response at eps.
    """

    eps: float = field(converter=as_float, validator=validator(positive))

    def pair(self) -> Pair:
        """The worst eps-bounded-range pair."""
        return ClosedPair("bounded_range", self.eps)

    def dp(self) -> Price:
        """(eps, 0): a bounded-range round is eps-DP."""
        return self.eps, 0.0

    def zcdp(self) -> Price:
        """(eps²/8 rounded up, 0) (Cesar–Rogers 2021)."""
        from expost.filters._exact import rho_of_bounded_range

        return rho_of_bounded_range(self.eps), 0.0

    def gdp(self) -> float:
        """mu(eps/2)²: randomised response at eps/2 (`expost.filters.gaussian_dp`)."""
        from expost.gdp_conversions import pure_dp_mu_squared

        return pure_dp_mu_squared(Fraction(self.eps) / 2)  # exact: eps/2 of 5e-324 is not 0

    def rdp(self, alpha: float) -> float:
        """The smaller of the pure-DP curve and α·eps²/8 (both valid constants)."""
        from expost.rdp_curves import pure_dp_renyi

        return min(pure_dp_renyi(self.eps, alpha), times_up(alpha, Fraction(self.eps) ** 2 / 8))


@frozen
class BrownianCost(Mechanism):
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

    def brownian(self) -> tuple[float, float]:
        """(time, sensitivity)."""
        return self.time, self.sensitivity

    def zcdp(self) -> Price:
        """(Δ²/(2t) rounded up, 0) (APC Thm 5)."""
        return rho_of_brownian(self.time, self.sensitivity), 0.0

    def gdp(self) -> float:
        """mu² = Δ²/t: a Gaussian shift experiment observed up to a stopping time (THEORY §9)."""
        return 2.0 * rho_of_brownian(self.time, self.sensitivity)

    def rdp(self, alpha: float) -> None:
        """None: a realised cost, priced ex post (`ex_post_rdp`)."""
        return

    def ex_post(self) -> Price | None:
        """(ψ(t), delta) with a privacy boundary; None without one."""
        return None if self.bound is None else (self.bound, self.delta)

    def ex_post_rdp(self, alpha: float) -> float:
        """α·Δ²/(2t) (THEORY §11: the zCDP price is the release's ex-post zCDP)."""
        return times_up(alpha, rho_of_brownian(self.time, self.sensitivity))


@frozen
class ExPostCost(Mechanism):
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

    def dp(self) -> Price | None:
        """(eps_max, 0) when the round has that pure-DP level; None otherwise."""
        return None if self.eps_max is None else (self.eps_max, 0.0)

    def ex_post(self) -> Price:
        """(bound, delta) (APC Lemma B.2)."""
        return self.bound, self.delta

    def rdp(self, alpha: float) -> None:
        """None: a realised cost, priced ex post (`ex_post_rdp`)."""
        return

    def pair(self) -> None:
        """None: a realised ex-post round is not counted by a pair."""
        return

    def ex_post_rdp(self, alpha: float) -> float | None:
        """The realised bound for a pure ex-post round (delta 0; BNR Prop 4.2), else None."""
        return self.bound if self.delta == 0.0 else None


class _SubsampledGaussian:
    """``SubsampledGaussianCost``: a DP-SGD step's cost by its old name, kept as a constructor —
    one Poisson-subsampled Gaussian round, `PoissonSampled` (rate q) of `GaussianCost` (σ kept).
    ``SubsampledGaussianCost.from_sigma(σ, q)``; ``SubsampledGaussianCost(rho,
    sampling_prob=q)`` (a ledger record of format 3) takes σ from rho, rounded down."""

    __slots__ = ()
    __name__ = "SubsampledGaussianCost"

    def __call__(
        self, rho: float, delta: float = 0.0, *, sampling_prob: float = 1.0
    ) -> PoissonSampled:
        return PoissonSampled(GaussianCost(rho, delta), sampling_prob)

    def from_sigma(self, sigma: float, sampling_prob: float) -> PoissonSampled:
        """The step with noise multiplier ``sigma`` and Poisson rate ``sampling_prob``."""
        return PoissonSampled(GaussianCost.from_sigma(sigma), sampling_prob)

    def parts(self, cost: object) -> tuple[GaussianCost, float] | None:
        """(the Gaussian, its Poisson rate) when ``cost`` is such a step, else None."""
        if isinstance(cost, PoissonSampled) and isinstance(cost.of, GaussianCost):
            return cost.of, cost.sampling_prob
        return None


SubsampledGaussianCost: Final = _SubsampledGaussian()
"""The cost of one Poisson-subsampled Gaussian round (a DP-SGD step), by its old name."""

Cost = (
    ZCDPCost
    | GaussianCost
    | DPCost
    | DiscreteGaussianCost
    | DiscreteLaplaceCost
    | LaplaceCost
    | BoundedRangeCost
    | BrownianCost
    | ExPostCost
    | PoissonSampled
    | Composed
    | PairCost
)
