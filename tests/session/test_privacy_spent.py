"""ε so far (`PrivateSession.privacy_spent`, `expost.privacy_spent`) against independent
accountants: dp-accounting's PLD (optimistic: a lower bound; pessimistic with connect-the-dots:
an upper bound) and Microsoft's prv-accountant (its bracket). Ours must never be below a lower
bound and within 1 % of the independent estimate; the planted twin (a tenth of the steps left
out) must fail
the same check. RDP and zCDP conversions are checked against CKS Prop. 12 evaluated here in
50-digit mpmath.
"""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numpy as np
import pytest

pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution as dpa

from expost import (
    ApproxDP,
    GaussianDPFilter,
    InvalidParameter,
    PLDFilter,
    PrivateSession,
    RenyiFilter,
    ZCDPFilter,
)
from expost.filters import (
    BrownianCost,
    GaussianCost,
    LaplaceCost,
    RDPFilter,
    SubsampledGaussianCost,
    UnifiedFilter,
)
from expost.privacy_spent import FIXED_STOP, privacy_spent
from expost.rdp_curves import subsampled_gaussian_renyi

DELTA = 1e-5


def _dpa_sgd(sigma: float, q: float, k: int) -> tuple[float, float]:
    """dp-accounting's (lower, upper) ε of k DP-SGD steps at DELTA."""
    out = []
    for pessimistic in (False, True):
        pld = dpa.from_gaussian_mechanism(
            sigma,
            sampling_prob=q,
            value_discretization_interval=1e-4,
            pessimistic_estimate=pessimistic,
            use_connect_dots=pessimistic,
        )
        out.append(pld.self_compose(k).get_epsilon_for_delta(DELTA))
    return out[0], out[1]


def agrees(ours: float, lower: float, estimate: float) -> bool:
    """Never below the lower bound, within 1 % of the estimate."""
    return lower <= ours <= 1.01 * estimate


def _filled(f: Any, cost: object, k: int) -> Any:
    for _ in range(k):
        f = f.spend(cost)
    return f


@pytest.mark.parametrize(("sigma", "q", "k"), [(1.0, 0.01, 500), (1.0, 0.01, 40), (2.0, 0.05, 60)])
def test_dp_sgd_eps_so_far_matches_dp_accounting(sigma: float, q: float, k: int) -> None:
    f = _filled(PLDFilter(20.0, DELTA), SubsampledGaussianCost.from_sigma(sigma, q), k)
    spent = privacy_spent(f, DELTA)
    lower, upper = _dpa_sgd(sigma, q, k)
    assert spent.rounds == k
    assert spent.valid_for == FIXED_STOP
    assert agrees(spent.eps, lower, upper)
    # planted twin: a tenth of the steps left out is caught
    fewer = _filled(
        PLDFilter(20.0, DELTA), SubsampledGaussianCost.from_sigma(sigma, q), k - k // 10
    )
    assert not agrees(privacy_spent(fewer, DELTA).eps, lower, upper)


def test_eps_so_far_matches_prv_accountant() -> None:
    prv = pytest.importorskip("prv_accountant")
    mechanism = prv.PoissonSubsampledGaussianMechanism(
        noise_multiplier=1.0, sampling_probability=0.01
    )
    acc = prv.PRVAccountant(
        prvs=mechanism, max_self_compositions=600, eps_error=0.01, delta_error=1e-10
    )
    low, estimate, _ = acc.compute_epsilon(delta=DELTA, num_self_compositions=500)
    f = _filled(PLDFilter(20.0, DELTA), SubsampledGaussianCost.from_sigma(1.0, 0.01), 500)
    assert agrees(privacy_spent(f, DELTA).eps, low, estimate)


def test_a_training_loop_reports_what_an_independent_accountant_does() -> None:
    """The session's own ε so far after 200 batches (q = 0.01, σ = 1) on 10⁶ rows."""
    s = PrivateSession(PLDFilter(2.0, DELTA), np.random.default_rng(0))
    for _ in range(200):
        batch = s.poisson_batch(10**6, sampling_prob=0.01, sigma=1.0, sensitivity=1.0)
        batch.release(np.zeros((batch.indices.size, 4)))
    lower, upper = _dpa_sgd(1.0, 0.01, 200)
    assert agrees(s.privacy_spent(DELTA).eps, lower, upper)
    assert s.guarantee() == ApproxDP(2.0, DELTA)  # the filter's guarantee (any stop) is unchanged


def test_laplace_rounds_match_dp_accounting() -> None:
    f = _filled(PLDFilter(20.0, DELTA), LaplaceCost(0.3), 40)
    ours = privacy_spent(f, DELTA).eps
    ref = [
        dpa.from_laplace_mechanism(
            1.0 / 0.3, value_discretization_interval=1e-4, pessimistic_estimate=p
        )
        .self_compose(40)
        .get_epsilon_for_delta(DELTA)
        for p in (False, True)
    ]
    assert agrees(ours, ref[0], ref[1])


