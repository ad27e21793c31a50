"""Privacy filters: stop a fully adaptive interaction before its budget can be exceeded.

Every filter is an immutable value (THEORY.md §4). ``admits(request)`` says whether a round
whose worst-case cost is ``request`` may run; ``spend(realised)`` returns a new filter that
has recorded what the round did cost, or raises `BudgetExceeded` and changes nothing.
A *request* is the worst case a round may cost (for a Brownian mechanism: its grid's
smallest time), *realised* what it did cost (for a BM: the time where it stopped); both
are cost values from this module.

Arithmetic: the realised costs are kept in the state (in a persistent chain, with their
exact running sum as Shewchuk partials, so a round costs O(1) whatever the history's length);
a round is admitted only if the exact sum of the recorded floats stays within the budget
(the sign of the correctly rounded ``math.fsum`` of the partials, the new cost and minus the
budget), and every conversion to rho (Δ²/(2t), eps²/2) is rounded up, so no rounding can
overspend.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Generic, Literal, Protocol, Self, TypeVar

import attrs
import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    nonnegative,
    open_probability,
    positive,
    positive_int,
    probability,
    validator,
)
from expost.errors import BudgetExceeded, InvalidParameter
from expost.guarantees import (
    ZCDP,
    ApproxDP,
    cks_rho_for_dp,
    cks_zcdp_to_dp,
    rho_for_dp,
    zcdp_to_dp,
)

__all__ = [
    "ApproxDPFilter",
    "BatchBudget",
    "BrownianCost",
    "BrownianFilter",
    "ConcurrentFilter",
    "Conversion",
    "Cost",
    "DPCost",
    "ExPostCost",
    "ExPostFilter",
    "PrivacyFilter",
    "UnifiedFilter",
    "ZCDPCost",
    "ZCDPFilter",
]

Conversion = Literal["bun-steinke", "cks"]

_DELTA = field(default=0.0, converter=as_float, validator=validator(probability))


def _round_up(approx: float, num: int, den: int) -> float:
    """The smallest float >= num/den (integers > 0), from a float ``approx`` a few ulps away.

    Exact integer comparisons; an overflowed ``approx`` (inf) stays inf.
    """

    def below(x: float) -> bool:
        p, q = x.as_integer_ratio()
        return p * den < num * q

    if math.isinf(approx):
        return approx
    while below(approx):
        approx = math.nextafter(approx, math.inf)
    while approx > 0.0 and not below(math.nextafter(approx, 0.0)):
        approx = math.nextafter(approx, 0.0)
    return approx


def _excess(parts: Iterable[float], budget: float) -> float:
    """Σ parts − budget, correctly rounded (``math.fsum``), so its sign is the exact sign."""
    return math.fsum([*parts, -budget])


def _grow(partials: tuple[float, ...], x: float) -> tuple[float, ...]:
    """Non-overlapping floats whose exact sum is sum(partials) + x (Shewchuk's msum step)."""
    out = []
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo:
            out.append(lo)
        x = hi
    out.append(x)
    return tuple(out)


_T = TypeVar("_T")


@frozen(eq=False, repr=False)
class _Chain(Generic[_T]):
    """An immutable sequence that grows at the end: `append` is O(1) and shares the older links.

    ``_link`` is (the chain before the last item, the last item), None when empty; `items`
    (O(n)) builds the tuple only when asked. Equality, hashing, repr and pickling walk the
    links iteratively, so no history length can exhaust the recursion limit.
    """

    _link: tuple[_Chain[_T], _T] | None = None
    size: int = 0

    @classmethod
    def of(cls, items: Iterable[_T]) -> _Chain[_T]:
        chain: _Chain[_T] = cls()
        for item in items:
            chain = chain.append(item)
        return chain

    def append(self, item: _T) -> _Chain[_T]:
        return _Chain((self, item), self.size + 1)

    def items(self) -> tuple[_T, ...]:
        out = []
        link = self._link
        while link is not None:
            out.append(link[1])
            link = link[0]._link
        return tuple(reversed(out))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Chain):
            return NotImplemented
        if self.size != other.size:
            return False
        mine, theirs = self._link, other._link
        while mine is not None and theirs is not None and mine is not theirs:
            if mine[1] != theirs[1]:
                return False
            mine, theirs = mine[0]._link, theirs[0]._link
        return True

    def __hash__(self) -> int:
        return hash(self.items())

    def __repr__(self) -> str:
        last = "" if self._link is None else f", last {self._link[1]!r}"
        return f"<chain of {self.size}{last}>"

    def __reduce__(self) -> tuple[Callable[[Iterable[_T]], _Chain[_T]], tuple[tuple[_T, ...]]]:
        return _Chain.of, (self.items(),)


