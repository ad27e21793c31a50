"""dp-accounting's events as costs: `cost_of(event)` (docs/your-own-mechanism.md).

A dp-accounting user describes a round by a ``DpEvent`` tree; `cost_of` turns it into the cost
a filter prices, so the same description reaches `PLDFilter`, `RenyiFilter`, `RDPFilter` or a
zCDP filter without rewriting it. Events (sensitivity 1 where dp-accounting says "noise
multiplier"; every conversion rounded to the side that charges more):

- ``GaussianDpEvent(σ)``: `GaussianCost.from_sigma(σ)` (σ carried: the Gaussian pair at σ);
- ``LaplaceDpEvent(b)``: `LaplaceCost(1/b)` (1/b rounded up);
- ``DiscreteLaplaceDpEvent(a, Δ)``: `DiscreteLaplaceCost(1/a, Δ)` (1/a rounded down);
- ``RandomizedResponseDpEvent(p, k)``: the worst pair of two inputs, as pmfs (`PairCost`):
  P = (1 − p + p/k, p/k, (k − 2)p/k), Q = (p/k, 1 − p + p/k, (k − 2)p/k), with p/k and
  (k − 2)p/k rounded down and the first mass taking the rest (its likelihood ratio only grows)
  — a pair of neighbours that *replace* one input, as dp-accounting prices it (REPLACE_ONE);
  compose it only with costs of the same neighbouring relation;
- ``ZCDpEvent(ρ)`` (ξ = 0): `ZCDPCost(ρ)`; an ``EpsilonDeltaDpEvent(ε, δ)`` where
  dp-accounting has one: `DPCost(ε, δ)`;
- ``PoissonSampledDpEvent(q, e)``: `PoissonSampled(cost_of(e), q)`;
- ``SelfComposedDpEvent(e, k)``: `Composed` of k copies; ``ComposedDpEvent(es)``: `Composed`
  of the events' costs (``NoOpDpEvent`` parts left out). A filter counts rounds: give it the
  cost of one step (a ledger record holds at most 4,096 characters, so a k-fold `Composed` is
  for pricing a whole run, not for recording it).

Any other event (sampling without replacement, tree aggregation, non-private, unsupported, …) is
refused with `InvalidParameter` naming it: no cost says what it is.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from expost.costs import Composed, PairCost, PoissonSampled
from expost.errors import InvalidParameter
from expost.filters.costs import (
    DiscreteLaplaceCost,
    DPCost,
    GaussianCost,
    LaplaceCost,
    ZCDPCost,
)
from expost.rounding import down_exact, up_exact

__all__ = ["SUPPORTED", "cost_of"]

SUPPORTED = (
    "GaussianDpEvent",
    "LaplaceDpEvent",
    "DiscreteLaplaceDpEvent",
    "RandomizedResponseDpEvent",
    "ZCDpEvent",
    "EpsilonDeltaDpEvent",
    "PoissonSampledDpEvent",
    "SelfComposedDpEvent",
    "ComposedDpEvent",
)
"""The event types `cost_of` turns into costs (by name: dp-accounting is imported lazily)."""


def _randomized_response(p: float, k: int) -> PairCost:
    """The worst pair of k-ary randomised response with noise parameter p (module docstring)."""
    if not (0.0 <= p <= 1.0) or k < 2:
        raise InvalidParameter(
            "event", f"RandomizedResponseDpEvent({p!r}, {k!r})", "needs 0 <= p <= 1, k >= 2"
        )
    other = down_exact(Fraction(p) / k)
    rest = down_exact(Fraction(p) * (k - 2) / k)
    first = up_exact(1 - Fraction(other) - Fraction(rest))
    return PairCost.from_pmfs([first, other, rest], [other, first, rest])


def _name(event: object) -> str:
    return type(event).__name__


def _refuse(event: object, why: str) -> InvalidParameter:
    return InvalidParameter("event", _name(event), f"{why} (supported: {', '.join(SUPPORTED)})")


def _parts(events: list[Any]) -> list[Any]:
    return [cost_of(e) for e in events if _name(e) != "NoOpDpEvent"]


def cost_of(event: Any) -> Any:
    """The cost of a dp-accounting ``DpEvent`` (module docstring); `InvalidParameter` naming
    any event it has no cost for."""
    name = _name(event)
    if name == "GaussianDpEvent":
        return GaussianCost.from_sigma(event.noise_multiplier)
    if name == "LaplaceDpEvent":
        return LaplaceCost(up_exact(1 / Fraction(event.noise_multiplier)))
    if name == "DiscreteLaplaceDpEvent":
        scale = down_exact(1 / Fraction(event.noise_parameter))
        return DiscreteLaplaceCost(scale, int(event.sensitivity))
    if name == "RandomizedResponseDpEvent":
        return _randomized_response(float(event.noise_parameter), int(event.num_buckets))
    if name == "ZCDpEvent":
        if float(event.xi) != 0.0:
            raise _refuse(event, "approximate zCDP (xi > 0) has no cost")
        return ZCDPCost(event.rho)
    if name == "EpsilonDeltaDpEvent":
        return DPCost(event.epsilon, event.delta)
    if name == "PoissonSampledDpEvent":
        return PoissonSampled(cost_of(event.event), event.sampling_probability)
    if name == "SelfComposedDpEvent":
        if int(event.count) < 1:
            raise _refuse(event, "a self-composition needs count >= 1")
        return Composed((cost_of(event.event),) * int(event.count))
    if name == "ComposedDpEvent":
        parts = _parts(list(event.events))
        if not parts:
            raise _refuse(event, "a composition of no private event has no cost")
        return parts[0] if len(parts) == 1 else Composed(parts)
    raise _refuse(event, "no cost describes this event")
