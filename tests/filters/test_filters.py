"""Privacy filters: exact budget arithmetic, adversarial analysts, the theorems' guarantees."""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt
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
    GaussianCost,
    GaussianDPFilter,
    UnifiedFilter,
    ZCDPCost,
    ZCDPFilter,
)
from expost.filters._exact import Chain, rho_of_brownian, rho_of_eps
from expost.guarantees import (
    ZCDP,
    ApproxDP,
    cks_rho_for_dp,
    cks_zcdp_to_dp,
    rho_for_dp,
    zcdp_to_dp,
)
from tests import stats
from tests.filter_steps import check_then_spend
from tests.safe_side import exact_sum, rounded_down, rounded_up

RhoFilter = ZCDPFilter | UnifiedFilter | BrownianFilter


def _dp_costs(f: ApproxDPFilter) -> list[DPCost]:
    assert all(isinstance(c, DPCost) for c in f.realised)
    return [c for c in f.realised if isinstance(c, DPCost)]


def _rho(cost: Cost) -> float:
    """What a zCDP filter charges for ``cost`` (conversions rounded up)."""
    return ZCDPFilter(1.0).price(cost)[0]


def _exact_spend(f: RhoFilter) -> Fraction:
    return sum((Fraction(_rho(c)) for c in f.realised), Fraction(0))


def _exact_cost(cost: ZCDPCost | BrownianCost) -> Fraction:
    if isinstance(cost, ZCDPCost):
        return Fraction(cost.rho)
    return Fraction(cost.sensitivity) ** 2 / (2 * Fraction(cost.time))


# --------------------------------------------------------------------------- costs and input


@pytest.mark.parametrize(
    "make",
    [
        lambda: ZCDPCost(0.0),
        lambda: ZCDPCost(-1.0),
        lambda: ZCDPCost(math.nan),
        lambda: ZCDPCost(1.0, 1.0),
        lambda: BrownianCost(0.0),
        lambda: BrownianCost(math.inf),
        lambda: BrownianCost(1.0, -1.0),
        lambda: BrownianCost.from_eps(0.0),
        lambda: DPCost(math.inf),
        lambda: DPCost(1.0, -0.1),
        lambda: ExPostCost(-0.5),
        lambda: ExPostCost(math.nan),
        lambda: ZCDPFilter(0.0),
        lambda: ZCDPFilter(1.0, 1.0),
        lambda: UnifiedFilter(1.0, delta_second=0.0),
        lambda: UnifiedFilter(1.0, conversion="renyi"),  # type: ignore[arg-type]
        lambda: UnifiedFilter.from_dp(10.0, 1e-6, conversion="renyi"),  # type: ignore[arg-type]
        lambda: BrownianFilter(1.0, 0.0),
        lambda: ApproxDPFilter(1.0, 0.5, 0.5),
        lambda: ApproxDPFilter(1.0, 0.1, 0.0),
        lambda: ExPostFilter(math.nan),
        lambda: ExPostFilter(1.0, realised=[ExPostCost(0.5)]),  # type: ignore[arg-type]
        lambda: ConcurrentFilter(ZCDPFilter(1.0, 0.5), ExPostFilter(1.0, 0.4), 0.2),
        lambda: ZCDPFilter(1.0, realised=(ZCDPCost(0.6), ZCDPCost(0.5))),
        lambda: ZCDPFilter(1.0, realised=(ExPostCost(0.1),)),
    ],
)
def test_bad_input_raises_invalid_parameter(make: Callable[[], object]) -> None:
    with pytest.raises(InvalidParameter):
        make()


@settings(max_examples=200, deadline=None)
@given(
    time=st.floats(1e-12, 1e12),
    sensitivity=st.floats(1e-6, 1e6),
    eps=st.floats(1e-8, 1e4),
)
def test_conversions_to_rho_round_up_to_the_nearest_float(
    time: float, sensitivity: float, eps: float
) -> None:
    for value, exact in (
        (rho_of_brownian(time, sensitivity), Fraction(sensitivity) ** 2 / (2 * Fraction(time))),
        (rho_of_eps(eps), Fraction(eps) ** 2 / 2),
    ):
        assert Fraction(value) >= exact
        assert Fraction(math.nextafter(value, 0.0)) < exact


