"""Privacy-loss random variables (THEORY §1–3): closed forms, sampling laws, profiles, bad input.

Statistical checks run at false-alarm level tests.stats.ALPHA (1e-6) with fixed seeds; each
has a planted-bug twin, the same check on a deliberately wrong formula, that must be rejected.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import integrate
from scipy import stats as sps

from expost.errors import InvalidParameter
from expost.loss import (
    BrownianLoss,
    GaussianLoss,
    LaplaceLoss,
    LaplaceNoiseReductionLoss,
    PrivacyLoss,
)
from expost.skellam.loss import SkellamLoss
from tests import stats as st

N = 100_000

bad_positive = hs.sampled_from([math.nan, math.inf, -math.inf, 0.0, -1.0, -1e-300])


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- independent references


def laplace_expect(loss: LaplaceLoss, g: Callable[[float], float]) -> float:
    """E[g(L)] from the definition: Y ~ Lap(b) and L = (|Y − d| − |Y|)/b, by quadrature."""
    b, d = loss.scale, loss.distance

    def integrand(y: float) -> float:
        return g((abs(y - d) - abs(y)) / b) * math.exp(-abs(y) / b) / (2.0 * b)

    pieces = [(-math.inf, 0.0), (0.0, d), (d, math.inf)]
    return math.fsum(
        integrate.quad(integrand, lo, hi, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
        for lo, hi in pieces
    )


def _exp_times(lam: float) -> Callable[[float], float]:
    return lambda x: math.exp(lam * x)


def _hockey_stick(eps: float) -> Callable[[float], float]:
    return lambda x: max(-math.expm1(eps - x), 0.0)


def _above(e: float) -> Callable[[float], float]:
    return lambda x: float(x > e)


def balle_wang(rho: float, eps: float) -> float:
    """Balle–Wang (2018) analytic Gaussian, straight from the printed formula."""
    mu = math.sqrt(2.0 * rho)
    return float(
        sps.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * sps.norm.cdf(-eps / mu - mu / 2)
    )


def balle_wang_mp(rho: float, eps: float) -> float:
    with mpmath.workdps(80):
        mu = mpmath.sqrt(2 * mpmath.mpf(rho))
        e = mpmath.mpf(eps)
        return float(mpmath.ncdf(-e / mu + mu / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2))


def gaussian_hockey_stick(rho: float, eps: float) -> float:
    """E[(1 − e^{eps − L})_+] for L ~ N(rho, 2rho), by quadrature."""
    law = sps.norm(rho, math.sqrt(2.0 * rho))
    val, _ = integrate.quad(
        lambda x: -math.expm1(eps - x) * law.pdf(x), eps, math.inf, epsabs=1e-15, epsrel=1e-12
    )
    return float(val)


def skellam_table(
    mu1: float, mu2: float, d: int, width: int = 400
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """pmf and loss on a wide window straight from scipy.stats.skellam.pmf."""
    y = np.arange(-width, width + 1)
    p = sps.skellam.pmf(y, mu1, mu2)
    q = sps.skellam.pmf(y - d, mu1, mu2)
    keep = (p > 0) & (q > 0)
    return p[keep], np.log(p[keep] / q[keep])


def all_losses() -> list[PrivacyLoss]:
    return [
        GaussianLoss(0.3),
        LaplaceLoss(2.0, 1.5),
        BrownianLoss(4.0, 1.0),
        LaplaceNoiseReductionLoss(0.5, 1.0),
        SkellamLoss(4.0, 2),
        SkellamLoss(3.0, 1, mu2=6.0),
    ]


# ---------------------------------------------------------------- Gaussian


def test_gaussian_from_mechanism() -> None:
    assert GaussianLoss.from_mechanism(2.0, 1.0).rho == pytest.approx(1 / 8, rel=1e-15)
    assert GaussianLoss.from_mechanism(2.0, 1.0, distance=0.5).rho == pytest.approx(1 / 32)
    assert GaussianLoss(0.4).renyi(3.0) == pytest.approx(1.2, rel=1e-15)
    assert GaussianLoss(0.4).cgf(2.0) == pytest.approx(2 * 0.4 + 4 * 0.4, rel=1e-15)


def test_gaussian_samples_match_moments() -> None:
    g = GaussianLoss(0.3)
    x = g.sample(N, _rng(1))
    assert x.shape == (N,)
    assert st.mean_is_consistent(x, g.mean, math.sqrt(g.variance))
    assert st.variance_is_consistent(x, g.variance, 3 * g.variance**2)
    # twins: the common slip L ~ N(rho, rho), and a mean off by 10 %
    assert not st.variance_is_consistent(x, g.rho, 3 * g.rho**2)
    assert not st.mean_is_consistent(x, 0.9 * g.rho, math.sqrt(g.variance))


def test_gaussian_tail_matches_frequency() -> None:
    g = GaussianLoss(0.5)
    x = g.sample(N, _rng(2))
    e = g.rho + 0.7
    hits = int((x > e).sum())
    assert st.proportion_is_consistent(hits, N, g.tail(e))
    wrong = float(sps.norm.cdf((e - g.rho) / math.sqrt(2 * g.rho)))  # twin: sign flipped
    assert not st.proportion_is_consistent(hits, N, wrong)


@pytest.mark.parametrize(("rho", "lam"), [(0.5, 0.5), (0.2, -0.4), (0.05, 2.0)])
def test_gaussian_cgf_matches_monte_carlo(rho: float, lam: float) -> None:
    g = GaussianLoss(rho)
    y = np.exp(lam * g.sample(N, _rng(3)))
    sd = math.sqrt(math.exp(g.cgf(2 * lam)) - math.exp(2 * g.cgf(lam)))
    assert st.mean_is_consistent(y, math.exp(g.cgf(lam)), sd)
    assert not st.mean_is_consistent(y, math.exp(lam * rho), sd)  # twin: lam²·rho dropped


@pytest.mark.parametrize(
    ("rho", "eps"), [(0.5, 0.0), (0.5, 0.3), (0.5, 2.0), (0.02, 0.5), (3.0, 1.0), (3.0, 8.0)]
)
def test_gaussian_delta_against_quadrature_and_balle_wang(rho: float, eps: float) -> None:
    g = GaussianLoss(rho)
    assert g.delta_for_eps(eps) == pytest.approx(gaussian_hockey_stick(rho, eps), rel=1e-9)
    assert g.delta_for_eps(eps) == pytest.approx(balle_wang(rho, eps), rel=1e-11)


@pytest.mark.parametrize(
    ("rho", "eps"), [(0.5, 30.0), (0.01, 3.0), (1e-4, 0.05), (50.0, 100.0), (8.0, 60.0)]
)
def test_gaussian_delta_is_stable_at_large_eps(rho: float, eps: float) -> None:
    assert GaussianLoss(rho).delta_for_eps(eps) == pytest.approx(balle_wang_mp(rho, eps), rel=1e-12)


def test_gaussian_twin_of_delta_is_rejected() -> None:
    # The quadrature reference has power: the profile of N(rho, rho) is far from it.
    rho, eps = 0.5, 0.3
    wrong = GaussianLoss(rho / 2).delta_for_eps(eps)
    assert wrong != pytest.approx(gaussian_hockey_stick(rho, eps), rel=1e-3)


# ---------------------------------------------------------------- Laplace


@pytest.mark.parametrize(("b", "d"), [(1.0, 1.0), (2.0, 0.1), (0.5, 2.0), (1.0, 1e-3)])
def test_laplace_closed_forms_against_quadrature(b: float, d: float) -> None:
    loss = LaplaceLoss(b, d)
    m = laplace_expect(loss, lambda x: x)
    assert loss.mean == pytest.approx(m, rel=1e-9, abs=1e-15)
    assert loss.variance == pytest.approx(laplace_expect(loss, lambda x: (x - m) ** 2), rel=1e-9)
    for lam in [-3.0, -1.0, -0.6, -0.5, -0.45, -0.2, 0.0, 0.7, 4.0]:
        mgf = laplace_expect(loss, _exp_times(lam))
        assert loss.cgf(lam) == pytest.approx(math.log(mgf), rel=1e-8, abs=1e-14)
    for eps in [0.0, 0.3 * loss.eps, 0.9 * loss.eps, loss.eps, 2 * loss.eps]:
        ref = laplace_expect(loss, _hockey_stick(eps))
        assert loss.delta_for_eps(eps) == pytest.approx(ref, rel=1e-8, abs=1e-15)


def test_laplace_tail_exact_values() -> None:
    loss = LaplaceLoss(1.0, 1.0)
    assert loss.tail(1.0) == 0.0  # the atom ½ sits at ε and P(L > ε) = 0
    assert loss.tail(1.0 - 1e-12) == pytest.approx(0.5, rel=1e-11)
    assert loss.tail(-1.0) == pytest.approx(1.0 - 0.5 * math.exp(-1.0), rel=1e-15)
    assert loss.tail(-1.0 - 1e-12) == 1.0
    for e in [-0.7, 0.0, 0.4]:
        ref = laplace_expect(loss, _above(e))
        assert loss.tail(e) == pytest.approx(ref, rel=1e-7)


def test_laplace_renyi_matches_printed_formula() -> None:
    loss = LaplaceLoss.from_eps(0.8)
    e = 0.8
    for a in [1.001, 1.5, 2.0, 10.0, 300.0]:
        inner = a / (2 * a - 1) * math.exp((a - 1) * e) + (a - 1) / (2 * a - 1) * math.exp(-a * e)
        assert loss.renyi(a) == pytest.approx(math.log(inner) / (a - 1), rel=1e-11)


@pytest.mark.parametrize(("eps", "lam"), [(1e-6, 2.0), (1e-3, 0.5), (1e-4, -0.2), (3e-5, -3.0)])
def test_laplace_small_eps_is_accurate(eps: float, lam: float) -> None:
    loss = LaplaceLoss.from_eps(eps)
    with mpmath.workdps(60):
        e, la = mpmath.mpf(eps), mpmath.mpf(lam)
        mean = e - 1 + mpmath.exp(-e)
        var = 3 - 4 * e * mpmath.exp(-e) - 2 * mpmath.exp(-e) - mpmath.exp(-2 * e)
        mgf = ((1 + la) * mpmath.exp(la * e) + la * mpmath.exp(-(1 + la) * e)) / (1 + 2 * la)
        cgf = float(mpmath.log(mgf))
        mean_f, var_f = float(mean), float(var)
    assert loss.mean == pytest.approx(mean_f, rel=1e-13)
    assert loss.variance == pytest.approx(var_f, rel=1e-12)
    assert loss.cgf(lam) == pytest.approx(cgf, rel=1e-10)


def test_laplace_cgf_at_large_exponents() -> None:
    loss = LaplaceLoss.from_eps(50.0)
    lam = 20.0
    expected = lam * 50.0 + math.log(
        (1 + lam) / (1 + 2 * lam)
    )  # the e^{−(1+λ)ε} part is negligible
    assert loss.cgf(lam) == pytest.approx(expected, rel=1e-14)
    assert loss.cgf(-21.0) == pytest.approx(expected, rel=1e-14)  # cgf(λ) = cgf(−1 − λ)


def test_laplace_samples_match_moments() -> None:
    loss = LaplaceLoss(1.0, 1.0)
    x = loss.sample(N, _rng(4))
    assert np.all(np.abs(x) <= loss.eps)
    m = loss.mean
    mu4 = laplace_expect(loss, lambda v: (v - m) ** 4)
    assert st.mean_is_consistent(x, m, math.sqrt(loss.variance))
    assert st.variance_is_consistent(x, loss.variance, mu4)
    # twins: the zCDP bound eps²/2 as the mean; the small-eps approximation eps² as the variance
    assert not st.mean_is_consistent(x, loss.eps**2 / 2, math.sqrt(loss.variance))
    assert not st.variance_is_consistent(x, loss.eps**2, mu4)


def test_laplace_tail_matches_frequency() -> None:
    loss = LaplaceLoss(2.0, 2.0)
    x = loss.sample(N, _rng(5))
    for e in [-0.5, 0.2]:
        hits = int((x > e).sum())
        assert st.proportion_is_consistent(hits, N, loss.tail(e))
        wrong = 1.0 - 0.5 * math.exp(-(loss.eps - e))  # twin: the /2 in the exponent dropped
        assert not st.proportion_is_consistent(hits, N, wrong)


def test_laplace_cgf_matches_monte_carlo() -> None:
    loss = LaplaceLoss(1.0, 1.5)
    lam = 0.8
    y = np.exp(lam * loss.sample(N, _rng(6)))
    sd = math.sqrt(math.exp(loss.cgf(2 * lam)) - math.exp(2 * loss.cgf(lam)))
    assert st.mean_is_consistent(y, math.exp(loss.cgf(lam)), sd)
    twin = math.exp(lam * (1 + lam) * loss.eps**2 / 2)  # twin: the Gaussian cgf with rho = eps²/2
    assert not st.mean_is_consistent(y, twin, sd)


def test_laplace_eps_for_delta_closed_form() -> None:
    loss = LaplaceLoss.from_eps(1.0)
    for delta in [1e-9, 0.01, 0.3]:
        assert loss.eps_for_delta(delta) == pytest.approx(1.0 + 2 * math.log1p(-delta), rel=1e-12)
    assert loss.eps_for_delta(0.5) == 0.0  # delta_for_eps(0) = 1 − e^{−1/2} ≈ 0.39 <= 0.5


# ---------------------------------------------------------------- Brownian and LNR


def test_brownian_decomposition_has_the_gaussian_law() -> None:
    t, d = 0.25, 1.5
    loss = BrownianLoss(t, d)
    w = _rng(7).normal(0.0, math.sqrt(t), 50_000)
    values = loss.at(w)
    assert st.follows(values, sps.norm(d**2 / (2 * t), d / math.sqrt(t)).cdf)
    # twin: the law N(Δ²/(2t), Δ²/(2t)) (variance rho instead of 2rho)
    assert not st.follows(values, sps.norm(d**2 / (2 * t), d / math.sqrt(2 * t)).cdf)
    assert st.follows(loss.sample(50_000, _rng(8)), sps.norm(loss.rho, math.sqrt(2 * loss.rho)).cdf)


def test_brownian_delegates_to_gaussian() -> None:
    loss = BrownianLoss(2.0, 3.0)
    g = GaussianLoss(9.0 / 4.0)
    assert loss.rho == g.rho
    assert (loss.mean, loss.variance) == (g.mean, g.variance)
    assert loss.cgf(0.7) == g.cgf(0.7)
    assert loss.renyi(3.0) == g.renyi(3.0)
    assert loss.tail(1.0) == g.tail(1.0)
    assert loss.delta_for_eps(4.0) == g.delta_for_eps(4.0)
    assert loss.eps_for_delta(1e-5) == g.eps_for_delta(1e-5)
    np.testing.assert_array_equal(loss.at([0.0, 2.0]), [9 / 4, 9 / 4 + 3.0])


def test_laplace_noise_reduction_loss() -> None:
    t, d = 0.5, 1.0
    loss = LaplaceNoiseReductionLoss(t, d)
    assert loss.ex_post_bound == 2.0
    assert loss.law == LaplaceLoss(t, d)
    assert loss.delta_for_eps(0.5) == LaplaceLoss(t, d).delta_for_eps(0.5)
    x = _rng(9).laplace(0.0, t, 20_000)
    # APC Lemma C.1, rounded so that float error at large |x| does not split the atoms at ±d/t
    lemma_c1 = np.round(-(np.abs(x) - np.abs(x - d)) / t, 9)
    sampled = loss.sample(20_000, _rng(10))
    assert np.all(np.abs(sampled) <= loss.ex_post_bound)
    sampled = np.round(sampled, 9)
    assert st.same_law(sampled, lemma_c1)
    assert not st.same_law(sampled, -lemma_c1)  # twin: the sign of the loss flipped


# ---------------------------------------------------------------- Skellam


@pytest.mark.parametrize(("mu1", "mu2", "d"), [(4.0, 4.0, 2), (0.3, 0.3, 1), (3.0, 6.0, 1)])
def test_skellam_summaries_against_direct_pmf(mu1: float, mu2: float, d: int) -> None:
    loss = SkellamLoss(mu1, d, mu2=mu2)
    p, lv = skellam_table(mu1, mu2, d)
    m = float(p @ lv)
    assert loss.mean == pytest.approx(m, rel=1e-10)
    assert loss.variance == pytest.approx(float(p @ (lv - m) ** 2), rel=1e-10)
    for e in [-1.0, 0.0, 0.5 * m, m + 1.0]:
        assert loss.tail(e) == pytest.approx(float(p[lv > e].sum()), rel=1e-10, abs=1e-15)
    for eps in [0.0, 0.2, 1.0]:
        ref = float(p @ np.maximum(-np.expm1(eps - lv), 0.0))
        assert loss.delta_for_eps(eps) == pytest.approx(ref, rel=1e-10, abs=1e-15)
    for lam in [-1.0, 0.5, 2.0]:
        assert loss.cgf(lam) == pytest.approx(math.log(float(p @ np.exp(lam * lv))), abs=1e-12)
    assert abs(loss.cgf(-1.0)) < 1e-14  # E[e^{−L}] = Σ pmf(y − d) = 1 up to truncation


def test_skellam_samples_match_pmf_summaries() -> None:
    loss = SkellamLoss(5.0, 2)
    x = loss.sample(N, _rng(11))
    p, lv = skellam_table(5.0, 5.0, 2)
    mu4 = float(p @ (lv - loss.mean) ** 4)
    sd = math.sqrt(loss.variance)
    assert st.mean_is_consistent(x, loss.mean, sd)
    assert st.variance_is_consistent(x, loss.variance, mu4)
    hits = int((x > 0.5).sum())
    assert st.proportion_is_consistent(hits, N, loss.tail(0.5))
    # twins: a mean 20 % too large, a variance 20 % too small, the tail at the wrong point
    assert not st.mean_is_consistent(x, 1.2 * loss.mean, sd)
    assert not st.variance_is_consistent(x, 0.8 * loss.variance, mu4)
    assert not st.proportion_is_consistent(hits, N, loss.tail(0.7))


def test_skellam_symmetry_and_far_shifts() -> None:
    loss = SkellamLoss(2.0, 3)
    assert loss.cgf(0.8) == pytest.approx(loss.cgf(-1.8), rel=1e-12)
    assert loss.renyi(2.0) == pytest.approx(loss.cgf(1.0), rel=1e-12)
    far = SkellamLoss(1.0, 400)  # nearly disjoint laws: the pmf at y − 400 is far below 1e-308
    assert math.isfinite(far.mean)
    assert far.mean > 1000.0
    assert 1.0 - 1e-12 < far.delta_for_eps(1.0) <= 1.0


# ---------------------------------------------------------------- shared behaviour


@pytest.mark.parametrize("loss", all_losses(), ids=type)
def test_protocol_and_basic_identities(loss: PrivacyLoss) -> None:
    assert isinstance(loss, PrivacyLoss)
    assert loss.cgf(0.0) == pytest.approx(0.0, abs=1e-15)
    assert loss.cgf(-1.0) == pytest.approx(0.0, abs=1e-14)
    assert loss.mean > 0.0  # KL divergence
    for a in [1.5, 4.0]:
        assert loss.renyi(a) == pytest.approx(loss.cgf(a - 1) / (a - 1), rel=1e-13)
    assert 0.0 < loss.delta_for_eps(0.0) < loss.tail(0.0)  # (1 − e^{−L})_+ < 1{L > 0}


@pytest.mark.parametrize("loss", all_losses(), ids=type)
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 0.01, 0.2])
def test_eps_for_delta_round_trip(loss: PrivacyLoss, delta: float) -> None:
    eps = loss.eps_for_delta(delta)
    if eps == 0.0:
        assert loss.delta_for_eps(0.0) <= delta
        return
    assert loss.delta_for_eps(eps) == pytest.approx(delta, rel=1e-10)
    assert loss.delta_for_eps(eps * (1 - 1e-8)) > delta  # smallest such eps


def test_eps_for_delta_is_zero_when_delta_is_large() -> None:
    g = GaussianLoss(0.01)
    assert g.eps_for_delta(0.5) == 0.0
    assert g.delta_for_eps(0.0) < 0.5


# ---------------------------------------------------------------- properties (Hypothesis)


losses = hs.one_of(
    hs.floats(1e-4, 20.0).map(GaussianLoss),
    hs.tuples(hs.floats(0.05, 5.0), hs.floats(0.01, 5.0)).map(lambda a: LaplaceLoss(*a)),
    hs.tuples(hs.floats(0.05, 5.0), hs.floats(0.1, 3.0)).map(lambda a: BrownianLoss(*a)),
    hs.tuples(hs.floats(0.2, 30.0), hs.integers(1, 4)).map(lambda a: SkellamLoss(*a)),
)


@settings(max_examples=60, deadline=None)
@given(losses, hs.floats(1.0001, 50.0), hs.floats(1.0001, 50.0))
def test_renyi_is_nondecreasing_in_alpha(loss: PrivacyLoss, a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    assert loss.renyi(lo) <= loss.renyi(hi) * (1 + 1e-12) + 1e-300


@settings(max_examples=60, deadline=None)
@given(losses, hs.floats(0.0, 30.0), hs.floats(0.0, 30.0))
def test_delta_for_eps_is_nonincreasing(loss: PrivacyLoss, a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    assert 0.0 <= loss.delta_for_eps(hi) <= loss.delta_for_eps(lo) <= 1.0


CONSTRUCTORS: list[tuple[str, Callable[[Any], object]]] = [
    ("rho", lambda v: GaussianLoss(v)),
    ("sigma", lambda v: GaussianLoss.from_mechanism(v, 1.0)),
    ("sensitivity", lambda v: GaussianLoss.from_mechanism(1.0, v)),
    ("distance", lambda v: GaussianLoss.from_mechanism(1.0, 1.0, distance=v)),
    ("scale", lambda v: LaplaceLoss(v, 1.0)),
    ("distance", lambda v: LaplaceLoss(1.0, v)),
    ("eps", lambda v: LaplaceLoss.from_eps(v)),
    ("time", lambda v: BrownianLoss(v, 1.0)),
    ("distance", lambda v: BrownianLoss(1.0, v)),
    ("scale", lambda v: LaplaceNoiseReductionLoss(v, 1.0)),
    ("distance", lambda v: LaplaceNoiseReductionLoss(1.0, v)),
    ("mu", lambda v: SkellamLoss(v, 1)),
    ("mu2", lambda v: SkellamLoss(1.0, 1, mu2=v)),
]


@pytest.mark.parametrize(("name", "make"), CONSTRUCTORS, ids=[c[0] for c in CONSTRUCTORS])
@settings(max_examples=10)
@given(value=hs.one_of(bad_positive, hs.floats(max_value=0.0, allow_nan=False)))
def test_constructors_reject_bad_values(
    name: str, make: Callable[[Any], object], value: float
) -> None:
    with pytest.raises(InvalidParameter, match=name):
        make(value)


@settings(max_examples=10)
@given(hs.sampled_from([0, -1, 1.5, 2.0, math.nan, math.inf, True, "2"]))
def test_skellam_distance_must_be_a_positive_integer(value: Any) -> None:
    with pytest.raises(InvalidParameter, match="distance"):
        SkellamLoss(1.0, value)


BAD_CALLS: list[tuple[str, Callable[[Any], object]]] = [
    ("n", lambda x: x.sample(0, _rng(0))),
    ("n", lambda x: x.sample(2.5, _rng(0))),
    ("rng", lambda x: x.sample(3, None)),
    ("lam", lambda x: x.cgf(math.nan)),
    ("lam", lambda x: x.cgf(math.inf)),
    ("alpha", lambda x: x.renyi(1.0)),
    ("alpha", lambda x: x.renyi(0.5)),
    ("alpha", lambda x: x.renyi(math.inf)),
    ("e", lambda x: x.tail(math.nan)),
    ("eps", lambda x: x.delta_for_eps(-0.1)),
    ("eps", lambda x: x.delta_for_eps(math.inf)),
    ("delta", lambda x: x.eps_for_delta(0.0)),
    ("delta", lambda x: x.eps_for_delta(1.0)),
    ("delta", lambda x: x.eps_for_delta(math.nan)),
]


@pytest.mark.parametrize("loss", all_losses(), ids=type)
def test_methods_reject_bad_arguments(loss: PrivacyLoss) -> None:
    for name, call in BAD_CALLS:
        with pytest.raises(InvalidParameter, match=rf"^{name}="):
            call(loss)
    with pytest.raises(InvalidParameter, match="w"):
        BrownianLoss(1.0, 1.0).at([0.0, math.nan])


def test_skellam_sample_is_the_loss_of_the_noise() -> None:
    loss = SkellamLoss(2.5, 2)
    rng = _rng(12)
    y = rng.poisson(2.5, 5_000) - rng.poisson(2.5, 5_000)
    direct = sps.skellam.logpmf(y, 2.5, 2.5) - sps.skellam.logpmf(y - 2, 2.5, 2.5)
    np.testing.assert_allclose(loss.sample(5_000, _rng(12)), direct, rtol=1e-12, atol=1e-12)
    # draws outside the stored support fall back to the pmf: shrink the table to force it
    object.__setattr__(loss, "_lo", loss._lo + 3)
    object.__setattr__(loss, "_loss", loss._loss[3:-3])
    np.testing.assert_allclose(loss.sample(5_000, _rng(12)), direct, rtol=1e-12, atol=1e-12)
