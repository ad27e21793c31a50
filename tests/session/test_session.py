"""`PrivateSession`: the round protocol under every filter, adversarial analysts and Brownian
rounds (the privacy of the data, the shared ledger and the statistical check of the guarantee:
tests/session/test_session_ledger.py; the helpers: tests/session_helpers.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import expost as ep
from expost import (
    ApproxDP,
    ApproxDPFilter,
    BoundedRangeCost,
    BrownianCost,
    BrownianFilter,
    BudgetExceeded,
    ConcurrentFilter,
    Cost,
    DPCost,
    EpsilonGrid,
    ExPostCost,
    ExPostFilter,
    GaussianCost,
    InvalidParameter,
    MixturePrivacyBoundary,
    OpenEpsilonGrid,
    PrivateSession,
    Released,
    TimeGrid,
    Transcript,
    UnifiedFilter,
    ZCDPCost,
    ZCDPFilter,
)
from expost.filters import Filter, LaplaceCost
from expost.filters._exact import rho_of_brownian, rho_of_eps
from expost.session import SessionFilter
from expost.stopping import AtIndex, Never, StoppingRule
from expost.testing.strategies import eps_grids, stopping_rules, time_grids
from tests.safe_side import exact_sum, rounded_up
from tests.session_helpers import RHO_FILTERS, _dp, _left, _rho, _session, _spent, _state

# ----------------------------------------------------------------------------- API contract


def test_the_architecture_sketch_runs() -> None:
    rng = np.random.default_rng(7)
    filt = ep.UnifiedFilter.from_dp(eps=10.0, delta=1e-6)
    session = ep.PrivateSession(filt, rng=rng)
    counts = np.array([900.0, 400.0, 250.0, 30.0, 0.0])
    top = session.exponential_mechanism(counts, eps=0.1, monotone=True)
    run = session.brownian(
        value=counts[top],
        sensitivity=1.0,
        grid=ep.OpenEpsilonGrid.linear_in_eps2(1e-4, 1000),
        stop=ep.stopping.RelativeError(alpha=0.1),
    )
    assert isinstance(run, ep.Transcript)
    assert run.stopped
    assert 0 <= top < counts.size
    first, second = session.history
    assert (first.mechanism, second.mechanism) == ("exponential", "brownian")
    assert first.realised == BoundedRangeCost(0.1)  # the round's own cost
    assert filt.price(first.realised) == (rho_of_eps(0.1) / 4.0, 0.0)  # 0.1²/8, rounded up
    assert second.realised == BrownianCost(run.time, 1.0)
    assert session.spent == pytest.approx(0.1**2 / 8.0 + run.eps[-1] ** 2 / 2.0, rel=1e-12)
    assert _left(session) == pytest.approx(filt.rho - _spent(session), rel=1e-12)
    assert session.guarantee() == ApproxDP(10.0, 1e-6) or (
        _dp(session).eps == pytest.approx(10.0, rel=1e-12)
        and _dp(session).delta == pytest.approx(1e-6, rel=1e-12)
    )
    assert ep.BudgetExceeded is BudgetExceeded


def test_methods_return_released_values_and_record_rounds() -> None:
    s = _session(ZCDPFilter(10.0), seed=3)
    g = s.gaussian(np.array([1.0, 2.0]), sensitivity=1.0, rho=0.5)
    lap = s.laplace(5.0, sensitivity=2.0, eps=1.0)
    idx = s.exponential_mechanism([3.0, 1.0, 2.0], eps=1.0, monotone=False)
    run = s.brownian(0.0, 2.0, TimeGrid([50.0, 20.0, 8.0]), stop=AtIndex(1))
    assert g.shape == (2,)
    assert np.shape(lap) == ()
    assert isinstance(idx, int)
    assert isinstance(run, Transcript)
    assert [r.mechanism for r in s.history] == ["gaussian", "laplace", "exponential", "brownian"]
    assert [r.index for r in s.history] == [0, 1, 2, 3]
    assert [r.realised for r in s.history] == [
        GaussianCost(0.5),
        LaplaceCost(1.0),  # a scalar: the Laplace pair (a DPCost, priced as one)
        BoundedRangeCost(2.0),  # not monotone: range 2·eps
        BrownianCost(20.0, 2.0),
    ]
    assert [s.filter.price(r.realised) for r in s.history] == [
        (0.5, 0.0),
        (0.5, 0.0),
        (0.5, 0.0),  # (2·eps)²/8
        (0.1, 0.0),
    ]
    assert s.history[3].request == BrownianCost(8.0, 2.0)
    assert s.spent == pytest.approx(1.6, rel=1e-15)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        s.history[0].index = 5  # type: ignore[misc]
    assert isinstance(s.history, tuple)


# ----------------------------------------------------------------------------- each filter


def _brownian_with_boundary(s: PrivateSession) -> object:
    psi = MixturePrivacyBoundary(10.0, 1e-3)
    return s.brownian(0.0, 1.0, TimeGrid([400.0, 200.0]), boundary=psi)


CALLS: dict[str, Callable[[PrivateSession], object]] = {
    "gaussian": lambda s: s.gaussian(0.0, 1.0, 0.01),
    "laplace": lambda s: s.laplace(0.0, 1.0, 0.1),
    "exponential": lambda s: s.exponential_mechanism([1.0, 2.0], 0.1, True),
    "brownian": lambda s: s.brownian(0.0, 1.0, TimeGrid([400.0, 200.0])),
    "brownian-open": lambda s: s.brownian(0.0, 1.0, OpenEpsilonGrid.linear_in_eps2(1e-3, 5)),
    "brownian-boundary": _brownian_with_boundary,
}
FILTERS: dict[str, tuple[SessionFilter, set[str]]] = {
    "zcdp": (ZCDPFilter(1.0), set(CALLS)),
    "unified": (UnifiedFilter.from_dp(2.0, 1e-6), set(CALLS)),
    "concurrent": (ConcurrentFilter(ZCDPFilter(1.0), ExPostFilter(1.0), 1e-6), set(CALLS)),
    "brownian": (BrownianFilter(1.0, 1e-6), {"brownian", "brownian-open", "brownian-boundary"}),
    "approx-dp": (ApproxDPFilter(2.0, 0.0, 1e-6), set(CALLS) - {"gaussian"}),
    "ex-post": (ExPostFilter(2.0, 0.01), {"laplace", "exponential", "brownian-boundary"}),
}


@pytest.mark.parametrize("filter_name", FILTERS)
@pytest.mark.parametrize("call", CALLS)
def test_each_filter_charges_what_it_can_and_refuses_the_rest(filter_name: str, call: str) -> None:
    f, accepted = FILTERS[filter_name]
    rng = np.random.default_rng(1)
    s = PrivateSession(f, rng)
    before = _state(s, rng)
    if call in accepted:
        CALLS[call](s)
        assert len(s.history) == 1
        assert s.filter.rounds == 1
    else:
        with pytest.raises(InvalidParameter, match=r"filter|grid") as info:
            CALLS[call](s)
        assert "cannot charge" in str(info.value) or "open grid" in str(info.value)
        assert _state(s, rng) == before


def test_what_each_filter_is_charged() -> None:
    psi = MixturePrivacyBoundary(10.0, 1e-3)
    charges: list[tuple[SessionFilter, Cost, Cost]] = [
        (ZCDPFilter(1.0), ZCDPCost(rho_of_eps(0.2)), ZCDPCost(rho_of_eps(0.4) / 4.0)),
        (ApproxDPFilter(5.0, 0.0, 1e-6), DPCost(0.2), DPCost(0.4)),
        (ExPostFilter(2.0), ExPostCost(0.2), ExPostCost(0.4)),
    ]
    for f, laplace, exponential in charges:
        s = _session(f)
        s.laplace(0.0, 1.0, 0.2)
        s.exponential_mechanism([0.0, 1.0], 0.2, False)
        assert [r.realised for r in s.history] == [LaplaceCost(0.2), BoundedRangeCost(0.4)]
        charged = [f.price(r.realised) for r in s.history]
        assert charged == [f.price(laplace), f.price(exponential)]
        assert rounded_up(_spent(s), exact_sum(a for a, _ in charged))
    assert Fraction(rho_of_eps(0.2)) >= Fraction(0.2) ** 2 / 2  # conversions round up
    s = _session(ExPostFilter(2.0, 0.01))
    run = s.brownian(0.0, 1.0, TimeGrid([400.0, 200.0]), stop=AtIndex(0), boundary=psi)
    assert s.history[0].request == BrownianCost(200.0, 1.0, psi(200.0), 1e-3)
    assert s.history[0].realised == BrownianCost(400.0, 1.0, psi(400.0), 1e-3)
    assert s.filter.price(s.history[0].realised) == (psi(400.0), 1e-3)
    assert s.spent == psi(400.0)
    assert run.ex_post is not None
    assert run.ex_post.bound == psi(400.0)
    s = _session(ApproxDPFilter(2.0, 0.0, 1e-6))
    s.brownian(0.0, 1.0, TimeGrid([400.0, 100.0]), stop=AtIndex(0), boundary=psi)
    # Recorded as what it was, a BM; charged as before, Δ²/(2t) = (Δ/sqrt(t))²/2 rounded up.
    assert s.history[0].request == BrownianCost(100.0, 1.0, psi(100.0), 1e-3)
    assert s.history[0].realised == BrownianCost(400.0, 1.0, psi(400.0), 1e-3)
    # Δ²/(2t) rounded up: never above the old charge (eps covering Δ/sqrt(t), eps²/2 rounded
    # up), one ulp below it at t = 100, and never below the exact value.
    for cost, t, old in ((s.history[0].request, 100.0, 0.1), (s.history[0].realised, 400.0, 0.05)):
        new = s.filter.price(cost)
        assert new == (rho_of_brownian(t, 1.0), 0.0)
        assert Fraction(1, 2) / Fraction(t) <= Fraction(new[0]) <= Fraction(rho_of_eps(old))
    assert s.filter.price(s.history[0].request)[0] == math.nextafter(rho_of_eps(0.1), 0.0)
    assert s.spent == rho_of_brownian(400.0, 1.0) == math.nextafter(rho_of_eps(0.05), 0.0)


def test_guarantee_is_the_theorem_of_each_filter() -> None:
    rho_star = ep.rho_for_dp(3.0, 1e-5)
    ell = math.log(1.0 / 1e-5)
    cases: list[tuple[SessionFilter, ApproxDP | ep.ZCDP]] = [
        (ZCDPFilter(0.7, 1e-4), ep.ZCDP(0.7, 1e-4)),
        (UnifiedFilter(0.7, 1e-4), ep.ZCDP(0.7, 1e-4)),
        (
            UnifiedFilter.from_dp(3.0, 1e-5),
            ApproxDP(rho_star + 2.0 * math.sqrt(rho_star * ell), 1e-5),
        ),
        (BrownianFilter(0.7, 1e-5), ApproxDP(0.7 + 2.0 * math.sqrt(0.7 * ell), 1e-5)),
        (ApproxDPFilter(3.0, 1e-4, 1e-5), ApproxDP(3.0, 1e-4 + 1e-5)),
        (ExPostFilter(3.0, 1e-4), ApproxDP(3.0, 1e-4)),
        (
            ConcurrentFilter(ZCDPFilter(0.7, 1e-4), ExPostFilter(0.5, 1e-3), 1e-5),
            ApproxDP(0.7 + 2.0 * math.sqrt(0.7 * ell) + 0.5, 1e-4 + 1e-3 + 1e-5),
        ),
    ]
    for f, claim in cases:
        got = _session(f).guarantee()
        assert type(got) is type(claim)
        assert attrs.astuple(got) == pytest.approx(attrs.astuple(claim), rel=1e-12), f
    assert _dp(_session(UnifiedFilter.from_dp(3.0, 1e-5))).eps == pytest.approx(3.0)


# ----------------------------------------------------------------------------- adversarial analysts


@dataclass(frozen=True)
class Gauss:
    rho: float
    sensitivity: float


@dataclass(frozen=True)
class Lap:
    eps: float
    sensitivity: float


@dataclass(frozen=True)
class Expo:
    eps: float
    monotone: bool


@dataclass(frozen=True)
class BM:
    grid: TimeGrid | EpsilonGrid | OpenEpsilonGrid
    sensitivity: float
    stop: StoppingRule
    boundary: bool


@dataclass(frozen=True)
class Bad:
    kind: str


Request = Gauss | Lap | Expo | BM | Bad
BAD_KINDS = ("nan-value", "inf-scores", "bad-sensitivity", "nan-rho", "matrix-value", "bad-grid")
PSI_DELTA = 1e-3


def _psi(sensitivity: float) -> MixturePrivacyBoundary:
    return MixturePrivacyBoundary(10.0, PSI_DELTA, sensitivity)


_level = st.floats(1e-3, 1.0)
_sensitivity = st.sampled_from([0.5, 1.0, 2.0])


def _bm(sensitivity: float) -> st.SearchStrategy[BM]:
    grids = st.one_of(
        time_grids(1, 8, lo=0.05, hi=1e3),
        eps_grids(1, 8, lo=1e-2, hi=2.0, sensitivities=st.just(sensitivity)),
        st.builds(
            OpenEpsilonGrid.linear_in_eps2,
            st.floats(1e-4, 0.5),
            st.integers(1, 30),
            st.just(sensitivity),
        ),
    )
    return st.builds(BM, grids, st.just(sensitivity), stopping_rules(6), st.booleans())


requests: st.SearchStrategy[Request] = st.one_of(
    st.builds(Gauss, _level, _sensitivity),
    st.builds(Lap, _level, _sensitivity),
    st.builds(Expo, _level, st.booleans()),
    _sensitivity.flatmap(_bm),
    st.builds(Bad, st.sampled_from(BAD_KINDS)),
)


@dataclass(frozen=True)
class Step:
    """Round k asks ``high`` if the last released value exceeds ``threshold``, else ``low``."""

    low: Request
    high: Request
    threshold: float


_prob = st.floats(1e-6, 0.2)
filters: st.SearchStrategy[SessionFilter] = st.one_of(
    st.builds(ZCDPFilter, st.floats(0.05, 2.0)),
    st.builds(UnifiedFilter.from_dp, st.floats(0.3, 5.0), _prob),
    st.builds(BrownianFilter, st.floats(0.05, 2.0), _prob),
    st.builds(ApproxDPFilter, st.floats(0.3, 5.0), st.just(0.0), _prob),
    st.builds(ExPostFilter, st.floats(0.1, 3.0), st.floats(0.0, 0.05)),
    st.builds(
        ConcurrentFilter,
        st.builds(ZCDPFilter, st.floats(0.05, 2.0)),
        st.builds(ExPostFilter, st.floats(0.1, 3.0), st.floats(0.0, 0.05)),
        _prob,
    ),
)


def _charge_bm(f: SessionFilter, r: BM, time: float) -> Cost | None:
    """The record of a BM stopped (or requested) at ``time``; None: ``f`` cannot charge it."""
    if not r.boundary:
        return None if isinstance(f, ExPostFilter) else BrownianCost(time, r.sensitivity)
    return BrownianCost(time, r.sensitivity, _psi(r.sensitivity)(time), PSI_DELTA)


def _expected_request(f: SessionFilter, r: Request) -> Cost | None:
    """The worst-case cost the session must ask the filter for; None: InvalidParameter."""
    if isinstance(r, Bad) or (isinstance(f, BrownianFilter) and not isinstance(r, BM)):
        return None
    if isinstance(r, Gauss):
        return GaussianCost(r.rho) if isinstance(f, RHO_FILTERS) else None
    if isinstance(r, Lap):  # a scalar value: the Laplace pair's cost (a DPCost)
        return LaplaceCost(r.eps)
    if isinstance(r, Expo):
        return BoundedRangeCost(r.eps if r.monotone else 2.0 * r.eps)
    d = r.sensitivity
    if isinstance(r.grid, TimeGrid):
        return _charge_bm(f, r, r.grid.smallest)
    if isinstance(f, ExPostFilter):  # no rho budget to clip eps grids to
        return (
            None if isinstance(r.grid, OpenEpsilonGrid) else _charge_bm(f, r, r.grid.times.smallest)
        )
    top = f.max_bm_eps(d)
    assert top is not None
    if r.grid.first_eps > top:
        return BrownianCost.from_eps(r.grid.first_eps, d)  # not admitted
    if isinstance(r.grid, OpenEpsilonGrid) and r.grid.num == 1:
        return _charge_bm(f, r, d * d / r.grid.start)  # a one-point grid is its start
    if isinstance(r.grid, OpenEpsilonGrid):
        # the last point is the budget's max eps, its square rounded down (tests/grids/test_grids.py)
        return _charge_bm(f, r, r.grid.clip(top).times.smallest)
    eps2 = r.grid.eps2[r.grid.eps <= top]
    return _charge_bm(f, r, d * d / eps2[-1])


def _call(s: PrivateSession, r: Request, x: float) -> float:
    """Run request ``r`` on private value ``x``; return the released scalar."""
    if isinstance(r, Gauss):
        return float(s.gaussian(x, r.sensitivity, r.rho))
    if isinstance(r, Lap):
        return float(s.laplace(x, r.sensitivity, r.eps))
    if isinstance(r, Expo):
        return float(s.exponential_mechanism([x, 0.0, -x], r.eps, r.monotone))
    if isinstance(r, BM):
        psi = _psi(r.sensitivity) if r.boundary else None
        return float(s.brownian(x, r.sensitivity, r.grid, r.stop, psi).value[0])
    bad: dict[str, Callable[[], object]] = {
        "nan-value": lambda: s.gaussian(math.nan, 1.0, 0.01),
        "inf-scores": lambda: s.exponential_mechanism([x, math.inf], 0.1, True),
        "bad-sensitivity": lambda: s.brownian(x, -1.0, TimeGrid([100.0])),
        "nan-rho": lambda: s.gaussian(x, 1.0, math.nan),
        "matrix-value": lambda: s.brownian(np.full((2, 2), x), 1.0, TimeGrid([100.0])),
        "bad-grid": lambda: s.brownian(x, 1.0, EpsilonGrid([0.1, 0.2], 2.0)),
    }
    bad[r.kind]()
    raise AssertionError(f"{r.kind} was accepted")


def _exact(f: SessionFilter, cost: Cost) -> tuple[Fraction, Fraction]:
    """(amount in ``f``'s unit, delta) of a cost, exactly, from the filters' theorems."""
    if isinstance(f, ConcurrentFilter):
        return _exact(f.ex_post if isinstance(cost, ExPostCost) else f.zcdp, cost)
    if isinstance(f, ExPostFilter):  # eps-DP rounds are eps-ex-post private; BM: ψ(t)
        if isinstance(cost, DPCost | BoundedRangeCost):
            return Fraction(cost.eps), Fraction(getattr(cost, "delta", 0.0))
        assert isinstance(cost, ExPostCost | BrownianCost)
        assert cost.bound is not None
        return Fraction(cost.bound), Fraction(cost.delta)
    if isinstance(cost, ZCDPCost):
        return Fraction(cost.rho), Fraction(cost.delta)
    if isinstance(cost, BrownianCost):
        return Fraction(cost.sensitivity) ** 2 / (2 * Fraction(cost.time)), Fraction(0)
    if isinstance(cost, DPCost):
        return Fraction(cost.eps) ** 2 / 2, Fraction(cost.delta)
    if isinstance(cost, BoundedRangeCost):  # eps²/8 (Cesar–Rogers); FAC Thm 2 takes it as eps-DP
        return Fraction(cost.eps) ** 2 / (2 if isinstance(f, ApproxDPFilter) else 8), Fraction(0)
    assert isinstance(cost, ExPostCost)
    assert cost.eps_max is not None
    return Fraction(cost.eps_max) ** 2 / 2, Fraction(0)


def _budgets(f: Filter | ConcurrentFilter) -> list[tuple[Filter, float, float]]:
    """(filter, amount budget, delta budget) of each additive part of ``f``."""
    if isinstance(f, ConcurrentFilter):
        return [*_budgets(f.zcdp), *_budgets(f.ex_post)]
    if isinstance(f, ApproxDPFilter):
        return [(f, f.rho_budget, f.delta_prime)]
    if isinstance(f, ExPostFilter):
        return [(f, f.eps, f.delta)]
    if isinstance(f, BrownianFilter):
        return [(f, f.rho, 0.0)]
    assert isinstance(f, ZCDPFilter | UnifiedFilter)
    return [(f, f.rho, f.delta)]


def _assert_within_budget(f: SessionFilter, ours: list[Cost]) -> None:
    assert isinstance(f, Filter | ConcurrentFilter)
    parts = _budgets(f)
    assert sorted(map(repr, (c for p in parts for c in p[0].realised))) == sorted(map(repr, ours))
    for part, budget, delta_budget in parts:
        realised = part.realised
        assert math.fsum([*(part.price(c)[0] for c in realised), -budget]) <= 0.0
        assert all(Fraction(part.price(c)[0]) >= _exact(part, c)[0] for c in realised)
        exact = [_exact(part, c) for c in realised]
        assert sum((a for a, _ in exact), Fraction(0)) <= Fraction(budget)
        assert sum((d for _, d in exact), Fraction(0)) <= Fraction(delta_budget)


def _true_cost(f: SessionFilter, r: Request, result: object) -> Fraction:
    """The round's cost in the filter's unit, exactly, from the mechanism's definition."""
    if isinstance(r, BM):
        assert isinstance(result, Transcript)
        if isinstance(f, ExPostFilter):
            return Fraction(_psi(r.sensitivity)(result.time))
        return Fraction(r.sensitivity) ** 2 / (2 * Fraction(result.time))
    if isinstance(r, Gauss):
        return Fraction(r.rho)
    assert isinstance(r, Lap | Expo)
    pure = Fraction(r.eps) * (1 if isinstance(r, Lap) or r.monotone else 2)
    if isinstance(f, ExPostFilter):
        return pure
    return pure**2 / (2 if isinstance(r, Lap) or isinstance(f, ApproxDPFilter) else 8)


def _check_round(s: PrivateSession, rng: np.random.Generator, r: Request, x: float) -> float | None:
    """One round with every invariant checked; the released value, or None if refused."""
    f, expected = s.filter, _expected_request(s.filter, r)
    before, rounds_before = _state(s, rng), len(s.history)
    try:
        released = _call(s, r, x)
    except BudgetExceeded:
        assert expected is not None
        assert not f.admits(expected)
        assert _state(s, rng) == before
        return None
    except InvalidParameter:
        assert expected is None, r
        assert _state(s, rng) == before
        return None
    assert expected is not None
    assert f.admits(expected)
    last = s.history[-1]
    assert last.request == expected
    assert len(s.history) == rounds_before + 1
    assert s.filter.rounds == f.rounds + 1
    if isinstance(r, BM):
        assert isinstance(last.result, Transcript)
        assert last.realised == _charge_bm(f, r, last.result.time)
    else:
        assert last.realised == expected
    assert _exact(f, last.realised)[0] <= _exact(f, expected)[0]
    assert _exact(f, last.realised)[0] >= _true_cost(f, r, last.result)
    assert s.guarantee() == before[4]
    return released


@settings(max_examples=150, deadline=None)
@given(
    f=filters,
    steps=st.lists(st.builds(Step, requests, requests, st.floats(-2.0, 2.0)), max_size=8),
    x=st.floats(-3.0, 3.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_adversarial_analyst_never_overspends(
    f: SessionFilter, steps: list[Step], x: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    s = PrivateSession(f, rng)
    released: list[float] = []
    for step in steps:
        request = step.high if released and released[-1] > step.threshold else step.low
        value = _check_round(s, rng, request, x)
        if value is not None:
            released.append(value)
        _assert_within_budget(s.filter, [r.realised for r in s.history])
    assert len(s.history) == len(released)


def test_refused_round_changes_nothing_even_with_a_ledger(tmp_path: Path) -> None:
    path = tmp_path / "budget.sqlite"
    rng = np.random.default_rng(5)
    s = PrivateSession(UnifiedFilter(1.0), rng, ledger=path, create=True)
    s.gaussian(0.0, 1.0, 0.75)
    before, data = _state(s, rng), path.read_bytes()
    for call in (
        lambda: s.gaussian(0.0, 1.0, 0.5),
        lambda: s.brownian(0.0, 1.0, TimeGrid([10.0, 1.0])),
        lambda: s.brownian(0.0, 1.0, OpenEpsilonGrid.linear_in_eps2(0.6, 10)),
    ):
        with pytest.raises(BudgetExceeded):
            call()
        assert _state(s, rng) == before
        assert path.read_bytes() == data
    s.close()


def test_a_stopping_rule_may_not_start_another_round() -> None:
    rng = np.random.default_rng(2)
    s = PrivateSession(ZCDPFilter(1.0), rng)
    nested: list[BaseException] = []

    def greedy(released: Released) -> bool:
        try:
            s.gaussian(0.0, 1.0, 0.9)
        except InvalidParameter as exc:
            nested.append(exc)
        return True

    s.brownian(0.0, 1.0, TimeGrid([4.0, 1.0]), stop=greedy)  # request 0.5, realised 0.125
    assert len(nested) == 1
    assert "running in this thread" in str(nested[0])
    assert [r.mechanism for r in s.history] == ["brownian"]
    assert s.spent == 0.125
    s.gaussian(0.0, 1.0, 0.5)  # the guard is released after the round


# ----------------------------------------------------------------------------- Brownian rounds


def test_brownian_is_admitted_on_the_smallest_time_and_charged_where_it_stopped() -> None:
    d, grid = 2.0, TimeGrid([80.0, 20.0, 8.0])
    exact = ZCDPFilter(d * d / (2.0 * 8.0))  # exactly the worst case
    s = _session(exact)
    run = s.brownian(1.0, d, grid, stop=AtIndex(1))
    assert run.time == 20.0
    assert s.history[0].request == BrownianCost(8.0, d)
    assert s.spent == d * d / (2.0 * 20.0)
    short = _session(ZCDPFilter(math.nextafter(d * d / 16.0, 0.0)))
    with pytest.raises(BudgetExceeded):
        short.brownian(1.0, d, grid, stop=AtIndex(0))
    assert short.spent == 0.0


@pytest.mark.parametrize("sensitivity", [1.0, 0.3, 3.0])
def test_open_grid_ends_exactly_at_the_budgets_max_eps(sensitivity: float) -> None:
    f = UnifiedFilter.from_dp(1.0, 1e-3).spend(ZCDPCost(0.01))
    s = _session(f)
    top = f.max_bm_eps(sensitivity)
    grid = OpenEpsilonGrid.linear_in_eps2(1e-4, 50, sensitivity=sensitivity)
    run = s.brownian(0.0, sensitivity, grid, stop=Never())
    assert run.eps[-1] == top
    assert run.eps.size == 50
    assert s.history[0].request == BrownianCost.from_eps(top, sensitivity)
    assert _left(s) <= f.remaining - top * top / 2.0 + 1e-15
    assert not s.filter.admits(BrownianCost.from_eps(math.nextafter(top, 1.0), sensitivity))


def test_closed_eps_grid_is_clipped_and_geometric_open_grid_stays_within_budget() -> None:
    s = _session(ZCDPFilter(0.0201))
    run = s.brownian(0.0, 1.0, EpsilonGrid([0.05, 0.1, 0.15, 0.2, 0.25]), stop=Never())
    assert run.eps.tolist() == [0.05, 0.1, 0.15, 0.2]
    assert s.history[0].request == BrownianCost.from_eps(0.2)
    s = _session(ZCDPFilter(0.02))
    geometric = OpenEpsilonGrid.geometric_in_eps2(1e-4, 2.0)
    run = s.brownian(0.0, 1.0, geometric, stop=Never())
    assert run.eps[-1] ** 2 <= 0.04 < 2.0 * run.eps[-1] ** 2
    assert _left(s) < _rho(s) / 2.0


@pytest.mark.parametrize(
    "grid",
    [
        OpenEpsilonGrid.linear_in_eps2(0.05, 10),
        EpsilonGrid([0.25, 0.5]),
        TimeGrid([100.0, 15.0]),
    ],
    ids=["open", "closed", "times"],
)
def test_grid_whose_first_point_is_unaffordable_is_refused(
    grid: TimeGrid | EpsilonGrid | OpenEpsilonGrid,
) -> None:
    rng = np.random.default_rng(0)
    s = PrivateSession(ZCDPFilter(0.02), rng)
    before = _state(s, rng)
    with pytest.raises(BudgetExceeded) as info:
        s.brownian(0.0, 1.0, grid)
    assert info.value.remaining == 0.02
    assert info.value.spent == 0.0
    assert _state(s, rng) == before


def test_stopping_rule_that_raises_leaves_the_round_charged_at_its_request() -> None:
    class Peeked(Exception):
        pass

    seen: list[int] = []

    def rule(released: Released) -> bool:
        seen.append(released.count)
        if released.count == 2:
            raise Peeked
        return False

    s = _session(UnifiedFilter(1.0))
    with pytest.raises(Peeked):
        s.brownian(0.0, 1.0, TimeGrid([100.0, 10.0, 2.0]), stop=rule)
    assert seen == [1, 2]
    assert s.history == ()
    assert isinstance(s.filter, UnifiedFilter)
    assert s.filter.realised == (BrownianCost(2.0, 1.0),)
    assert s.spent == 0.25
