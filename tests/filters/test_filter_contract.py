"""The contract every privacy filter keeps (in the spirit of dp-accounting's accountant tests).

One test class, parametrised by `CASES`: a new filter gets every check by adding one line there
(its factory, costs it accepts, costs it refuses, a tiny cost it accepts).

Exactness promised by `expost.filters.base.Filter`: ``spent`` is the correctly rounded exact
sum of the recorded prices and ``remaining`` the correctly rounded exact difference
budget − that sum; both are compared exactly. ``spent + remaining`` is then within one ulp
of the budget (two roundings), which is what is checked for the sum.
"""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expost.errors import BudgetExceeded, InvalidParameter
from expost.filters import (
    ApproxDPFilter,
    BoundedRangeCost,
    BrownianCost,
    BrownianFilter,
    ConcurrentFilter,
    Cost,
    DPCost,
    ExPostCost,
    ExPostFilter,
    Filter,
    GaussianCost,
    GaussianDPFilter,
    LaplaceCost,
    PLDFilter,
    PrivacyFilter,
    RDPFilter,
    RenyiFilter,
    SubsampledGaussianCost,
    UnifiedFilter,
    ZCDPCost,
    ZCDPFilter,
)
from expost.filters._exact import Chain
from expost.guarantees import ZCDP, ApproxDP, GaussianDP
from tests.rounding_audit import EXTREMES
from tests.safe_side import rounded_down, rounded_up

AnyFilter = Filter | ConcurrentFilter | RDPFilter

BM = BrownianCost(400.0, 2.0)
BM_PSI = BrownianCost(400.0, 2.0, 0.05, 1e-4)
RHO_COSTS = (ZCDPCost(0.01, 1e-4), BM, BM_PSI, DPCost(0.1, 1e-4), BoundedRangeCost(0.2))
LNR = ExPostCost(0.05, 0.0, eps_max=0.2)


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[], AnyFilter]
    accepts: tuple[Cost, ...]
    refuses: tuple[Cost, ...]
    tiny: Cost  # accepted, so small that 10⁴ copies fit in the budget


@dataclass(frozen=True)
class RDPCase(Case):
    """An `RDPFilter`: one budget per Rényi order instead of one budget (its own books below)."""


CASES = [
    Case("zcdp", lambda: ZCDPFilter(1.0, 1e-2), (*RHO_COSTS, LNR), (ExPostCost(0.1),), ZCDPCost(1e-5)),
    Case("unified", lambda: UnifiedFilter(0.9, 1e-2, 1e-6), (*RHO_COSTS, LNR), (ExPostCost(0.1),), BrownianCost(1e5)),
    Case("unified-dp", lambda: UnifiedFilter.from_dp(3.0, 1e-6), (ZCDPCost(0.01), BM, BM_PSI, DPCost(0.1), BoundedRangeCost(0.2), LNR), (ExPostCost(0.1),), DPCost(1e-3)),
    Case("brownian", lambda: BrownianFilter(1.0, 1e-6), (BM, BM_PSI), (ZCDPCost(0.1), DPCost(0.1), BoundedRangeCost(0.1), LNR), BrownianCost(1e5)),
    Case("approx-dp", lambda: ApproxDPFilter(3.0, 1e-2, 1e-6), (BM, BM_PSI, DPCost(0.1, 1e-4), BoundedRangeCost(0.2), LNR), (ZCDPCost(0.01), ExPostCost(0.1)), BoundedRangeCost(1e-3)),
    Case("ex-post", lambda: ExPostFilter(1.0, 1e-2), (BM_PSI, DPCost(0.1, 1e-4), BoundedRangeCost(0.2), LNR, ExPostCost(0.1, 1e-4)), (BM, ZCDPCost(0.01)), ExPostCost(1e-5)),
    Case("gdp", lambda: GaussianDPFilter.from_dp(3.0, 1e-6), (GaussianCost(0.01), BM, BM_PSI, DPCost(0.1), BoundedRangeCost(0.2), LNR), (ZCDPCost(0.01), DPCost(0.1, 1e-4), ExPostCost(0.1)), GaussianCost(1e-5)),
    Case("concurrent", lambda: ConcurrentFilter(ZCDPFilter(1.0, 1e-2), ExPostFilter(1.0, 1e-2), 1e-6), (*RHO_COSTS, LNR, ExPostCost(0.1)), (), ZCDPCost(1e-5)),
    Case("pld", lambda: PLDFilter(3.0, 1e-6, GaussianCost(2e-5)), (GaussianCost(2e-5), GaussianCost(1e-5), SubsampledGaussianCost(1e-5, sampling_prob=0.5)), (GaussianCost(3e-5), ZCDPCost(1e-5), DPCost(0.01), LaplaceCost(0.01), BM, ExPostCost(0.1)), GaussianCost(2e-5)),
    RDPCase("rdp", lambda: RDPFilter(3.0, 1e-6), (ZCDPCost(0.01), GaussianCost(0.01), BM, BM_PSI, DPCost(0.1), BoundedRangeCost(0.2), LNR, SubsampledGaussianCost.from_sigma(1.0, 0.01), LaplaceCost(0.1)), (ZCDPCost(0.01, 1e-4), DPCost(0.1, 1e-4), ExPostCost(0.1, 1e-4)), ZCDPCost(1e-5)),
    Case("renyi", lambda: RenyiFilter(3.0, 1e-6, 8.0), (ZCDPCost(0.01), GaussianCost(0.01), SubsampledGaussianCost.from_sigma(1.0, 0.01), DPCost(0.1), LaplaceCost(0.1), BoundedRangeCost(0.2)), (BM, BM_PSI, LNR, ExPostCost(0.1), ZCDPCost(0.01, 1e-4), DPCost(0.1, 1e-4)), ZCDPCost(1e-5)),
]  # fmt: skip


