"""The Gaussian-DP filter's deploy audit (`expost.audit.deploy.gaussian_dp`, issue 16 point 3).

Estimator check at delta = 1e-2 and 1e-3: the importance estimate of the hockey-stick mean
E[(1 − e^(eps − L))⁺] and plain Monte Carlo of the same interaction (θ = 0, w = 1) must have
overlapping confidence intervals. Both are the engine's betting intervals (`betting_bounds`,
Waudby-Smith & Ramdas 2023) for means of [0, 1] variables — the importance samples divided by
their weight bound B, the plain ones h itself — each two-sided at level ALPHA (ALPHA/2 a side):
false alarm <= 2·ALPHA per check when the weights are right. Planted bug: the importance samples
with the weight mis-scaled by 2 must NOT overlap. Not at 1e-4: plain Monte Carlo of the claim
would need about 4·10⁶ interactions (about 15 s here, 1.4 s per 4·10⁵).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from expost.audit import EValueClaim
from expost.audit.deploy import gaussian_dp as deploy_gaussian_dp
from expost.audit.deploy.filters import (
    EM_SHARES,
    SIZING,
    Kind,
    budget_of,
    em_range,
    tilted_losses,
)
from expost.audit.deploy.gaussian_dp import EPS, hockey_stick_run, hockey_stick_tilting
from expost.audit.rare_event import ImportanceClaim, betting_bounds
from expost.audit.tilting import ROUNDING_MARGIN, hockey_stick_bound, hockey_stick_tilt
from expost.filters import BoundedRangeCost, GaussianDPFilter
from expost.filters.gaussian_dp import gdp_price

ALPHA = 1e-6
FloatArray = npt.NDArray[np.float64]


def interval(x: FloatArray, b: float) -> tuple[float, float]:
    """Two-sided level-ALPHA betting interval for the mean of x ∈ [0, b]."""
    assert np.all((x >= 0.0) & (x <= b)), "a sample left [0, B]"
    low, high = betting_bounds(x / b, ALPHA / 2)
    return b * low, b * high


def agree(weighted: FloatArray, b: float, plain: FloatArray) -> bool:
    low, high = interval(weighted, b)
    p_low, p_high = interval(plain, 1.0)
    return low <= p_high and p_low <= high


@pytest.mark.parametrize("delta", [1e-2, 1e-3])
@pytest.mark.parametrize(
    ("kind", "budget_mu", "charge"),
    [("gdp", False, 1.0), ("brownian", False, 0.5), ("gdp", True, 1.0)],
    ids=["claim", "bm-charged-rho", "budget-mu"],
)
def test_importance_matches_plain_monte_carlo(
    kind: Kind, budget_mu: bool, charge: float, delta: float
) -> None:
    """400/delta plain runs for the claim (its mean is 0.6–0.8·delta), 40,000 for the twins'
    processes (5–15·delta)."""
    filt = GaussianDPFilter.from_dp(EPS, delta)
    if budget_mu:
        filt = GaussianDPFilter(math.sqrt(filt.mu))
    twin = budget_mu or charge != 1.0
    theta, b = hockey_stick_tilting(EPS, filt, charge)
    weighted = hockey_stick_run(filt, kind, EPS, (theta, charge), 10_000, np.random.default_rng(3))
    runs = 40_000 if twin else round(400 / delta)
    plain = hockey_stick_run(filt, kind, EPS, (0.0, charge), runs, np.random.default_rng(4))
    assert agree(weighted, b, plain)
    assert not agree(2.0 * weighted, 2.0 * b, plain)


def test_hockey_stick_bound_is_the_largest_weighted_integrand() -> None:
    """Against a grid maximum of exp(−θL + θ(θ+1)rho)·(1 − e^(eps − L)) over L > eps, and the
    tilt against a grid minimum of the bound over θ (grids fine enough for 1e-4 relative)."""
    eps, rho = 2.0, 0.06
    loss = eps + np.geomspace(1e-9, 10.0, 400_001)
    for theta in (0.0, 0.5, 3.0, 16.0):
        on_grid = np.max(np.exp(-theta * loss + theta * (theta + 1) * rho) * -np.expm1(eps - loss))
        assert hockey_stick_bound(eps, rho, theta) == pytest.approx(on_grid, rel=1e-4)
        assert hockey_stick_bound(eps, rho, theta) >= on_grid
    thetas = np.linspace(0.0, 40.0, 40_001)
    best = thetas[np.argmin([hockey_stick_bound(eps, rho, t) for t in thetas])]
    assert hockey_stick_tilt(eps, rho) == pytest.approx(best, abs=2e-3)


def test_weight_bound_margin_covers_the_rounding_of_the_weights() -> None:
    """At 1e-9 almost every Brownian run spends the whole budget, so its computed log-weight is
    the exact −θL + θ(θ+1)·rho up to float rounding, on either side, and samples come within
    1e-6 of the exact bound (the integrand's maximum). A sample at that maximum with the largest
    rounding seen must stay within the claim's B. Twin: the exact bound, without the margin, is
    exceeded by it."""
    filt = GaussianDPFilter.from_dp(EPS, 1e-9)
    theta, b = hockey_stick_tilting(EPS, filt, 1.0)
    rho = budget_of(filt)
    exact = hockey_stick_bound(EPS, rho, theta)
    rng = np.random.default_rng(10)
    loss, log_weight = tilted_losses(filt, "brownian", EPS + 1.0, (theta, 1.0), 20_000, rng)
    spent = rho * SIZING  # what the analyst's rounds add up to
    rounding = float(np.max(log_weight + theta * loss - theta * (theta + 1.0) * spent))
    x = np.where(loss > EPS, np.exp(log_weight) * -np.expm1(EPS - loss), 0.0)
    assert 1.0 - 1e-6 < float(x.max()) / exact < 1.0
    assert 0.0 < rounding < 1e-12
    assert exact * math.exp(rounding) <= b == exact * ROUNDING_MARGIN
    assert exact * math.exp(rounding) > exact


@pytest.mark.parametrize("delta", [1e-6, 1e-9])
def test_deploy_cases_weights_within_bounds_and_twins_refuted(delta: float) -> None:
    """Every sample lies in [0, B]; each twin is refuted by the betting test of E[X] <= delta
    (`EValueClaim`, valid for any nonnegative samples) and by its `ImportanceClaim`."""
    for case in deploy_gaussian_dp.cases(delta):
        for sim, b in ((case.simulate, case.weight_bound), (case.twin_simulate, case.twin_bound)):
            x = np.asarray(sim(2_000, np.random.default_rng(7)), dtype=np.float64)
            assert np.all((x >= 0.0) & (x <= b)), case.name
        assert case.weight_bound <= 10.0 * delta, case.name  # the claim's proposal is efficient
        assert EValueClaim(delta).verdict(x, ALPHA).refuted, case.twin_name
        twin = ImportanceClaim(delta, case.twin_bound, case.twin_proposal, case.quantity)
        assert twin.verdict(x, ALPHA).refuted, case.twin_name


def test_em_round_tilt_is_within_its_gdp_price() -> None:
    """log M(θ) of the two-candidate EM round (p = e^e/(1 + e^e) against 1/2) is at most
    θ(θ+1)·mu(e/2)²/2, the GDP price the filter charges, for the ranges the audit plays.
    Planted bug: half that price is exceeded (near θ = 0 log M/θ is the KL divergence, about
    e²/8 against (π/16)·e²)."""
    for delta in (1e-2, 1e-6, 1e-9, 1e-12):
        rho = budget_of(GaussianDPFilter.from_dp(EPS, delta))
        for share in EM_SHARES:
            e = em_range(share, rho)
            p = np.array([math.exp(e) / (1.0 + math.exp(e)), 1.0 / (1.0 + math.exp(e))])
            loss = np.log(2.0 * p)
            price = gdp_price(BoundedRangeCost(e))
            assert price is not None
            thetas = np.linspace(0.0, 40.0, 81)
            log_m = np.log(np.sum(p[None, :] * np.exp(thetas[:, None] * loss[None, :]), axis=1))
            allowed = thetas * (thetas + 1.0) * price[0] / 2.0
            assert np.all(log_m <= allowed + 1e-12)
            assert np.any(log_m > allowed / 2.0)


@pytest.mark.parametrize(
    ("kind", "budget_mu", "charge"),
    [("gdp", True, 1.0), ("brownian", False, 0.5)],
    ids=["budget-mu", "bm-charged-rho"],
)
def test_overspending_filter_breaks_the_claims_weight_bound(
    kind: Kind, budget_mu: bool, charge: float
) -> None:
    """The twins' filters drawn under the claim's tilt and checked against the claim's B at 1e-9:
    B > delta here (the interval decides the claim), yet paths that spend more than mu² carry
    weights above B and the weight-bound check refutes the claim on its own. Twin: the honest
    filter under the same claim holds, its samples within B."""
    delta = 1e-9
    honest = GaussianDPFilter.from_dp(EPS, delta)
    theta, b = hockey_stick_tilting(EPS, honest, 1.0)
    claim = ImportanceClaim(delta, b, "claim's tilt", "E[(1 - e^(eps - L))+]")
    buggy = GaussianDPFilter(math.sqrt(honest.mu)) if budget_mu else honest
    for filt, tilt, broken in ((buggy, (theta, charge), True), (honest, (theta, 1.0), False)):
        x = hockey_stick_run(filt, kind, EPS, tilt, 2_000, np.random.default_rng(9))
        verdict = claim.verdict(x, ALPHA)
        assert verdict.refuted == broken
        assert ("violation" in verdict.extra) == broken


def test_claim_holds_and_mis_scaled_weight_is_caught() -> None:
    """At 1e-9 the Brownian claim's samples are not refuted; doubled weights against B = 2·B'
    are (that interaction spends the whole budget: its hockey-stick mean is about delta)."""
    delta = 1e-9
    case = deploy_gaussian_dp.cases(delta)[1]
    x = np.asarray(case.simulate(20_000, np.random.default_rng(8)), dtype=np.float64)
    claim = ImportanceClaim(delta, case.weight_bound, case.proposal, case.quantity)
    assert not claim.verdict(x, ALPHA).refuted
    doubled = ImportanceClaim(delta, 2.0 * case.weight_bound, case.proposal, case.quantity)
    assert doubled.verdict(2.0 * x, ALPHA).refuted
    assert claim.describe().startswith("E[(1 - e^(eps - L))+] <= 1e-09")
