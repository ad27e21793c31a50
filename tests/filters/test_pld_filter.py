"""`PLDFilter`: the counting filter of THEORY §12 (issue 35, item 4a).

The done-when counts through a session (Laplace rounds at (10, 1e-6) and (1, 1e-6), DP-SGD steps
at (2, 1e-5)) between the issue's floors and the exact counts certified by independent
accountants (357, 10, 1,202); the mechanism fixed in advance or by the first round; mixes refused
naming the reason and the filters that price them; refusals change nothing; a flat per-round
cost (K computed once); the SQLite ledger replays a mechanism fixed by its first round, and a
PostgreSQL ledger refuses the filter's rounds (the server cannot decide their admission).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost.errors import BudgetExceeded, InvalidParameter
from expost.filters import (
    BoundedRangeCost,
    BrownianCost,
    DPCost,
    ExPostCost,
    GaussianCost,
    LaplaceCost,
    PLDFilter,
    SubsampledGaussianCost,
    ZCDPCost,
)
from expost.filters.pld import round_count
from expost.guarantees import ApproxDP
from expost.ledger.records import describe, filter_from_description

STEP = SubsampledGaussianCost.from_sigma(1.0, 0.01)


def _rounds(session: ep.PrivateSession, release: Any) -> int:
    """Release until the filter refuses; the number admitted."""
    n = 0
    while True:
        try:
            release(session)
        except BudgetExceeded:
            return n
        n += 1


@pytest.mark.parametrize(("eps", "floor", "exact"), [(10.0, 350, 357), (1.0, 9, 10)])
def test_laplace_rounds_admitted_through_a_session(eps: float, floor: int, exact: int) -> None:
    s = ep.PrivateSession(PLDFilter(eps, 1e-6), np.random.default_rng(0))
    n = _rounds(s, lambda s: s.laplace(0.0, 1.0, 0.1))
    assert floor <= n <= exact
    assert s.spent == n
    assert s.remaining == 0.0
    assert isinstance(s.filter, PLDFilter)
    assert s.filter.mechanism == LaplaceCost(0.1)
    assert s.guarantee() == ApproxDP(eps, 1e-6)


def test_dp_sgd_steps_admitted_through_a_session() -> None:
    s = ep.PrivateSession(PLDFilter(2.0, 1e-5), np.random.default_rng(0))
    records = np.ones((20, 3))
    n = _rounds(s, lambda s: s.subsampled_gaussian(records, 1.0, 1.0, 0.01))
    assert 1150 <= n <= 1202
    assert n == 1202  # the default grid reaches the exact count
    # priced as its Gaussian (rho = 1/2), as every other filter here does, not one step fits
    for other in (ep.UnifiedFilter.from_dp(2.0, 1e-5), ep.GaussianDPFilter.from_dp(2.0, 1e-5)):
        assert not other.admits(STEP)


def test_the_mechanism_given_in_advance_counts_from_the_start() -> None:
    f = PLDFilter(2.0, 1e-5, STEP)
    assert f.rounds == 0
    assert f.spent == 0.0
    assert 1150 <= f.budget == f.remaining <= 1202
    assert f.unit == "rounds"
    dominated = [
        SubsampledGaussianCost.from_sigma(1.5, 0.01),
        SubsampledGaussianCost.from_sigma(1.0, 0.005),
    ]
    for cost in [STEP, *dominated]:
        assert f.admits(cost)
        assert f.price(cost) == (1.0, 0.0)
    g = f.spend(dominated[1])
    assert g.remaining == f.budget - 1
    assert g.mechanism == STEP


def test_the_first_round_fixes_the_mechanism() -> None:
    f = PLDFilter(1.0, 1e-6)
    assert f.mechanism is None
    assert f.remaining == math.inf
    assert f.spent == 0.0
    assert f.accepts(GaussianCost(0.01))
    assert f.accepts(LaplaceCost(0.1))
    g = f.spend(GaussianCost(0.01))
    assert g.mechanism == GaussianCost(0.01)
    assert g == PLDFilter(1.0, 1e-6, GaussianCost(0.01)).spend(GaussianCost(0.01))
    assert g.admits(GaussianCost(0.005))
    assert not g.accepts(GaussianCost(0.02))
    assert f.mechanism is None  # the old value is untouched


MIXES = [
    (GaussianCost(0.01), GaussianCost(0.02)),  # smaller σ
    (GaussianCost(0.01), LaplaceCost(1.0)),  # (LaplaceCost(0.01) is dominated: computed)
    (STEP, SubsampledGaussianCost.from_sigma(1.0, 0.02)),  # larger q
    (STEP, GaussianCost(1e-6)),  # no subsampling: q = 1 > 0.01
    (LaplaceCost(0.1), DPCost(0.1)),  # RR is not dominated by the Laplace pair
    (LaplaceCost(0.1), LaplaceCost(0.2)),
    (DPCost(0.1), GaussianCost(1e-4)),
    (BoundedRangeCost(0.1), DPCost(0.2)),
]


@pytest.mark.parametrize(("fixed", "other"), MIXES)
def test_a_round_the_mechanism_does_not_dominate_is_refused_naming_why(
    fixed: Any, other: Any
) -> None:
    f = PLDFilter(2.0, 1e-5, fixed).spend(fixed)
    before = (f, f.spent, f.remaining, f.rounds)
    assert not f.accepts(other)
    for call in (f.price, f.admits, f.check, f.spend):
        with pytest.raises(InvalidParameter) as info:
            call(other)
        text = str(info.value)
        assert "Regehr" in text
        assert "2602.15815" in text
        for name, admits in would_admit(f, other).items():  # named iff it would admit
            assert (f"{name}." in text.split("THEORY §12)")[1]) == admits, name
    assert (f, f.spent, f.remaining, f.rounds) == before


def would_admit(f: PLDFilter, other: Any) -> dict[str, bool]:
    """Whether each filter that prices mixes, built for f's budget and charged f's rounds,
    admits ``other`` (checked here with the filters themselves)."""
    from expost.filters import GaussianDPFilter, RDPFilter, RenyiFilter, UnifiedFilter

    out = {}
    for name, g in (
        ("RenyiFilter", RenyiFilter.for_rounds(f.eps, f.delta, other)),
        ("RDPFilter", RDPFilter.from_dp(f.eps, f.delta)),
        ("GaussianDPFilter", GaussianDPFilter.from_dp(f.eps, f.delta)),
        ("UnifiedFilter", UnifiedFilter.from_dp(f.eps, f.delta)),
    ):
        try:
            for c in f.realised:
                g = g.spend(c)
            out[name] = g.accepts(other) and g.admits(other)
        except (BudgetExceeded, InvalidParameter):
            out[name] = False
    return out


def test_pure_dp_rounds_under_randomised_response() -> None:
    """DPCost (delta 0), scalar Laplace and bounded-range rounds at most its eps."""
    f = PLDFilter(1.0, 1e-6, DPCost(0.2))
    for cost in (DPCost(0.2), DPCost(0.1), LaplaceCost(0.2), BoundedRangeCost(0.2)):
        assert f.admits(cost)


def test_the_exponential_mechanism_under_its_bounded_range_pair() -> None:
    """Bounded-range rounds at most its eps, randomised response and Laplace at most eps/2
    (their loss spans 2·eps0: eps-bounded range); not randomised response or Laplace above
    eps/2 (counts against exact references: tests/costs/test_bounded_range_pair.py)."""
    f = PLDFilter(1.0, 1e-6, BoundedRangeCost(0.2))
    for cost in (DPCost(0.1), LaplaceCost(0.1), BoundedRangeCost(0.05), BoundedRangeCost(0.2)):
        assert f.admits(cost)
    for cost in (DPCost(0.2), LaplaceCost(0.2), DPCost(0.11), LaplaceCost(0.12)):
        assert not f.accepts(cost)


@pytest.mark.parametrize(
    "cost",
    [ZCDPCost(0.01), BrownianCost(4.0), ExPostCost(0.1)],  # DPCost(eps, delta): its pair
)
def test_costs_without_a_dominating_pair_are_refused(cost: Any) -> None:
    f = PLDFilter(1.0, 1e-6)
    assert not f.accepts(cost)
    with pytest.raises(InvalidParameter, match="accepts only GaussianCost"):
        f.spend(cost)
    with pytest.raises(InvalidParameter, match="mechanism"):
        PLDFilter(1.0, 1e-6, cost)


@pytest.mark.parametrize(
    "kwargs",
    [{"eps": 0.0}, {"eps": -1.0}, {"eps": math.inf}, {"delta": 0.0}, {"delta": 1.0}, {"eps": "1"}],
)
def test_bad_budgets_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidParameter):
        PLDFilter(**{"eps": 1.0, "delta": 1e-6, **kwargs})


def test_past_the_count_budget_exceeded_names_spent_asked_and_remaining() -> None:
    f = PLDFilter(1.0, 1e-6, GaussianCost(0.01))
    while f.admits(GaussianCost(0.01)):
        f = f.spend(GaussianCost(0.01))
    with pytest.raises(BudgetExceeded) as info:
        f.check(GaussianCost(0.005))
    err = info.value
    assert (err.spent, err.requested, err.remaining, err.unit) == (f.budget, 1.0, 0.0, "rounds")
    assert "rounds=" in str(err)


def test_a_mechanism_whose_single_round_does_not_fit_admits_nothing() -> None:
    f = PLDFilter(0.1, 1e-6, GaussianCost(2.0))
    assert f.budget == 0.0
    assert not f.admits(GaussianCost(2.0))
    g = PLDFilter(0.1, 1e-6)  # nothing fixed by a refused round
    with pytest.raises(BudgetExceeded):
        g.spend(GaussianCost(2.0))
    assert g.mechanism is None


def test_the_count_is_computed_once_and_a_round_costs_o1() -> None:
    f = PLDFilter(3.0, 1e-6, GaussianCost(1e-6))
    f.budget  # noqa: B018  # computed (cached) here
    misses = round_count.cache_info().misses
    for _ in range(2000):
        f = f.spend(GaussianCost(1e-6))
    assert round_count.cache_info().misses == misses
    assert f.rounds == 2000


def test_a_ledger_replays_the_mechanism_fixed_by_the_first_round(tmp_path: Path) -> None:
    path = tmp_path / "pld.sqlite"
    s = ep.PrivateSession(PLDFilter(1.0, 1e-6), np.random.default_rng(0), path, create=True)
    s.gaussian(0.0, 1.0, 0.005)
    s.close()
    again = ep.PrivateSession(PLDFilter(1.0, 1e-6), np.random.default_rng(1), path)
    assert isinstance(again.filter, PLDFilter)
    assert again.filter.mechanism == GaussianCost(0.005)
    assert again.spent == 1.0
    with pytest.raises(InvalidParameter, match="Regehr"):
        again.laplace(0.0, 1.0, 0.1)  # another mechanism: refused, nothing written
    assert again.spent == 1.0
    n = _rounds(again, lambda s: s.gaussian(0.0, 1.0, 0.005))
    assert isinstance(again.filter, PLDFilter)
    assert n + 1 == again.filter.budget
    again.close()
    given = PLDFilter(1.0, 1e-6, GaussianCost(0.005))
    with pytest.raises(ep.LedgerMismatch):  # another configuration: the mechanism is part of it
        ep.PrivateSession(given, np.random.default_rng(2), path)


@pytest.mark.parametrize(
    "f", [PLDFilter(1.0, 1e-6, LaplaceCost(0.1), grid=1e-4), PLDFilter(1.0, 1e-6)]
)
def test_a_ledger_description_round_trips(f: PLDFilter) -> None:
    """The configuration a ledger stores (eps, delta, the mechanism, the grid) rebuilds it."""
    assert filter_from_description(describe(f)) == f


def test_the_default_grid_is_the_pld_default() -> None:
    from expost.filters.pld import GRID
    from expost.pld.distribution import DEFAULT_VALUE_DISCRETIZATION

    assert GRID == DEFAULT_VALUE_DISCRETIZATION