_History = tuple[_T, ...] | _Chain[_T]


def _history(value: _History[_T]) -> _Chain[_T]:
    """The chain of a filter's ``realised`` argument: a tuple of costs (or a chain, as kept)."""
    if isinstance(value, _Chain):
        return value
    if not isinstance(value, tuple):
        raise InvalidParameter("realised", value, "must be a tuple of costs")
    return _Chain.of(value)


@frozen
class _Totals:
    """The exact sums of the amounts and deltas of the costs in ``chain``, each as a few partials.

    A filter's ``_totals`` is derived state, used only if its ``chain`` is the filter's own
    (else, e.g. after ``attrs.evolve(f, realised=...)``, it is recomputed); `spend` passes the
    updated sums on so that a round costs O(1).
    """

    chain: _Chain[Any]
    amounts: tuple[float, ...] = ()
    deltas: tuple[float, ...] = ()

    def add(self, cost: Cost, amount: float, delta: float) -> _Totals:
        return _Totals(
            self.chain.append(cost), _grow(self.amounts, amount), _grow(self.deltas, delta)
        )


# --------------------------------------------------------------------------- costs


@frozen
class ZCDPCost:
    """A delta-approximate rho-zCDP round (APC Def 2.3)."""

    rho: float = field(converter=as_float, validator=validator(positive))
    delta: float = _DELTA


@frozen
class BrownianCost:
    """A Brownian mechanism with sensitivity Δ stopped at time t (APC Thm 3, Thm 5, Lemma 6.2).

    Its cost is rho = Δ²/(2t). As a request, ``time`` is the grid's smallest time.
    """

    time: float = field(converter=as_float, validator=validator(positive))
    sensitivity: float = field(default=1.0, converter=as_float, validator=validator(positive))

    @classmethod
    def from_eps(cls, eps: float, sensitivity: float = 1.0) -> BrownianCost:
        """The BM stopped at privacy level eps, i.e. at time t = Δ²/eps² (cost eps²/2)."""
        e = positive("eps", eps)
        d = positive("sensitivity", sensitivity)
        return cls(d * d / (e * e), d)

    @property
    def rho(self) -> float:
        """Δ²/(2t), rounded up to a float."""
        d, t = self.sensitivity, self.time
        (a, b), (c, e) = d.as_integer_ratio(), t.as_integer_ratio()
        return _round_up(d * d / (2.0 * t), a * a * e, 2 * b * b * c)


@frozen
class DPCost:
    """An (eps, delta)-DP round (APC Def 2.1)."""

    eps: float = field(converter=as_float, validator=validator(positive))
    delta: float = _DELTA

    @property
    def rho(self) -> float:
        """eps²/2 (APC Lemma 2.1: delta-approximate (eps²/2)-zCDP), rounded up to a float."""
        a, b = self.eps.as_integer_ratio()
        return _round_up(self.eps * self.eps / 2.0, a * a, 2 * b * b)


@frozen
class ExPostCost:
    """An ex-post private round: its ex-post bound E and delta (APC Def 4.1).

    As a request, ``bound`` is the largest value the ex-post function can take.
    """

    bound: float = field(converter=as_float, validator=validator(nonnegative))
    delta: float = _DELTA


Cost = ZCDPCost | BrownianCost | DPCost | ExPostCost


_RhoCost = ZCDPCost | BrownianCost
_C = TypeVar("_C", bound=Cost)


