"""Dominating pairs as data: what `PLDFilter` prices a round by (THEORY §12).

A pair value names a pair of neighbouring output laws (P with the record, Q without) for both
neighbour directions — remove: (P, Q), add: (Q, P) — and builds its safe-sided
`expost.pld.PrivacyLossDistribution` on a loss grid (`pld`). Families with a closed-form order
say when one of them dominates another (`closed_order`: a post-processing for every γ >= 0, so
both directions); for any other two pairs `PLDFilter` decides by computation
(`expost.costs.domination`). Every pair can be Poisson-subsampled (`sampled`): remove
((1−r)Q + rP, Q), add (Q, (1−r)Q + rP) (Zhu, Dong & Wang 2022 Thm 11); subsampling at r then
at s is subsampling at r·s.

Orders (each a post-processing of the larger pair): Gaussian by larger σ (add independent
noise); Laplace by smaller ε0 (its profile grows with ε0); randomised response at ε0 (and the
discrete Laplace at Δ = 1, which is randomised response at 1/t) dominates every ε0-DP pair
(Kairouz, Oh & Viswanath 2015): Laplace, discrete Laplace (Δ/t) and bounded range at ε <= ε0;
the bounded-range pair at ε dominates every ε-bounded-range round (Durfee & Rogers 2019; docs/
theory/12-privacy-loss-distributions.md) — the bounded-range pair at ε' <= ε, and Laplace,
discrete Laplace and randomised response whose loss stays in [−ε/2, ε/2] — but not randomised
response at ε;
smaller r of any pair (keep the output with probability r'/r, else replace it by a draw from Q).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Union

import attrs
from attrs import field, frozen

from expost._validation import as_float, positive, sampling_probability, validator
from expost.errors import InvalidParameter
from expost.rounding import up_exact

if TYPE_CHECKING:
    from expost.pld import PrivacyLossDistribution

__all__ = ["FAMILIES", "ClosedPair", "Pair", "PmfPair", "ProductPair", "closed_order"]

_RATE = field(default=1.0, converter=as_float, validator=validator(sampling_probability))


def _gaussian(pair: ClosedPair, grid: float) -> PrivacyLossDistribution:
    from expost.pld import PrivacyLossDistribution  # lazy: scipy, numpy FFT

    return PrivacyLossDistribution.gaussian(pair.level, 1.0, pair.rate, value_discretization=grid)


def _laplace(pair: ClosedPair, grid: float) -> PrivacyLossDistribution:
    from expost.pld import PrivacyLossDistribution

    # Lap(ε0, 1) against Lap(0, 1): ε0 exactly
    return PrivacyLossDistribution.laplace(1.0, pair.level, pair.rate, value_discretization=grid)


def _rr(pair: ClosedPair, grid: float) -> PrivacyLossDistribution:
    from expost.pld import PrivacyLossDistribution

    return PrivacyLossDistribution.pure_dp(pair.level, pair.rate, value_discretization=grid)


def _eps_delta(pair: ClosedPair, grid: float) -> PrivacyLossDistribution:
    from expost.pld import PrivacyLossDistribution

    (delta,) = pair.extra
    return PrivacyLossDistribution.from_eps_delta(
        pair.level, delta, pair.rate, value_discretization=grid
    )


def _discrete_laplace(pair: ClosedPair, grid: float) -> PrivacyLossDistribution:
    from expost.pld import PrivacyLossDistribution

    (sensitivity,) = pair.extra
    return PrivacyLossDistribution.discrete_laplace(
        pair.level, int(sensitivity), pair.rate, value_discretization=grid
    )


def _bounded_range(pair: ClosedPair, grid: float) -> PrivacyLossDistribution:
    from expost.pld import PrivacyLossDistribution

    return PrivacyLossDistribution.bounded_range(pair.level, pair.rate, value_discretization=grid)


def _discrete_gaussian(pair: ClosedPair, grid: float) -> PrivacyLossDistribution:
    from expost.pld import PrivacyLossDistribution

    (sensitivity,) = pair.extra
    return PrivacyLossDistribution.discrete_gaussian(
        pair.level, int(sensitivity), pair.rate, value_discretization=grid
    )


FAMILIES: dict[str, Callable[[ClosedPair, float], PrivacyLossDistribution]] = {
    "gaussian": _gaussian,
    "laplace": _laplace,
    "rr": _rr,
    "eps_delta": _eps_delta,
    "discrete_laplace": _discrete_laplace,
    "discrete_gaussian": _discrete_gaussian,
    "bounded_range": _bounded_range,
}
"""Each closed family's PLD constructor (`expost.pld.PrivacyLossDistribution`): ``level`` σ/Δ
(gaussian), ε0, a scale or σ (discrete_gaussian), ``extra`` the family's further parameters
(eps_delta: (δ,); discrete_laplace, discrete_gaussian: (Δ,))."""


def _floats(value: tuple[float, ...] | list[float]) -> tuple[float, ...]:
    return tuple(float(x) for x in value)


def _family(_instance: object, _attribute: object, value: str) -> None:
    if value not in FAMILIES:
        raise InvalidParameter("family", value, f"must be one of {', '.join(FAMILIES)}")


@frozen
class ClosedPair:
    """A pair of a named family (`FAMILIES`): "gaussian" (``level`` = σ, the noise multiplier
    in units of Δ), "laplace", "rr" or "bounded_range" (``level`` = ε0), "eps_delta" (``level`` = ε, ``extra`` =
    (δ,): the worst (ε, δ) pair, Kairouz, Oh & Viswanath 2015), "discrete_laplace" (``level`` =
    the scale) and "discrete_gaussian" (``level`` = σ), each with ``extra`` = (Δ,),
    Poisson-subsampled at ``rate``."""

    family: str = field(validator=_family)
    level: float = field(converter=as_float, validator=validator(positive))
    rate: float = _RATE
    extra: tuple[float, ...] = field(default=(), kw_only=True, converter=_floats)

    def sampled(self, rate: float) -> Pair:
        """This pair on a Poisson sample at ``rate`` (rates multiply)."""
        r = up_exact(Fraction(self.rate) * Fraction(sampling_probability("sampling_prob", rate)))
        return attrs.evolve(self, rate=r)

    def pld(self, grid: float) -> PrivacyLossDistribution:
        """The safe-sided PLD of both directions on a loss grid of spacing ``grid``."""
        return FAMILIES[self.family](self, grid)


def _pmf(name: str, value: object) -> tuple[float, ...]:
    try:
        xs = tuple(float(x) for x in value)  # type: ignore[attr-defined]  # any iterable
    except (TypeError, ValueError) as err:
        raise InvalidParameter(name, type(value).__name__, "must be a sequence of floats") from err
    if not xs or any(not (math.isfinite(x) and x >= 0.0) for x in xs):
        raise InvalidParameter(name, f"{len(xs)} values", "must be finite masses >= 0")
    if abs(math.fsum(xs) - 1.0) > 1e-9:
        raise InvalidParameter(name, f"sum {math.fsum(xs)!r}", "must sum to 1 (within 1e-9)")
    return xs


def _pmf_p(value: object) -> tuple[float, ...]:
    return _pmf("p", value)


def _pmf_q(value: object) -> tuple[float, ...]:
    return _pmf("q", value)


@frozen
class PmfPair:
    """Two probability mass functions on one finite set of outcomes: ``p`` the law with the
    record, ``q`` without (as given: the floats are the laws), Poisson-subsampled at ``rate``."""

    p: tuple[float, ...] = field(converter=_pmf_p)
    q: tuple[float, ...] = field(converter=_pmf_q)
    rate: float = _RATE

    @q.validator
    def _same_outcomes(self, _attribute: object, value: tuple[float, ...]) -> None:
        if len(value) != len(self.p):
            raise InvalidParameter("q", f"{len(value)} outcomes", f"must have {len(self.p)}")

    def sampled(self, rate: float) -> Pair:
        """This pair on a Poisson sample at ``rate`` (rates multiply)."""
        r = Fraction(self.rate) * Fraction(sampling_probability("sampling_prob", rate))
        return attrs.evolve(self, rate=up_exact(r))

    def laws(self) -> tuple[list[Fraction], list[Fraction], list[Fraction]]:
        """(P, Q, M) exactly, M = (1 − r)·Q + r·P the law with the record after sampling."""
        r = Fraction(self.rate)
        p = [Fraction(x) for x in self.p]
        q = [Fraction(x) for x in self.q]
        return p, q, [(1 - r) * b + r * a for a, b in zip(p, q, strict=True)]

    def pld(self, grid: float) -> PrivacyLossDistribution:
        """The safe-sided PLD of both directions: remove (M, Q), add (Q, M)
        (`expost.pld.PrivacyLossDistribution.from_pmfs`)."""
        from expost.pld import PrivacyLossDistribution

        return PrivacyLossDistribution.from_pmfs(
            self.p, self.q, self.rate, value_discretization=grid
        )


@frozen
class ProductPair:
    """Several mechanisms released in one round on the same data: the product of their pairs
    (each direction composed separately; Zhu, Dong & Wang 2022 Thm 10)."""

    parts: tuple[Pair, ...] = field(converter=tuple)

    def sampled(self, rate: float) -> Pair:
        """The product on one shared Poisson sample: Gaussian parts merge into one Gaussian
        (μ² adds); other products are not subsampled part by part (`InvalidParameter`)."""
        sigmas = [p.level for p in self.parts if isinstance(p, ClosedPair)]
        if all(
            isinstance(p, ClosedPair) and p.family == "gaussian" and p.rate == 1.0
            for p in self.parts
        ):
            inv = sum((1 / Fraction(s) ** 2 for s in sigmas), Fraction(0))
            sigma = math.sqrt(float(1 / inv))
            while 1 / Fraction(sigma) ** 2 < inv:
                sigma = math.nextafter(sigma, 0.0)
            return ClosedPair("gaussian", sigma).sampled(rate)
        raise InvalidParameter(
            "cost",
            "a product of pairs",
            "can be Poisson-subsampled only when its parts are unsampled Gaussians (one shared "
            "sample is not the product of separately sampled pairs)",
        )

    def pld(self, grid: float) -> PrivacyLossDistribution:
        """The parts' PLDs composed (equal parts by repeated squaring: `self_compose`)."""
        counts = Counter(self.parts)
        plds = [part.pld(grid).self_compose(k) for part, k in counts.items()]
        out = plds[0]
        for other in plds[1:]:
            out = out.compose(other)
        return out


