"""`PrivateSession` on the RDP filter (THEORY §11; issue 29 item 4): ex-post RDP rounds
(Brownian at α·Δ²/(2·t_stop), Laplace noise reduction at its pure ex-post Δ1/b(t_stop)) mixed
with zCDP/Gaussian rounds, doubling and pure-DP rounds in one session; admitted on the request,
charged the realised cost; refusals spend nothing; the ledger replays the same spend; adaptive
analysts never overspend (every spend re-priced exactly)."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expost import EpsilonGrid, OpenEpsilonGrid, PrivateSession, TimeGrid
from expost.cli.ledger import init, parse_filter, show
from expost.errors import BudgetExceeded
from expost.ex_post_rdp import markov_bound
from expost.filters import BrownianCost, ExPostCost, PrivacyFilter, RDPFilter, UnifiedFilter
from expost.filters.rdp import rdp_price
from expost.guarantees import ApproxDP
from expost.ledger.records import describe
from expost.rounding import down_exact
from expost.stopping import AtIndex, Never
from tests.safe_side import rounded_down, rounded_up

ORDERS = (1.5, 2.0, 4.0, 8.0, 16.0)


def _exact(f: RDPFilter) -> list[Fraction]:
    """Σ ε_α per order, every realised cost re-priced exactly from `rdp_price`."""
    totals = [Fraction(0)] * len(f.orders)
    for cost in f.realised:
        for i, a in enumerate(f.orders):
            p = rdp_price(cost, a)
            assert p is not None
            totals[i] += Fraction(p)
    return totals


def _within_budget(f: RDPFilter) -> bool:
    return any(b > 0.0 and t <= Fraction(b) for t, b in zip(_exact(f), f.budgets, strict=True))


def _rdp(s: PrivateSession) -> RDPFilter:
    f = s.filter
    assert isinstance(f, RDPFilter)
    return f


def test_every_mechanism_runs_and_is_charged_its_realised_cost() -> None:
    f = RDPFilter.from_dp(8.0, 1e-6, ORDERS)
    assert isinstance(f, PrivacyFilter)
    s = PrivateSession(f, np.random.default_rng(1))
    s.brownian(3.0, 1.0, TimeGrid([400.0, 100.0, 25.0]), stop=AtIndex(1))
    s.brownian(3.0, 1.0, OpenEpsilonGrid.linear_in_eps2(1e-3, 5), stop=AtIndex(0))
    s.brownian(3.0, 1.0, EpsilonGrid([0.05, 0.1], 1.0), stop=Never())
    s.gaussian(1.0, 1.0, 0.01)
    s.laplace_noise_reduction(2.0, 1.0, [40.0, 20.0, 10.0], stop=AtIndex(1))
    s.doubling(5.0, 1.0, 1e-4)
    s.exponential_mechanism([1.0, 2.0, 3.0], 0.2, True)
    s.laplace(1.0, 1.0, 0.1)
    s.above_threshold([0.0, 5.0, 9.0], 0.2, 4.0)
    got = _rdp(s)
    assert got.rounds == len(s.history) == 9
    assert [r.realised for r in s.history] == list(got.realised)
    bm = s.history[0]
    assert bm.realised == BrownianCost(100.0, 1.0)
    assert bm.request == BrownianCost(25.0, 1.0)
    lnr = s.history[4].realised  # stopped at scale 20: pure ex-post Δ1/20 at every order
    assert isinstance(lnr, ExPostCost)
    assert got.prices(lnr) == (lnr.bound,) * len(ORDERS)
    assert Fraction(lnr.bound) >= Fraction(1, 20)
    for spent, exact in zip(got.spent_by_order, _exact(got), strict=True):
        assert rounded_up(spent, exact)
    assert s.guarantee() == ApproxDP(8.0, 1e-6)
    share = down_exact(Fraction(1e-6) / len(ORDERS))
    tails = [Fraction(markov_bound(0.0, a, share)) for a in ORDERS]
    assert (s.spent, s.remaining) == (got.spent, got.remaining)
    assert rounded_up(got.spent, min(t + c for t, c in zip(_exact(got), tails, strict=True)))
    assert got.remaining == max(got.remaining_by_order)
    assert got.spent + got.remaining <= 8.0


@pytest.mark.parametrize("t", [0.37, 3.0, 250.0])
def test_a_brownian_round_costs_alpha_times_the_unified_filters_rho(t: float) -> None:
    """The session's price of a BM at each order is α × `UnifiedFilter`'s rho price (APC Thm 5),
    the product rounded up once: the RDP filter's zCDP rounds are the unified filter's."""
    s = PrivateSession(RDPFilter(50.0, 1e-6, ORDERS), np.random.default_rng(2))
    s.brownian(0.0, 2.0, TimeGrid([4.0 * t, t]), stop=AtIndex(1))
    cost = s.history[-1].realised
    rho, _ = UnifiedFilter(100.0).price(cost)
    for a, p in zip(ORDERS, _rdp(s).prices(cost), strict=True):
        assert rounded_up(p, Fraction(a) * Fraction(rho))


def test_a_refused_round_spends_nothing() -> None:
    s = PrivateSession(RDPFilter(3.0, 1e-6, ORDERS), np.random.default_rng(3))
    s.gaussian(0.0, 1.0, 0.01)
    before = s.filter
    for refused in (
        lambda: s.gaussian(0.0, 1.0, 1.0),
        lambda: s.brownian(0.0, 1.0, TimeGrid([10.0, 0.01])),
        lambda: s.laplace(0.0, 1.0, 5.0),
        lambda: s.laplace_noise_reduction(0.0, 1.0, [1.0, 0.1]),
    ):
        with pytest.raises(BudgetExceeded):
            refused()
        assert s.filter == before
        assert len(s.history) == 1


def test_open_grids_are_clipped_to_the_largest_admitted_eps() -> None:
    f = RDPFilter(4.0, 1e-6, ORDERS).spend(BrownianCost(3.0))
    for d in (0.5, 1.0, 7.0):
        eps, t = f.max_bm_eps(d), f.min_bm_time(d)
        assert f.admits(BrownianCost.from_eps(eps, d))
        assert not f.admits(BrownianCost.from_eps(math.nextafter(eps, math.inf), d))
        assert f.admits(BrownianCost(t, d))
        assert not f.admits(BrownianCost(math.nextafter(t, 0), d))
    full = RDPFilter(0.1, 1e-6, ORDERS)  # every budget B_α <= 0: nothing is admitted
    assert (full.max_bm_eps(), full.min_bm_time(), full.remaining) == (0.0, math.inf, 0.0)


@settings(max_examples=40, deadline=None)
@given(eps=st.floats(1.0, 20.0), delta=st.sampled_from([1e-3, 1e-9]), data=st.data())
def test_adaptive_analyst_never_overspends_through_a_session(
    eps: float, delta: float, data: st.DataObject
) -> None:
    """Each round is sized from what remains at an order the analyst picks (greed > 1 asks
    too much) and stopped where the analyst likes; a refusal must change nothing, and after
    every round some order's exact re-priced sum is within its budget."""
    s = PrivateSession(
        RDPFilter(eps, delta, ORDERS), np.random.default_rng(data.draw(st.integers(0, 99)))
    )
    for _ in range(data.draw(st.integers(1, 10))):
        f = _rdp(s)
        i = data.draw(st.integers(0, len(ORDERS) - 1))
        share = max(data.draw(st.floats(0.0, 1.5)) * f.remaining_by_order[i], 1e-9)
        a = ORDERS[i]
        kind = data.draw(st.sampled_from(["bm", "gauss", "lnr", "open"]))
        stop = AtIndex(data.draw(st.integers(0, 2)))
        before, rounds = s.filter, len(s.history)
        try:
            if kind == "bm":  # smallest time: α/(2t) = share (Δ = 1)
                t = a / (2.0 * share)
                s.brownian(0.0, 1.0, TimeGrid([8.0 * t, 2.0 * t, t]), stop=stop)
            elif kind == "gauss":
                s.gaussian(0.0, 1.0, share / a)
            elif kind == "lnr":  # worst case Δ1/b_min = share at every order
                s.laplace_noise_reduction(0.0, 1.0, [4.0 / share, 2.0 / share, 1.0 / share], stop)
            else:
                s.brownian(0.0, 1.0, OpenEpsilonGrid.linear_in_eps2(1e-3, 50), stop=stop)
        except BudgetExceeded:
            assert s.filter == before
            assert len(s.history) == rounds
            continue
        assert len(s.history) == rounds + 1
        assert _within_budget(_rdp(s))
        for spent, exact in zip(_rdp(s).spent_by_order, _exact(_rdp(s)), strict=True):
            assert rounded_up(spent, exact)
        for left, b, exact in zip(
            _rdp(s).remaining_by_order, _rdp(s).budgets, _exact(_rdp(s)), strict=True
        ):
            assert rounded_down(left, max(Fraction(0), Fraction(b) - exact))


