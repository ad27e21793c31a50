"""The ex-post filter (APC Lemma B.2)."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from expost._validation import as_float, positive, probability, validator
from expost.costs.model import Mechanism
from expost.filters.base import Filter, Price
from expost.filters.costs import BrownianCost, Cost
from expost.guarantees import ApproxDP

__all__ = ["ExPostFilter"]


@frozen
class ExPostFilter(Filter):
    """The ex-post filter (APC Lemma B.2) for ex-post private rounds.

    A round is admitted only if its ex-post bound cannot exceed the remaining eps and
    Σ delta_i stays <= delta; the realised bound is charged. Prices: ExPostCost (bound,
    delta); BrownianCost with a boundary ψ: (ψ(t), delta) (BNR Thm 3.6); an eps-DP round
    (DPCost, BoundedRangeCost) is eps-ex-post private: (eps, delta). Result: (eps, delta)-DP.
    """

    _UNIT: ClassVar[str] = "eps"
    _PRICES_BY: ClassVar[tuple[str, ...]] = ("ex_post",)

    eps: float = field(converter=as_float, validator=validator(positive))
    delta: float = field(default=0.0, converter=as_float, validator=validator(probability))

    @property
    def budget(self) -> float:
        return self.eps

    @property
    def delta_budget(self) -> float:
        return self.delta

    def _rate(self, cost: Cost) -> Price | None:
        return cost.ex_post() if isinstance(cost, Mechanism) else None

    def _what(self, cost: object) -> str:
        if isinstance(cost, BrownianCost):
            return f"a Brownian mechanism without a privacy boundary ({cost!r})"
        return repr(cost)

    def guarantee(self) -> ApproxDP:
        """(eps, delta)-DP (APC Lemma B.2)."""
        return ApproxDP(self.eps, self.delta)
