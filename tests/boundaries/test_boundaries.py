"""Martingale and privacy boundaries (THEORY §3, §5): values, inverses, tuning, crossing rates."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import mpmath as mp
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from expost.boundaries import (
    Boundary,
    FACStitched,
    LinearPrivacyBoundary,
    LineCrossing,
    MixturePrivacyBoundary,
    NormalMixture,
    PolynomialStitching,
    PrivacyBoundary,
    apc_psi,
)
from expost.errors import InvalidParameter
from tests import stats

DIGITS = 50
REL = 1e-9
ROUNDING = 4 * float(np.finfo(np.float64).eps)
VS = [0.0, 1e-3, 0.5, 1.0, 7.3, 1e2, 1e4, 1e8]
DELTAS = [1e-12, 1e-6, 0.05, 0.5, 0.99]
RS = [0.01, 1.0, 100.0]
TS = [1e-4, 0.01, 0.7, 3.0, 50.0, 1e3, 1e6]
SENSITIVITIES = [0.5, 1.0, 3.0]

Mp = Any  # an mpmath number


def _close(got: npt.ArrayLike, expected: list[Mp], rel: float = REL) -> bool:
    want = np.array([float(x) for x in expected])
    return bool(np.all(np.abs(np.asarray(got) - want) <= rel * np.abs(want)))


# ---- independent 50-digit references -------------------------------------------------


def mp_two_sided(v: float, r: float, delta: float) -> Mp:
    v_, r_ = mp.mpf(v), mp.mpf(r)
    return mp.sqrt(2 * (v_ + r_) * mp.log(mp.sqrt((v_ + r_) / r_) / mp.mpf(delta)))


def mp_one_sided_log_lhs(g: Mp, v: float, r: float) -> Mp:
    """log of sqrt(r/(v+r))·exp(g²/(2(v+r)))·2Φ(g/sqrt(v+r))."""
    w = mp.mpf(v) + mp.mpf(r)
    return mp.log(mp.sqrt(mp.mpf(r) / w)) + g**2 / (2 * w) + mp.log(2 * mp.ncdf(g / mp.sqrt(w)))


def mp_one_sided(v: float, r: float, delta: float) -> Mp:
    target = mp.log(1 / mp.mpf(delta))
    lo = mp.mpf(0) if 2 * delta >= 1 else mp_two_sided(v, r, 2 * delta)
    hi = mp_two_sided(v, r, delta)
    return mp.findroot(
        lambda g: mp_one_sided_log_lhs(g, v, r) - target, (lo, hi), solver="anderson"
    )


def mp_stitching(v: float, v0: float, delta: float, eta: float, s: float) -> Mp:
    m, eta_, s_ = mp.mpf(max(v, v0)), mp.mpf(eta), mp.mpf(s)
    k1 = (eta_ ** mp.mpf(0.25) + eta_ ** mp.mpf(-0.25)) / mp.sqrt(2)
    ell = s_ * mp.log(mp.log(eta_ * m / mp.mpf(v0))) + mp.log(
        mp.zeta(s_) / (mp.mpf(delta) * mp.log(eta_) ** s_)
    )
    return k1 * mp.sqrt(m * ell)


def mp_fac(v: float, v0: float, delta: float) -> Mp:
    v_ = mp.mpf(v)
    inner = mp.log(mp.log(2 * v_ / mp.mpf(v0))) + mp.mpf("0.72") * mp.log(mp.mpf("5.2") / delta)
    return mp.mpf("1.7") * mp.sqrt(v_ * inner)


def mp_psi_mixture(t: Mp, r: float, delta: float, sens: float) -> Mp:
    t_, r_, d = mp.mpf(t), mp.mpf(r), mp.mpf(sens)
    g = mp.sqrt(2 * (t_ + r_) * mp.log(mp.sqrt((t_ + r_) / r_) / mp.mpf(delta)))
    return d**2 / (2 * t_) + d / t_ * g


def mp_time_for(r: float, delta: float, sens: float, eps: float) -> Mp:
    lo = mp.mpf(sens) ** 2 / (2 * mp.mpf(eps))
    hi = 2 * lo
    while mp_psi_mixture(hi, r, delta, sens) > eps:
        lo, hi = hi, 2 * hi
    return mp.findroot(
        lambda t: mp_psi_mixture(t, r, delta, sens) - eps, (lo, hi), solver="anderson"
    )


# ---- values against mpmath ---------------------------------------------------------


def test_line_crossing_matches_mpmath() -> None:
    with mp.workdps(DIGITS):
        for a, delta in itertools.product([0.01, 0.3, 1.0, 40.0], DELTAS):
            line = LineCrossing.for_delta(a, delta)
            b = mp.log(1 / mp.mpf(delta)) / (2 * mp.mpf(a))
            assert _close(line(np.array(VS)), [mp.mpf(a) * mp.mpf(v) + b for v in VS])
            assert line.delta == pytest.approx(delta, rel=1e-12)


def test_two_sided_mixture_matches_mpmath() -> None:
    with mp.workdps(DIGITS):
        for r, delta in itertools.product(RS, DELTAS):
            got = NormalMixture(r=r, delta=delta, sides=2)(np.array(VS))
            assert _close(got, [mp_two_sided(v, r, delta) for v in VS])


def test_one_sided_mixture_solves_its_equation_inside_the_bracket() -> None:
    with mp.workdps(DIGITS):
        for r, delta in itertools.product([0.01, 1.0, 100.0], DELTAS):
            got = NormalMixture(r=r, delta=delta, sides=1)(np.array(VS))
            assert _close(got, [mp_one_sided(v, r, delta) for v in VS], rel=1e-14)  # < REL
            target = mp.log(1 / mp.mpf(delta))
            for v, g in zip(VS, got, strict=True):
                lhs = mp_one_sided_log_lhs(mp.mpf(float(g)), v, r)
                assert abs(mp.exp(lhs - target) - 1) <= REL
                assert lhs >= target  # sound: never below the exact root
            # The bracket; at small delta the root is within rounding of its lower end.
            upper = NormalMixture(r, delta, sides=2)(np.array(VS))
            assert np.all(got <= upper * (1 + ROUNDING))
            if 2 * delta < 1:
                lower = NormalMixture(r, 2 * delta, sides=2)(np.array(VS))
                assert np.all(got >= lower * (1 - ROUNDING))


@settings(max_examples=100, deadline=None)
@given(st.floats(1e-6, 1e6), st.floats(1e-15, 0.999), st.floats(0.0, 1e9))
def test_one_sided_mixture_equation_at_random_points(r: float, delta: float, v: float) -> None:
    g = NormalMixture(r, delta, sides=1)(v)
    with mp.workdps(DIGITS):
        lhs = mp_one_sided_log_lhs(mp.mpf(g), v, r)
        assert abs(mp.exp(lhs - mp.log(1 / mp.mpf(delta))) - 1) <= REL
        assert lhs >= mp.log(1 / mp.mpf(delta))  # sound: never below the exact root
    assert g <= NormalMixture(r, delta, sides=2)(v) * (1 + ROUNDING)
    if 2 * delta < 1:
        assert g >= NormalMixture(r, 2 * delta, sides=2)(v) * (1 - ROUNDING)


def test_polynomial_stitching_matches_mpmath() -> None:
    with mp.workdps(DIGITS):
        for v0, delta, (eta, s) in itertools.product(
            [0.01, 1.0, 300.0], DELTAS, [(2.0, 1.4), (1.1, 2.0), (10.0, 1.05)]
        ):
            got = PolynomialStitching(v0, delta, eta=eta, s=s)(np.array(VS))
            assert _close(got, [mp_stitching(v, v0, delta, eta, s) for v in VS])


def test_fac_stitched_matches_mpmath_and_is_infinite_below_v0() -> None:
    with mp.workdps(DIGITS):
        for v0, delta in itertools.product([1e-3, 1.0, 300.0], DELTAS):
            vs = np.array([v for v in VS if v >= v0] + [v0])
            assert _close(FACStitched(v0, delta)(vs), [mp_fac(v, v0, delta) for v in vs])
            below = np.array([v for v in VS if v < v0])
            assert np.all(np.isinf(FACStitched(v0, delta)(below)))


def test_apc_psi_is_the_two_sided_mixture() -> None:
    with mp.workdps(DIGITS):
        for gamma, delta in itertools.product(RS, DELTAS):
            g_, d_ = mp.mpf(gamma), mp.mpf(delta)
            want = [mp.sqrt((v + g_) * mp.log((v + g_) / (d_**2 * g_))) for v in VS]
            assert _close(apc_psi(np.array(VS), gamma, delta), want)
            mixture = NormalMixture(r=gamma, delta=delta, sides=2)(np.array(VS))
            assert _close(mixture, want)


def test_mixture_privacy_boundary_matches_mpmath() -> None:
    with mp.workdps(DIGITS):
        for r, delta, sens in itertools.product(RS, DELTAS, SENSITIVITIES):
            got = MixturePrivacyBoundary(r, delta, sensitivity=sens)(np.array(TS))
            assert _close(got, [mp_psi_mixture(t, r, delta, sens) for t in TS])


def test_linear_privacy_boundary_matches_mpmath() -> None:
    with mp.workdps(DIGITS):
        for a, delta, sens in itertools.product([0.05, 0.3, 2.0], DELTAS, SENSITIVITIES):
            psi = LinearPrivacyBoundary.from_delta(a, delta, sensitivity=sens)
            b = mp.log(1 / mp.mpf(delta)) / (2 * mp.mpf(a))
            d = mp.mpf(sens)
            want = [d / mp.mpf(t) * (d / 2 + b) + d * mp.mpf(a) for t in TS]
            assert _close(psi(np.array(TS)), want)
            assert psi.delta == pytest.approx(delta, rel=1e-12)


def test_scalars_give_floats_and_arrays_keep_their_shape() -> None:
    nm: Boundary = NormalMixture(r=1.0, delta=1e-6, sides=2)
    assert isinstance(nm(3.0), float)
    assert isinstance(nm(3), float)
    grid = np.arange(6.0).reshape(2, 3)
    assert nm(grid).shape == (2, 3)
    assert nm([1.0, 2.0])[1] == nm(2.0)
    psi: PrivacyBoundary = MixturePrivacyBoundary(1.0, 1e-6)
    assert isinstance(psi(2.0), float)
    assert psi.times_for(np.array([[0.3, 1.0]])).shape == (1, 2)


# ---- inverses and tuning -----------------------------------------------------------


def _privacy_boundaries() -> list[MixturePrivacyBoundary | LinearPrivacyBoundary]:
    out: list[MixturePrivacyBoundary | LinearPrivacyBoundary] = []
    for delta, sens in itertools.product([1e-10, 1e-6, 0.1], SENSITIVITIES):
        out += [MixturePrivacyBoundary(r, delta, sens) for r in (0.01, 3.0, 500.0)]
        out += [LinearPrivacyBoundary.from_delta(a, delta, sens) for a in (0.01, 0.1)]
    return out


def test_time_for_round_trips_and_is_the_smallest_time() -> None:
    for psi in _privacy_boundaries():
        for eps in (0.05, 0.3, 1.0, 10.0):
            if isinstance(psi, LinearPrivacyBoundary) and eps <= psi.a * psi.sensitivity:
                continue
            t = psi.time_for(eps)
            assert psi(t) == pytest.approx(eps, rel=1e-10)
            assert psi(t * (1 - 1e-9)) > eps
            if isinstance(psi, MixturePrivacyBoundary):
                assert psi(t) <= eps  # never below the exact root


def test_time_for_matches_mpmath() -> None:
    with mp.workdps(DIGITS):
        for r, delta, sens, eps in itertools.product(
            [0.01, 5.0], [1e-6, 0.1], SENSITIVITIES, [0.1, 0.3, 3.0]
        ):
            got = MixturePrivacyBoundary(r, delta, sens).time_for(eps)
            want = mp_time_for(r, delta, sens, eps)
            assert _close([got], [want])


def test_times_for_agrees_with_time_for() -> None:
    levels = np.array([0.2, 0.3, 1.0, 4.0])
    for psi in (MixturePrivacyBoundary(2.0, 1e-6, 2.0), LinearPrivacyBoundary(0.05, 30.0, 2.0)):
        assert np.array_equal(psi.times_for(levels), [psi.time_for(e) for e in levels])


def test_linear_time_for_rejects_targets_below_the_asymptote() -> None:
    psi = LinearPrivacyBoundary(a=0.2, b=10.0, sensitivity=2.0)  # asymptote Δ·a = 0.4
    for eps in (0.4, 0.1):
        with pytest.raises(InvalidParameter, match="asymptote") as info:
            psi.time_for(eps)
        assert info.value.name == "eps"
    with pytest.raises(InvalidParameter) as info:
        psi.times_for([1.0, 0.3])
    assert info.value.name == "levels"


TARGETS = [(0.3, 1e-6, 1.0), (0.05, 1e-9, 1.0), (1.0, 0.01, 2.0), (5.0, 1e-6, 0.5)]


@pytest.mark.parametrize(("eps", "delta", "sens"), TARGETS)
def test_tuned_linear_boundary_beats_untuned(eps: float, delta: float, sens: float) -> None:
    tuned = LinearPrivacyBoundary.tuned_for(eps, delta, sens)
    assert tuned.delta == pytest.approx(delta, rel=1e-12)
    best = tuned.time_for(eps)
    for factor in (0.2, 0.5, 0.9, 0.99, 1.01, 1.1, 2.0):
        a = tuned.a * factor
        if a * sens < eps:
            assert LinearPrivacyBoundary.from_delta(a, delta, sens).time_for(eps) > best

    def log_time(log_a: float) -> float:
        return math.log(
            LinearPrivacyBoundary.from_delta(math.exp(log_a), delta, sens).time_for(eps)
        )

    upper = math.log(eps / sens)
    numeric = minimize_scalar(log_time, bounds=(upper - 30, upper - 1e-9), method="bounded")
    assert math.exp(float(numeric.fun)) >= best * (1 - 1e-12)
    assert float(numeric.x) == pytest.approx(math.log(tuned.a), abs=1e-3)


@pytest.mark.parametrize(("eps", "delta", "sens"), TARGETS)
def test_tuned_mixture_boundary_beats_untuned(eps: float, delta: float, sens: float) -> None:
    tuned = MixturePrivacyBoundary.tuned_for(eps, delta, sens)
    best = tuned.time_for(eps)
    for factor in (0.01, 0.2, 0.5, 0.8, 1.25, 2.0, 5.0, 100.0):
        assert MixturePrivacyBoundary(tuned.r * factor, delta, sens).time_for(eps) > best


def test_bnr_experiment_boundary() -> None:
    """BNR Sec. 6: linear boundary tuned at eps = 0.3, delta = 1e-6 (values computed here)."""
    psi = LinearPrivacyBoundary.tuned_for(0.3, 1e-6)
    ell = math.log(1e6)
    assert psi.a == pytest.approx(math.sqrt(ell**2 + 0.3 * ell) - ell, rel=1e-12)
    assert psi.b == pytest.approx(ell / (2 * psi.a), rel=1e-12)
    assert psi(psi.time_for(0.3)) == pytest.approx(0.3, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.01, 10.0), st.floats(1e-10, 0.2), st.floats(0.1, 10.0))
def test_tuned_times_scale_with_sensitivity_squared(eps: float, delta: float, sens: float) -> None:
    for cls in (LinearPrivacyBoundary, MixturePrivacyBoundary):
        unit = cls.tuned_for(eps, delta).time_for(eps)
        scaled = cls.tuned_for(eps, delta, sens).time_for(eps)
        assert scaled == pytest.approx(sens**2 * unit, rel=1e-7)


# ---- order relations ---------------------------------------------------------------

DENSE = np.concatenate([[0.0], np.logspace(-6, 12, 4000)])


def test_fac_stitched_dominates_polynomial_stitching_on_a_dense_grid() -> None:
    for v0, delta in itertools.product([1e-4, 1.0, 1e4], [1e-12, 1e-6, 0.05, 0.5, 0.999]):
        v = v0 * np.logspace(0, 14, 3000)
        assert np.all(FACStitched(v0, delta)(v) >= PolynomialStitching(v0, delta)(v))


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-8, 1e8), st.floats(1e-15, 0.9999), st.floats(1.0, 1e12))
def test_fac_stitched_dominates_polynomial_stitching(v0: float, delta: float, ratio: float) -> None:
    v = v0 * ratio
    assert FACStitched(v0, delta)(v) >= PolynomialStitching(v0, delta, eta=2.0, s=1.4)(v)


def _martingale_families() -> list[Callable[[float], Callable[[npt.NDArray[np.float64]], Any]]]:
    return [
        lambda d: LineCrossing.for_delta(0.7, d),
        lambda d: NormalMixture(2.0, d, sides=2),
        lambda d: NormalMixture(2.0, d, sides=1),
        lambda d: PolynomialStitching(1e-3, d),
        lambda d: PolynomialStitching(1e-3, d, eta=3.0, s=1.2),
        lambda d: FACStitched(1e-3, d),
    ]


def test_boundaries_increase_in_v_and_decrease_in_delta() -> None:
    for family in _martingale_families():
        values = [family(d)(DENSE[DENSE >= 1e-3]) for d in (1e-12, 1e-6, 0.05, 0.5, 0.99)]
        for g in values:
            assert np.all(np.diff(g) > 0)
        for tighter, looser in itertools.pairwise(values):
            assert np.all(tighter > looser)


def test_stitching_is_flat_below_v0_and_increasing_above() -> None:
    g = PolynomialStitching(5.0, 1e-6)
    below, above = DENSE[DENSE <= 5.0], DENSE[DENSE >= 5.0]
    assert np.all(g(below) == g(5.0))
    assert np.all(np.diff(g(above)) > 0)


def test_privacy_boundaries_decrease_in_t() -> None:
    t = np.logspace(-8, 12, 5000)
    for psi in _privacy_boundaries():
        assert np.all(np.diff(psi(t)) < 0)
    for r in (1e-6, 1e-2, 1.0, 1e4):
        for delta in (1e-15, 0.5, 0.999):
            assert np.all(np.diff(MixturePrivacyBoundary(r, delta)(t)) < 0)


# ---- crossing frequencies of a simulated Brownian motion --------------------------

PATHS, STEPS, HORIZON = 4000, 2000, 20.0
DELTA_MC = 0.1


@pytest.fixture(scope="module")
def brownian_paths() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Standard BM on [0, 20] at 2000 grid points, 4000 paths (fixed seed).

    Watching a discretised, finite path can only lower the crossing frequency, so a valid
    boundary must be crossed with frequency <= delta.
    """
    dt = HORIZON / STEPS
    v = dt * np.arange(1, STEPS + 1, dtype=np.float64)
    steps = np.random.default_rng(20240611).standard_normal((PATHS, STEPS))
    return v, np.cumsum(steps, axis=1) * math.sqrt(dt)