# One converter per cost type, so that each filter's ``realised`` argument keeps its type.
def _rho_history(value: _History[_RhoCost]) -> _Chain[_RhoCost]:
    return _history(value)


def _bm_history(value: _History[BrownianCost]) -> _Chain[BrownianCost]:
    return _history(value)


def _dp_history(value: _History[DPCost]) -> _Chain[DPCost]:
    return _history(value)


def _ex_post_history(value: _History[ExPostCost]) -> _Chain[ExPostCost]:
    return _history(value)


class PrivacyFilter(Protocol):
    """What every filter offers."""

    @property
    def rounds(self) -> int: ...

    def admits(self, request: Cost) -> bool: ...

    def check(self, request: Cost) -> None: ...

    def spend(self, realised: Cost) -> Self: ...

    def guarantee(self) -> ZCDP | ApproxDP: ...


# --------------------------------------------------------------------------- shared machinery


class _Ledger(ABC, Generic[_C]):
    """Admit/check/spend for a filter with one additive budget and one additive delta budget.

    Subclasses say which costs they accept, what each costs in the filter's unit and in
    delta, and what the two budgets are. The recorded realised costs are the state.
    """

    _UNIT: ClassVar[str]
    _realised: _Chain[_C]
    _totals: _Totals | None

    @property
    def realised(self) -> tuple[_C, ...]:
        """The recorded realised costs, oldest first (built on each call: O(rounds))."""
        return self._realised.items()

    @property
    @abstractmethod
    def _budget(self) -> float:
        """The budget in the filter's unit."""

    @property
    @abstractmethod
    def _delta_budget(self) -> float:
        """The budget for the rounds' deltas."""

    @abstractmethod
    def _price(self, cost: Cost) -> tuple[float, float]:
        """(amount in the filter's unit, delta) of ``cost``; InvalidParameter if not accepted."""

    def _reject(self, cost: object, accepted: str) -> InvalidParameter:
        return InvalidParameter("cost", cost, f"{type(self).__name__} accepts only {accepted}")

    @property
    def _sums(self) -> _Totals:
        assert self._totals is not None  # set by __attrs_post_init__
        return self._totals

    def __attrs_post_init__(self) -> None:
        if self._totals is None or self._totals.chain is not self._realised:
            totals = _Totals(_Chain())
            for cost in self.realised:
                totals = totals.add(cost, *self._price(cost))
            object.__setattr__(self, "_totals", attrs.evolve(totals, chain=self._realised))
        if _excess(self._sums.amounts, self._budget) > 0.0 or (
            _excess(self._sums.deltas, self._delta_budget) > 0.0
        ):
            raise InvalidParameter("realised", self.realised, "its costs exceed the budget")

    @property
    def spent(self) -> float:
        """The realised spend, in the filter's unit (``unit``)."""
        return math.fsum(self._sums.amounts)

    @property
    def remaining(self) -> float:
        """What is left of the budget, in the filter's unit (exact difference, rounded)."""
        return max(0.0, -_excess(self._sums.amounts, self._budget))

    @property
    def delta_spent(self) -> float:
        """The sum of the deltas of the recorded rounds."""
        return math.fsum(self._sums.deltas)

    @property
    def rounds(self) -> int:
        """How many rounds have been recorded."""
        return self._realised.size

    @property
    def unit(self) -> str:
        """The unit of ``spent`` and ``remaining``."""
        return self._UNIT

    def _refusal(self, amount: float, delta: float) -> BudgetExceeded | None:
        for parts, asked, budget, unit in (
            (self._sums.amounts, amount, self._budget, self._UNIT),
            (self._sums.deltas, delta, self._delta_budget, "delta"),
        ):
            if _excess([*parts, asked], budget) > 0.0:
                left = max(0.0, -_excess(parts, budget))
                return BudgetExceeded(math.fsum(parts), asked, left, unit)
        return None

    def admits(self, request: Cost) -> bool:
        """Whether a round costing at most ``request`` keeps both exact sums within budget."""
        return self._refusal(*self._price(request)) is None

    def check(self, request: Cost) -> None:
        """Raise `BudgetExceeded` (naming spent, asked and remaining) unless ``request`` is admitted."""
        refusal = self._refusal(*self._price(request))
        if refusal is not None:
            raise refusal

    def spend(self, realised: Cost) -> Self:
        """A new filter with ``realised`` recorded; `BudgetExceeded` if it is not admissible.

        Constant time in the number of recorded rounds: the new filter shares the old one's
        history chain and carries the exact sums along.
        """
        amount, delta = self._price(realised)
        refusal = self._refusal(amount, delta)
        if refusal is not None:
            raise refusal
        totals = self._sums.add(realised, amount, delta)
        return attrs.evolve(  # type: ignore[misc]  # reason: every subclass is an attrs class
            self, realised=totals.chain, _totals=totals
        )


