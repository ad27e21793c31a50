"""Privacy odometers: closed forms, prefix bounds, and audits of their validity."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from expost.errors import InvalidParameter
from expost.guarantees import rho_for_dp
from expost.odometers import (
    BrownianOdometer,
    FilterOdometer,
    MixtureOdometer,
    StitchedOdometer,
)
from tests import stats

FloatArray = npt.NDArray[np.float64]
PDPOdometer = FilterOdometer | MixtureOdometer | StitchedOdometer

# --------------------------------------------------------------------------- input


@pytest.mark.parametrize(
    "make",
    [
        lambda: FilterOdometer(0.0, 0.0, 0.1),
        lambda: FilterOdometer(1.0, -0.1, 0.1),
        lambda: FilterOdometer(1.0, 0.0, 0.0),
        lambda: FilterOdometer(1.0, 0.6, 0.5),
        lambda: MixtureOdometer(math.nan, 0.0, 0.1),
        lambda: MixtureOdometer(1.0, 0.0, 1.0),
        lambda: StitchedOdometer(-1.0, 0.0, 0.1),
        lambda: BrownianOdometer(1.0, 0.0),
        lambda: BrownianOdometer(math.inf, 0.1),
        lambda: FilterOdometer(1.0, 0.0, 0.1).bound_at([-1.0]),
        lambda: MixtureOdometer(1.0, 0.0, 0.1).bound_at([math.nan]),
        lambda: MixtureOdometer(1.0, 0.0, 0.1).bound([0.1, -0.1]),
        lambda: MixtureOdometer(1.0, 0.0, 0.1).bound(0.1),
        lambda: MixtureOdometer(1.0, 0.0, 0.1).bound([0.1, 0.2], [0.0, 1.0]),
        lambda: MixtureOdometer(1.0, 0.0, 0.1).bound([0.1, 0.2], [0.0, 0.1, 0.0]),
        lambda: BrownianOdometer(1.0, 0.1).bound_from_times([1.0, 0.0]),
        lambda: BrownianOdometer(1.0, 0.1).bound_from_times([1.0, math.inf]),
        lambda: BrownianOdometer(1.0, 0.1).bound_from_times([1.0, 2.0], [1.0, -1.0]),
        lambda: BrownianOdometer(1.0, 0.1).bound_from_times([1.0, 2.0], [1.0, 1.0, 1.0]),
    ],
)
def test_bad_input_raises_invalid_parameter(make: Callable[[], object]) -> None:
    with pytest.raises(InvalidParameter):
        make()


# --------------------------------------------------------------------------- closed forms


@settings(max_examples=100, deadline=None)
@given(eps=st.floats(1e-3, 50.0), delta_second=st.floats(1e-12, 0.9))
def test_filter_odometer_is_tuned_at_eps(eps: float, delta_second: float) -> None:
    odo = FilterOdometer(eps, 0.0, delta_second)
    ell = math.log(1.0 / delta_second)
    y = (math.sqrt(2.0 * ell + 2.0 * eps) - math.sqrt(2.0 * ell)) ** 2
    assert odo.y_star == pytest.approx(y, rel=1e-9)
    assert odo.y_star == 2.0 * rho_for_dp(eps, delta_second)
    assert float(odo.bound_at(odo.y_star)) == pytest.approx(eps, rel=1e-12)
    v = np.array([0.0, 0.5 * y, 3.0 * y])
    direct = math.sqrt(y * ell / 2.0) + math.sqrt(ell / (2.0 * y)) * v + v / 2.0
    np.testing.assert_allclose(odo.bound_at(v), direct, rtol=1e-9)


def test_mixture_and_stitched_closed_forms() -> None:
    v = np.array([0.0, 0.3, 2.0, 40.0])
    gamma, d2 = 0.7, 0.05
    mixture = np.sqrt(2.0 * (v + gamma) * np.log(np.sqrt((v + gamma) / gamma) / d2)) + v / 2.0
    np.testing.assert_allclose(MixtureOdometer(gamma, 0.0, d2).bound_at(v), mixture, rtol=1e-13)
    s = StitchedOdometer(0.3, 0.0, d2).bound_at(v)
    assert np.isinf(s[0])
    w = v[1:]
    stitched = 1.7 * np.sqrt(w * (np.log(np.log(2.0 * w / 0.3)) + 0.72 * np.log(5.2 / d2))) + w / 2
    np.testing.assert_allclose(s[1:], stitched, rtol=1e-13)


@settings(max_examples=60, deadline=None)
@given(
    v=st.lists(st.floats(0.0, 1e6), min_size=2, max_size=20),
    scale=st.floats(1e-3, 1e3),
    delta_second=st.floats(1e-9, 0.5),
)
def test_bounds_increase_with_v(v: list[float], scale: float, delta_second: float) -> None:
    grid = np.sort(np.asarray(v))
    for odo in (
        FilterOdometer(scale, 0.0, delta_second),
        MixtureOdometer(scale, 0.0, delta_second),
        StitchedOdometer(scale, 0.0, delta_second),
        BrownianOdometer(scale, delta_second),
    ):
        u = odo.bound_at(grid)
        assert np.all(u > 0.0)
        finite = u[np.isfinite(u)]  # the stitched odometer is ∞ below v0 only
        assert np.all(finite[1:] >= finite[:-1])
        if isinstance(odo, StitchedOdometer):
            assert np.all(np.isfinite(u) == (grid >= scale))


def test_prefix_bounds_and_delta_cut_off() -> None:
    odo = MixtureOdometer(1.0, 0.01, 0.1)
    eps = np.array([0.5, 0.1, 0.3, 0.2])
    u = odo.bound(eps)
    np.testing.assert_allclose(u, odo.bound_at(np.cumsum(eps**2)), rtol=1e-14)
    assert np.all(u >= odo.bound_at(np.cumsum(eps**2)))  # prefix sums rounded up
    cut = odo.bound(eps, [0.004, 0.004, 0.004, 0.0])
    assert np.all(np.isfinite(cut[:2]))
    assert np.all(np.isinf(cut[2:]))  # Σ delta = 0.012 > delta' from round 3 on
    many = odo.bound(np.tile(eps, (3, 1)), 0.0)
    assert many.shape == (3, 4)
    np.testing.assert_array_equal(many[1], u)
    assert odo.bound(np.empty(0)).shape == (0,)


def test_brownian_odometer_values_and_the_printed_form() -> None:
    odo = BrownianOdometer(1.0, 0.05)
    psi = float(odo.psi(100.0))
    assert psi == pytest.approx(math.sqrt(101.0 * math.log(101.0 / 0.0025)), rel=1e-14)
    assert psi == pytest.approx(32.73, abs=5e-3)
    assert float(odo.bound_from_times([0.01])[0]) == pytest.approx(50.0 + psi, rel=1e-12)
    printed = BrownianOdometer(1.0, 0.05, printed_apc_thm4=True)
    assert float(printed.bound_from_times([0.01])[0]) == pytest.approx(psi, rel=1e-12)
    # One BM at t = 0.01 has loss N(50, 100): the printed bound fails w.p. ≈ 0.96.
    assert sps.norm.sf(psi, loc=50.0, scale=10.0) == pytest.approx(0.958, abs=1e-3)
    times, sens = np.array([4.0, 0.5, 0.1]), np.array([2.0, 1.0, 0.5])
    v = np.cumsum(sens**2 / times)
    np.testing.assert_allclose(odo.bound_from_times(times, sens), v / 2 + odo.psi(v), rtol=1e-14)
    np.testing.assert_allclose(
        odo.bound_from_times(times), odo.bound_from_times(times, np.ones(3)), rtol=0
    )


# --------------------------------------------------------------------------- audits


def _pdp_interactions(
    trials: int, rounds: int, seed: int, leak: float = 0.0
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(eps, delta, running loss) of adaptive interactions, trials × rounds.

    Each round is randomized response or the Laplace mechanism (sensitivity 1, exact loss
    eps·(|Z − 1| − |Z|), Z ~ Lap(1/eps)), chosen with eps_n from the previous output.
    With ``leak`` > 0 a round first publishes the data with probability ``leak`` (loss ∞),
    which makes it (eps_n, leak)-pDP.
    """
    rng = np.random.default_rng(seed)
    eps = np.empty((trials, rounds))
    loss = np.empty((trials, rounds))
    previous = rng.integers(0, 2, trials)
    for n in range(rounds):
        e = np.where(previous == 1, 0.15, 0.03) * rng.uniform(0.5, 1.5, trials)
        kept = rng.random(trials) < np.exp(e) / (1.0 + np.exp(e))
        z = rng.laplace(0.0, 1.0 / e)
        laplace = (n + previous) % 2 == 0
        step = np.where(laplace, e * (np.abs(z - 1.0) - np.abs(z)), np.where(kept, e, -e))
        leaked = rng.random(trials) < leak
        eps[:, n], loss[:, n] = e, np.where(leaked, np.inf, step)
        previous = np.where(laplace, z > 0.5, kept).astype(np.int64)
    return eps, np.full_like(eps, leak), np.cumsum(loss, axis=1)


