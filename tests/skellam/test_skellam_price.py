"""The fixed (eps, delta) price of a Skellam noise-reduction run (issue 23): Agarwal–Kairouz–Liu's
Rényi bound checked against the exact divergence, the fixed cost at the grid's smallest time,
and a session that charges it instead of the ex-post cost."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

from expost import ExPostFilter, PrivateSession, SkellamPrivacyBoundary
from expost.errors import BudgetExceeded, InvalidParameter
from expost.filters.costs import DPCost
from expost.mechanisms.skellam_noise_reduction import SkellamNoiseReduction
from expost.skellam.loss import SkellamLoss, akl_eps_for_delta, akl_renyi
from expost.skellam.pmf import pmf

MEANS = np.geomspace(0.05, 200.0, 10)
ORDERS = (2, 3, 4, 6, 8, 16, 32)


def _variance_misread(alpha: int, mu: float, sensitivity: int) -> float:
    """Planted twin: the bound with mu read as the noise variance 2mu (a parametrisation slip)."""
    return akl_renyi(alpha, 2.0 * mu, sensitivity)


@pytest.mark.parametrize("sensitivity", [1, 2, 3])
def test_akl_renyi_bounds_the_exact_divergence(sensitivity: int) -> None:
    """At every integer order and mean on the grid, AKL >= the exact D_alpha (rounded up, so the
    check is conservative against AKL); the variance-misread twin falls below it somewhere."""
    below = twin_below = 0
    for mu in MEANS:
        for alpha in ORDERS:
            exact = max(SkellamLoss(float(mu), d).renyi(alpha) for d in range(1, sensitivity + 1))
            below += akl_renyi(alpha, float(mu), sensitivity) < exact
            twin_below += _variance_misread(alpha, float(mu), sensitivity) < exact
    assert below == 0
    assert twin_below > 0


def test_gaussian_zcdp_claim_fails_near_order_one() -> None:
    """rho-zCDP with the Gaussian rho = Δ²/(4mu) is false for Skellam noise (THEORY §10): the exact
    D_alpha at mu = 1, alpha = 1.01 is above alpha·rho (measured 0.25680 against 0.25250)."""
    exact = SkellamLoss(1.0, 1).renyi(1.01)
    assert exact > 1.01 / 4.0 * 1.01  # more than 1 % above, far beyond rounding
    assert SkellamLoss(1.0, 1).renyi(2.0) < 2.0 / 4.0  # while at alpha = 2 it holds


def test_akl_renyi_is_the_formula_rounded_up() -> None:
    for alpha, mu, d in [(2, 1.0, 1), (5, 0.3, 2), (64, 1e3, 3)]:
        m, dd = Fraction(mu), Fraction(d)
        exact = alpha * dd**2 / (4 * m) + min(
            ((2 * alpha - 1) * dd**2 + 6 * dd) / (16 * m**2), 3 * dd / (4 * m)
        )
        got = akl_renyi(alpha, mu, d)
        assert Fraction(got) >= exact
        assert Fraction(math.nextafter(got, 0.0)) < exact
    for bad in (1, 2.0, True, 0):
        with pytest.raises(InvalidParameter, match="alpha"):
            akl_renyi(bad, 1.0, 1)  # type: ignore[arg-type]


def test_akl_eps_is_the_best_conversion_over_orders() -> None:
    mu, d, delta = 5.0, 1, 1e-6
    ell = -math.log(delta)
    want = min(akl_renyi(a, mu, d) + ell / (a - 1) for a in range(2, 257))
    assert akl_eps_for_delta(mu, d, delta) == pytest.approx(want, rel=1e-12)
    assert akl_eps_for_delta(mu, d, delta) >= SkellamLoss(mu, d).eps_for_delta(delta)
    with pytest.raises(InvalidParameter, match="max_order"):
        akl_eps_for_delta(mu, d, delta, max_order=1)


def _hockey_stick(p: npt.NDArray[np.float64], shift: int, eps: float) -> float:
    """Σ_y (p(y) − e^eps·p(y − shift))_+ for a pmf table p (zero outside it), in floats."""
    here = np.concatenate([p, np.zeros(shift)])
    there = np.concatenate([np.zeros(shift), p])
    return float(np.maximum(here - math.exp(eps) * there, 0.0).sum())


@pytest.mark.parametrize("mean", [0.3, 4.0, 60.0])
def test_price_is_monotone_in_the_shift(mean: float) -> None:
    """``fixed_cost`` prices the shift Δ alone: for log-concave noise the hockey-stick divergence
    grows with the shift (docs/mechanisms/skellam.md). Checked on the rounded-up eps for
    D = 1..5 and on float hockey-stick sums for D = 1..12; twin: a bimodal pmf (not
    log-concave) whose divergence falls from D = 1 to D = 2, which the same check rejects."""
    eps = [SkellamLoss(mean, d).eps_for_delta(1e-6) for d in range(1, 6)]
    assert eps == sorted(eps)
    table = pmf(np.arange(-400, 401), mean, mean)
    for e in (0.0, 0.5, 2.0):
        sums = [_hockey_stick(table, d, e) for d in range(1, 13)]
        assert all(b >= a - 1e-15 for a, b in itertools.pairwise(sums))
    bimodal = np.zeros(9)
    bimodal[[0, 2]] = 0.5
    twin = [_hockey_stick(bimodal, d, 0.0) for d in range(1, 13)]
    assert not all(b >= a - 1e-15 for a, b in itertools.pairwise(twin))


def test_fixed_cost_is_the_exact_eps_at_the_smallest_time() -> None:
    times = (40.0, 10.0, 2.5)
    one = SkellamNoiseReduction(times, rate=2.0, sensitivity=1)
    assert one.fixed_cost(1e-6) == DPCost(SkellamLoss(5.0, 1).eps_for_delta(1e-6), 1e-6)
    three = SkellamNoiseReduction(times, rate=2.0, sensitivity=3)
    eps3 = three.fixed_cost(1e-6).eps
    assert eps3 == max(SkellamLoss(5.0, k).eps_for_delta(1e-6) for k in (1, 2, 3))
    assert eps3 == SkellamLoss(5.0, 3).eps_for_delta(1e-6)  # the largest shift alone
    assert eps3 > one.fixed_cost(1e-6).eps
    assert three.fixed_cost(1e-6, "akl").eps >= eps3
    with pytest.raises(InvalidParameter, match="method"):
        one.fixed_cost(1e-6, "gaussian")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="delta"):
        one.fixed_cost(0.0)


def _session(eps: float) -> PrivateSession:
    return PrivateSession(ExPostFilter(eps, 1e-5), np.random.default_rng(5))


def test_session_charges_the_fixed_cost_whenever_the_run_stops() -> None:
    times = np.geomspace(100.0, 1.0, 12)
    fixed = SkellamNoiseReduction(times).fixed_cost(1e-7)
    session = _session(10.0)
    first = session.skellam(7, 1, times, stop=lambda _released: True, fixed_delta=1e-7)
    second = session.skellam(7, 1, times, fixed_delta=1e-7)
    assert first.times.size == 1  # stopped at once, still charged the whole run's price
    assert second.times.size == times.size
    assert [(r.request, r.realised) for r in session.history] == [(fixed, fixed)] * 2
    assert session.spent == pytest.approx(2 * fixed.eps)


def test_session_fixed_price_refusals_change_nothing() -> None:
    times = np.geomspace(100.0, 1.0, 12)
    session = _session(1.0)  # below the fixed price of a run down to t = 1 (about 2.3)
    with pytest.raises(BudgetExceeded):
        session.skellam(7, 1, times, fixed_delta=1e-7)
    psi = SkellamPrivacyBoundary.tuned_for(1.0, 1e-7)
    for kwargs in ({}, {"boundary": psi, "fixed_delta": 1e-7}):
        with pytest.raises(InvalidParameter, match="boundary"):
            session.skellam(7, 1, times, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="one count"):
        session.skellam(np.array([1, 2]), 1, times, fixed_delta=1e-7)
    assert session.history == ()
    assert session.spent == 0.0


@pytest.mark.parametrize("exact", [False, True], ids=["float", "secure"])
def test_session_akl_round_is_charged_exactly_the_akl_price(exact: bool) -> None:
    """``fixed_price="akl"``: the round's request and charge are ``fixed_cost(delta, "akl")``,
    in both modes; the exact price differs (the twin: a session ignoring fixed_price)."""
    from expost.exact.bits import GeneratorBits

    times = np.geomspace(100.0, 1.0, 12)
    akl = SkellamNoiseReduction(times).fixed_cost(1e-7, "akl")
    assert akl != SkellamNoiseReduction(times).fixed_cost(1e-7)
    bits = GeneratorBits(np.random.default_rng(2)) if exact else None
    session = PrivateSession(ExPostFilter(10.0, 1e-5), np.random.default_rng(5), bits=bits)
    session.skellam(7, 1, times, fixed_delta=1e-7, fixed_price="akl")
    assert [(r.request, r.realised) for r in session.history] == [(akl, akl)]
    assert session.spent == akl.eps


def test_session_akl_prices_beyond_the_exact_sums_work_limit() -> None:
    """Mean 2e5 at t_min is beyond MAX_TERMS: "exact" is refused naming fixed_price='akl',
    "akl" is charged its closed form."""
    times = [1e6, 2e5]
    session = _session(10.0)
    with pytest.raises(InvalidParameter, match="fixed_price='akl'"):
        session.skellam(5, 1, times, fixed_delta=1e-6)
    assert session.spent == 0.0
    session.skellam(5, 1, times, fixed_delta=1e-6, fixed_price="akl")
    akl = SkellamNoiseReduction(times).fixed_cost(1e-6, "akl")
    assert session.history[0].request == akl


@pytest.mark.parametrize("price", ["AKL", "gaussian", None, 1, ["akl"]])
def test_session_refuses_a_bad_fixed_price_or_akl_with_a_boundary(price: object) -> None:
    times = np.geomspace(100.0, 1.0, 12)
    session = _session(10.0)
    with pytest.raises(InvalidParameter, match=r"fixed_price.*nothing was spent"):
        session.skellam(7, 1, times, fixed_delta=1e-7, fixed_price=price)  # type: ignore[arg-type]
    psi = SkellamPrivacyBoundary.tuned_for(1.0, 1e-7)
    with pytest.raises(InvalidParameter, match=r"fixed_price.*fixed_delta"):
        session.skellam(7, 1, times, boundary=psi, fixed_price="akl")
    assert session.history == ()
    assert session.spent == 0.0