class _BrownianBudget(_Ledger[_C]):
    """A rho budget that Brownian mechanisms may draw on; grids can be clipped to it."""

    def min_bm_time(self, sensitivity: float = 1.0) -> float:
        """The smallest time t with Δ²/(2t) <= remaining: a BM grid may go down to it.

        ``inf`` when nothing remains (no BM can be admitted).
        """
        d = positive("sensitivity", sensitivity)
        left = self.remaining
        t = d * d / (2.0 * left) if left > 0.0 else math.inf
        if not math.isfinite(t):
            return math.inf
        return _extreme(t, lambda x: BrownianCost(x, d), self.admits, upward=False)

    def max_bm_eps(self, sensitivity: float = 1.0) -> float:
        """The largest eps = Δ/sqrt(t) (about sqrt(2·remaining)) a BM may reach.

        A BM at ``BrownianCost.from_eps(max_bm_eps(Δ), Δ)`` is admitted; 0.0 when nothing remains.
        """
        d = positive("sensitivity", sensitivity)
        left = self.remaining
        if left <= 0.0 or not math.isfinite(d * d / (2.0 * left)):
            return 0.0
        eps = math.sqrt(2.0 * left)
        return _extreme(eps, lambda e: BrownianCost.from_eps(e, d), self.admits, upward=True)


def _extreme(
    start: float,
    cost: Callable[[float], BrownianCost],
    admits: Callable[[Cost], bool],
    *,
    upward: bool,
) -> float:
    """Nudge ``start`` by ulps to the largest (``upward``) / smallest admitted value."""
    towards, away = (math.inf, 0.0) if upward else (0.0, math.inf)
    x = start
    while x > 0.0 and not admits(cost(x)):
        x = math.nextafter(x, away)
    while True:
        nxt = math.nextafter(x, towards)
        if not (0.0 < nxt < math.inf) or not admits(cost(nxt)):
            return x
        x = nxt


# --------------------------------------------------------------------------- filters


@frozen
class ZCDPFilter(_BrownianBudget[_RhoCost]):
    """The approx-zCDP filter (FAC Thm 1).

    Admits round n+1 iff Σ rho_m <= rho and Σ delta_m <= delta including it; the stopped
    interaction is delta-approximate rho-zCDP. Accepts `ZCDPCost` and `BrownianCost`
    (a BM stopped at t costs Δ²/(2t), APC Thm 5).
    """

    _UNIT: ClassVar[str] = "rho"

    rho: float = field(converter=as_float, validator=validator(positive))
    delta: float = _DELTA
    _realised: _Chain[_RhoCost] = field(
        default=_Chain(), kw_only=True, converter=_rho_history, alias="realised"
    )
    _totals: _Totals | None = field(
        default=None, kw_only=True, eq=False, repr=False, alias="_totals"
    )

    @property
    def _budget(self) -> float:
        return self.rho

    @property
    def _delta_budget(self) -> float:
        return self.delta

    def _price(self, cost: Cost) -> tuple[float, float]:
        return _zcdp_price(self, cost)

    def guarantee(self) -> ZCDP:
        """delta-approximate rho-zCDP (FAC Thm 1)."""
        return ZCDP(self.rho, self.delta)