def _crossings(loss: FloatArray, bound: FloatArray) -> int:
    return int(np.sum(np.any(loss > bound, axis=1)))


@pytest.mark.parametrize(
    "odo",
    [
        FilterOdometer(1.0, 0.0, 0.1),
        MixtureOdometer(0.5, 0.0, 0.1),
        StitchedOdometer(0.1, 0.0, 0.1),
    ],
)
def test_pdp_odometer_audit_and_shrunk_twin(odo: PDPOdometer) -> None:
    """P(∃n: L_(1:n) > u_n) <= delta'' (FAC Thm 3); the odometer halved must fail."""
    trials = 4000
    eps, _, loss = _pdp_interactions(trials, 200, seed=5)
    u = odo.bound(eps)
    assert stats.rate_is_at_most(_crossings(loss, u), trials, odo.delta_second)
    assert not stats.rate_is_at_most(_crossings(loss, 0.5 * u), trials, odo.delta_second)


def test_odometer_delta_cut_off_audit_and_twin() -> None:
    """With (eps_n, delta_n)-pDP rounds: P(cross) <= delta' + delta''; ignoring the cut-off fails."""
    odo = MixtureOdometer(0.5, 0.05, 0.1)
    trials = 4000
    eps, deltas, loss = _pdp_interactions(trials, 200, seed=6, leak=0.002)
    claim = odo.delta_prime + odo.delta_second
    assert stats.rate_is_at_most(_crossings(loss, odo.bound(eps, deltas)), trials, claim)
    assert not stats.rate_is_at_most(_crossings(loss, odo.bound(eps)), trials, claim)


