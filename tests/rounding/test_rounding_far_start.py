"""`up_ratio` / `down_ratio` are bounded by construction, whatever their float start (issue 37).

A Brownian round at time 1e308 priced Δ²/(2t): the float start 1/(2·1e308) underflowed to 0.0
and the old loop stepped up one float at a time, ~1e15 steps to 5e-309; with Δ = 1.4e154 the start
was inf/inf = NaN. Every answer here is checked against the exact `Fraction`: the smallest float
>= (largest <=) the rational, by exact comparison with its neighbour.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import pytest

from expost.filters._exact import rho_of_brownian
from expost.guarantees import rho_of_eps
from expost.rounding import down_ratio, up_ratio

BIG = sys.float_info.max


def _is_smallest_above(x: float, q: Fraction) -> bool:
    """x is the smallest float >= q (inf when q is past the largest float)."""
    below = math.nextafter(x, -math.inf)
    if math.isinf(x):
        return q > Fraction(BIG) and below == BIG
    return Fraction(x) >= q and (math.isinf(below) or Fraction(below) < q)


@pytest.mark.parametrize(
    ("time", "sensitivity"),
    [(1e308, 1.0), (BIG, 1.0), (1e308, 1.4e154), (1e-300, 1.4e154), (5e-324, BIG), (1.0, 1e-160)],
)
def test_a_brownian_price_at_extreme_arguments_is_exact_and_quick(
    time: float, sensitivity: float
) -> None:
    exact = Fraction(sensitivity) ** 2 / (2 * Fraction(time))
    assert _is_smallest_above(rho_of_brownian(time, sensitivity), exact)


@pytest.mark.parametrize("eps", [1.4e154, 1e300, BIG, 1e-200, 5e-324])
def test_an_eps_squared_price_at_extreme_arguments_is_exact(eps: float) -> None:
    assert _is_smallest_above(rho_of_eps(eps), Fraction(eps) ** 2 / 2)


@pytest.mark.parametrize(
    "start", [0.0, -0.0, 5e-324, 1.0, -BIG, BIG, math.inf, -math.inf, 1e-300, 12345.0]
)
@pytest.mark.parametrize(
    "q", [Fraction(1, 3), Fraction(1, 2 * 10**308), Fraction(10**308) * 7, Fraction(-5, 7)]
)
def test_any_start_gives_the_exact_answer(start: float, q: Fraction) -> None:
    up = up_ratio(start, q.numerator, q.denominator)
    assert _is_smallest_above(up, q)
    down = down_ratio(start, q.numerator, q.denominator)
    assert _is_smallest_above(-down, -q)


def test_planted_twin_the_old_unbounded_walk_is_still_stepping() -> None:
    """The old loop (kept here only) from the underflowed start: after a million steps it is
    still nowhere near 5e-309, which the bounded search returns at once."""
    num, den = 1, 2 * 10**308
    x, steps = 0.0, 0
    while Fraction(x) < Fraction(num, den) and steps < 10**6:
        x, steps = math.nextafter(x, math.inf), steps + 1
    assert steps == 10**6
    assert Fraction(x) < Fraction(num, den)
    assert _is_smallest_above(up_ratio(0.0, num, den), Fraction(num, den))