def test_gaussian_rounds_compose_exactly() -> None:
    """GaussianDPFilter, and PLDFilter on Gaussians without subsampling: sqrt(k)·mu-GDP, whose
    exact ε is dp-accounting's Gaussian PLD of σ/sqrt(k)."""
    cost = GaussianCost(0.02)  # mu = 0.2
    k = 50
    ref = [
        dpa.from_gaussian_mechanism(
            1.0 / math.sqrt(0.04 * k),
            value_discretization_interval=1e-4,
            pessimistic_estimate=p,
            use_connect_dots=p,
        ).get_epsilon_for_delta(DELTA)
        for p in (False, True)
    ]
    for f in (GaussianDPFilter(10.0), PLDFilter(20.0, DELTA)):
        assert agrees(privacy_spent(_filled(f, cost, k), DELTA).eps, ref[0], ref[1])


def _cks(total: float, alpha: float, delta: float) -> float:
    with mpmath.workdps(50):
        t, a, d = mpmath.mpf(total), mpmath.mpf(alpha), mpmath.mpf(delta)
        return float(t + mpmath.log((a - 1) / a) - (mpmath.log(d) + mpmath.log(a)) / (a - 1))


def test_renyi_and_rdp_filters_convert_by_cks() -> None:
    cost = SubsampledGaussianCost.from_sigma(1.0, 0.01)
    k = 100
    renyi = _filled(RenyiFilter(5.0, DELTA, 8.0), cost, k)
    step = subsampled_gaussian_renyi(cost.of.rho, 0.01, 8.0)
    ref = _cks(k * step, 8.0, DELTA)
    ours = privacy_spent(renyi, DELTA).eps
    assert ref <= ours <= ref * (1 + 1e-9)
    rdp = _filled(RDPFilter(8.0, DELTA), cost, k)
    best = min(
        _cks(k * subsampled_gaussian_renyi(cost.of.rho, 0.01, a), a, DELTA) for a in rdp.orders
    )
    assert best <= privacy_spent(rdp, DELTA).eps <= best * (1 + 1e-9)


def test_zcdp_filters_convert_by_cks() -> None:
    for f in (ZCDPFilter(10.0), UnifiedFilter.from_dp(10.0, 1e-6)):
        g = _filled(f, GaussianCost(0.05), 20)  # rho = 1
        ours = privacy_spent(g, DELTA)
        # CKS for rho-zCDP: inf over a > 1 of the RDP conversion at order a (rho·a)
        with mpmath.workdps(30):
            ref = min(_cks(a * 1.0, a, DELTA) for a in np.linspace(1.5, 20, 2000))
        assert ref * (1 - 1e-3) <= ours.eps <= ref * 1.01
        assert ours.delta == DELTA


def test_no_rounds_spend_nothing() -> None:
    assert privacy_spent(PLDFilter(2.0, DELTA), DELTA).eps == 0.0


def test_rounds_realised_from_their_output_are_refused() -> None:
    f = ZCDPFilter(10.0).spend(BrownianCost(4.0))
    with pytest.raises(InvalidParameter, match="realised from its output"):
        privacy_spent(f, DELTA)


def test_other_filters_and_bad_delta_are_refused() -> None:
    from expost import ExPostFilter

    with pytest.raises(InvalidParameter, match="guarantee"):
        privacy_spent(ExPostFilter(1.0, 1e-6), DELTA)
    with pytest.raises(InvalidParameter, match="delta"):
        privacy_spent(PLDFilter(2.0, DELTA), 0.0)


def test_the_counting_grid_is_valid_at_every_segment() -> None:
    """`expost.realised_privacy.counting_grid`: Σ δ_j <= δ, ε_j nondecreasing, and each ε_j at
    least dp-accounting's optimistic ε of segments 1..j at δ_j (planted twin: ε at the whole δ
    for the last segment is below it, so the split of δ is paid)."""
    from expost.pld import PrivacyLossDistribution
    from expost.realised_privacy import counting_grid

    step = PrivacyLossDistribution.gaussian(1.0, sampling_prob=0.02)
    segments = [step.self_compose(50)] * 3
    grid = counting_grid(segments, DELTA)
    assert sum(grid.deltas) <= DELTA
    assert list(grid.eps) == sorted(grid.eps)
    lowers = [
        dpa.from_gaussian_mechanism(1.0, sampling_prob=0.02, pessimistic_estimate=False)
        .self_compose(50 * j)
        .get_epsilon_for_delta(delta_j)
        for j, delta_j in enumerate(grid.deltas, start=1)
    ]
    assert all(grid.reported(j) >= low for j, low in enumerate(lowers, start=1))
    unsplit = float(step.self_compose(150).eps(DELTA))  # planted twin: δ not split
    assert unsplit < lowers[-1]
