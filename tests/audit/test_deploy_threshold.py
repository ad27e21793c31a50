"""BNR Cor 5.2 at deployment deltas (`expost.audit.deploy.threshold`) checked (issue 13).

At delta = 1e-2 the importance-sampled estimate of P(E) (betting bounds) and plain Monte Carlo
of the same event by the paper suite's simulator (`reduced_above_threshold_exceeds`,
Clopper–Pearson bounds) must have overlapping intervals. Each of the four one-sided bounds has
level 1 − 1e-5, so a correct proposal fails the comparison with probability <= 4e-5. Planted
twins: the weight mis-scaled by 2, and the weight at τ with the drift *not* stopped at τ (the
path above τ then keeps its drift, which the weight does not account for), must both give
disjoint intervals. The registered audits must hold with their twins refuted at 1e-6, 1e-9, 1e-12.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from expost.audit import (
    DEPLOY,
    betting_bounds,
    clopper_pearson_lower,
    clopper_pearson_upper,
    default_registry,
    run_audits,
)
from expost.audit._shared import gaussian_loss, neighbours
from expost.audit.deploy.brownian import Drift, tilted_paths
from expost.audit.deploy.threshold import NominalLevel, threshold_claim
from expost.audit.paper.threshold import (
    reduced_above_threshold_exceeds,
    released_loss_above,
    threshold_times,
)
from expost.boundaries import LinearPrivacyBoundary
from expost.processes import sample_brownian_grid

FloatArray = npt.NDArray[np.float64]
Interval = tuple[float, float]
_ALPHA = 1e-5
_DELTA = 1e-2
_N_IS = 20_000
_N_PLAIN = 300_000  # P ~ 6e-4 at delta = 1e-2: ~180 events, enough to resolve a factor 2
_PSI = LinearPrivacyBoundary.tuned_for(1.0, _DELTA, 1.0)


def _overlap(a: Interval, b: Interval) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _weighted_bounds(x: FloatArray, bound: float, scale: float = 1.0) -> Interval:
    """Betting bounds on E[scale·X] from samples 0 <= X <= bound."""
    assert float(x.min()) >= 0.0
    assert float(x.max()) <= bound
    lo, hi = betting_bounds(x / bound, _ALPHA)
    return scale * bound * lo, scale * bound * hi


@pytest.fixture(scope="module")
def plain() -> Interval:
    events = reduced_above_threshold_exceeds(_PSI, 3, 1.0, _N_PLAIN, np.random.default_rng(52))
    hits = int(events.sum())
    return clopper_pearson_lower(hits, _N_PLAIN, _ALPHA), clopper_pearson_upper(
        hits, _N_PLAIN, _ALPHA
    )


@pytest.fixture(scope="module")
def weighted() -> tuple[FloatArray, float]:
    claim, simulate = threshold_claim(_PSI, 1.0, _DELTA)
    return np.asarray(simulate(_N_IS, np.random.default_rng(53))), claim.weight_bound


def test_importance_estimate_agrees_with_plain_monte_carlo(
    weighted: tuple[FloatArray, float], plain: Interval
) -> None:
    x, bound = weighted
    assert _overlap(_weighted_bounds(x, bound), plain), (_weighted_bounds(x, bound), plain)


def test_mis_scaled_weight_is_caught(weighted: tuple[FloatArray, float], plain: Interval) -> None:
    x, bound = weighted
    doubled = _weighted_bounds(x, bound, 2.0)
    assert not _overlap(doubled, plain), (doubled, plain)


def _unstopped_weights(n: int, rng: np.random.Generator) -> FloatArray:
    """The planted bug: drift 2a on the whole path, weighted at τ as if it stopped there."""
    fx, fxp = neighbours(1.0, 3)
    times = threshold_times(_PSI)
    u = (fx - fxp) / np.linalg.norm(fx - fxp)
    theta = 2.0 * _PSI.a
    paths = sample_brownian_grid(times, n, 3, rng) + theta * times[None, :, None] * u
    crossed = gaussian_loss(fx + paths, times, fx, fxp) > _PSI(times)
    last = times.size - 1 - np.argmax(crossed[:, ::-1], axis=1)
    w = np.exp(-theta * (paths[np.arange(n), last] @ u) + 0.5 * theta**2 * times[last])
    event = released_loss_above(_PSI, times, fx + paths, fx, fxp, rng) & crossed.any(axis=1)
    out: FloatArray = np.where(event, w, 0.0)
    return out


def test_drift_not_stopped_at_the_crossing_is_caught(plain: Interval) -> None:
    x = _unstopped_weights(_N_IS, np.random.default_rng(54))
    biased = _weighted_bounds(x, threshold_claim(_PSI, 1.0, _DELTA)[0].weight_bound)
    assert not _overlap(biased, plain), (biased, plain)


def test_event_implies_the_crossing_on_which_the_weight_is_bounded() -> None:
    """Every run with the event has a crossing (weight > 0) and a weight <= B = delta."""
    psi = LinearPrivacyBoundary.tuned_for(1.0, 1e-9, 1.0)
    fx, fxp = neighbours(1.0, 3)
    times = threshold_times(psi)
    rng = np.random.default_rng(55)
    proposal = Drift(2.0 * psi.a)
    grid = tuple(float(t) for t in times)
    paths, w = tilted_paths(
        proposal, grid, tuple(fx), tuple(fxp), NominalLevel(psi, 1.0), 4000, rng
    )
    event = released_loss_above(psi, times, fx + paths, fx, fxp, rng)
    assert event.sum() >= 100
    assert np.all(w[event] > 0.0)
    assert float(w.max()) <= threshold_claim(psi, 1.0, 1e-9)[0].weight_bound


@pytest.mark.parametrize("delta", [1e-6, 1e-9, 1e-12])
def test_weight_bounds_are_delta_and_its_fourth_root(delta: float) -> None:
    """B = exp(−2ab) = delta for the claim; the twin's boundary for delta^(1/4) gives delta^(1/4)."""
    psi = LinearPrivacyBoundary.tuned_for(1.0, delta, 1.0)
    wrong = LinearPrivacyBoundary.tuned_for(1.0, delta**0.25, 1.0)
    assert threshold_claim(psi, 1.0, delta)[0].weight_bound == pytest.approx(delta, rel=1e-5)
    twin = threshold_claim(wrong, 1.0, delta)[0]
    assert twin.weight_bound == pytest.approx(delta**0.25, rel=1e-5)
    assert twin.delta == delta


def test_deploy_audits_hold_and_refute_their_twins() -> None:
    audits = [
        a
        for a in default_registry().suite(DEPLOY)
        if a.name.startswith("bnr-cor5.2-reduced-above-threshold/")
    ]
    assert sorted(a.name.rsplit("/", 1)[1] for a in audits) == [
        "delta-1e-06",
        "delta-1e-09",
        "delta-1e-12",
    ]
    report = run_audits(audits, seed=0)
    assert report.passed, report.table()
