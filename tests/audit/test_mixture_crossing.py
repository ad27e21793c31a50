"""BNR Lemma A.3's one-sided crossing: the bridge-corrected upper estimate behind the audit of the
printed "= delta" (`expost.audit.paper.mixture_crossing`)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from expost.audit.paper.mixture_crossing import (
    brownian_paths,
    crossing_bound,
    never_crossed_lower,
    one_sided_crossed,
)
from expost.audit.rare_event import betting_bounds

FloatArray = npt.NDArray[np.float64]
ALPHA = 1e-6  # each side of the betting interval
A, B = 0.5, 2.0  # the line a·t + b, crossed with probability exp(−2ab) (BNR App. A)
TIMES = np.concatenate(([0.0], np.geomspace(1e-2, 1e2, 60)))


def _line_estimate(grid_for_bridge: FloatArray) -> tuple[float, float]:
    """Betting interval for the mean of `crossing_bound` on the line, with the exact tail
    exp(−2a(aT + b − B_T)); ``grid_for_bridge`` is the time grid the bridge term is told."""
    paths = brownian_paths(TIMES, 20_000, np.random.default_rng(1))
    t = TIMES[-1]

    def tail(b: FloatArray) -> FloatArray:
        exact: FloatArray = np.exp(-2.0 * A * np.maximum(A * t + B - b, 0.0))
        return exact

    x = crossing_bound(grid_for_bridge, A * TIMES + B, paths, tail)
    return betting_bounds(x, ALPHA)


def test_bridge_estimate_is_exact_for_a_line() -> None:
    """For a linear level the chord is the level itself, so the estimate is unbiased for
    exp(−2ab); on this 61-point grid the crossings seen on it alone are about 0.09 against 0.135."""
    lower, upper = _line_estimate(TIMES)
    assert lower <= math.exp(-2.0 * A * B) <= upper


def test_bridge_estimate_twin_with_halved_steps_is_caught() -> None:
    """Planted bug: the bridge told half of each step (exp(−4·gap₀·gap₁/Δt)) under-counts."""
    _, upper = _line_estimate(TIMES / 2.0)
    assert upper < math.exp(-2.0 * A * B)


def test_mixture_estimate_bounds_the_grid_crossings_path_by_path() -> None:
    y = never_crossed_lower(5_000, np.random.default_rng(3))
    crossed = one_sided_crossed(5_000, np.random.default_rng(3))  # the same paths
    assert np.all((y >= 0.0) & (y <= 1.0))
    assert np.all(1.0 - y >= crossed)
    assert np.all(y[crossed] == 0.0)
    assert np.mean(1.0 - y) > np.mean(crossed)  # the bridge and tail terms add to the grid's
