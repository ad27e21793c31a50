"""`RenyiFilter`: one Rényi order fixed in advance, the Canonne–Kamath–Steinke conversion
(THEORY §12; issue 35 item 4(b)). Admission counts against 50-digit references and
dp-accounting's RDP accountant, refusals, a session run, the SQLite ledger round trip; the
filter contract (tests/filters/test_filter_contract.py) covers exact sums, immutability, pickling."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

from expost import PrivateSession, RenyiFilter, TimeGrid
from expost.cli.ledger import parse_filter
from expost.errors import BudgetExceeded, InvalidParameter
from expost.filters import (
    BoundedRangeCost,
    BrownianCost,
    Cost,
    DPCost,
    ExPostCost,
    GaussianCost,
    LaplaceCost,
    SubsampledGaussianCost,
    ZCDPCost,
)
from expost.filters.rdp import RDPFilter, ex_post_rdp_of, rdp_price
from expost.guarantees import ApproxDP
from expost.ledger.records import describe, filter_from_description
from tests.rounding.test_rounding_renyi import ref_subsampled

DPSGD = SubsampledGaussianCost.from_sigma(1.0, 0.01)


def _ref_budget(eps: float, delta: float, alpha: float) -> mp.mpf:
    """CKS 2020 Prop. 12 solved for the RDP level, 50 digits."""
    e, d, a = mp.mpf(eps), mp.mpf(delta), mp.mpf(alpha)
    return e - mp.log((a - 1) / a) + (mp.log(d) + mp.log(a)) / (a - 1)


def _spend_all(f: RenyiFilter, cost: Cost) -> tuple[RenyiFilter, int]:
    n = 0
    while f.admits(cost):
        f, n = f.spend(cost), n + 1
    return f, n


def test_dp_sgd_steps_at_one_order() -> None:
    """(2, 1e-5) at α = 8: the 50-digit count ⌊B/ε_8⌋ is 879 (the issue's); the filter admits
    no more than it and at least 870 (its prices and budget are rounded to the safe side)."""
    with mp.workdps(50):
        exact = int(mp.floor(_ref_budget(2.0, 1e-5, 8.0) / ref_subsampled(DPSGD.of.rho, 0.01, 8.0)))
    assert exact == 879
    f, n = _spend_all(RenyiFilter(2.0, 1e-5, 8.0), DPSGD)
    assert 870 <= n <= exact
    assert RenyiFilter(2.0, 1e-5, 8.0).capacity(DPSGD) == n
    assert f.capacity(DPSGD) == 0
    # the Markov filter the issue compares with: 0 at its 12 default orders, 397 at α = 8 alone
    assert not RDPFilter.from_dp(2.0, 1e-5).admits(DPSGD)
    assert RenyiFilter.for_rounds(2.0, 1e-5, DPSGD).alpha == 8.0


def test_against_dp_accountings_rdp_accountant() -> None:
    """dp-accounting's `RdpAccountant` at the one order 8 (its Poisson-sampled Gaussian sum, the
    same CKS-type conversion, in floats) stays within (2, 1e-5) for exactly as many steps as the
    filter admits."""
    dpa = pytest.importorskip("dp_accounting")
    RdpAccountant = pytest.importorskip("dp_accounting.rdp").RdpAccountant

    event = dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0))

    def eps_after(k: int) -> float:
        accountant = RdpAccountant([8.0])
        accountant.compose(event, k)
        return float(accountant.get_epsilon(1e-5))

    n = RenyiFilter(2.0, 1e-5, 8.0).capacity(DPSGD)
    assert eps_after(n) <= 2.0 < eps_after(n + 1)  # the same count: 879


def test_budget_is_cks_solved_and_clipped_at_zero() -> None:
    for eps, delta, alpha in [(2.0, 1e-5, 8.0), (10.0, 1e-6, 4.0), (1.0, 1e-6, 40.0)]:
        b = RenyiFilter(eps, delta, alpha).budget
        with mp.workdps(50):
            ref = _ref_budget(eps, delta, alpha)
            assert mp.mpf(b) <= ref <= mp.mpf(math.nextafter(b, math.inf)) + 4 * math.ulp(b)
    full = RenyiFilter(1.0, 1e-6, 1.5)  # B < 0: nothing is admitted
    assert full.budget == 0.0
    assert full.remaining == 0.0
    assert not full.admits(ZCDPCost(1e-9))


def test_prices_are_the_exact_curves_at_the_order() -> None:
    f = RenyiFilter(10.0, 1e-6, 4.0)
    for cost in (DPSGD, DPCost(0.1), LaplaceCost(0.1), BoundedRangeCost(0.3), GaussianCost(0.01)):
        assert f.price(cost) == (rdp_price(cost, 4.0), 0.0)
    assert f.price(LaplaceCost(0.1))[0] < f.price(DPCost(0.1))[0] < min(0.1, 4 * 0.01 / 2)
    assert f.price(DPSGD)[0] < f.price(GaussianCost(DPSGD.of.rho))[0]


@pytest.mark.parametrize(
    "cost", [BrownianCost(10.0), ExPostCost(0.1), ExPostCost(0.1, 0.0, eps_max=0.2)]
)
def test_realised_ex_post_costs_are_refused_naming_the_rdp_filter(cost: Cost) -> None:
    f = RenyiFilter(3.0, 1e-6, 8.0)
    assert not f.accepts(cost)
    with pytest.raises(InvalidParameter, match="priced by RDPFilter") as info:
        f.price(cost)
    assert "fixed before they run" in str(info.value)
    assert RDPFilter(3.0, 1e-6).accepts(cost)


def test_approximate_rounds_are_refused() -> None:
    f = RenyiFilter(3.0, 1e-6, 8.0)
    for cost in (DPCost(0.1, 1e-7), ZCDPCost(0.01, 1e-7)):
        with pytest.raises(InvalidParameter, match="cannot charge"):
            f.spend(cost)


def test_budget_exceeded_names_spent_asked_and_remaining_in_eps_alpha() -> None:
    f, _ = _spend_all(RenyiFilter(2.0, 1e-5, 8.0), DPSGD)
    with pytest.raises(BudgetExceeded) as info:
        f.spend(DPSGD)
    err = info.value
    assert err.unit == "eps_alpha"
    assert (err.spent, err.requested, err.remaining) == (f.spent, f.price(DPSGD)[0], f.remaining)
    exact = sum((Fraction(f.price(c)[0]) for c in f.realised), Fraction(0))
    assert Fraction(err.spent) >= exact
    assert Fraction(err.remaining) + exact <= Fraction(f.budget)
    assert Fraction(err.remaining) < Fraction(err.requested)


def test_for_rounds_picks_the_order_that_fits_the_most() -> None:
    cost = LaplaceCost(0.1)
    best = RenyiFilter.for_rounds(10.0, 1e-6, cost)
    counts = {a: RenyiFilter(10.0, 1e-6, a).capacity(cost) for a in (2.0, 3.0, 4.0, 6.0, 8.0)}
    assert best.capacity(cost) == max(counts.values())
    assert RenyiFilter.for_rounds(10.0, 1e-6, cost, orders=[3.0]).alpha == 3.0
    with pytest.raises(InvalidParameter):
        RenyiFilter.for_rounds(10.0, 1e-6, cost, orders=[])
    with pytest.raises(InvalidParameter):
        RenyiFilter(1.0, 1e-6, 1.0)


def test_a_session_runs_on_it() -> None:
    f = RenyiFilter.from_dp(10.0, 1e-6, 4.0)
    s = PrivateSession(f, np.random.default_rng(7))
    s.gaussian(1.0, 1.0, 0.01)
    s.laplace(1.0, 1.0, 0.1)
    s.exponential_mechanism([1.0, 2.0, 3.0], 0.2, True)
    s.doubling(5.0, 1.0, 1e-3)
    got = s.filter
    assert isinstance(got, RenyiFilter)
    assert got.rounds == len(s.history) == 4
    exact = sum((Fraction(rdp_price(r.realised, 4.0) or 0.0) for r in s.history), Fraction(0))
    assert isinstance(s.spent, float)
    assert Fraction(s.spent) >= exact > 0
    assert s.guarantee() == ApproxDP(10.0, 1e-6)
    before = s.filter
    with pytest.raises(InvalidParameter, match="priced by RDPFilter"):
        s.brownian(0.0, 1.0, TimeGrid([100.0, 25.0]))
    with pytest.raises(BudgetExceeded):
        s.gaussian(0.0, 1.0, 100.0)
    assert s.filter == before


def test_ledger_round_trip(tmp_path: Path) -> None:
    f = RenyiFilter(4.0, 1e-6, 6.0)
    assert filter_from_description(json.loads(json.dumps(describe(f)))) == f
    assert parse_filter("RenyiFilter.from_dp(4.0, 1e-6, 6.0)") == f
    path = tmp_path / "renyi.sqlite"
    s = PrivateSession(f, np.random.default_rng(8), path, create=True)
    s.gaussian(0.0, 1.0, 0.02)
    s.laplace(0.0, 1.0, 0.3)
    with pytest.raises(BudgetExceeded):
        s.gaussian(0.0, 1.0, 10.0)
    spent, remaining = s.spent, s.remaining
    s.close()
    again = PrivateSession(f, np.random.default_rng(9), path)
    assert (again.spent, again.remaining, again.filter.rounds) == (spent, remaining, 2)
    again.close()


def test_ex_post_rdp_of_never_undercuts_the_price() -> None:
    """What a transcript carries (`ex_post_rdp_of`) is at least what `rdp_price` charges, at every
    order: the filters' exact curves only lower the price."""
    costs: list[Cost] = [
        DPSGD,
        DPCost(0.3),
        LaplaceCost(0.3),
        BoundedRangeCost(0.5),
        GaussianCost(0.1),
    ]
    for cost in costs:
        carried = ex_post_rdp_of(cost)
        assert carried is not None
        for alpha in (1.25, 2.0, 3.5, 8.0, 64.0):
            assert carried.eps(alpha) >= (rdp_price(cost, alpha) or math.inf)