def _zcdp_price(owner: _Ledger[_RhoCost], cost: Cost) -> tuple[float, float]:
    if isinstance(cost, ZCDPCost):
        return cost.rho, cost.delta
    if isinstance(cost, BrownianCost):
        return cost.rho, 0.0
    raise owner._reject(cost, "ZCDPCost and BrownianCost")


@frozen
class UnifiedFilter(_BrownianBudget[_RhoCost]):
    """The unified filter for zCDP rounds and Brownian mechanisms (APC Thm 5).

    zCDP rounds (`ZCDPCost`) and BM rounds (`BrownianCost`) share one budget rho;
    condition (3): a round is admitted iff rho_n + Δ²/(2·t_min) <= rho − Σ realised, and
    the zCDP rounds' deltas stay within delta. The proof shows the stopped interaction is
    delta-approximate rho-zCDP (`guarantee`); `dp_guarantee` converts it by APC Lemma 2.1.

    ``delta_second`` (delta'' of that conversion) and ``conversion`` are remembered by
    `from_dp`, so that `dp_guarantee()` returns the target (eps, delta).
    """

    _UNIT: ClassVar[str] = "rho"

    rho: float = field(converter=as_float, validator=validator(positive))
    delta: float = _DELTA
    delta_second: float | None = field(default=None)
    conversion: Conversion = field(default="bun-steinke")
    _realised: _Chain[_RhoCost] = field(
        default=_Chain(), kw_only=True, converter=_rho_history, alias="realised"
    )
    _totals: _Totals | None = field(
        default=None, kw_only=True, eq=False, repr=False, alias="_totals"
    )

    @delta_second.validator
    def _check_delta_second(self, _attribute: object, value: object) -> None:
        if value is not None:
            open_probability("delta_second", value)

    @conversion.validator
    def _check_conversion(self, _attribute: object, value: object) -> None:
        if value not in ("bun-steinke", "cks"):
            raise InvalidParameter("conversion", value, "must be 'bun-steinke' or 'cks'")

    @classmethod
    def from_dp(
        cls, eps: float, delta: float, conversion: Conversion = "bun-steinke"
    ) -> UnifiedFilter:
        """The filter whose `dp_guarantee()` is (eps, delta)-DP (APC Thm 5 + Lemma 2.1).

        rho = `rho_for_dp`(eps, delta) for "bun-steinke" — (10, 1e-6) gives rho ≈ 1.35301,
        i.e. Σ eps_m² <= 2.706 (APC Sec. 7) — or `cks_rho_for_dp` (larger) for "cks".
        """
        if conversion == "bun-steinke":
            rho = rho_for_dp(eps, delta)
        elif conversion == "cks":
            rho = cks_rho_for_dp(eps, delta)
        else:
            raise InvalidParameter("conversion", conversion, "must be 'bun-steinke' or 'cks'")
        return cls(rho, 0.0, delta, conversion)

    @property
    def _budget(self) -> float:
        return self.rho

    @property
    def _delta_budget(self) -> float:
        return self.delta

    def _price(self, cost: Cost) -> tuple[float, float]:
        return _zcdp_price(self, cost)

    def guarantee(self) -> ZCDP:
        """delta-approximate rho-zCDP (APC Thm 5, as its proof shows)."""
        return ZCDP(self.rho, self.delta)

    def dp_guarantee(self, delta_second: float | None = None) -> ApproxDP:
        """(rho + 2·sqrt(rho·log(1/delta'')), delta + (1 − delta)·delta'')-DP (APC Lemma 2.1).

        APC Thm 5 prints eps = rho + 2·sqrt(2·rho·log(1/delta'')), which does not follow from
        its proof: the proof gives delta-approximate rho-zCDP, and Lemma 2.1 converts that
        with 2·sqrt(rho·log(1/delta'')); APC's own experiments use this value (THEORY.md §4).
        With ``conversion="cks"`` the Canonne–Kamath–Steinke conversion is used instead.
        ``delta_second`` defaults to the one remembered by the filter.
        """
        d2 = self.delta_second if delta_second is None else delta_second
        if d2 is None:
            raise InvalidParameter(
                "delta_second", None, "is needed: pass it here or construct the filter with it"
            )
        convert = cks_zcdp_to_dp if self.conversion == "cks" else zcdp_to_dp
        return convert(self.guarantee(), d2)