def _parts(f: Filter | ConcurrentFilter) -> list[Filter]:
    return [f.zcdp, f.ex_post] if isinstance(f, ConcurrentFilter) else [f]


def _part(f: Filter | ConcurrentFilter, cost: Cost) -> Filter:
    """The filter that prices ``cost`` (APC Thm 2: ex-post rounds go to the ex-post part)."""
    if isinstance(f, ConcurrentFilter):
        return f.ex_post if isinstance(cost, ExPostCost) else f.zcdp
    return f


def _exact_spent(part: Filter) -> tuple[Fraction, Fraction]:
    prices = [part.price(c) for c in part.realised]
    return sum((Fraction(a) for a, _ in prices), Fraction(0)), sum(
        (Fraction(d) for _, d in prices), Fraction(0)
    )


def _order_sums(f: RDPFilter, extra: Cost | None = None) -> list[Fraction]:
    """The exact Σ ε_α per order of an `RDPFilter`'s rounds (and ``extra``)."""
    rounds = (*f.realised, *(() if extra is None else (extra,)))
    return [
        sum((Fraction(f.prices(c)[i]) for c in rounds), Fraction(0)) for i in range(len(f.orders))
    ]


def _fits(f: RDPFilter, sums: list[Fraction]) -> bool:
    """Some order keeps its exact sum within its budget (THEORY §11)."""
    return any(b > 0.0 and t <= Fraction(b) for t, b in zip(sums, f.budgets, strict=True))


def _admits_exactly(f: AnyFilter, cost: Cost) -> bool:
    """Whether the exact sums, with ``cost``'s price added, stay within budget."""
    if isinstance(f, RDPFilter):
        return _fits(f, _order_sums(f, cost))
    part = _part(f, cost)
    amount, delta = part.price(cost)
    spent, deltas = _exact_spent(part)
    return spent + Fraction(amount) <= Fraction(part.budget) and deltas + Fraction(
        delta
    ) <= Fraction(part.delta_budget)


def _within_budget(f: AnyFilter) -> bool:
    if isinstance(f, RDPFilter):
        return not f.realised or _fits(f, _order_sums(f))
    return all(
        spent <= Fraction(part.budget) and deltas <= Fraction(part.delta_budget)
        for part in _parts(f)
        for spent, deltas in [_exact_spent(part)]
    )


def _reports_round_the_exact_sums(f: AnyFilter) -> None:
    """``spent`` the exact sum rounded up, ``remaining`` the exact difference rounded down, and
    their sum within one ulp of the budget (per order for an `RDPFilter`, with spent +
    remaining <= eps)."""
    if isinstance(f, RDPFilter):
        for got_spent, got_left, t, b in zip(
            f.spent_by_order, f.remaining_by_order, _order_sums(f), f.budgets, strict=True
        ):
            assert rounded_up(got_spent, t)
            assert got_left == 0.0 if t >= Fraction(b) else rounded_down(got_left, Fraction(b) - t)
        # spent is at the order with the least sum + tail, so <= that of remaining's order:
        # only spent's rounding up can carry the sum past eps, by at most one ulp
        ulp = Fraction(math.ulp(f.eps))
        assert Fraction(f.spent) + Fraction(f.remaining) <= Fraction(f.eps) + ulp
        return
    for part in _parts(f):
        spent, _ = _exact_spent(part)
        assert rounded_up(part.spent, spent)  # exact promise, on the safe side
        assert rounded_down(part.remaining, Fraction(part.budget) - spent)
        ulp = Fraction(math.ulp(part.budget))
        assert abs(Fraction(part.spent) + Fraction(part.remaining) - Fraction(part.budget)) <= ulp


