"""Concurrent composition of a zCDP filter and an ex-post filter (APC Thm 2)."""

from __future__ import annotations

import attrs
from attrs import field, frozen

from expost._validation import as_float, open_probability, validator
from expost.errors import InvalidParameter
from expost.filters.base import Price
from expost.filters.costs import Cost, ExPostCost
from expost.filters.ex_post import ExPostFilter
from expost.filters.zcdp import UnifiedFilter, ZCDPFilter
from expost.guarantees import ApproxDP, zcdp_to_dp
from expost.rounding import sum_up

__all__ = ["ConcurrentFilter"]


@frozen
class ConcurrentFilter:
    """A zCDP filter and an ex-post filter side by side (APC Thm 2, concurrent composition).

    `ExPostCost` goes to ``ex_post`` (an `ExPostFilter` with (eps', delta')), every other cost
    to ``zcdp`` (a `ZCDPFilter` or `UnifiedFilter` with budget (rho, delta)), which prices it.
    Result: (eps_zcdp + eps', delta + delta' + delta'')-DP with
    eps_zcdp = rho + 2·sqrt(rho·log(1/delta'')) (APC Lemma 2.1 and Thm 2, deltas as printed).
    """

    zcdp: ZCDPFilter | UnifiedFilter = field(
        validator=attrs.validators.instance_of((ZCDPFilter, UnifiedFilter))
    )
    ex_post: ExPostFilter = field(validator=attrs.validators.instance_of(ExPostFilter))
    delta_second: float = field(converter=as_float, validator=validator(open_probability))

    def __attrs_post_init__(self) -> None:
        if self.zcdp.delta + self.ex_post.delta + self.delta_second >= 1.0:
            raise InvalidParameter(
                "delta_second", self.delta_second, "the three deltas must sum to less than 1"
            )

    def _part(self, cost: Cost) -> ZCDPFilter | UnifiedFilter | ExPostFilter:
        return self.ex_post if isinstance(cost, ExPostCost) else self.zcdp

    def accepts(self, cost: Cost) -> bool:
        """Whether the part ``cost`` is routed to accepts it."""
        return self._part(cost).accepts(cost)

    def price(self, cost: Cost) -> Price:
        """The price in the part ``cost`` is routed to (rho in ``zcdp``, eps in ``ex_post``)."""
        return self._part(cost).price(cost)

    def admits(self, request: Cost) -> bool:
        """Whether the filter the request is routed to admits it."""
        return self._part(request).admits(request)

    def check(self, request: Cost) -> None:
        """Raise `BudgetExceeded` unless the filter the request is routed to admits it."""
        self._part(request).check(request)

    def spend(self, realised: Cost) -> ConcurrentFilter:
        """A new filter with ``realised`` recorded in the part it is routed to."""
        if isinstance(realised, ExPostCost):
            return attrs.evolve(self, ex_post=self.ex_post.spend(realised))
        return attrs.evolve(self, zcdp=self.zcdp.spend(realised))

    @property
    def spent(self) -> tuple[float, float]:
        """(rho spent by the zCDP part, eps spent by the ex-post part)."""
        return self.zcdp.spent, self.ex_post.spent

    @property
    def remaining(self) -> tuple[float, float]:
        """(rho remaining in the zCDP part, eps remaining in the ex-post part)."""
        return self.zcdp.remaining, self.ex_post.remaining

    @property
    def rounds(self) -> int:
        """Rounds recorded by both parts."""
        return self.zcdp.rounds + self.ex_post.rounds

    def min_bm_time(self, sensitivity: float = 1.0) -> float:
        """The zCDP part's `min_bm_time`."""
        return self.zcdp.min_bm_time(sensitivity)

    def max_bm_eps(self, sensitivity: float = 1.0) -> float:
        """The zCDP part's `max_bm_eps`."""
        return self.zcdp.max_bm_eps(sensitivity)

    def guarantee(self) -> ApproxDP:
        """(eps_zcdp + eps', delta + delta' + delta'')-DP (APC Thm 2), sums rounded up."""
        zcdp = zcdp_to_dp(self.zcdp.guarantee(), self.delta_second, form="apc")
        eps = sum_up([zcdp.eps, self.ex_post.eps])
        return ApproxDP(eps, sum_up([zcdp.delta, self.ex_post.delta]))

    def reported_guarantee(self) -> ApproxDP:
        """`guarantee()`."""
        return self.guarantee()
