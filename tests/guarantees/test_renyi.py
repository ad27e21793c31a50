"""The RDP curves of `expost.rdp_curves` against the divergences they bound (THEORY §12; issue 35).

- The Poisson-subsampled Gaussian against direct numerical integration (mpmath quad, 30 digits)
  of the Rényi divergence of the mixture pair in *both* directions, remove
  D_α((1−q)N(1,σ²) + qN(0,σ²)‖...) and add: ours >= each, equal to the remove direction at
  integer orders (MTZ 2019 §3.3 is exact there), and >= both at fractional orders (the convexity
  bound). Twins the same checks reject: the add direction alone, and the value at the order
  rounded down (Rényi divergence grows with the order).
- Randomised response and the Laplace mechanism against their definitions at 50 digits (a
  two-point sum; a quad of p^α·q^(1−α)); twin: the Laplace curve used for a general pure-DP
  round (below randomised response's, so it undercuts some eps-DP mechanism).
- The exact pure-DP curve never above the old price min(eps, α·eps²/2), and up to 34% below it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath as mp
import numpy as np
import pytest

from expost.errors import InvalidParameter
from expost.rdp_curves import MAX_ORDER, laplace_renyi, pure_dp_renyi, subsampled_gaussian_renyi
from expost.rounding import up_exact

Mp = Any
QUAD_DIGITS = 30


def _quad(f: Any, points: list[Mp]) -> Mp:
    value, error = mp.quad(f, points, error=True)
    assert error < mp.mpf(10) ** (-QUAD_DIGITS + 10) * value  # the quad converged
    return value


def _mixture_divergences(q: float, sigma: float, alpha: float) -> tuple[Mp, Mp]:
    """(remove, add): D_α(M‖Q) and D_α(Q‖M) for M = (1−q)Q + qP, P = N(1, σ²), Q = N(0, σ²)."""
    s, a, w = mp.mpf(sigma), mp.mpf(alpha), mp.mpf(q)

    def mix(x: Mp) -> Mp:
        return (1 - w) * mp.npdf(x, 0, s) + w * mp.npdf(x, 1, s)

    points = [-mp.inf, -12 * s, 0, 1, 1 + 12 * s, mp.inf]
    remove = _quad(lambda x: mix(x) ** a * mp.npdf(x, 0, s) ** (1 - a), points)
    add = _quad(lambda x: mp.npdf(x, 0, s) ** a * mix(x) ** (1 - a), points)
    return mp.log(remove) / (a - 1), mp.log(add) / (a - 1)


CASES = [  # (q, σ, α): integer and fractional orders, small and large q
    (0.01, 1.0, 2.0),
    (0.01, 1.0, 8.0),
    (0.3, 1.5, 4.0),
    (0.05, 1.0, 8.0),
    (0.01, 1.0, 2.5),
    (0.01, 1.0, 5.5),
    (0.1, 2.0, 3.5),
    (0.2, 0.8, 2.5),
    (0.5, 1.0, 1.5),
]


def _ours(q: float, sigma: float, alpha: float) -> float:
    return subsampled_gaussian_renyi(up_rho(sigma), q, alpha)


def up_rho(sigma: float) -> float:
    """1/(2σ²) for the σ of the cases (powers of two and simple decimals: exact enough to be
    the float rounded up; checked)."""
    rho = 1.0 / (2.0 * sigma * sigma)
    while Fraction(rho) < 1 / (2 * Fraction(sigma) ** 2):
        rho = math.nextafter(rho, math.inf)
    return rho


@pytest.fixture(scope="module")
def divergences() -> dict[tuple[float, float, float], tuple[Mp, Mp]]:
    with mp.workdps(QUAD_DIGITS):
        return {c: _mixture_divergences(*c) for c in CASES}


def test_subsampled_gaussian_bounds_both_directions(divergences: dict[Any, Any]) -> None:
    with mp.workdps(QUAD_DIGITS):
        for case, (remove, add) in divergences.items():
            ours = mp.mpf(_ours(*case))
            assert ours >= remove, case
            assert ours >= add, case
            assert add <= remove, case  # MTZ 2019: the remove direction is the larger
            if float(case[2]).is_integer():  # exact at integer orders: within rounding
                assert ours - remove <= 1e-14 * remove, case


def test_the_checks_reject_the_add_direction_and_a_rounded_down_order(
    divergences: dict[Any, Any],
) -> None:
    """Twins: pricing a round at its add direction only, or at ⌊α⌋ (a fractional order's
    neighbour below), each undercuts the remove direction somewhere."""
    with mp.workdps(QUAD_DIGITS):
        add_only = [add < remove for remove, add in divergences.values()]
        assert any(add_only)
        floor_twin = [
            mp.mpf(_ours(q, s, math.floor(a))) < divergences[(q, s, a)][0]
            for q, s, a in CASES
            if not float(a).is_integer() and a > 2.0
        ]
        assert floor_twin
        assert all(floor_twin)


def test_subsampled_gaussian_edges() -> None:
    rho = up_rho(1.0)
    assert subsampled_gaussian_renyi(rho, 1.0, 3.0) == 1.5  # q = 1: the Gaussian's α·rho
    assert subsampled_gaussian_renyi(rho, 0.5, 2.0 * MAX_ORDER) == 2.0 * MAX_ORDER * rho
    for a in (1.5, 2.0, 7.5, 64.0):  # never above the unsampled Gaussian
        assert subsampled_gaussian_renyi(rho, 0.3, a) <= a * rho
    # more sampling, more loss; higher order, more loss
    orders = [1.25, 2.0, 2.5, 3.0, 8.0, 16.0]
    values = [subsampled_gaussian_renyi(rho, 0.01, a) for a in orders]
    assert values == sorted(values)
    assert subsampled_gaussian_renyi(rho, 0.01, 8.0) < subsampled_gaussian_renyi(rho, 0.02, 8.0)
    bad_calls: list[Callable[[], float]] = [
        lambda: subsampled_gaussian_renyi(rho, 0.0, 2.0),
        lambda: subsampled_gaussian_renyi(rho, 1.5, 2.0),
        lambda: subsampled_gaussian_renyi(rho, 0.1, 1.0),
        lambda: subsampled_gaussian_renyi(-1.0, 0.1, 2.0),
    ]
    for bad in bad_calls:
        with pytest.raises(InvalidParameter):
            bad()


def _rr_definition(eps: float, alpha: float) -> Mp:
    """D_α of randomised response from its two-point laws, 50 digits."""
    e, a = mp.mpf(eps), mp.mpf(alpha)
    p = [mp.exp(e) / (1 + mp.exp(e)), 1 / (1 + mp.exp(e))]
    q = [p[1], p[0]]
    return mp.log(sum(x**a * y ** (1 - a) for x, y in zip(p, q, strict=True))) / (a - 1)


def _laplace_definition(eps: float, alpha: float) -> Mp:
    """D_α(Lap(eps, 1)‖Lap(0, 1)) by quad of p^α·q^(1−α), 50 digits."""
    e, a = mp.mpf(eps), mp.mpf(alpha)

    def f(x: Mp) -> Mp:
        return (mp.exp(-abs(x - e)) / 2) ** a * (mp.exp(-abs(x)) / 2) ** (1 - a)

    return mp.log(mp.quad(f, [-mp.inf, 0, e, mp.inf])) / (a - 1)


PURE_CASES = [(e, a) for e in (0.01, 0.1, 0.5, 1.0, 3.0) for a in (1.1, 2.0, 4.5, 16.0, 200.0)]
LAPLACE_CASES = [(e, a) for e in (0.01, 0.5, 3.0) for a in (1.1, 4.5, 200.0)]  # quads: fewer


def test_pure_dp_and_laplace_against_their_definitions() -> None:
    """Ours >= the definition and within a relative 1e-14 of it (a few ulps); Laplace below
    randomised response, which is the worst eps-DP pair."""
    with mp.workdps(50):
        for e, a in PURE_CASES:
            rr = _rr_definition(e, a)
            assert rr <= mp.mpf(pure_dp_renyi(e, a)) <= rr * (1 + mp.mpf(1e-14)), (e, a)
        for e, a in LAPLACE_CASES:
            lap = _laplace_definition(e, a)
            assert lap <= mp.mpf(laplace_renyi(e, a)) <= lap * (1 + mp.mpf(1e-14)), (e, a)
            assert lap < _rr_definition(e, a)


def test_the_laplace_curve_is_no_price_for_a_general_pure_dp_round() -> None:
    """Twin: charging an eps-DP round the Laplace curve is caught by the randomised-response
    definition at every case."""
    with mp.workdps(50):
        assert all(mp.mpf(laplace_renyi(e, a)) < _rr_definition(e, a) for e, a in PURE_CASES)


def test_exact_pure_dp_price_is_never_above_the_old_one_and_up_to_a_third_below() -> None:
    """Exactly (50 digits) randomised response's ε_α <= min(eps, α·eps²/2) on a grid, and the
    float price too; the largest gain on the grid is 33.6% (at α·eps near 2)."""
    gains = []
    with mp.workdps(50):
        for e in np.geomspace(1e-3, 20.0, 40):
            for a in np.geomspace(1.01, 1e4, 40):
                old = min(Fraction(float(e)), Fraction(float(a)) * Fraction(float(e)) ** 2 / 2)
                old_mp = mp.mpf(old.numerator) / old.denominator
                assert _rr_definition(float(e), float(a)) <= old_mp
                new = pure_dp_renyi(float(e), float(a))
                assert new <= up_exact(old)  # the old float price
                gains.append(1.0 - new / float(old))
    assert 0.33 < max(gains) < 0.34


def test_pure_dp_extremes_stay_finite_and_safe() -> None:
    assert pure_dp_renyi(1e-200, 2.0) > 0.0  # the tiny bound α·eps²/2, rounded up
    assert pure_dp_renyi(50.0, 2.0) == 50.0  # at most eps
    assert 0.99 < pure_dp_renyi(1.0, 1e6) <= 1.0
    with pytest.raises(InvalidParameter):
        pure_dp_renyi(0.0, 2.0)
    with pytest.raises(InvalidParameter):
        laplace_renyi(1.0, 0.5)
