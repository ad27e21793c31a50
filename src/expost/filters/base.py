"""The filter base: one additive budget, one delta budget, the realised history (THEORY.md §4).

Every filter is an immutable value. ``price(cost)`` says what a round costs in the filter's
unit and in delta (or raises `InvalidParameter` "cannot charge ..." for a cost the filter does
not accept), ``admits(request)`` whether a round whose worst case is ``request`` may run, and
``spend(realised)`` returns a new filter that has recorded the round, or raises
`BudgetExceeded` and changes nothing. The recorded costs are the rounds' own costs; their
prices are summed exactly (`expost.filters._exact`), so a round costs O(1) whatever the
history's length and no rounding can overspend.
"""

from __future__ import annotations

import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, Protocol, Self, runtime_checkable

import attrs
from attrs import field, frozen

from expost._validation import positive
from expost.errors import BudgetExceeded, InvalidParameter
from expost.filters._exact import Chain, Totals, excess, history
from expost.filters.costs import BrownianCost, Cost
from expost.guarantees import ZCDP, ApproxDP, GaussianDP
from expost.rounding import SMALLEST, largest_where, smallest_where, sum_down, sum_up

__all__ = [
    "NO_DELTA_BUDGET",
    "BrownianPricedFilter",
    "Filter",
    "Price",
    "PrivacyFilter",
    "RhoFilter",
]

Price = tuple[float, float]
"""(amount in the filter's unit, delta) of one round."""


def _left(parts: tuple[float, ...], budget: float) -> float:
    """budget − Σ parts, exactly, rounded down (0 when nothing is left)."""
    return max(0.0, sum_down([budget, *(-p for p in parts)]))


@runtime_checkable
class PrivacyFilter(Protocol):
    """What every filter offers; `PrivateSession` needs nothing else."""

    @property
    def rounds(self) -> int: ...

    @property
    def spent(self) -> float | tuple[float, float]: ...

    @property
    def remaining(self) -> float | tuple[float, float]: ...

    def accepts(self, cost: Cost) -> bool: ...

    def price(self, cost: Cost) -> Price: ...

    def admits(self, request: Cost) -> bool: ...

    def check(self, request: Cost) -> None: ...

    def spend(self, realised: Cost) -> Self: ...

    def guarantee(self) -> ZCDP | ApproxDP | GaussianDP: ...

    def reported_guarantee(self) -> ZCDP | ApproxDP | GaussianDP: ...

    def max_bm_eps(self, sensitivity: float = 1.0) -> float | None: ...

    def min_bm_time(self, sensitivity: float = 1.0) -> float | None: ...


def refuse(filter: object, what: str, accepted: str) -> InvalidParameter:
    """The error for a cost a filter does not accept."""
    name = type(filter).__name__
    return InvalidParameter("filter", name, f"cannot charge {what}: accepts only {accepted}")


NO_DELTA_BUDGET = (
    "its delta needs a delta budget and this filter has none (delta budget 0; "
    "UnifiedFilter.from_dp keeps its whole delta for the final conversion): build the filter "
    "with one — ZCDPFilter(rho, delta), UnifiedFilter(rho, delta, delta_second), "
    "ApproxDPFilter(eps, delta_prime, delta_second), ExPostFilter(eps, delta), or "
    "ConcurrentFilter(zcdp, ExPostFilter(eps, delta), delta_second) beside a zCDP budget — "
    "or run a round with delta 0"
)
"""Why a filter without a delta budget refuses every round with delta > 0 (`InvalidParameter`,
not `BudgetExceeded`: no budget ran out, the filter never admits such a round)."""


def _costs(value: tuple[Cost, ...] | Chain[Cost]) -> Chain[Cost]:
    return history(value)