@frozen
class BrownianFilter(_BrownianBudget[BrownianCost]):
    """The Brownian filter (APC Lemma 6.2): Brownian mechanisms only.

    Condition (2): a BM whose grid's smallest time is t_min is admitted iff
    Δ²/(2·t_min) <= rho − Σ_i Δ_i²/(2·t_i) over the realised stopped times (APC states it
    for Δ = 1). Result: (rho + 2·sqrt(rho·log(1/delta)), delta)-DP.
    """

    _UNIT: ClassVar[str] = "rho"

    rho: float = field(converter=as_float, validator=validator(positive))
    delta: float = field(converter=as_float, validator=validator(open_probability))
    _realised: _Chain[BrownianCost] = field(
        default=_Chain(), kw_only=True, converter=_bm_history, alias="realised"
    )
    _totals: _Totals | None = field(
        default=None, kw_only=True, eq=False, repr=False, alias="_totals"
    )

    @property
    def _budget(self) -> float:
        return self.rho

    @property
    def _delta_budget(self) -> float:
        return 0.0

    def _price(self, cost: Cost) -> tuple[float, float]:
        if isinstance(cost, BrownianCost):
            return cost.rho, 0.0
        raise self._reject(cost, "BrownianCost")

    def guarantee(self) -> ApproxDP:
        """(rho + 2·sqrt(rho·log(1/delta)), delta)-DP (APC Lemma 6.2)."""
        return zcdp_to_dp(ZCDP(self.rho), self.delta)


@frozen
class ApproxDPFilter(_Ledger[DPCost]):
    """The (eps, delta)-DP filter (FAC Thm 2) for (eps_n, delta_n)-DP rounds (`DPCost`).

    Admits round n+1 iff sqrt(2·log(1/delta'')·Σ eps_m²) + ½·Σ eps_m² <= eps and
    Σ delta_m <= delta' including it; result (eps, delta' + delta'')-DP. Since the left side
    is rho + 2·sqrt(rho·log(1/delta'')) with rho = Σ eps_m²/2, increasing in rho, this is the
    zCDP filter with rho_m = eps_m²/2 and budget rho* = `rho_for_dp`(eps, delta''), which is
    how it is evaluated (``spent``/``remaining`` are in rho = Σ eps_m²/2).
    """

    _UNIT: ClassVar[str] = "rho"

    eps: float = field(converter=as_float, validator=validator(positive))
    delta_prime: float = field(converter=as_float, validator=validator(probability))
    delta_second: float = field(converter=as_float, validator=validator(open_probability))
    _realised: _Chain[DPCost] = field(
        default=_Chain(), kw_only=True, converter=_dp_history, alias="realised"
    )
    _totals: _Totals | None = field(
        default=None, kw_only=True, eq=False, repr=False, alias="_totals"
    )

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
    def _budget(self) -> float:
        return self.rho_budget

    @property
    def _delta_budget(self) -> float:
        return self.delta_prime

    def _price(self, cost: Cost) -> tuple[float, float]:
        if isinstance(cost, DPCost):
            return cost.rho, cost.delta
        raise self._reject(cost, "DPCost")

    def guarantee(self) -> ApproxDP:
        """(eps, delta' + delta'')-DP (FAC Thm 2)."""
        return ApproxDP(self.eps, self.delta_prime + self.delta_second)