def test_brownian_cost_from_eps_costs_eps_squared_over_two() -> None:
    c = BrownianCost.from_eps(0.5, sensitivity=2.0)
    assert c.time == pytest.approx(16.0)
    assert _rho(c) == pytest.approx(0.125, rel=1e-15)


# --------------------------------------------------------------------------- exact arithmetic


def test_rounded_sum_equal_to_the_budget_is_settled_exactly() -> None:
    f = ZCDPFilter(1.0).spend(ZCDPCost(1.0))
    assert math.fsum([1.0, 1e-17]) == 1.0
    assert not f.admits(ZCDPCost(1e-17))
    g = ZCDPFilter(0.3).spend(ZCDPCost(0.1))
    # The floats 0.1 and 0.2 add up to more than the float 0.3.
    assert not g.admits(ZCDPCost(0.2))
    h = ZCDPFilter(0.5).spend(ZCDPCost(0.25))
    assert h.admits(ZCDPCost(0.25))
    assert h.spend(ZCDPCost(0.25)).remaining == 0.0


@settings(max_examples=200, deadline=None)
@given(
    costs=st.lists(st.floats(1e-30, 1e3), min_size=0, max_size=12),
    asked=st.floats(1e-30, 1e3),
    data=st.data(),
)
def test_admission_is_exact(costs: list[float], asked: float, data: st.DataObject) -> None:
    """Admitted iff the exact rational sum stays within the budget: never more, never less;
    remaining is the largest float below the exact difference, spent the smallest above the sum."""
    exact = sum(map(Fraction, costs), Fraction(0))
    budget = float(exact + Fraction(asked)) * data.draw(st.sampled_from([1.0, 1.0, 0.5, 2.0]))
    budget = data.draw(st.sampled_from([budget, math.nextafter(budget, 0.0), budget]))
    if Fraction(budget) < exact:
        return
    f = ZCDPFilter(budget, realised=tuple(ZCDPCost(c) for c in costs))
    assert f.admits(ZCDPCost(asked)) == (exact + Fraction(asked) <= Fraction(budget))
    left = Fraction(budget) - exact  # reported rounded down (a budget), spent rounded up
    assert Fraction(f.remaining) <= left < Fraction(math.nextafter(f.remaining, math.inf))
    assert Fraction(math.nextafter(f.spent, -math.inf)) < exact <= Fraction(f.spent)


def test_budget_exceeded_names_spent_asked_and_remaining() -> None:
    f = ZCDPFilter(1.0, 0.01).spend(ZCDPCost(0.75, 0.004))
    with pytest.raises(BudgetExceeded) as info:
        f.check(ZCDPCost(0.5))
    err = info.value
    assert (err.spent, err.requested, err.remaining, err.unit) == (0.75, 0.5, 0.25, "rho")
    assert "0.75" in str(err)
    assert "0.5" in str(err)
    assert "0.25" in str(err)
    with pytest.raises(BudgetExceeded) as info:
        f.check(ZCDPCost(0.1, 0.007))
    assert info.value.unit == "delta"
    assert info.value.remaining == pytest.approx(0.006)


# --------------------------------------------------------------------------- adversarial analyst