def _exceeds_delta(crossed: npt.NDArray[np.bool_]) -> bool:
    """Reject 'P(cross) <= delta' when the one-sided Clopper–Pearson lower bound exceeds it.

    The lower bound for the crossing rate is 1 − the upper bound for the miss rate, at the
    shared false-alarm level of tests/stats.py.
    """
    hits = int(crossed.any(axis=1).sum())
    lower = 1.0 - stats.clopper_pearson_upper(PATHS - hits, PATHS)
    return lower > DELTA_MC


def test_line_crossing_rate(brownian_paths: tuple[Any, Any]) -> None:
    v, path = brownian_paths
    line = LineCrossing.for_delta(1.0, DELTA_MC)
    assert not _exceeds_delta(path >= line(v))
    planted = LineCrossing(line.a, line.b / 2)  # crossing probability sqrt(delta) ≈ 0.32
    assert _exceeds_delta(path >= planted(v))


def test_two_sided_mixture_crossing_rate(brownian_paths: tuple[Any, Any]) -> None:
    v, path = brownian_paths
    r = 0.2
    mixture = NormalMixture(r, DELTA_MC, sides=2)
    assert not _exceeds_delta(np.abs(path) >= mixture(v))
    planted = np.sqrt(2 * (v + r) * math.log(1 / DELTA_MC))  # the sqrt((v+r)/r) factor dropped
    assert _exceeds_delta(np.abs(path) >= planted)