Pair = Union[ClosedPair, PmfPair, ProductPair]  # noqa: UP007  # a runtime alias


def _pure_level(pair: ClosedPair) -> Fraction | None:
    """ε0 with every loss of the pair in [−ε0, ε0], exactly, for the families that have one."""
    if pair.family in ("rr", "laplace", "bounded_range"):
        return Fraction(pair.level)
    if pair.family == "discrete_laplace":
        return Fraction(int(pair.extra[0])) / Fraction(pair.level)
    return None


def _rr_level(pair: ClosedPair) -> Fraction | None:
    """ε0 when the pair is randomised response at ε0 (so is the discrete Laplace at Δ = 1)."""
    if pair.family == "rr":
        return Fraction(pair.level)
    if pair.family == "discrete_laplace" and pair.extra == (1.0,):
        return 1 / Fraction(pair.level)
    return None


def closed_order(fixed: Pair, other: Pair) -> bool | None:
    """Whether ``fixed`` dominates ``other`` by a closed-form order (module docstring); None
    where none applies (then domination is computed)."""
    for kind in (PmfPair, ClosedPair):  # the same pair at a smaller rate
        if (
            isinstance(other, kind)
            and isinstance(fixed, kind)
            and attrs.evolve(other, rate=fixed.rate) == fixed
        ):
            return other.rate <= fixed.rate or None
    if not (isinstance(fixed, ClosedPair) and isinstance(other, ClosedPair)):
        return None
    if other.rate > fixed.rate:
        return None
    rr, pure = _rr_level(fixed), _pure_level(other)
    if rr is not None:  # every ε0-DP pair (Kairouz, Oh & Viswanath 2015)
        return (pure is not None and pure <= rr) or None
    if fixed.family == "bounded_range":  # every ε-bounded-range round: a loss spanning <= ε
        if other.family == "bounded_range":
            return other.level <= fixed.level or None
        return (pure is not None and 2 * pure <= Fraction(fixed.level)) or None
    if fixed.extra or other.extra:
        return None
    if fixed.family == "gaussian":
        return (other.family == "gaussian" and other.level >= fixed.level) or None
    if fixed.family == "laplace":
        return (other.family == "laplace" and other.level <= fixed.level) or None
    return None