def _make_rho_filter(kind: str, rho: float, delta: float) -> RhoFilter:
    if kind == "zcdp":
        return ZCDPFilter(rho, delta)
    if kind == "unified":
        return UnifiedFilter(rho, delta, 1e-3)
    return BrownianFilter(rho, 0.05)


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(["zcdp", "unified", "brownian"]),
    rho=st.floats(1e-3, 50.0),
    delta=st.sampled_from([0.0, 1e-6, 0.01]),
    data=st.data(),
)
def test_adversarial_analyst_never_overspends(
    kind: str, rho: float, delta: float, data: st.DataObject
) -> None:
    """Each request depends on what was admitted; asks may be too large on purpose."""
    f = _make_rho_filter(kind, rho, delta)
    for _ in range(data.draw(st.integers(1, 25))):
        greed = data.draw(st.floats(0.0, 1.5))  # fraction of what remains; > 1 overspends
        bm = kind == "brownian" or data.draw(st.booleans())
        if bm:
            sens = data.draw(st.floats(0.1, 10.0))
            share = max(greed * f.remaining, 1e-300)
            t_min = sens * sens / (2.0 * share)
            # Stopping earlier on the grid means a larger time; a liar stops below t_min.
            stretch = data.draw(st.sampled_from([1.0, 1.0, 2.0, 37.0, 0.5]))
            request: ZCDPCost | BrownianCost = BrownianCost(t_min, sens)
            realised: ZCDPCost | BrownianCost = BrownianCost(t_min * stretch, sens)
        else:
            amount = max(greed * f.remaining, 1e-12)
            d = data.draw(st.sampled_from([0.0, delta / 3.0, delta]))
            request = realised = ZCDPCost(amount, d)
        before, snapshot = f, attrs.evolve(f)
        outcome, f = check_then_spend(f, request, realised)
        if outcome == "refused":
            continue
        if outcome == "overspent":
            assert f is before
            assert f == snapshot
            assert Fraction(_rho(realised)) > Fraction(rho) - _exact_spend(before)
            continue
        assert f.rounds == before.rounds + 1
        assert before.rounds == len(before.realised)  # the old value is untouched
        assert _exact_spend(f) <= Fraction(rho)
        assert Fraction(_rho(realised)) >= _exact_cost(realised)
        assert rounded_up(f.spent, exact_sum(_rho(c) for c in f.realised))
        assert rounded_down(f.remaining, Fraction(rho) - _exact_spend(f))
        fresh = attrs.evolve(f, _totals=None)  # sums recomputed from the record
        assert (fresh.spent, fresh.remaining, fresh) == (f.spent, f.remaining, f)
        assert 0.0 <= f.remaining <= rho
        if not isinstance(f, BrownianFilter):
            assert sum(
                (Fraction(c.delta) for c in f.realised if isinstance(c, ZCDPCost)), Fraction(0)
            ) <= Fraction(delta)
    _check_guarantee(f, rho, delta)


def _check_guarantee(f: RhoFilter, rho: float, delta: float) -> None:
    if isinstance(f, BrownianFilter):
        ell = math.log(1.0 / 0.05)
        g = f.guarantee()
        assert g.eps == pytest.approx(rho + 2.0 * math.sqrt(rho * ell), rel=1e-14)
        assert g.delta == 0.05
    else:
        assert f.guarantee() == ZCDP(rho, delta)


def test_refused_spend_leaves_the_filter_unchanged() -> None:
    f = UnifiedFilter(1.0).spend(ZCDPCost(0.5))
    snapshot = UnifiedFilter(1.0, realised=(ZCDPCost(0.5),))
    with pytest.raises(BudgetExceeded):
        f.spend(BrownianCost(0.9))  # costs 1/1.8 > 0.5
    assert f == snapshot
    assert f.rounds == 1
    assert f.spent == 0.5


# --------------------------------------------------------------------------- the recorded history


def test_chain_appends_shares_and_compares_by_items() -> None:
    empty: Chain[int] = Chain()
    a = Chain.of(range(5))
    b = a.append(5)
    assert (a.size, a.items(), b.size, b.items()) == (5, (0, 1, 2, 3, 4), 6, (0, 1, 2, 3, 4, 5))
    assert empty.items() == ()
    assert empty == Chain.of(())
    assert b == Chain.of(range(6))
    assert hash(b) == hash(Chain.of(range(6)))
    assert a.append(7) != b  # same prefix, last item differs
    assert Chain.of([9, 1, 2, 3, 4, 5]) != b  # first item differs
    assert a != b  # size differs
    assert a != a.items()  # a chain is not a tuple
    assert repr(b) == "<chain of 6, last 5>"
    assert repr(empty) == "<chain of 0>"


