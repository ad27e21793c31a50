"""The RDP filter with realised ex-post RDP costs (THEORY §11): prices, budgets, adaptive
adversaries that try to overspend, and the interaction's (eps, delta) guarantee by simulation."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from expost.errors import InvalidParameter
from expost.ex_post_rdp import ExPostRDP
from expost.filters.costs import (
    BoundedRangeCost,
    BrownianCost,
    DPCost,
    ExPostCost,
    GaussianCost,
    ZCDPCost,
)
from expost.filters.rdp import RDPCost, RDPFilter, RoundCost, rdp_price
from expost.filters.zcdp import zcdp_price
from expost.guarantees import ApproxDP
from tests.filter_steps import check_then_spend
from tests.rounding.test_rounding_renyi import ref_pure_dp
from tests.safe_side import rounded_up

ORDERS = (1.5, 2.0, 4.0, 8.0, 16.0)


@pytest.mark.parametrize("alpha", ORDERS)
@pytest.mark.parametrize(
    "cost", [BrownianCost(0.37, 2.0), BrownianCost(3.0), GaussianCost(0.3), ZCDPCost(0.7)]
)
def test_zcdp_rounds_cost_alpha_times_the_unified_filters_price(
    cost: RoundCost, alpha: float
) -> None:
    """The RDP filter's price of a BM or zCDP round is α times what the zCDP/unified filters
    charge (APC Thm 5), rounded up once more."""
    rate = zcdp_price(cost)  # type: ignore[arg-type]  # every cost here is a zCDP-priced Cost
    assert rate is not None
    assert rounded_up(rdp_price(cost, alpha) or 0.0, Fraction(alpha) * Fraction(rate[0]))


def test_pure_rounds_are_priced_at_randomised_responses_curve() -> None:
    """Randomised response's exact ε_α (50 digits), below both old bounds: α·eps²/2 = 0.75 at
    α = 1.5 and eps = 1.0 at α = 4; a bounded-range round at most α·eps²/8."""
    with mp.workdps(50):
        for alpha, old in ((1.5, 0.75), (4.0, 1.0)):
            want = ref_pure_dp(1.0, alpha)
            got = rdp_price(DPCost(1.0), alpha) or 0.0
            assert want <= mp.mpf(got) <= want * (1 + mp.mpf(1e-14)) < old
    assert rdp_price(BoundedRangeCost(1.0), 4.0) == 0.5  # α·eps²/8
    assert rdp_price(ExPostCost(0.9, 0.0, eps_max=2.0), 8.0) == 0.9  # realised pure ex-post
    assert rdp_price(RDPCost(ExPostRDP.of_rho(0.25)), 8.0) == 2.0
    for refused in (DPCost(1.0, 1e-6), ZCDPCost(0.5, 1e-9), ExPostCost(1.0, 1e-6)):
        assert rdp_price(refused, 2.0) is None
        with pytest.raises(InvalidParameter):
            RDPFilter(3.0, 1e-6).prices(refused)


def test_budgets_round_down_against_mpmath() -> None:
    f = RDPFilter(5.0, 1e-9, ORDERS)
    with mp.workdps(50):
        for a, b in zip(ORDERS, f.budgets, strict=True):
            exact = mp.mpf(5) - mp.log(len(ORDERS) / mp.mpf(1e-9)) / (mp.mpf(a) - 1)
            assert mp.mpf(b) <= exact
            assert exact - mp.mpf(b) < 1e-13
    assert f.guarantee() == ApproxDP(5.0, 1e-9)


def _exact_totals(f: RDPFilter, extra: tuple[RoundCost, ...] = ()) -> list[Fraction]:
    totals = [Fraction(0)] * len(f.orders)
    for cost in (*f.realised, *extra):
        for i, a in enumerate(f.orders):
            price = rdp_price(cost, a)
            assert price is not None
            totals[i] += Fraction(price)
    return totals


def _some_order_fits(f: RDPFilter, extra: tuple[RoundCost, ...] = ()) -> bool:
    return any(
        b > 0.0 and t <= Fraction(b)
        for t, b in zip(_exact_totals(f, extra), f.budgets, strict=True)
    )


def _round(kind: str, share: float, alpha: float, stretch: float) -> tuple[RoundCost, RoundCost]:
    """(request, realised) of a round asking for ``share`` of ε_α at order α."""
    share = max(share, 1e-12)
    if kind == "bm":
        t_min = alpha / (2.0 * share)  # α·Δ²/(2t) = share, Δ = 1
        return BrownianCost(t_min), BrownianCost(t_min * stretch)
    if kind == "rdp":
        worst = ExPostRDP.of_rho(share / alpha)
        return RDPCost(worst), RDPCost(ExPostRDP.of_rho(share / alpha / stretch))
    if kind == "lnr":
        return ExPostCost(share, 0.0), ExPostCost(share / stretch, 0.0)
    if kind == "dp":
        return DPCost(share), DPCost(share)
    return GaussianCost(share / alpha), GaussianCost(share / alpha)


@settings(max_examples=60, deadline=None)
@given(
    eps=st.floats(0.5, 30.0),
    delta=st.sampled_from([1e-3, 1e-6, 1e-12]),
    data=st.data(),
)
def test_adaptive_analyst_never_overspends(eps: float, delta: float, data: st.DataObject) -> None:
    """Each request is sized from what remains at an order the analyst picks; greed > 1 asks
    for too much on purpose, and realised costs may exceed the request (a liar)."""
    f = RDPFilter(eps, delta, ORDERS)
    for _ in range(data.draw(st.integers(1, 12))):
        i = data.draw(st.integers(0, len(ORDERS) - 1))
        greed = data.draw(st.floats(0.0, 1.5))
        kind = data.draw(st.sampled_from(["bm", "rdp", "lnr", "dp", "gauss"]))
        stretch = data.draw(st.sampled_from([1.0, 2.0, 37.0, 0.5]))  # 0.5: realised above request
        request, realised = _round(kind, greed * f.remaining_by_order[i], ORDERS[i], stretch)
        before = f
        outcome, f = check_then_spend(f, request, realised)
        if outcome == "refused":
            continue
        if outcome == "overspent":
            assert f is before
            assert not _some_order_fits(f, (realised,))
            continue
        assert f.rounds == before.rounds + 1
        assert _some_order_fits(f)
        for spent, t in zip(f.spent_by_order, _exact_totals(f), strict=True):
            assert rounded_up(spent, t)
    assert _some_order_fits(f) or f.rounds == 0


def test_a_history_over_every_budget_is_rejected() -> None:
    with pytest.raises(InvalidParameter):
        RDPFilter(1.0, 1e-6, ORDERS, realised=(GaussianCost(5.0),))


# --- the guarantee, simulated -----------------------------------------------------------------

_TIMES = np.geomspace(8.0, 0.02, 25)


def _interaction(eps: float, delta: float, divisor: float, rng: np.random.Generator) -> float:
    """One adaptive interaction; returns its total loss.

    The analyst alternates Brownian rounds (adversarial: stopped as soon as the round's loss
    exceeds 0.3, else at the smallest time the filter admits) and Gaussian rounds sized at half
    of what remains at the best order. Brownian rounds are charged realised rho/``divisor``
    (``divisor`` = 1: the true price; > 1: a planted under-charge).
    """
    f = RDPFilter(eps, delta, ORDERS)
    total = 0.0
    for k in range(40):
        best = int(np.argmax(f.remaining_by_order))
        left, alpha = f.remaining_by_order[best], ORDERS[best]
        if left <= 1e-9:
            break
        if k % 2 == 0:
            t_min = alpha / (2.0 * left) / divisor
            grid = _TIMES[t_min <= _TIMES]
            if grid.size == 0:
                break
            if not f.admits(RDPCost(ExPostRDP.of_rho(1.0 / (2.0 * grid[-1]) / divisor))):
                break
            s = 1.0 / grid  # privacy time: X(s) a BM, loss s/2 + X(s) (Δ = 1)
            x = np.cumsum(rng.normal(0.0, np.sqrt(np.diff(np.concatenate([[0.0], s])))))
            loss = s / 2.0 + x
            stop = int(np.argmax(loss > 0.3)) if np.any(loss > 0.3) else s.size - 1
            f = f.spend(RDPCost(ExPostRDP.of_rho(s[stop] / 2.0 / divisor)))
            total += float(loss[stop])
        else:
            rho = left / alpha / 2.0
            if not f.admits(GaussianCost(rho)):
                break
            f = f.spend(GaussianCost(rho))
            total += float(rng.normal(rho, math.sqrt(2.0 * rho)))
    return total


@pytest.mark.parametrize(("divisor", "holds"), [(1.0, True), (8.0, False)])
def test_interaction_loss_exceeds_eps_at_most_delta(divisor: float, holds: bool) -> None:
    """P(Σ L > eps) <= delta (THEORY §11) under the adaptive analyst; the planted twin charges
    Brownian rounds an eighth of their ex-post RDP and is refuted. Exact binomial test, 1,500
    interactions, false-alarm level 1e-4."""
    eps, delta, n = 3.0, 0.05, 1500
    rng = np.random.default_rng(2911)
    hits = sum(_interaction(eps, delta, divisor, rng) > eps for _ in range(n))
    lower = stats.beta.ppf(1e-4, hits, n - hits + 1) if hits else 0.0
    assert (lower <= delta) == holds, (hits, lower)
