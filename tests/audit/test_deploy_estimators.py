"""Estimator checks of the tilted proposals (issue 13, points 4a and 4c).

At delta in {1e-2, 1e-3, 1e-4} the importance-sampled estimate of P(event) and the plain Monte
Carlo one (the same simulator with θ = 0, w = 1) must have overlapping confidence intervals,
each two-sided at level ALPHA: false alarm <= 2·ALPHA per check when the weights are right.
The importance interval is the engine's betting interval for means of variables in [0, B]
(`betting_bounds`, Waudby-Smith & Ramdas 2023), B the proposal's weight bound; the plain one is
Clopper–Pearson.
The planted bug: the same importance samples with the weight mis-scaled by 2 must NOT overlap,
on the case where plain Monte Carlo sees many events (the twins' process at delta = 1e-2).
"""

from __future__ import annotations

import math
from functools import partial
from types import ModuleType

import attrs
import numpy as np
import numpy.typing as npt
import pytest

from expost.audit import EValueClaim, run_audits
from expost.audit.deploy import filters as deploy_filters
from expost.audit.deploy import odometers as deploy_odometers
from expost.audit.deploy import tails as deploy_tails
from expost.audit.deploy.filters import Kind, claim_tilt, tilted_filter_run
from expost.audit.deploy.odometers import mixture_tilts, tilted_odometer_run
from expost.audit.deploy.tails import lemma21_eps, pdp_eps, tilted_gaussian_tail
from expost.audit.rare_event import ImportanceClaim, betting_bounds
from expost.audit.tilting import bound, chernoff_tilt, laplace_log_mgf
from expost.filters import ApproxDPFilter, BrownianFilter, UnifiedFilter, ZCDPFilter
from expost.guarantees import ZCDP, zcdp_to_dp
from expost.loss import GaussianLoss
from expost.odometers import MixtureOdometer
from tests.stats import clopper_pearson_lower, clopper_pearson_upper

ALPHA = 1e-6
DELTAS = (1e-2, 1e-3, 1e-4)
FloatArray = npt.NDArray[np.float64]