@pytest.mark.parametrize(
    ("empty", "cost"),
    [
        (ZCDPFilter(1e9, 0.5), ZCDPCost(1e-6, 1e-9)),
        (UnifiedFilter(1e9), BrownianCost(1e6)),
        (BrownianFilter(1e9, 0.1), BrownianCost(1e6)),
        (ApproxDPFilter(1e9, 0.5, 0.1), DPCost(1e-3)),
        (ExPostFilter(1e9), ExPostCost(1e-6)),
    ],
)
def test_spend_never_walks_the_history(
    empty: RhoFilter | ApproxDPFilter | ExPostFilter,
    cost: Cost,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A round extends the recorded chain instead of copying it (constant time per round)."""
    n = 10_000
    f = empty
    for _ in range(n):
        f = f.spend(cost)

    def refuse(_chain: object) -> tuple[Cost, ...]:
        raise AssertionError("spend walked the history")

    with monkeypatch.context() as m:
        m.setattr(Chain, "items", refuse)
        g = f.spend(cost)
        assert g.rounds == n + 1
        assert g.admits(cost)
        assert f.rounds == n
    assert g.realised == (cost,) * (n + 1)
    history: dict[str, Any] = {"realised": g.realised}
    tuple_form = attrs.evolve(g, **history)  # rebuilt from the tuple, sums recomputed
    assert (tuple_form, hash(tuple_form), tuple_form.spent) == (g, hash(g), g.spent)
    assert g != f
    twice = {k: 2.0 * v for k, v in attrs.asdict(cost).items() if v is not None}
    assert g != f.spend(attrs.evolve(cost, **twice))
    text = repr(g)  # short, and no recursion over 10,001 links
    assert f"<chain of {n + 1}, last {cost!r}>" in text
    assert len(text) < 300
    for twin in (pickle.loads(pickle.dumps(g)), copy.deepcopy(g), attrs.evolve(g, _totals=None)):
        assert twin == g
        assert (twin.spent, twin.rounds, twin.remaining) == (g.spent, g.rounds, g.remaining)


def test_realised_accepts_tuples_only_and_keeps_its_type() -> None:
    f = ZCDPFilter(1.0, realised=(ZCDPCost(0.5),))
    assert (f.realised, f.rounds, f.spent) == ((ZCDPCost(0.5),), 1, 0.5)
    assert attrs.evolve(f) == f
    assert attrs.evolve(f, rho=2.0).realised == f.realised
    with pytest.raises(InvalidParameter) as info:
        ExPostFilter(1.0, realised=(c for c in [ExPostCost(0.5)]))  # type: ignore[arg-type]
    assert info.value.name == "realised"
    g = ApproxDPFilter(10.0, 0.0, 0.1).spend(DPCost(0.5)).spend(DPCost(0.25))
    assert [c.eps for c in _dp_costs(g)] == [0.5, 0.25]


def test_evolving_the_history_recomputes_the_sums() -> None:
    """``attrs.evolve(f, realised=...)`` charges the new history, not the old one's sums."""
    f = ZCDPFilter(1.0).spend(ZCDPCost(0.5))
    g = attrs.evolve(f, realised=(ZCDPCost(0.25), BrownianCost(4.0)))
    assert (g.spent, g.remaining, g.rounds) == (0.375, 0.625, 2)
    assert not g.admits(ZCDPCost(0.75))
    with pytest.raises(InvalidParameter):
        attrs.evolve(f, realised=(ZCDPCost(0.75), ZCDPCost(0.5)))


def test_filters_with_other_histories_differ() -> None:
    a = ZCDPFilter(1.0).spend(ZCDPCost(0.25)).spend(ZCDPCost(0.5))
    b = ZCDPFilter(1.0).spend(ZCDPCost(0.5)).spend(ZCDPCost(0.25))
    assert (a.spent, a.rounds) == (b.spent, b.rounds)
    assert a != b
    assert a == ZCDPFilter(1.0, realised=(ZCDPCost(0.25), ZCDPCost(0.5)))


# --------------------------------------------------------------------------- guarantees


def test_apc_section7_numbers() -> None:
    f = UnifiedFilter.from_dp(10.0, 1e-6)
    assert f.rho == pytest.approx(1.3530146901688735, rel=1e-12)
    assert 2.0 * f.rho == pytest.approx(2.706, abs=5e-4)
    g = f.dp_guarantee()
    assert g.eps == pytest.approx(10.0, rel=1e-13)
    assert g.delta == 1e-6
    assert f.guarantee() == ZCDP(f.rho, 0.0)
    cks = UnifiedFilter.from_dp(10.0, 1e-6, conversion="cks")
    assert cks.rho == cks_rho_for_dp(10.0, 1e-6) > f.rho
    assert cks.dp_guarantee().eps == pytest.approx(10.0, rel=1e-9)
    assert cks.dp_guarantee() == cks_zcdp_to_dp(ZCDP(cks.rho), 1e-6)


def test_unified_dp_guarantee_is_lemma_2_1_not_the_printed_form() -> None:
    f = UnifiedFilter(0.5, 1e-4)
    with pytest.raises(InvalidParameter):
        f.dp_guarantee()
    ell = math.log(1e6)
    g = f.dp_guarantee(1e-6)
    assert g == zcdp_to_dp(ZCDP(0.5, 1e-4), 1e-6)
    assert g.eps == pytest.approx(0.5 + 2.0 * math.sqrt(0.5 * ell), rel=1e-14)
    assert g.eps < 0.5 + 2.0 * math.sqrt(2.0 * 0.5 * ell)
    assert g.delta == pytest.approx(1e-4 + (1.0 - 1e-4) * 1e-6, rel=1e-14)


def test_approx_dp_filter_guarantee_and_budget() -> None:
    f = ApproxDPFilter(10.0, 1e-7, 1e-6)
    assert f.guarantee() == ApproxDP(10.0, 1e-7 + 1e-6)
    assert f.rho_budget == rho_for_dp(10.0, 1e-6)
    assert f.admits(DPCost(math.sqrt(2.7)))
    assert not f.admits(DPCost(math.sqrt(2.71)))
    assert not f.admits(DPCost(0.1, 2e-7))


def _fac_thm2_admits(eps_sq: list[float], eps: float, delta_second: float) -> bool:
    """FAC Thm 2's condition as printed, evaluated in floats."""
    total = math.fsum(eps_sq)
    return math.sqrt(2.0 * math.log(1.0 / delta_second) * total) + total / 2.0 <= eps


@settings(max_examples=80, deadline=None)
@given(
    eps=st.floats(0.05, 20.0),
    delta_second=st.floats(1e-9, 0.5),
    delta_prime=st.sampled_from([0.0, 1e-5]),
    data=st.data(),
)
def test_approx_dp_filter_is_the_zcdp_filter_with_rho_star(
    eps: float, delta_second: float, delta_prime: float, data: st.DataObject
) -> None:
    """Same decisions as ZCDPFilter(rho*) always, and as FAC Thm 2's printed test.

    Against the printed test, decisions may differ only where Σ eps_m²/2 is within 1e-12
    (relative) of rho*: both sides are float evaluations (log, sqrt) of equivalent
    conditions, each accurate to a few ulps (~1e-15).
    """
    a = ApproxDPFilter(eps, delta_prime, delta_second)
    z = ZCDPFilter(rho_for_dp(eps, delta_second), delta_prime)
    rho_star = z.rho
    scale = math.sqrt(2.0 * rho_star)
    for _ in range(data.draw(st.integers(1, 15))):
        e = scale * data.draw(st.floats(1e-3, 1.2))
        d = data.draw(st.sampled_from([0.0, delta_prime / 2.0, delta_prime]))
        cost = DPCost(e, d)
        decided = a.admits(cost)
        assert decided == z.admits(ZCDPCost(rho_of_eps(cost.eps), d))
        eps_sq = [c.eps**2 for c in _dp_costs(a)] + [e * e]
        if abs(math.fsum(eps_sq) / 2.0 - rho_star) > 1e-12 * rho_star:
            within_delta = math.fsum([c.delta for c in _dp_costs(a)] + [d]) <= delta_prime
            assert decided == (_fac_thm2_admits(eps_sq, eps, delta_second) and within_delta)
        if decided:
            a, z = a.spend(cost), z.spend(ZCDPCost(rho_of_eps(cost.eps), d))
    assert a.spent == z.spent
    assert a.rounds == z.rounds


def test_ex_post_filter_charges_realised_bounds() -> None:
    f = ExPostFilter(1.0, 1e-3)
    assert f.guarantee() == ApproxDP(1.0, 1e-3)
    assert not f.admits(ExPostCost(1.5))
    f = f.spend(ExPostCost(0.3, 5e-4))  # asked for up to 0.9, realised 0.3
    assert (f.spent, f.remaining, f.rounds, f.unit) == (0.3, 0.7, 1, "eps")
    assert f.admits(ExPostCost(0.7, 5e-4))
    assert not f.admits(ExPostCost(0.7, 6e-4))
    assert not f.admits(ExPostCost(0.71))
    f = f.spend(ExPostCost(0.7))
    # The floats 0.3 and 0.7 add up to 1 − 2⁻⁵⁴ exactly; what is left is that exact rest.
    assert f.remaining == 2.0**-54
    assert f.admits(ExPostCost(0.0))
    assert not f.admits(ExPostCost(2.0**-53))


def test_concurrent_filter_routes_and_composes() -> None:
    rho, d, d1, eps1, d2 = 0.8, 1e-7, 1e-5, 2.0, 1e-6
    f = ConcurrentFilter(UnifiedFilter(rho, d), ExPostFilter(eps1, d1), d2)
    g = f.guarantee()
    assert g.eps == pytest.approx(rho + 2.0 * math.sqrt(rho * math.log(1.0 / d2)) + eps1)
    assert g.delta == pytest.approx(d + d1 + d2, rel=1e-14)
    f = f.spend(ZCDPCost(0.3)).spend(ExPostCost(1.5, 1e-6)).spend(BrownianCost(2.0))
    assert f.rounds == 3
    assert f.spent[0] == pytest.approx(0.55)
    assert f.remaining[0] == pytest.approx(0.25)
    assert (f.spent[1], f.remaining[1]) == (1.5, 0.5)
    assert not f.admits(ExPostCost(0.6))
    assert f.admits(ZCDPCost(0.25))
    assert f.max_bm_eps() == f.zcdp.max_bm_eps()
    assert f.min_bm_time(2.0) == f.zcdp.min_bm_time(2.0)
    with pytest.raises(BudgetExceeded):
        f.spend(ExPostCost(0.6))
    assert f.rounds == 3


# --------------------------------------------------------------------------- BM clipping


@settings(max_examples=100, deadline=None)
@given(
    rho=st.floats(1e-6, 1e3),
    used=st.one_of(st.just(0.0), st.floats(1e-6, 0.999)),
    sensitivity=st.floats(1e-3, 1e3),
    kind=st.sampled_from(["zcdp", "unified", "brownian"]),
)
def test_max_bm_eps_and_min_bm_time_round_trip(
    rho: float, used: float, sensitivity: float, kind: str
) -> None:
    f = _make_rho_filter(kind, rho, 0.0)
    if used > 0.0:
        f = f.spend(BrownianCost.from_eps(math.sqrt(2.0 * used * rho)))
    eps, t = f.max_bm_eps(sensitivity), f.min_bm_time(sensitivity)
    assert eps == pytest.approx(math.sqrt(2.0 * f.remaining), rel=1e-12)
    assert t == pytest.approx(sensitivity**2 / (2.0 * f.remaining), rel=1e-12)
    assert f.admits(BrownianCost.from_eps(eps, sensitivity))
    assert not f.admits(BrownianCost.from_eps(math.nextafter(eps, math.inf), sensitivity))
    assert not f.admits(BrownianCost.from_eps(eps * (1.0 + 1e-12), sensitivity))
    assert f.admits(BrownianCost(t, sensitivity))
    assert not f.admits(BrownianCost(math.nextafter(t, 0.0), sensitivity))


def test_exhausted_budget_allows_no_brownian_mechanism() -> None:
    f = BrownianFilter(0.5, 0.1).spend(BrownianCost(1.0))
    assert f.remaining == 0.0
    assert f.max_bm_eps() == 0.0
    assert f.min_bm_time() == math.inf
    assert not f.admits(BrownianCost(1e300))


# --------------------------------------------------------------------------- statistical audits


def _audit_bm_interactions(
    filt: UnifiedFilter | BrownianFilter,
    target: float,
    trials: int,
    seed: int,
    rounds: int = 6,
    grid: int = 48,
) -> npt.NDArray[np.float64]:
    """Total loss of ``trials`` adaptive interactions run under copies of ``filt``.

    The analyst mixes Gaussian rounds (loss exactly N(rho, 2rho)) with Brownian mechanisms
    (loss Δ²s/2 + Δ·X(s) in privacy time s = 1/t, X a standard BM walked forward) whose
    grids are clipped by the filter's `min_bm_time`. It is adversarial: it stops a BM as
    soon as the total loss exceeds ``target`` and then ends the interaction; the size of
    the next round depends on the previous noisy output.
    """
    rng = np.random.default_rng(seed)
    filters = [filt] * trials
    loss = np.zeros(trials)
    last = rng.normal(size=trials)  # the previous noisy output
    done = np.zeros(trials, dtype=bool)
    sens = rng.choice([0.5, 1.0, 2.0], size=trials)
    gaussian_ok = isinstance(filt, UnifiedFilter)
    for r in range(rounds):
        gaussian = gaussian_ok & ((r + (last > 0)) % 2 == 1) & ~done
        share = np.where(last > 0, 0.15, 0.4) * filt.rho
        rhos = np.array(
            [
                min(s, f.remaining) if g else 0.0
                for f, s, g in zip(filters, share, gaussian, strict=True)
            ]
        )
        for i in np.flatnonzero(gaussian & (rhos > 0)):
            if filters[i].admits(ZCDPCost(float(rhos[i]))):
                filters[i] = filters[i].spend(ZCDPCost(float(rhos[i])))
            else:
                rhos[i] = 0.0
        step = rng.normal(rhos, np.sqrt(2.0 * rhos))
        loss += np.where(gaussian, step, 0.0)
        last = np.where(gaussian, step, last)

        brownian = ~gaussian & ~done
        t_min = np.array(
            [
                f.min_bm_time(float(d)) if b else np.inf
                for f, d, b in zip(filters, sens, brownian, strict=True)
            ]
        )
        brownian &= np.isfinite(t_min)
        s_max = np.where(brownian, 1.0 / t_min, 0.0)
        k = np.arange(1, grid + 1)
        start = np.where(last > 0, 0.5, 0.0)[:, None]  # adaptive grid start
        frac = start + (1.0 - start) * k / grid
        s = s_max[:, None] * frac
        x = np.cumsum(rng.normal(size=s.shape) * np.sqrt(np.diff(s, prepend=0.0)), axis=1)
        path = sens[:, None] ** 2 * s / 2.0 + sens[:, None] * x
        crossed = loss[:, None] + path > target
        stop = np.where(crossed.any(axis=1), crossed.argmax(axis=1), grid - 1)
        rows = np.arange(trials)
        for i in np.flatnonzero(brownian):
            stop_time = float(t_min[i] / frac[i, stop[i]])
            filters[i] = filters[i].spend(BrownianCost(stop_time, float(sens[i])))
        loss += np.where(brownian, path[rows, stop], 0.0)
        last = np.where(brownian, x[rows, stop] / np.maximum(s[rows, stop], 1e-300), last)
        done |= loss > target
    for f in filters:
        assert _exact_spend(f) <= Fraction(f.rho)
    return loss


def test_unified_filter_audit_and_twin() -> None:
    """P(total loss > eps) <= delta'' for eps from dp_guarantee (APC Thm 5 + Lemma 2.1)."""
    filt = UnifiedFilter(0.5, 0.0, 0.1)
    eps = filt.dp_guarantee().eps
    trials = 2000
    loss = _audit_bm_interactions(filt, eps, trials, seed=11)
    hits = int(np.sum(loss > eps))
    assert hits > 0  # violations are observable at this budget
    assert stats.rate_is_at_most(hits, trials, 0.1)
    # Planted bug: a claim with a quarter of Lemma 2.1's deviation term.
    ell = math.log(1.0 / 0.1)
    wrong = filt.rho + math.sqrt(filt.rho * ell) / 2.0
    loss = _audit_bm_interactions(filt, wrong, trials, seed=12)
    assert not stats.rate_is_at_most(int(np.sum(loss > wrong)), trials, 0.1)


def test_brownian_filter_audit_and_twin() -> None:
    """P(total loss > rho + 2 sqrt(rho log(1/delta))) <= delta (APC Lemma 6.2)."""
    filt = BrownianFilter(0.5, 0.1)
    eps = filt.guarantee().eps
    trials = 2000
    loss = _audit_bm_interactions(filt, eps, trials, seed=21)
    hits = int(np.sum(loss > eps))
    assert hits > 0
    assert stats.rate_is_at_most(hits, trials, 0.1)
    # Planted bug: the filter runs on four times the budget its claim is computed from.
    loss = _audit_bm_interactions(BrownianFilter(2.0, 0.1), eps, trials, seed=22)
    assert not stats.rate_is_at_most(int(np.sum(loss > eps)), trials, 0.1)


def _smallest_float_at_least(amount: float, exact: Fraction) -> bool:
    return Fraction(amount) >= exact and Fraction(math.nextafter(amount, 0.0)) < exact


# (filter, cost, the theorem's exact price in the filter's unit, delta): the price table of
# docs/filters.md, derived here from the formulas, not from the code.
PRICE_TABLE: list[tuple[str, Any, Cost, Fraction, float]] = [
    ("FAC Thm 1", ZCDPFilter(1.0, 0.1), ZCDPCost(0.3, 1e-3), Fraction(0.3), 1e-3),
    ("APC Thm 5", UnifiedFilter(1.0), BrownianCost(7.0, 3.0), Fraction(9, 14), 0.0),
    ("APC Lemma 2.1", ZCDPFilter(1.0, 0.1), DPCost(0.3, 1e-3), Fraction(0.3) ** 2 / 2, 1e-3),
    ("Cesar–Rogers", UnifiedFilter(1.0), BoundedRangeCost(0.3), Fraction(0.3) ** 2 / 8, 0.0),
    ("eps_max-DP", ZCDPFilter(1.0), ExPostCost(0.1, 0.0, 0.3), Fraction(0.3) ** 2 / 2, 0.0),
    ("APC Lemma 6.2", BrownianFilter(1.0, 1e-6), BrownianCost(7.0, 3.0), Fraction(9, 14), 0.0),
    ("FAC Thm 2", ApproxDPFilter(3.0, 0.1, 1e-6), DPCost(0.3, 1e-3), Fraction(0.3) ** 2 / 2, 1e-3),
    ("APC Thm 5 in FAC Thm 2", ApproxDPFilter(3.0, 0.1, 1e-6), BrownianCost(7.0, 3.0), Fraction(9, 14), 0.0),
    ("APC Lemma B.2", ExPostFilter(1.0, 0.1), ExPostCost(0.3, 1e-3), Fraction(0.3), 1e-3),
    ("BNR Thm 3.6", ExPostFilter(1.0, 0.1), BrownianCost(7.0, 3.0, 0.3, 1e-3), Fraction(0.3), 1e-3),
    ("pure DP is ex-post", ExPostFilter(1.0, 0.1), DPCost(0.3), Fraction(0.3), 0.0),
    ("GDP: Gaussian mu² = 2·rho", GaussianDPFilter(2.0), GaussianCost(0.3), 2 * Fraction(0.3), 0.0),
    ("GDP: BM mu² = Δ²/t", GaussianDPFilter(2.0), BrownianCost(7.0, 3.0), Fraction(9, 7), 0.0),
]  # fmt: skip
# The GDP filter's transcendental prices (mu(eps)², THEORY §9) are checked against 60-digit
# arithmetic in tests/filters/test_gaussian_dp.py.


@pytest.mark.parametrize(
    ("source", "f", "cost", "exact", "delta"), PRICE_TABLE, ids=[r[0] for r in PRICE_TABLE]
)
def test_each_price_is_its_theorems_value_rounded_up(
    source: str, f: Any, cost: Cost, exact: Fraction, delta: float
) -> None:
    amount, charged_delta = f.price(cost)
    assert _smallest_float_at_least(amount, exact), (source, amount, float(exact))
    assert charged_delta == delta


def test_price_table_twin_a_halved_brownian_price_is_caught() -> None:
    """Planted bug: Δ²/(4t) for a BM (half of APC Thm 5's price) fails the table's check."""
    amount, _ = UnifiedFilter(1.0).price(BrownianCost(7.0, 3.0))
    assert not _smallest_float_at_least(amount / 2.0, Fraction(9, 14))