def test_one_sided_mixture_crossing_rate(brownian_paths: tuple[Any, Any]) -> None:
    v, path = brownian_paths
    mixture = NormalMixture(0.2, DELTA_MC, sides=1)
    assert not _exceeds_delta(path >= mixture(v))
    planted = NormalMixture(0.2, DELTA_MC, sides=1)(v) / 2  # a factor 2 lost in the root
    assert _exceeds_delta(path >= planted)


# ---- bad input ---------------------------------------------------------------------

BAD_POSITIVE = [math.nan, math.inf, -math.inf, 0.0, -1.0, "1", None]
BAD_DELTA = [math.nan, math.inf, 0.0, 1.0, -0.1, 1.5, "0.1"]
BAD_ABOVE_ONE = [*BAD_POSITIVE, 1.0, 0.5]
BAD_SIDES = [0, 3, 1.0, True, "2", None]

GOOD: dict[Callable[..., Any], dict[str, Any]] = {
    LineCrossing: {"a": 1.0, "b": 1.0},
    LineCrossing.for_delta: {"a": 1.0, "delta": 0.1},
    NormalMixture: {"r": 1.0, "delta": 0.1, "sides": 1},
    PolynomialStitching: {"v0": 1.0, "delta": 0.1, "eta": 2.0, "s": 1.4},
    FACStitched: {"v0": 1.0, "delta": 0.1},
    MixturePrivacyBoundary: {"r": 1.0, "delta": 0.1, "sensitivity": 1.0},
    LinearPrivacyBoundary: {"a": 1.0, "b": 1.0, "sensitivity": 1.0},
    LinearPrivacyBoundary.from_delta: {"a": 1.0, "delta": 0.1, "sensitivity": 1.0},
    MixturePrivacyBoundary.tuned_for: {"eps": 0.3, "delta": 0.1, "sensitivity": 1.0},
    LinearPrivacyBoundary.tuned_for: {"eps": 0.3, "delta": 0.1, "sensitivity": 1.0},
    apc_psi: {"v": 1.0, "gamma": 1.0, "delta": 0.1},
}
BAD_BY_NAME = {"delta": BAD_DELTA, "eta": BAD_ABOVE_ONE, "s": BAD_ABOVE_ONE, "sides": BAD_SIDES}
CASES = [(f, name) for f, kwargs in GOOD.items() for name in kwargs]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(CASES), st.data())
def test_bad_parameters_are_named(
    case: tuple[Callable[..., Any], str], data: st.DataObject
) -> None:
    function, name = case
    bad = data.draw(st.sampled_from(BAD_BY_NAME.get(name, BAD_POSITIVE)))
    if name == "v" and isinstance(bad, float) and bad == 0.0:
        bad = -1e-300  # v = 0 is allowed
    kwargs = {**GOOD[function], name: bad}
    with pytest.raises(InvalidParameter) as info:
        function(**kwargs)
    assert info.value.name == name


