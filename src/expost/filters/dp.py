"""The (eps, delta)-DP filter (FAC Thm 2), evaluated as a zCDP filter."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from expost._validation import as_float, open_probability, positive, probability, validator
from expost.costs.model import Mechanism
from expost.errors import InvalidParameter
from expost.filters._exact import rho_of_brownian, rho_of_eps
from expost.filters.base import Price, RhoFilter
from expost.filters.costs import Cost
from expost.guarantees import ApproxDP, rho_for_dp
from expost.rounding import sum_up

__all__ = ["ApproxDPFilter"]


@frozen
class ApproxDPFilter(RhoFilter):
    """The (eps, delta)-DP filter (FAC Thm 2) for (eps_n, delta_n)-DP rounds.

    Admits round n+1 iff sqrt(2·log(1/delta'')·Σ eps_m²) + ½·Σ eps_m² <= eps and
    Σ delta_m <= delta' including it; result (eps, delta' + delta'')-DP. Since the left side
    is rho + 2·sqrt(rho·log(1/delta'')) with rho = Σ eps_m²/2, increasing in rho, this is the
    zCDP filter with rho_m = eps_m²/2 and budget rho* = `rho_for_dp`(eps, delta''), which is
    how it is evaluated (``spent``/``remaining`` are in rho). Prices, rounded up: DPCost
    eps²/2 with its delta; BoundedRangeCost eps²/2 (an eps-DP round); ExPostCost with
    eps_max eps_max²/2; BrownianCost Δ²/(2t) (APC Thm 5: its rho-zCDP cost, which is what
    the filter's rho form sums).
    """

    _PRICES_BY: ClassVar[tuple[str, ...]] = ("dp", "brownian")

    eps: float = field(converter=as_float, validator=validator(positive))
    delta_prime: float = field(converter=as_float, validator=validator(probability))
    delta_second: float = field(converter=as_float, validator=validator(open_probability))

    def __attrs_post_init__(self) -> None:
        if self.delta_prime + self.delta_second >= 1.0:
            raise InvalidParameter(
                "delta_second", self.delta_second, "delta_prime + delta_second must be < 1"
            )
        super().__attrs_post_init__()

    @property
    def rho_budget(self) -> float:
        """rho* solving rho* + 2·sqrt(rho*·log(1/delta'')) = eps (APC Lemma 2.1)."""
        return rho_for_dp(self.eps, self.delta_second)

    @property
    def budget(self) -> float:
        return self.rho_budget

    @property
    def delta_budget(self) -> float:
        return self.delta_prime

    def _rate(self, cost: Cost) -> Price | None:
        if not isinstance(cost, Mechanism):
            return None
        d = cost.dp()  # FAC Thm 2 is stated for DP rounds: a bounded-range one as eps-DP
        if d is not None:
            return rho_of_eps(d[0]), d[1]
        b = cost.brownian()
        return None if b is None else (rho_of_brownian(*b), 0.0)

    def guarantee(self) -> ApproxDP:
        """(eps, delta' + delta'')-DP (FAC Thm 2), the delta sum rounded up."""
        return ApproxDP(self.eps, sum_up([self.delta_prime, self.delta_second]))