def _state(f: AnyFilter) -> tuple[object, ...]:
    return (f, f.rounds, f.spent, f.remaining, pickle.dumps(f))


def _fill(f: AnyFilter, cost: Cost) -> AnyFilter:
    """Spend ``cost`` until the filter refuses it (a handful of rounds for the costs above; a
    `PLDFilter` counts 10,488, more than the 10⁴ tiny rounds it must hold)."""
    for _ in range(20_000):
        if not f.admits(cost):
            return f
        f = f.spend(cost)
    raise AssertionError("never refused")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
class TestFilterContract:
    def test_is_a_privacy_filter_with_its_guarantee(self, case: Case) -> None:
        f = case.make()
        assert isinstance(f, PrivacyFilter)
        assert f.rounds == 0
        assert isinstance(f.guarantee(), ZCDP | ApproxDP | GaussianDP)
        assert isinstance(f.reported_guarantee(), ZCDP | ApproxDP | GaussianDP)
        g = f.spend(case.tiny)
        assert (g.guarantee(), g.reported_guarantee()) == (f.guarantee(), f.reported_guarantee())
        if isinstance(f, RDPFilter):
            assert f.spent_by_order == (0.0,) * len(f.orders)
            assert f.remaining_by_order == tuple(max(0.0, b) for b in f.budgets)
            return
        for part in _parts(f):
            assert part.unit in ("rho", "eps", "mu²", "eps_alpha", "rounds")
            assert (part.spent, part.remaining) == (0.0, part.budget)

    def test_accepted_costs_are_priced_admitted_and_spent(self, case: Case) -> None:
        f = case.make()
        for cost in case.accepts:
            assert f.accepts(cost), cost
            amount, delta = f.price(cost)
            assert amount > 0.0
            assert delta >= 0.0
            assert f.admits(cost)
            f.check(cost)
            g = f.spend(cost)
            assert g.rounds == f.rounds + 1
            assert f.rounds == 0  # the old value is untouched
            if isinstance(g, RDPFilter):
                assert isinstance(f, RDPFilter)
                assert g.realised == (cost,)
                assert delta == 0.0
                assert g.spent_by_order == f.prices(cost)  # one round: its own prices
                continue
            part = _part(g, cost)
            assert part.realised == (cost,)  # the round's own cost is recorded
            assert part.spent == amount
            assert part.price(cost) == (amount, delta)

    def test_refused_cost_types_raise_and_change_nothing(self, case: Case) -> None:
        f = case.make().spend(case.tiny)
        before = _state(f)
        for cost in (*case.refuses, "rho=0.1"):
            assert not f.accepts(cost)  # type: ignore[arg-type]
            for call in (f.price, f.admits, f.check, f.spend):
                with pytest.raises(InvalidParameter) as info:
                    call(cost)  # type: ignore[arg-type]
                assert info.value.name == "filter"
                assert "cannot charge" in str(info.value)
                assert "accepts only" in str(info.value)
            assert _state(f) == before

    def test_a_refused_round_changes_nothing(self, case: Case) -> None:
        for cost in case.accepts:
            f = _fill(case.make(), cost)
            before = _state(f)
            assert not f.admits(cost)
            with pytest.raises(BudgetExceeded):
                f.check(cost)
            with pytest.raises(BudgetExceeded):
                f.spend(cost)
            assert _state(f) == before
            assert _within_budget(f)

    def test_exact_sums_under_ten_thousand_tiny_rounds(
        self, case: Case, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        n = 10_000
        f = case.make()
        for _ in range(n):
            f = f.spend(case.tiny)
        assert f.rounds == n

        def refuse(_self: object) -> tuple[object, ...]:
            raise AssertionError("spend walked the history")

        with monkeypatch.context() as m:  # a round costs O(1), whatever the history's length
            m.setattr(Chain, "items", refuse)
            g = f.spend(case.tiny)
            assert g.admits(case.tiny) == f.spend(case.tiny).admits(case.tiny)
        assert g.rounds == n + 1
        assert _within_budget(g)
        _reports_round_the_exact_sums(g)

    def test_equality_hashing_pickling_and_repr(self, case: Case) -> None:
        f, g = case.make(), case.make()
        assert f == g
        assert hash(f) == hash(g)
        h = f.spend(case.tiny)
        assert h != f
        assert h == g.spend(case.tiny)
        assert hash(h) == hash(g.spend(case.tiny))
        for twin in (pickle.loads(pickle.dumps(h)), copy.deepcopy(h)):
            assert twin == h
            assert hash(twin) == hash(h)
            assert (twin.spent, twin.remaining, twin.rounds) == (h.spent, h.remaining, h.rounds)
            assert twin.admits(case.tiny) == h.admits(case.tiny)
        for _ in range(1000):
            h = h.spend(case.tiny)
        text = repr(h)
        assert text.startswith(type(f).__name__ + "(")
        assert len(text) < 1000  # short: the history is not spelt out

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(data=st.data())
    def test_spent_plus_remaining_is_the_budget(self, case: Case, data: st.DataObject) -> None:
        f = case.make()
        for _ in range(data.draw(st.integers(0, 12))):
            cost = data.draw(st.sampled_from(case.accepts))
            if f.admits(cost):
                f = f.spend(cost)
        _reports_round_the_exact_sums(f)

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(data=st.data())
    def test_admitted_iff_the_exact_sums_stay_within_budget(
        self, case: Case, data: st.DataObject
    ) -> None:
        f = case.make()
        for _ in range(data.draw(st.integers(1, 15))):
            cost = data.draw(st.sampled_from(case.accepts))
            fits = _admits_exactly(f, cost)
            assert f.admits(cost) == fits
            if fits:
                f = f.spend(cost)

    def test_brownian_grids_clip_to_what_the_filter_admits(self, case: Case) -> None:
        f = case.make()
        for d in (0.5, 2.0):
            top, t_min = f.max_bm_eps(d), f.min_bm_time(d)
            if not f.accepts(BrownianCost(1.0, d)) or isinstance(f, ExPostFilter):
                assert (top, t_min) == (None, None)  # BMs are not priced by time
                continue
            assert top is not None
            assert t_min is not None
            assert f.admits(BrownianCost.from_eps(top, d))
            assert not f.admits(BrownianCost.from_eps(math.nextafter(top, math.inf), d))
            assert f.admits(BrownianCost(t_min, d))
            assert not f.admits(BrownianCost(math.nextafter(t_min, 0.0), d))


NON_COSTS: tuple[object, ...] = (None, 0.1, "ZCDPCost(0.1)", (ZCDPCost(0.1),), object())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_non_cost_is_refused_by_every_method(case: Case) -> None:
    """spend, check, price, admits (and an RDPFilter's prices) refuse a non-cost with
    `InvalidParameter` and record nothing (issue 37: RDPFilter recorded a round of cost None)."""
    f = case.make()
    methods = [
        "spend",
        "check",
        "price",
        "admits",
        *(["prices"] if isinstance(case, RDPCase) else []),
    ]
    for bad in NON_COSTS:
        for method in methods:
            with pytest.raises(InvalidParameter):
                getattr(f, method)(bad)
        assert not f.accepts(bad)  # type: ignore[arg-type]
    assert f == case.make()
    assert f.rounds == 0


def _extreme_costs() -> list[Cost]:
    """Every cost kind at subnormal to the largest parameters (issue 37)."""
    out: list[Cost] = []
    for x in EXTREMES:
        out += [ZCDPCost(x), GaussianCost(x), DPCost(x), BoundedRangeCost(x), ExPostCost(x)]
        out += [ExPostCost(x, eps_max=x), BrownianCost(x), BrownianCost(1.0, x)]
        out += [BrownianCost(x, x), BrownianCost(x, 1.0, bound=x, delta=1e-9)]
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_prices_at_extreme_parameters_are_positive_and_never_raw_errors(case: Case) -> None:
    """Each filter prices every cost it accepts at subnormal to huge parameters: a positive
    amount (never 0 for a positive cost; +inf beyond the floats, except `RDPFilter`, which
    refuses such a price saying so: issue 41, item 8), never NaN, never an OverflowError or
    another raw error; a cost it does not accept is `InvalidParameter`."""
    f = case.make()
    priced = 0
    for cost in _extreme_costs():
        try:
            amount, delta = f.price(cost)
        except InvalidParameter as err:
            overflow = isinstance(f, RDPFilter) and "beyond the floats" in str(err)
            assert overflow or not f.accepts(cost)
            continue
        assert not (isinstance(f, RDPFilter) and math.isinf(amount)), cost
        assert amount > 0.0, cost
        assert not math.isnan(delta), cost
        priced += 1
    assert priced > 0