def plain_interval(hits: int, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    return clopper_pearson_lower(hits, n, alpha / 2), clopper_pearson_upper(hits, n, alpha / 2)


def agree(weighted: FloatArray, b: float, plain: npt.ArrayLike) -> bool:
    """Do the importance interval (weights in [0, b]) and the plain one (events) overlap?"""
    assert np.all((weighted >= 0.0) & (weighted <= b)), "a weight left [0, B]"
    events = np.asarray(plain)
    low, high = (b * bound for bound in betting_bounds(weighted / b, ALPHA / 2))
    p_low, p_high = plain_interval(int(np.count_nonzero(events)), events.size)
    return low <= p_high and p_low <= high


# --- single Gaussian releases: gaussian-pdp-exact and APC Lemma 2.1 ------------------------------


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("which", ["pdp-exact", "lemma-2.1"])
def test_gaussian_tail_matches_plain_monte_carlo(delta: float, which: str) -> None:
    rho, sigma = 0.5, 1.0
    eps = pdp_eps(rho, delta) if which == "pdp-exact" else lemma21_eps(rho, delta)
    b = bound(eps, rho, chernoff_tilt(eps, rho))
    weighted = tilted_gaussian_tail(sigma, eps, 3, 20_000, np.random.default_rng(1))
    # L = rho − <z, u>/σ for the release f(x) + σz and u the unit vector f(x') − f(x): plain
    # Monte Carlo of the loss needs only the standard normal <z, u>.
    plain = np.random.default_rng(2).standard_normal(int(400 / delta)) > (eps - rho) * sigma
    assert agree(weighted, b, plain)
    if delta == DELTAS[0] and which == "pdp-exact":
        assert not agree(2.0 * weighted, 2.0 * b, plain)


def test_pdp_eps_has_tail_delta() -> None:
    for delta in (1e-6, 1e-9, 1e-12):
        assert GaussianLoss(0.5).tail(pdp_eps(0.5, delta)) == pytest.approx(delta, rel=1e-9)


def test_lemma21_bound_is_delta() -> None:
    """θ* makes B = exp(−(eps − rho)²/(4rho)), which is delta at Lemma 2.1's eps."""
    for delta in (1e-6, 1e-9, 1e-12):
        eps = lemma21_eps(0.5, delta)
        assert bound(eps, 0.5, chernoff_tilt(eps, 0.5)) == pytest.approx(delta, rel=1e-12)


# --- the Laplace tilt ------------------------------------------------------------------------------


def test_laplace_log_mgf_is_the_integral_and_below_the_zcdp_bound() -> None:
    """log E[e^(θL)] by quadrature of the Laplace density; <= θ(θ+1)e²/2 (Bun–Steinke Prop 3.3)."""
    from scipy import integrate

    for e in (0.05, 0.5, 2.0):
        for theta in (0.0, 0.7, 4.0):

            def integrand(u: float, e: float = e, theta: float = theta) -> float:
                return 0.5 * math.exp(-abs(u) + theta * (abs(u - e) - abs(u)))

            total = sum(integrate.quad(integrand, lo, hi)[0] for lo, hi in ((-60, 0), (0, e)))
            total += integrate.quad(integrand, e, e + 60)[0]
            assert float(laplace_log_mgf(e, theta)) == pytest.approx(math.log(total), abs=1e-9)
            assert float(laplace_log_mgf(e, theta)) <= theta * (theta + 1) * e * e / 2 + 1e-12


# --- filter interactions ---------------------------------------------------------------------------


def _filter(kind: Kind, delta: float) -> tuple[object, float]:
    rho = 0.5
    if kind == "gaussian":
        return ZCDPFilter(rho), zcdp_to_dp(ZCDP(rho), delta).eps
    if kind == "brownian":
        f = BrownianFilter(rho, delta)
        return f, f.guarantee().eps
    if kind == "mixed":
        return UnifiedFilter(rho, 0.0, delta), zcdp_to_dp(ZCDP(rho), delta).eps
    d = ApproxDPFilter(lemma21_eps(rho, delta), 0.0, delta)
    return d, d.guarantee().eps


@pytest.mark.parametrize("kind", ["gaussian", "brownian", "mixed"])
@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("charge", [1.0, 0.5])
def test_filter_interaction_matches_plain_monte_carlo(
    kind: Kind, delta: float, charge: float
) -> None:
    filt, eps = _filter(kind, delta)
    assert isinstance(filt, ZCDPFilter | BrownianFilter | UnifiedFilter)
    theta, b = claim_tilt(eps, filt, charge)
    weighted = tilted_filter_run(filt, kind, eps, (theta, charge), 10_000, np.random.default_rng(3))
    plain = tilted_filter_run(filt, kind, eps, (0.0, charge), 40_000, np.random.default_rng(4))
    assert agree(weighted, b, plain)
    if delta == DELTAS[0] and charge == 0.5:
        assert not agree(2.0 * weighted, 2.0 * b, plain)


_AUDIT_OF = {
    "gaussian": "fac-thm1-zcdp-filter",
    "laplace": "fac-thm2-dp-filter",
    "brownian": "apc-lemma6.2-brownian-filter",
    "mixed": "apc-thm5-unified-filter",
}


@pytest.mark.parametrize("kind", ["gaussian", "laplace", "brownian", "mixed"])
def test_half_charging_filter_breaks_the_claims_weight_bound(kind: Kind) -> None:
    """The registered audit at 1e-9 (its proposal, its B = delta) run on the filter told half of
    each round's cost: runs that overspend carry weights above B, so the weight-bound check
    refutes the claim, and the report records it (no exception). Twin: the honest filter under
    the same audit holds (with B <= delta nothing else can refute it)."""
    delta = 1e-9
    (case,) = [c for c in deploy_filters.cases(delta) if c.name == _AUDIT_OF[kind]]
    filt, eps = _filter(kind, delta)
    assert isinstance(filt, ZCDPFilter | BrownianFilter | UnifiedFilter | ApproxDPFilter)
    theta, b = claim_tilt(eps, filt, 1.0)
    assert b == pytest.approx(case.weight_bound, rel=1e-12)
    assert b <= delta * (1.0 + 1e-12)
    honest = case.audit(2_000, 2_000)
    half = partial(tilted_filter_run, filt, kind, eps, (theta, 0.5))
    buggy = attrs.evolve(honest, name=f"{honest.name}/half-charged", simulate=half)
    caught, kept = run_audits([buggy, honest], seed=0).results
    assert caught.verdict.refuted
    assert str(caught.verdict.extra["violation"]).startswith("weight bound violated: max w·h")
    assert kept.passed
    assert "violation" not in kept.verdict.extra


@pytest.mark.parametrize("delta", DELTAS)
def test_laplace_filter_matches_plain_monte_carlo(delta: float) -> None:
    """Plain Monte Carlo of the Laplace interaction plays up to 512 rounds: fewer runs (10,000;
    the twin's process has P/delta of about 5, 15 and 45 at the three deltas: 45 hits at 1e-4)."""
    filt, eps = _filter("laplace", delta)
    assert isinstance(filt, ApproxDPFilter)
    theta, b = claim_tilt(eps, filt, 0.5)
    weighted = tilted_filter_run(
        filt, "laplace", eps, (theta, 0.5), 4_000, np.random.default_rng(5)
    )
    plain = tilted_filter_run(filt, "laplace", eps, (0.0, 0.5), 10_000, np.random.default_rng(6))
    assert agree(weighted, b, plain)
    if delta == DELTAS[0]:
        assert not agree(2.0 * weighted, 2.0 * b, plain)


@pytest.mark.parametrize("delta", DELTAS)
def test_odometer_mixture_proposal_matches_plain_monte_carlo(delta: float) -> None:
    """The half-odometer's process (the claim's is never crossed by plain Monte Carlo here)."""
    odometer = MixtureOdometer(1.0, 0.0, delta)
    thetas, b = mixture_tilts(odometer, 0.5)  # the claims' proposal, on a process plain MC sees
    weighted = tilted_odometer_run(odometer, 0.5, thetas, 3_000, np.random.default_rng(8))
    plain = tilted_odometer_run(odometer, 0.5, (0.0,), 8_000, np.random.default_rng(9))
    assert agree(weighted, b, plain)
    if delta == DELTAS[0]:
        assert not agree(2.0 * weighted, 2.0 * b, plain)


def test_exact_pdp_claim_rejects_at_rate_at_most_alpha() -> None:
    """Issue 13 point 4b: the Gaussian's exact pDP holds with equality, so repeated seeded
    audits at alpha = 0.05 (large, to make the rate observable) must reject at rate <= 0.05
    (exact one-sided binomial test, level 1e-6). Planted bug: the same runs against delta/2
    (a claim false by a factor 2) must reject at a rate above 0.05. A normal-approximation
    bound would pass this too; `test_betting_bounds_cover_bernoulli_means_at_their_level`
    (test_rare_event.py) rejects it and the betting bound at 2·alpha."""
    from scipy import stats

    delta, level, repeats = 1e-9, 0.05, 200
    rho, eps = 0.5, pdp_eps(0.5, 1e-9)
    b = bound(eps, rho, chernoff_tilt(eps, rho))
    right = ImportanceClaim(delta, b, "tilt")
    wrong = ImportanceClaim(delta / 2, b, "tilt")
    seeds = np.random.SeedSequence(11).spawn(repeats)
    runs = [tilted_gaussian_tail(1.0, eps, 3, 2_000, np.random.default_rng(s)) for s in seeds]
    rejected = sum(right.verdict(x, level).refuted for x in runs)
    caught = sum(wrong.verdict(x, level).refuted for x in runs)
    assert stats.binomtest(rejected, repeats, level, alternative="greater").pvalue > 1e-6
    assert stats.binomtest(caught, repeats, level, alternative="greater").pvalue < 1e-6


# --- the deploy cases: weights within their bounds, twins refuted at the same delta -------------


@pytest.mark.parametrize("module", [deploy_tails, deploy_filters, deploy_odometers])
def test_deploy_cases_at_1e_9(module: ModuleType) -> None:
    """At delta = 1e-9 every weight lies in [0, B] and each twin is refuted: the betting test of
    E[w·1{event}] <= delta (`EValueClaim`, valid for any nonnegative samples) rejects."""
    delta = 1e-9
    for case in module.cases(delta):
        for sim, b in ((case.simulate, case.weight_bound), (case.twin_simulate, case.twin_bound)):
            x = np.asarray(sim(1_000, np.random.default_rng(7)), dtype=np.float64)
            assert np.all((x >= 0.0) & (x <= b)), case.name
        assert case.weight_bound <= 20.0 * delta, case.name  # the claims' proposals are efficient
        assert EValueClaim(delta).verdict(x, ALPHA).refuted, case.twin_name


def test_shared_filter_states_match_the_paper_interaction() -> None:
    """θ = 0 runs of `tilted_filter_run` (one library filter per distinct multiset of costs) and
    the paper suite's interaction (one library filter per run) have the same event rate
    (two-sided Fisher test, level ALPHA); planted bug: the half-charged filter differs."""
    from scipy import stats

    from expost.audit.paper.composition import filter_interaction_exceeds

    filt = UnifiedFilter(0.5, 0.0, 0.1)
    eps = zcdp_to_dp(ZCDP(0.5), 0.1).eps
    n = 10_000
    paper = int(
        np.count_nonzero(
            filter_interaction_exceeds(filt, "mixed", eps, n, np.random.default_rng(1))
        )
    )
    for charge, same in ((1.0, True), (0.5, False)):
        ours = tilted_filter_run(filt, "mixed", eps, (0.0, charge), n, np.random.default_rng(2))
        hits = int(np.count_nonzero(ours))
        p = stats.fisher_exact([[paper, n - paper], [hits, n - hits]]).pvalue
        assert (p > ALPHA) == same, (charge, paper, hits)