def test_ledger_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "rdp.sqlite"
    f = RDPFilter.from_dp(4.0, 1e-6, ORDERS)
    s = PrivateSession(f, np.random.default_rng(4), path, create=True)
    s.brownian(0.0, 1.0, TimeGrid([100.0, 25.0]), stop=AtIndex(0))
    s.gaussian(0.0, 1.0, 0.02)
    s.laplace_noise_reduction(0.0, 1.0, [40.0, 20.0], stop=AtIndex(1))
    with pytest.raises(BudgetExceeded):
        s.gaussian(0.0, 1.0, 10.0)
    spent, remaining = s.spent, s.remaining
    s.close()
    again = PrivateSession(f, np.random.default_rng(5), path)
    assert (again.spent, again.remaining) == (spent, remaining)
    assert _rdp(again).spent_by_order == _rdp(s).spent_by_order
    assert _rdp(again).rounds == 3
    again.close()


def test_the_ledger_command_knows_the_rdp_filter(tmp_path: Path) -> None:
    assert parse_filter("RDPFilter.from_dp(eps=4, delta=1e-6)") == RDPFilter(4.0, 1e-6)
    f = RDPFilter(4.0, 1e-6, (2.0, 8.0))
    assert parse_filter(json.dumps(describe(f))) == f  # the JSON form carries the orders
    target = str(tmp_path / "cli.sqlite")
    assert "for RDPFilter" in init(target, "RDPFilter(4.0, 1e-6)")
    s = PrivateSession(RDPFilter(4.0, 1e-6), np.random.default_rng(6), target)
    s.gaussian(0.0, 1.0, 0.01)
    s.close()
    assert f"spent {s.spent!r}, remaining {s.remaining!r}" in show(target)