@frozen
class Filter(ABC):
    """Admit/check/spend for a filter with one additive budget and one additive delta budget.

    Subclasses say which costs they accept and what each costs (`_rate`), and what the two
    budgets are. The recorded realised costs (``realised``) are the state.
    """

    _UNIT: ClassVar[str]
    _PRICES_BY: ClassVar[tuple[str, ...]]
    """The representations the filter prices by (`expost.costs.model.REPRESENTATIONS`)."""
    _NOTE: ClassVar[str] = ""
    """What a refusal adds to the table's text."""

    _realised: Chain[Cost] = field(
        default=Chain(), kw_only=True, converter=_costs, alias="realised"
    )
    _totals: Totals | None = field(
        default=None, kw_only=True, eq=False, repr=False, alias="_totals"
    )

    @property
    def realised(self) -> tuple[Cost, ...]:
        """The recorded realised costs, oldest first (built on each call: O(rounds))."""
        return self._realised.items()

    @property
    @abstractmethod
    def budget(self) -> float:
        """The budget in the filter's unit (``unit``)."""

    @property
    @abstractmethod
    def delta_budget(self) -> float:
        """The budget for the rounds' deltas."""

    @abstractmethod
    def _rate(self, cost: Cost) -> Price | None:
        """(amount, delta) of ``cost``; None if the filter does not accept it."""

    @abstractmethod
    def guarantee(self) -> ZCDP | ApproxDP | GaussianDP:
        """The filter's theorem's guarantee for the whole interaction."""

    def reported_guarantee(self) -> ZCDP | ApproxDP | GaussianDP:
        """The guarantee a session reports: `guarantee` unless the filter knows a better form."""
        return self.guarantee()

    def _what(self, cost: object) -> str:
        return repr(cost)

    def accepts(self, cost: Cost) -> bool:
        """Whether this filter can charge ``cost`` at all."""
        return self._rate(cost) is not None

    def price(self, cost: Cost) -> Price:
        """(amount in ``unit``, delta) of ``cost``; `InvalidParameter` if not accepted."""
        rate = self._rate(cost)
        if rate is None:
            from expost.filters.kinds import refusal

            rule = refusal(type(self).__name__, cost, *self._PRICES_BY, note=self._NOTE)
            raise InvalidParameter(
                "filter", type(self).__name__, rule.replace(repr(cost), self._what(cost), 1)
            )
        return rate

    def max_bm_eps(self, sensitivity: float = 1.0) -> float | None:
        """None: this filter does not price Brownian mechanisms by their stopping time."""
        positive("sensitivity", sensitivity)
        return None

    def min_bm_time(self, sensitivity: float = 1.0) -> float | None:
        """None: this filter does not price Brownian mechanisms by their stopping time."""
        positive("sensitivity", sensitivity)
        return None

    @property
    def _sums(self) -> Totals:
        assert self._totals is not None  # set by __attrs_post_init__
        return self._totals

    def __attrs_post_init__(self) -> None:
        if self._totals is None or self._totals.chain is not self._realised:
            totals = Totals(Chain())
            for cost in self.realised:
                totals = totals.add(cost, *self.price(cost))
            object.__setattr__(self, "_totals", attrs.evolve(totals, chain=self._realised))
        if excess(self._sums.amounts, self.budget) > 0.0 or (
            excess(self._sums.deltas, self.delta_budget) > 0.0
        ):
            raise InvalidParameter("realised", self.realised, "its costs exceed the budget")

    @property
    def spent(self) -> float:
        """The realised spend, in the filter's unit (``unit``): the exact sum rounded up."""
        return sum_up(self._sums.amounts)

    @property
    def remaining(self) -> float:
        """What is left of the budget, in the filter's unit: the exact difference rounded down."""
        return _left(self._sums.amounts, self.budget)

    @property
    def rounds(self) -> int:
        """How many rounds have been recorded."""
        return self._realised.size

    @property
    def unit(self) -> str:
        """The unit of ``spent``, ``remaining`` and ``budget``."""
        return self._UNIT

    def _refusal(self, amount: float, delta: float) -> BudgetExceeded | None:
        if delta > 0.0 and self.delta_budget == 0.0:  # no budget to run out of: a mismatch
            raise InvalidParameter(
                "filter", type(self).__name__, f"cannot admit delta={delta!r}: {NO_DELTA_BUDGET}"
            )
        for parts, asked, budget, unit in (
            (self._sums.amounts, amount, self.budget, self._UNIT),
            (self._sums.deltas, delta, self.delta_budget, "delta"),
        ):
            if excess([*parts, asked], budget) > 0.0:
                return BudgetExceeded(sum_up(parts), asked, _left(parts, budget), unit)
        return None

    def admits(self, request: Cost) -> bool:
        """Whether a round costing at most ``request`` keeps both exact sums within budget
        (`InvalidParameter` for a cost the filter never admits: see `price`, `NO_DELTA_BUDGET`)."""
        return self._refusal(*self.price(request)) is None

    def check(self, request: Cost) -> None:
        """Raise `BudgetExceeded` (naming spent, asked and remaining) unless ``request`` is admitted."""
        refusal = self._refusal(*self.price(request))
        if refusal is not None:
            raise refusal

    def spend(self, realised: Cost) -> Self:
        """A new filter with ``realised`` recorded; `BudgetExceeded` if it is not admissible.

        Constant time in the number of recorded rounds: the new filter shares the old one's
        history chain and carries the exact sums along.
        """
        amount, delta = self.price(realised)
        refusal = self._refusal(amount, delta)
        if refusal is not None:
            raise refusal
        totals = self._sums.add(realised, amount, delta)
        return attrs.evolve(self, realised=totals.chain, _totals=totals)