BOUNDARIES: list[Any] = [
    LineCrossing(1.0, 1.0),
    NormalMixture(1.0, 0.1, sides=1),
    NormalMixture(1.0, 0.1),
    PolynomialStitching(1.0, 0.1),
    FACStitched(1.0, 0.1),
]
PRIVACY: list[Any] = [MixturePrivacyBoundary(1.0, 0.1), LinearPrivacyBoundary(0.1, 1.0)]
BAD_POINTS = [math.nan, math.inf, -1.0, [1.0, math.nan], [[0.5, -2.0]], "x"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(BOUNDARIES), st.sampled_from(BAD_POINTS))
def test_bad_v_is_named(boundary: Any, bad: Any) -> None:
    with pytest.raises(InvalidParameter) as info:
        boundary(bad)
    assert info.value.name == "v"


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(PRIVACY), st.sampled_from([*BAD_POINTS, 0.0, [1.0, 0.0]]))
def test_bad_t_and_levels_are_named(psi: Any, bad: Any) -> None:
    with pytest.raises(InvalidParameter) as info:
        psi(bad)
    assert info.value.name == "t"
    with pytest.raises(InvalidParameter) as info:
        psi.times_for(bad)
    assert info.value.name == "levels"
    if not isinstance(bad, list):
        with pytest.raises(InvalidParameter) as info:
            psi.time_for(bad)
        assert info.value.name == "eps"