def _brownian_violations(
    odo: BrownianOdometer, trials: int, seed: int, mechanisms: int = 4, grid: int = 64
) -> int:
    """Adaptive sequences of BMs, each stopped as soon as the running loss crosses the bound.

    In privacy time s = 1/t a BM's loss is Δ²s/2 + Δ·X(s) with X a standard BM walked
    forward (THEORY §3); the grid's reach and the sensitivities vary and depend on the
    previous noisy output.
    """
    rng = np.random.default_rng(seed)
    rows = np.arange(trials)
    loss, v = np.zeros(trials), np.zeros(trials)
    crossed = np.zeros(trials, dtype=bool)
    times = np.empty((trials, mechanisms))
    sens = rng.choice([0.5, 1.0, 2.0], size=(trials, mechanisms))
    previous = rng.normal(size=trials)
    for i in range(mechanisms):
        d = sens[:, i : i + 1]
        reach = np.where(previous > 0, 60.0, 10.0) * rng.uniform(0.5, 1.5, trials)
        s = reach[:, None] * np.arange(1, grid + 1) / grid
        x = np.cumsum(rng.normal(size=s.shape) * np.sqrt(np.diff(s, prepend=0.0, axis=1)), axis=1)
        path = loss[:, None] + d**2 * s / 2.0 + d * x
        v_path = v[:, None] + d**2 * s
        over = path > odo.bound_at(v_path)
        stop = np.where(over.any(axis=1), over.argmax(axis=1), grid - 1)
        times[:, i] = 1.0 / s[rows, stop]
        loss, v = path[rows, stop], v_path[rows, stop]
        crossed |= loss > odo.bound_from_times(times[:, : i + 1], sens[:, : i + 1])[:, -1]
        previous = x[rows, stop] / s[rows, stop]
    return int(crossed.sum())


def test_brownian_odometer_audit_and_printed_twin() -> None:
    """P(∃m: Σ L_i > Σ Δ²/(2t_i) + ψ(V_m)) <= delta (APC Lemma 6.1, eq. 1); APC Thm 4 as printed fails."""
    trials = 4000
    odo = BrownianOdometer(1.0, 0.1)
    assert stats.rate_is_at_most(_brownian_violations(odo, trials, seed=7), trials, 0.1)
    printed = BrownianOdometer(1.0, 0.1, printed_apc_thm4=True)
    assert not stats.rate_is_at_most(_brownian_violations(printed, trials, seed=8), trials, 0.1)
