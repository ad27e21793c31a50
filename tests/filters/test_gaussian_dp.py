"""The Gaussian-DP guarantee and filter (THEORY.md §9): values against mpmath, prices, sessions."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath as mp
import numpy as np
import pytest

import expost as ep
from expost import (
    ApproxDP,
    BoundedRangeCost,
    BrownianCost,
    DPCost,
    EpsilonGrid,
    ExPostCost,
    GaussianCost,
    GaussianDP,
    GaussianDPFilter,
    InvalidParameter,
    PrivateSession,
    RelativeError,
    ZCDPCost,
)
from expost.filters.gaussian_dp import pure_dp_mu
from expost.guarantees import gdp_delta, gdp_mu_for_dp, rho_for_dp
from tests.safe_side import exact_sum, rounded_up

mp.mp.dps = 60


def _delta_mp(mu: float, eps: float) -> Any:
    """delta_mu(eps) of Dong–Roth–Su Cor. 2.13, in 60-digit arithmetic."""
    m, e = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)


def _pure_mu_mp(eps: float) -> Any:
    """2·Φ⁻¹(e^eps/(1 + e^eps)) in 60-digit arithmetic (Φ⁻¹(p) = −sqrt(2)·erfc⁻¹(2p))."""
    q = 1 / (1 + mp.exp(mp.mpf(eps)))  # 1 − e^eps/(1 + e^eps), no cancellation
    return 2 * mp.sqrt(2) * mp.erfinv(1 - 2 * q)


# ----------------------------------------------------------------------------- the guarantee


@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 1.848, 4.0, 12.0])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 5.0, 10.0, 40.0])
def test_delta_matches_the_duality_formula_in_high_precision(mu: float, eps: float) -> None:
    exact = _delta_mp(mu, eps)
    if exact < mp.mpf("1e-300"):  # below the float range: a tiny positive upper bound
        assert exact <= gdp_delta(mu, eps) < 1e-290
        return
    assert exact <= gdp_delta(mu, eps) <= exact * (1 + mp.mpf("2e-6"))  # an upper bound
    if gdp_delta(mu, eps) < 1.0:
        assert GaussianDP(mu).to_dp(eps) == ApproxDP(eps, gdp_delta(mu, eps))
    else:  # the bound reached 1: no DP statement
        with pytest.raises(InvalidParameter, match="vacuous"):
            GaussianDP(mu).to_dp(eps)


def test_delta_never_underflows_to_pure_dp() -> None:
    # the true delta_1(50) is about 1.4e-536: mu-GDP is never (eps, 0)-DP
    assert GaussianDP(1.0).to_dp(50.0).delta > 0.0
    with pytest.raises(InvalidParameter, match="target"):
        GaussianDPFilter(1.0, ApproxDP(50.0, 0.0))


def test_subnormal_deltas_are_rounded_up() -> None:
    for eps in np.linspace(38.3, 38.7, 81):  # delta_1(eps) from about 1e-316 to 1e-320
        assert gdp_delta(1.0, float(eps)) >= _delta_mp(1.0, float(eps))


def test_small_mu_stays_an_upper_bound_despite_cancellation() -> None:
    # the gap of two logs of size eps²/(2mu²) loses digits; the bound must still hold
    rng = np.random.default_rng(0)
    for _ in range(200):
        mu = 10.0 ** rng.uniform(-12.0, -4.0)
        eps = mu * rng.uniform(5.0, 25.0)
        exact = _delta_mp(mu, eps)
        assert exact <= gdp_delta(mu, eps)
    mu = gdp_mu_for_dp(1e-4, 1e-250)
    assert _delta_mp(mu, 1e-4) <= mp.mpf("1e-250")


def test_the_theory_check_values() -> None:
    mu = gdp_mu_for_dp(10.0, 1e-6)
    assert mu == pytest.approx(1.848, abs=5e-4)
    assert mu * mu / 2.0 == pytest.approx(1.708, abs=5e-4)
    assert rho_for_dp(10.0, 1e-6) == pytest.approx(1.353, abs=5e-4)  # what it beats
    small = gdp_mu_for_dp(1.0, 1e-6)
    assert small * small / 2.0 == pytest.approx(0.0280, abs=5e-5)


@pytest.mark.parametrize(("eps", "delta"), [(10.0, 1e-6), (1.0, 1e-6), (0.5, 1e-3), (3.0, 1e-12)])
def test_mu_for_dp_is_the_largest_mu_that_meets_the_target(eps: float, delta: float) -> None:
    mu = gdp_mu_for_dp(eps, delta)
    assert _delta_mp(mu, eps) <= delta
    assert _delta_mp(mu * (1.0 + 1e-6), eps) > delta  # and not loose
    back = GaussianDP(mu).eps_for(delta)
    assert back <= eps * (1.0 + 1e-6)
    assert _delta_mp(mu, back) <= delta
    assert _delta_mp(mu, back * (1.0 - 1e-6)) > delta


def test_eps_for_is_zero_when_delta_covers_eps_zero() -> None:
    g = GaussianDP(0.1)
    assert g.eps_for(0.5) == 0.0  # delta_mu(0) = 2Φ(mu/2) − 1 ≈ 0.04
    assert g.eps_for(0.01) > 0.0


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan, "1"])
def test_bad_mu_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidParameter, match=r"^mu="):
        GaussianDP(bad)
    with pytest.raises(InvalidParameter, match=r"^mu="):
        GaussianDPFilter(bad)


def test_bad_conversion_arguments_are_refused() -> None:
    with pytest.raises(InvalidParameter, match=r"^eps="):
        GaussianDP(1.0).to_dp(-1.0)
    for d in (0.0, 1.0):
        with pytest.raises(InvalidParameter, match=r"^delta="):
            GaussianDP(1.0).eps_for(d)
        with pytest.raises(InvalidParameter, match=r"^delta="):
            gdp_mu_for_dp(1.0, d)


# ----------------------------------------------------------------------------- prices


@pytest.mark.parametrize("eps", [1e-6, 1e-3, 0.1, 0.9, 1.0, 3.0, 10.0, 35.0])
def test_pure_dp_mu_is_two_phi_inverse_of_the_kink(eps: float) -> None:
    assert pure_dp_mu(eps) == pytest.approx(float(_pure_mu_mp(eps)), rel=1e-13)


@pytest.mark.parametrize(
    ("cost", "eps"),
    [(DPCost(0.3), 0.3), (ExPostCost(0.1, 0.0, 0.7), 0.7), (BoundedRangeCost(0.2), 0.1)],
)
def test_transcendental_prices_are_rounded_up_by_a_tiny_margin(cost: Any, eps: float) -> None:
    """DPCost: mu(eps)²; LNR: mu(eps_max)²; EM with range eps: mu(eps/2)² (filter docstring)."""
    amount, delta = GaussianDPFilter(2.0).price(cost)
    exact = _pure_mu_mp(eps) ** 2
    assert delta == 0.0
    assert exact <= amount <= exact * (1 + mp.mpf("1e-11"))


def test_exact_prices_gaussian_and_brownian() -> None:
    f = GaussianDPFilter(2.0)
    assert f.price(GaussianCost(0.3)) == (0.6, 0.0)  # mu² = 2·rho, exactly
    amount, _ = f.price(BrownianCost(7.0, 3.0))  # Δ²/t = 9/7, rounded up
    assert Fraction(math.nextafter(amount, 0.0)) < Fraction(9, 7) <= Fraction(amount)


def test_unpriceable_rounds_are_refused() -> None:
    f = GaussianDPFilter(2.0)
    for cost in (ZCDPCost(0.1), DPCost(0.1, 1e-6), ExPostCost(0.1)):
        assert not f.accepts(cost)
        with pytest.raises(InvalidParameter, match="cannot charge"):
            f.spend(cost)


def test_from_dp_reports_its_target_and_checks_it() -> None:
    f = GaussianDPFilter.from_dp(10.0, 1e-6)
    assert f.reported_guarantee() == ApproxDP(10.0, 1e-6)
    assert f.guarantee() == GaussianDP(f.mu)
    assert f.budget <= f.mu**2
    assert f.unit == "mu²"
    assert GaussianDPFilter(f.mu).reported_guarantee() == GaussianDP(f.mu)
    with pytest.raises(InvalidParameter, match=r"^target="):
        GaussianDPFilter(2.0, ApproxDP(10.0, 1e-6))  # 2-GDP gives delta ≈ 2.6e-6 at eps 10


def test_brownian_grid_clips_to_the_gdp_budget() -> None:
    f = GaussianDPFilter(1.5).spend(GaussianCost(0.5))  # 1.25 of mu² = 2.25 left
    assert f.max_bm_eps(1.0) == pytest.approx(math.sqrt(1.25), rel=1e-15)
    assert f.min_bm_time(2.0) == pytest.approx(4.0 / 1.25, rel=1e-15)


# ----------------------------------------------------------------------------- sessions


def _run_mixed(s: PrivateSession) -> None:
    s.gaussian(np.array([1.0, 2.0]), sensitivity=1.0, rho=0.05)
    s.laplace(5.0, sensitivity=1.0, eps=0.2)
    s.exponential_mechanism([3.0, 1.0, 2.0], eps=0.1, monotone=True)
    s.above_threshold([0.0, 10.0], eps=0.2, threshold=5.0)
    s.brownian(100.0, 1.0, EpsilonGrid.linear_in_eps2(1e-4, 10.0, 50), stop=RelativeError(0.1))
    s.doubling(100.0, 1.0, 1e-4, 2.0, stop=RelativeError(0.1))
    s.laplace_noise_reduction(100.0, 1.0, [20.0, 5.0], stop=None)


def test_a_session_runs_every_mechanism_the_filter_can_price(tmp_path: Path) -> None:
    f = GaussianDPFilter.from_dp(10.0, 1e-6)
    path = tmp_path / "gdp.sqlite"
    s = PrivateSession(f, np.random.default_rng(5), ledger=path, create=True)
    _run_mixed(s)
    assert [r.mechanism for r in s.history] == [
        "gaussian",
        "laplace",
        "exponential",
        "above-threshold",
        "brownian",
        "doubling",
        "laplace-noise-reduction",
    ]
    prices = [s.filter.price(r.realised) for r in s.history]
    assert isinstance(s.spent, float)
    assert rounded_up(s.spent, exact_sum(a for a, _ in prices))
    assert prices[0] == (0.1, 0.0)  # Gaussian: mu² = 2·rho
    assert isinstance(s.history[4].realised, BrownianCost)
    assert isinstance(s.history[5].realised, GaussianCost)
    assert s.guarantee() == ApproxDP(10.0, 1e-6)
    spent, filt = s.spent, s.filter
    s.close()
    resumed = PrivateSession(f, np.random.default_rng(6), ledger=path)  # the ledger round trip
    assert resumed.spent == spent
    assert resumed.filter == filt
    resumed.close()


def test_a_session_stops_at_the_gdp_budget() -> None:
    s = PrivateSession(GaussianDPFilter(1.0), np.random.default_rng(1))
    s.gaussian(0.0, 1.0, 0.375)  # mu² 0.75 of 1 (binary fractions: the sums are exact)
    with pytest.raises(ep.BudgetExceeded):
        s.gaussian(0.0, 1.0, 0.1875)  # 0.375 more would exceed
    s.gaussian(0.0, 1.0, 0.125)
    assert s.remaining == 0.0