@frozen
class BrownianPricedFilter(Filter):
    """A filter that prices a BM stopped at t as Δ²/(``_BM_DIVISOR``·t) in its unit.

    Eps grids can be clipped to it: `max_bm_eps` / `min_bm_time` (the worst case of a round's
    grid must fit before it starts, APC Thm 5 condition (3)).
    """

    _BM_DIVISOR: ClassVar[float]

    def min_bm_time(self, sensitivity: float = 1.0) -> float:
        """The smallest time t whose price Δ²/(divisor·t) fits what remains: a grid may go down to it.

        ``inf`` when nothing remains (no BM can be admitted).
        """
        d = positive("sensitivity", sensitivity)
        left = self.remaining
        t = d * d / (self._BM_DIVISOR * left) if left > 0.0 else math.inf
        if not math.isfinite(t):
            return math.inf
        return bm_extreme(t, lambda x: BrownianCost(x, d), self.admits, upward=False)

    def max_bm_eps(self, sensitivity: float = 1.0) -> float:
        """The largest eps = Δ/sqrt(t) (about sqrt(divisor·remaining)) a BM may reach.

        A BM at ``BrownianCost.from_eps(max_bm_eps(Δ), Δ)`` is admitted; 0.0 when nothing remains.
        """
        d = positive("sensitivity", sensitivity)
        left = self.remaining
        if left <= 0.0 or not math.isfinite(d * d / (self._BM_DIVISOR * left)):
            return 0.0
        eps = math.sqrt(self._BM_DIVISOR * left)
        return bm_extreme(eps, lambda e: BrownianCost.from_eps(e, d), self.admits, upward=True)


@frozen
class RhoFilter(BrownianPricedFilter):
    """A filter whose unit is rho and which prices a BM stopped at t as Δ²/(2t) (APC Thm 5)."""

    _UNIT: ClassVar[str] = "rho"
    _BM_DIVISOR: ClassVar[float] = 2.0


def bm_extreme(
    start: float,
    cost: Callable[[float], BrownianCost],
    admits: Callable[[Cost], bool],
    *,
    upward: bool,
) -> float:
    """The largest (``upward``) / smallest admitted positive float, searched from ``start``
    (`expost.rounding.largest_where` / `smallest_where`: at most about 130 checks, even where the
    price disagrees with ``_BM_DIVISOR`` and ``start`` is far off); 0.0 / inf if none is."""

    def admitted(x: float) -> bool:
        try:
            return admits(cost(x))
        except InvalidParameter:  # e.g. eps so large that Δ²/eps² is 0: no such round exists
            return False

    low, high = SMALLEST, sys.float_info.max
    if upward:
        found = largest_where(admitted, start, low, high)
        return 0.0 if found is None else found
    found = smallest_where(admitted, start, low, high)
    return math.inf if found is None else found
