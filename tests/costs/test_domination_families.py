"""Computed domination bounds each closed family by its own profile (issue 40 item 3).

`expost.costs.domination.profile_bounds` had closed forms for the Gaussian, Laplace and
randomised response, and took every other closed family for a Gaussian at σ = its level: a
`PLDFilter` fixed at an (ε, δ) round, a discrete Laplace round or an exponential mechanism then
admitted rounds far above them (fixed at DPCost(0.1, 1e-7) it admitted DPCost(2.0)). Each
family's bounds are checked here against its exact profile, computed in the test (40-digit
mpmath), and the filter's decisions against the exact profiles.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from expost.costs.domination import profile_bounds
from expost.costs.pairs import ClosedPair
from expost.filters import BoundedRangeCost, DPCost, PLDFilter
from expost.filters.costs import DiscreteLaplaceCost


def rr_delta(eps0: float, x: float) -> float:
    with mp.workdps(40):
        a = mp.exp(eps0) / (1 + mp.exp(eps0))
        return float(max(mp.mpf(0), a - mp.exp(x) * (1 - a)))


def eps_delta_delta(eps0: float, d: float, x: float) -> float:
    """The worst (ε, δ) pair P = (δ, (1−δ)a, (1−δ)b, 0), Q reversed: δ + (1 − δ)(a − e^x b)_+."""
    with mp.workdps(40):
        a = mp.exp(eps0) / (1 + mp.exp(eps0))
        return float(d + (1 - mp.mpf(d)) * max(mp.mpf(0), a - mp.exp(x) * (1 - a)))


def bounded_range_delta(eps0: float, x: float) -> float:
    with mp.workdps(40):
        if x >= eps0:
            return 0.0
        return float((1 - mp.exp((mp.mpf(x) - eps0) / 2)) ** 2 / (1 - mp.exp(-mp.mpf(eps0))))


CASES = [
    (ClosedPair("eps_delta", 0.1, extra=(1e-7,)), lambda x: eps_delta_delta(0.1, 1e-7, x)),
    (ClosedPair("eps_delta", 1.5, extra=(1e-3,)), lambda x: eps_delta_delta(1.5, 1e-3, x)),
    (ClosedPair("discrete_laplace", 0.5, extra=(1,)), lambda x: rr_delta(2.0, x)),  # Δ = 1: RR
    (ClosedPair("bounded_range", 0.2), lambda x: bounded_range_delta(0.2, x)),
    (ClosedPair("bounded_range", 3.0), lambda x: bounded_range_delta(3.0, x)),
]


@pytest.mark.parametrize(("pair", "exact"), CASES, ids=lambda c: getattr(c, "family", ""))
def test_each_family_is_bounded_by_its_own_profile(pair: ClosedPair, exact: object) -> None:
    xs = np.linspace(0.0, 2 * pair.level, 31)
    for direction in ("remove", "add"):
        low, high = profile_bounds(pair, xs, direction)
        for x, lo, hi in zip(xs, low, high, strict=True):
            want = exact(float(x))  # type: ignore[operator]  # a callable of CASES
            assert lo <= want <= hi, (pair, direction, x)


def test_the_gaussian_formula_at_the_level_is_the_planted_bug() -> None:
    """The old bounds (a Gaussian at σ = 0.1 for the (0.1, 1e-7) pair) are far above the pair's
    own profile: the check above fails them."""
    old_high = profile_bounds(ClosedPair("gaussian", 0.1), np.array([0.5]), "remove")[1][0]
    assert old_high > 10 * eps_delta_delta(0.1, 1e-7, 0.5)


@pytest.mark.parametrize(
    ("fixed", "admitted", "refused"),
    [
        (DPCost(0.1, 1e-7), [DPCost(0.05)], [DPCost(2.0), DPCost(0.2)]),
        (DiscreteLaplaceCost(0.5, 1), [DPCost(1.5)], [DPCost(2.5)]),
        (BoundedRangeCost(0.2), [DPCost(0.1)], [DPCost(0.2), BoundedRangeCost(0.3)]),
    ],
)
def test_the_filter_admits_only_dominated_rounds(
    fixed: object, admitted: list[object], refused: list[object]
) -> None:
    f = PLDFilter(2.0, 1e-5, fixed)  # type: ignore[arg-type]  # a cost
    for cost in admitted:
        assert f.accepts(cost)  # type: ignore[arg-type]
    for cost in refused:
        assert not f.accepts(cost)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fixed", "admitted", "refused"),
    [
        # randomised response at 0.5 over every 0.5-DP pair: the discrete Laplace at Δ/t <= 0.5
        (DPCost(0.5), [DiscreteLaplaceCost(2.0, 1), DiscreteLaplaceCost(8.0, 4)], []),
        # the discrete Laplace at Δ = 1 is randomised response at 1/t
        (DiscreteLaplaceCost(2.0, 1), [DPCost(0.5), BoundedRangeCost(0.5)], [DPCost(0.51)]),
        # bounded range at 1: a discrete Laplace whose loss spans 2Δ/t <= 1
        (BoundedRangeCost(1.0), [DiscreteLaplaceCost(8.0, 4)], [DiscreteLaplaceCost(1.5, 2)]),
        # the discrete Laplace at Δ = 4 is tighter than randomised response at Δ/t
        (DiscreteLaplaceCost(8.0, 4), [DiscreteLaplaceCost(16.0, 4)], [DPCost(0.5)]),
    ],
)
def test_secure_scalar_and_vector_laplace_rounds_share_a_filter(
    fixed: object, admitted: list[object], refused: list[object]
) -> None:
    """A secure session's scalar (discrete Laplace) and vector (randomised response) rounds."""
    f = PLDFilter(2.0, 1e-5, fixed)  # type: ignore[arg-type]  # a cost
    for cost in admitted:
        assert f.accepts(cost), cost  # type: ignore[arg-type]
    for cost in refused:
        assert not f.accepts(cost), cost  # type: ignore[arg-type]


def test_a_discrete_laplace_wider_than_one_is_not_randomised_response() -> None:
    """The planted twin of the Δ = 1 order: at Δ = 2 the pair is strictly below randomised
    response at Δ/t (exact profiles at 0), so treating it as one would admit rounds it does not
    dominate."""
    from tests.session.test_secure_pairs import laplace_delta

    assert laplace_delta(Fraction(4), 2, 1, 0.0) < rr_delta(0.5, 0.0) - 0.01
    assert laplace_delta(Fraction(2), 1, 1, 0.0) == pytest.approx(rr_delta(0.5, 0.0), rel=1e-12)
