"""The Brownian proposals of the deploy suite checked against plain Monte Carlo (issue 13, 4a/4c).

For each proposal family at delta ∈ {1e-2, 1e-3, 1e-4}, the importance-sampled estimate of
P(event) (betting bounds, `expost.audit.betting_bounds`) and plain Monte Carlo of the same event
by the paper suite's own simulators (Clopper–Pearson bounds) must have overlapping intervals.
Each of the four one-sided bounds has level 1 − 1e-5, so a correct proposal fails a comparison
with probability <= 4e-5 (<= 5e-4 over the 12). Planted twin (4c): the same check with the
weight mis-scaled by 2 must find the intervals disjoint; it is run where plain Monte Carlo is
affordable enough to resolve a factor 2 (delta = 1e-2 for the sequences, 1e-3 for the crossings).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from expost.audit import (
    DEPLOY_QUICK,
    betting_bounds,
    clopper_pearson_lower,
    clopper_pearson_upper,
    default_registry,
    run_audits,
)
from expost.audit._shared import grid_times, neighbours, tuned_boundary
from expost.audit.deploy.brownian import (
    Drift,
    HalfNormalMixture,
    crossing_weights,
    odometer_weights,
    ville_weights,
    weight_bound,
)
from expost.audit.paper.brownian import LossAbove, ex_post_exceeds
from expost.audit.paper.martingale import odometer_sequence_exceeds, ville_product_crosses
from expost.audit.rare_event import ImportanceClaim
from expost.boundaries import LinearPrivacyBoundary, MixturePrivacyBoundary
from expost.grids import TimeGrid
from expost.mechanisms.noise_reduction import BrownianNoiseReduction
from expost.odometers import BrownianOdometer

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
_ALPHA = 1e-5
_N_IS = 20_000
Draw = Callable[[int, np.random.Generator], npt.NDArray[np.generic]]


def _plain_bounds(events: BoolArray) -> tuple[float, float]:
    hits, n = int(events.sum()), events.size
    return clopper_pearson_lower(hits, n, _ALPHA), clopper_pearson_upper(hits, n, _ALPHA)


def _is_bounds(x: FloatArray, bound: float, scale: float) -> tuple[float, float]:
    """Betting bounds on E[scale·X] from samples X <= bound (scale 2: the mis-scaled weight)."""
    assert float(x.max()) <= bound  # the derived weight bound holds on the samples
    lo, hi = betting_bounds(x / bound, _ALPHA)
    return scale * bound * lo, scale * bound * hi


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _crossing_case(kind: str, delta: float) -> tuple[Draw, Draw, float]:
    """(weighted draw, plain draw, B) for the uniform adversary on a 20-point grid, d = 1."""
    psi = tuned_boundary(kind, 1.0, delta)
    centre = psi.time_for(1.0)
    times = np.geomspace(centre * 30.0, centre / 30.0, 20)
    fx, fxp = neighbours(1.0, 1)
    proposal: Drift | HalfNormalMixture = (
        HalfNormalMixture(psi.r) if isinstance(psi, MixturePrivacyBoundary) else Drift(2.0 * psi.a)
    )
    bound = weight_bound(proposal, times, psi, 1.0)
    grid = tuple(float(t) for t in times)

    def weighted(n: int, rng: np.random.Generator) -> FloatArray:
        return crossing_weights(proposal, grid, tuple(fx), tuple(fxp), psi, n, rng)

    bm = BrownianNoiseReduction(TimeGrid(times), 1.0, LossAbove(psi, tuple(fx), tuple(fxp)), psi)

    def plain(n: int, rng: np.random.Generator) -> BoolArray:
        return ex_post_exceeds(bm, fx, fxp, None, n, rng)

    return weighted, plain, bound


def _sequence_case(kind: str, delta: float) -> tuple[Draw, Draw, float]:
    if kind == "ville":

        def weighted(n: int, rng: np.random.Generator) -> FloatArray:
            return ville_weights(math.log(1.0 / delta), n, rng)

        def plain(n: int, rng: np.random.Generator) -> BoolArray:
            return ville_product_crosses(0.5, delta, n, rng)

        return weighted, plain, delta * (1.0 + 1e-6)
    odometer = BrownianOdometer(1.0, delta)

    def weighted_odometer(n: int, rng: np.random.Generator) -> FloatArray:
        return odometer_weights(odometer, HalfNormalMixture(1.0), n, rng)

    def plain_odometer(n: int, rng: np.random.Generator) -> BoolArray:
        return odometer_sequence_exceeds(odometer, n, rng)

    return weighted_odometer, plain_odometer, delta * (1.0 + 1e-6)


def _case(kind: str, delta: float) -> tuple[Draw, Draw, float]:
    if kind in ("linear", "mixture"):
        return _crossing_case(kind, delta)
    return _sequence_case(kind, delta)


def _plain_runs(kind: str, delta: float) -> int:
    """Plain runs: ~1e6 for the cheap crossings, 2e5 for the 6-round sequences (~8 s per 1e6)."""
    cheap = kind in ("linear", "mixture")
    return (100_000 if delta >= 1e-2 else 1_000_000) if cheap else 200_000


def _compare(kind: str, delta: float, scale: float) -> tuple[tuple[float, float], ...]:
    weighted, plain, bound = _case(kind, delta)
    rng = np.random.default_rng([17, int(-math.log10(delta)), len(kind)])
    x = np.asarray(weighted(_N_IS, rng), dtype=np.float64)
    events = np.asarray(plain(_plain_runs(kind, delta), rng), dtype=np.bool_)
    return _is_bounds(x, bound, scale), _plain_bounds(events)


_KINDS = ("linear", "mixture", "ville", "odometer")


@pytest.mark.parametrize("delta", [1e-2, 1e-3, 1e-4])
@pytest.mark.parametrize("kind", _KINDS)
def test_importance_estimate_agrees_with_plain_monte_carlo(kind: str, delta: float) -> None:
    weighted, plain = _compare(kind, delta, 1.0)
    assert _overlap(weighted, plain), (weighted, plain)


@pytest.mark.parametrize(
    ("kind", "delta"), [("linear", 1e-3), ("mixture", 1e-3), ("ville", 1e-2), ("odometer", 1e-2)]
)
def test_mis_scaled_weight_is_caught(kind: str, delta: float) -> None:
    """Twin (4c): a proposal whose weight is 2x too large disagrees with plain Monte Carlo."""
    weighted, plain = _compare(kind, delta, 2.0)
    assert not _overlap(weighted, plain), (weighted, plain)


def test_linear_girsanov_weight_bound_is_delta() -> None:
    """θ = 2a makes the weight exp(−2ab) = delta at every grid time (module docstring)."""
    psi = LinearPrivacyBoundary.tuned_for(1.0, 1e-9, 3.0)
    times = np.geomspace(10.0, 0.01, 50)
    assert weight_bound(Drift(2.0 * psi.a), times, psi, 3.0) == pytest.approx(1e-9, rel=1e-5)
    mixture = MixturePrivacyBoundary.tuned_for(1.0, 1e-9, 3.0)
    assert weight_bound(HalfNormalMixture(mixture.r), times, mixture, 3.0) <= 1e-9


@pytest.mark.parametrize("kind", ["linear", "mixture"])
def test_boundary_for_10_delta_breaks_the_claims_weight_bound(kind: str) -> None:
    """The crossing of the boundary built for 10·delta, drawn under the delta boundary's proposal
    and checked against that claim's B (<= delta): weights above B refute it through the
    weight-bound check. Twin: the delta boundary's own crossing under the same claim holds."""
    delta = 1e-9
    psi, wrong = tuned_boundary(kind, 1.0, delta), tuned_boundary(kind, 1.0, 10.0 * delta)
    proposal: Drift | HalfNormalMixture = (
        HalfNormalMixture(psi.r) if isinstance(psi, MixturePrivacyBoundary) else Drift(2.0 * psi.a)
    )
    times = grid_times(psi)
    claim = ImportanceClaim(delta, weight_bound(proposal, times, psi, 1.0), proposal.name)
    assert claim.weight_bound <= delta * (1.0 + 2e-6)  # B = delta (mixture: delta/2), margin 1e-6
    fx, fxp = neighbours(1.0, 3)
    grid = tuple(float(t) for t in times)
    for boundary, broken in ((wrong, True), (psi, False)):
        rng = np.random.default_rng(5)
        x = crossing_weights(proposal, grid, tuple(fx), tuple(fxp), boundary, 2_000, rng)
        verdict = claim.verdict(x, _ALPHA)
        assert verdict.refuted == broken
        assert ("violation" in verdict.extra) == broken


def test_deploy_quick_holds_and_refutes_every_twin() -> None:
    """The CI subset: >= 6 Brownian claims at 1e-9, each holding with its twin refuted."""
    audits = [a for a in default_registry().suite(DEPLOY_QUICK) if a.name.startswith(_PREFIXES)]
    assert len(audits) >= 6
    assert all(a.name.endswith("delta-1e-09") for a in audits)
    report = run_audits(audits, seed=0)
    assert report.passed, report.table()


_PREFIXES = ("bm-ex-post/", "bnr-cor3.7", "apc-thm4", "apc-eq1-")