@frozen
class ExPostFilter(_Ledger[ExPostCost]):
    """The ex-post filter (APC Lemma B.2) for ex-post private rounds (`ExPostCost`).

    A round is admitted only if its ex-post bound cannot exceed the remaining eps and
    Σ delta_i stays <= delta; the realised bound is charged. Result: (eps, delta)-DP.
    """

    _UNIT: ClassVar[str] = "eps"

    eps: float = field(converter=as_float, validator=validator(positive))
    delta: float = _DELTA
    _realised: _Chain[ExPostCost] = field(
        default=_Chain(), kw_only=True, converter=_ex_post_history, alias="realised"
    )
    _totals: _Totals | None = field(
        default=None, kw_only=True, eq=False, repr=False, alias="_totals"
    )

    @property
    def _budget(self) -> float:
        return self.eps

    @property
    def _delta_budget(self) -> float:
        return self.delta

    def _price(self, cost: Cost) -> tuple[float, float]:
        if isinstance(cost, ExPostCost):
            return cost.bound, cost.delta
        raise self._reject(cost, "ExPostCost")

    def guarantee(self) -> ApproxDP:
        """(eps, delta)-DP (APC Lemma B.2)."""
        return ApproxDP(self.eps, self.delta)


@frozen
class ConcurrentFilter:
    """A zCDP filter and an ex-post filter side by side (APC Thm 2, concurrent composition).

    `ZCDPCost` and `BrownianCost` go to ``zcdp`` (a `ZCDPFilter` or `UnifiedFilter` with
    budget (rho, delta)), `ExPostCost` to ``ex_post`` (an `ExPostFilter` with (eps', delta')).
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

    def _route(self, cost: Cost) -> Literal["zcdp", "ex_post"]:
        if isinstance(cost, ZCDPCost | BrownianCost):
            return "zcdp"
        if isinstance(cost, ExPostCost):
            return "ex_post"
        raise InvalidParameter(
            "cost", cost, "ConcurrentFilter accepts only ZCDPCost, BrownianCost and ExPostCost"
        )

    def admits(self, request: Cost) -> bool:
        """Whether the filter the request is routed to admits it."""
        part: PrivacyFilter = getattr(self, self._route(request))
        return part.admits(request)

    def check(self, request: Cost) -> None:
        """Raise `BudgetExceeded` unless the filter the request is routed to admits it."""
        part: PrivacyFilter = getattr(self, self._route(request))
        part.check(request)

    def spend(self, realised: Cost) -> ConcurrentFilter:
        """A new filter with ``realised`` recorded in the part it is routed to."""
        if self._route(realised) == "zcdp":
            return attrs.evolve(self, zcdp=self.zcdp.spend(realised))
        return attrs.evolve(self, ex_post=self.ex_post.spend(realised))

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
        """(eps_zcdp + eps', delta + delta' + delta'')-DP (APC Thm 2)."""
        zcdp = zcdp_to_dp(self.zcdp.guarantee(), self.delta_second, form="apc")
        return ApproxDP(zcdp.eps + self.ex_post.eps, zcdp.delta + self.ex_post.delta)


# --------------------------------------------------------------------------- batch accounting

_U = 2.0**-53  # unit roundoff of float64
_BM_BUMP = 1.0 + 2.0**-48  # covers the few roundings in BrownianCost(Δ²/eps², Δ).rho (<= 5u)


def _read_only_floats(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    arr = np.array(values, dtype=np.float64)
    arr.flags.writeable = False
    return arr


@frozen(eq=False)
class BatchBudget:
    """The rho accounting of `UnifiedFilter` / `ZCDPFilter` for many independent trials at once.

    Trial i has spent ``spent[i]`` (a float running sum of rho; ``error[i]`` bounds its distance
    to the exact sum). Condition (3) of APC Thm 5 is applied per trial; rounds carry no delta.
    Conservative by construction: a cost c is admitted only if
    fl(fl(spent + c) + error) <= rho·(1 − 2⁻⁵⁰), and every float operation errs by at most a
    factor (1 ± 2⁻⁵³), so the exact sum of the recorded costs plus c is <= rho: the batch never
    admits what the scalar filter, fed the same costs, would refuse. A BM stopped at eps² is
    charged `bm_cost` (eps²/2 rounded past the scalar filter's rounded-up `BrownianCost.rho`).
    """

    rho: float = field(converter=as_float, validator=validator(positive))
    spent: npt.NDArray[np.float64] = field(converter=_read_only_floats)
    error: npt.NDArray[np.float64] = field(converter=_read_only_floats)

    def __attrs_post_init__(self) -> None:
        if self.spent.ndim != 1 or self.error.shape != self.spent.shape:
            raise InvalidParameter("spent", self.spent.shape, "spent and error must be (trials,)")
        if not (np.all(np.isfinite(self.spent)) and np.all(self.spent >= 0.0)):
            raise InvalidParameter("spent", self.spent, "must be finite and >= 0")

    @classmethod
    def start(cls, filter: UnifiedFilter | ZCDPFilter, trials: int) -> BatchBudget:
        """``trials`` copies of ``filter``'s budget and spend (its rounds must carry no delta)."""
        if not isinstance(filter, UnifiedFilter | ZCDPFilter):
            raise InvalidParameter("filter", filter, "must be a UnifiedFilter or ZCDPFilter")
        n = positive_int("trials", trials)
        spent = filter.spent  # correctly rounded: within u·spent of the exact sum
        return cls(filter.rho, np.full(n, spent), np.full(n, 2.0 * _U * spent))

    @property
    def trials(self) -> int:
        """How many trials."""
        return int(self.spent.size)

    @property
    def _safe(self) -> float:
        return self.rho * (1.0 - 2.0**-50)

    @staticmethod
    def bm_cost(eps2: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """What a BM stopped at eps² is charged: eps²/2, rounded up past `BrownianCost.rho`."""
        out: npt.NDArray[np.float64] = np.asarray(eps2, dtype=np.float64) / 2.0 * _BM_BUMP
        return out

    def _rows(self, where: npt.ArrayLike | None) -> npt.NDArray[np.intp] | slice:
        return slice(None) if where is None else np.asarray(where, dtype=np.intp)

    def remaining(self, where: npt.ArrayLike | None = None) -> npt.NDArray[np.float64]:
        """A lower bound on what is left per trial (or for the trials ``where``)."""
        rows = self._rows(where)
        left: npt.NDArray[np.float64] = np.maximum(
            0.0, self._safe - self.spent[rows] - self.error[rows]
        )
        return left

    def admits(
        self, rho: npt.ArrayLike, where: npt.ArrayLike | None = None
    ) -> npt.NDArray[np.bool_]:
        """Per trial (or for the trials ``where``): may a round costing at most ``rho`` run?"""
        rows = self._rows(where)
        c = np.asarray(rho, dtype=np.float64)
        result: npt.NDArray[np.bool_] = (c >= 0.0) & (
            (self.spent[rows] + c) + self.error[rows] <= self._safe
        )
        return result

    def spend(self, rho: npt.ArrayLike, where: npt.ArrayLike | None = None) -> BatchBudget:
        """A new budget with ``rho`` recorded for every trial (or the trials ``where``).

        `BudgetExceeded` (nothing recorded) if any of those trials does not admit it.
        """
        rows = self._rows(where)
        c = np.broadcast_to(np.asarray(rho, dtype=np.float64), self.spent[rows].shape)
        ok = self.admits(c, where)
        if not np.all(ok):
            bad = int(np.argmin(ok))
            raise BudgetExceeded(
                float(self.spent[rows][bad]), float(c[bad]), float(self.remaining(where)[bad])
            )
        spent, error = self.spent.copy(), self.error.copy()
        spent[rows] = self.spent[rows] + c
        error[rows] = self.error[rows] + 2.0 * _U * spent[rows]
        return BatchBudget(self.rho, spent, error)

    def max_bm_eps(self, where: npt.ArrayLike | None = None) -> npt.NDArray[np.float64]:
        """The largest eps per trial with ``bm_cost(eps²)`` admitted (0 where none is): a BM
        grid may go up to it (as `UnifiedFilter.max_bm_eps`, APC Thm 5 condition (3))."""
        x = np.sqrt(np.maximum(0.0, 2.0 * self.remaining(where) / _BM_BUMP))
        for _ in range(64):  # a few ulps at most; bounded for safety
            bad = (x > 0.0) & ~self.admits(self.bm_cost(x * x), where)
            if not bad.any():
                return x
            x = np.where(bad, np.nextafter(x, 0.0), x)
        return np.where(bad, 0.0, x)
