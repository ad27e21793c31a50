"""Rounding audit of the conversions, compositions, filter budgets and odometers (issue 21).

Every value is compared with a 50-digit mpmath reference computed here from the paper's
formula: none on the unsafe side (eps, delta, rho and bounds up; budgets down), none more than
a few ulps away, and each check also runs on the planted round-to-nearest twin (the plain float
formula), which it must catch. Inputs: a seeded numpy draw, log-uniform over the whole valid
domain (delta down to 1e-300, eps up to hundreds, rho over twenty decades).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import mpmath as mp
import numpy as np
import pytest

from expost.filters import ApproxDPFilter, UnifiedFilter
from expost.guarantees import (
    ZCDP,
    ApproxDP,
    ExPost,
    PureDP,
    compose_ex_post,
    compose_zcdp,
    dp_to_pdp,
    dp_to_zcdp,
    rho_for_dp,
    zcdp_to_dp,
)
from expost.odometers import FilterOdometer
from expost.rounding import (
    down,
    down_exact,
    down_mp,
    nudge_down,
    nudge_up,
    sum_down,
    sum_up,
    up,
    up_array,
    up_exact,
    up_mp,
)
from expost.rounding_registry import Rounded
from tests.rounding_audit import DIGITS, N, audit, audits, log_uniform

Mp = Any  # an mpmath number
RNG = np.random.default_rng(20261125)
EPS = log_uniform(RNG, 1e-6, 500.0, N)
DELTA = log_uniform(RNG, 1e-300, 0.5, N)
RHO = log_uniform(RNG, 1e-10, 1e4, N)


def _mp(x: float) -> Mp:
    return mp.mpf(x)


def _ell(delta: float) -> Mp:
    return -mp.log(_mp(delta))


def _rho_star(eps: float, delta: float) -> Mp:
    return (mp.sqrt(_ell(delta) + _mp(eps)) - mp.sqrt(_ell(delta))) ** 2


def _bs_eps(rho: float, delta: float) -> Mp:
    return _mp(rho) + 2 * mp.sqrt(_mp(rho) * _ell(delta))


@audits("zcdp_to_dp")
def test_zcdp_to_dp_eps_and_delta_are_upper_bounds(rounded: Rounded) -> None:
    got = [zcdp_to_dp(ZCDP(r, 1e-7), d) for r, d in zip(RHO, DELTA, strict=True)]
    with mp.workdps(DIGITS):
        want = [_bs_eps(r, d) for r, d in zip(RHO, DELTA, strict=True)]
        twin = [r + 2.0 * math.sqrt(r * math.log(1.0 / d)) for r, d in zip(RHO, DELTA, strict=True)]
        audit([g.eps for g in got], want, rounded.up, ulps=4, twin=twin)
        d_want = [1e-7 + (1 - _mp(1e-7)) * _mp(d) for d in DELTA]
        d_twin = [1e-7 + (1.0 - 1e-7) * d for d in DELTA]
        audit([g.delta for g in got], d_want, rounded.up, ulps=1, twin=d_twin)


@audits("rho_for_dp")
def test_rho_for_dp_is_a_lower_bound_of_rho_star(rounded: Rounded) -> None:
    got = [rho_for_dp(e, d) for e, d in zip(EPS, DELTA, strict=True)]
    twin = [
        (e / (math.sqrt(math.log(1 / d) + e) + math.sqrt(math.log(1 / d)))) ** 2
        for e, d in zip(EPS, DELTA, strict=True)
    ]
    with mp.workdps(DIGITS):
        want = [_rho_star(e, d) for e, d in zip(EPS, DELTA, strict=True)]
        audit(got, want, rounded.up, ulps=6, twin=twin)


@audits("UnifiedFilter.from_dp", "ApproxDPFilter.budget")
def test_filter_budgets_from_dp_are_never_above_rho_star(rounded: Rounded) -> None:
    """The "Done when": `UnifiedFilter.from_dp(eps, delta).rho` and `ApproxDPFilter` budgets."""
    pairs = list(zip(EPS, DELTA, strict=True))
    if rounded.name == "UnifiedFilter.from_dp":
        got = [UnifiedFilter.from_dp(e, d).rho for e, d in pairs]
    else:
        got = [ApproxDPFilter(e, 1e-9, d).budget for e, d in pairs]
    with mp.workdps(DIGITS):
        want = [_rho_star(e, d) for e, d in pairs]
        twin = [float(w) for w in want]
        audit(got, want, rounded.up, ulps=6, twin=twin)


@audits("dp_to_zcdp")
def test_dp_to_zcdp_rho_is_eps_squared_over_two_rounded_up(rounded: Rounded) -> None:
    got = [dp_to_zcdp(PureDP(e)).rho for e in EPS]
    exact = [Fraction(e) ** 2 / 2 for e in EPS]
    assert all(up_exact(q) == g for q, g in zip(exact, got, strict=True))  # the nearest float up
    with mp.workdps(DIGITS):
        audit(got, [_mp(e) ** 2 / 2 for e in EPS], rounded.up, ulps=1, twin=[e**2 / 2 for e in EPS])


@audits("dp_to_pdp")
def test_dp_to_pdp_delta_is_an_upper_bound(rounded: Rounded) -> None:
    small = [d * min(e, 1.0) for d, e in zip(DELTA, EPS, strict=True)]  # 2·delta/(eps·e^eps) < 1
    got = [dp_to_pdp(ApproxDP(e, d)) for e, d in zip(EPS, small, strict=True)]
    assert all(g.eps == 2.0 * e for g, e in zip(got, EPS, strict=True))  # exact doubling
    twin = [2.0 * d / (e * math.exp(e)) for e, d in zip(EPS, small, strict=True)]
    with mp.workdps(DIGITS):
        want = [2 * _mp(d) / (_mp(e) * mp.exp(_mp(e))) for e, d in zip(EPS, small, strict=True)]
        audit([g.delta for g in got], want, rounded.up, ulps=6, twin=twin)


@audits("compose_zcdp", "compose_ex_post")
def test_compositions_add_exactly_then_round_up(rounded: Rounded) -> None:
    rhos = log_uniform(np.random.default_rng(4), 1e-10, 1e4, 4 * N).reshape(N, 4)
    if rounded.name == "compose_zcdp":
        got = [compose_zcdp(*(ZCDP(r) for r in row)).rho for row in rhos]
    else:
        got = [compose_ex_post(*(ExPost(r, 1e-9) for r in row)).bound for row in rhos]
    twin = [math.fsum(row) for row in rhos]
    with mp.workdps(DIGITS):
        want = [mp.fsum(_mp(r) for r in row) for row in rhos]
        audit(got, want, rounded.up, ulps=1, twin=twin)


@audits("FilterOdometer.bound_at")
def test_filter_odometer_bound_is_an_upper_bound(rounded: Rounded) -> None:
    odometers = [FilterOdometer(e, 1e-9, d) for e, d in zip(EPS[:200], DELTA[:200], strict=True)]
    v = log_uniform(np.random.default_rng(5), 1e-8, 1e4, N).reshape(200, -1)
    got = np.concatenate([o.bound_at(row) for o, row in zip(odometers, v, strict=True)])

    def line(o: FilterOdometer, vv: float, ell: Mp) -> Mp:
        y = _mp(o.y_star)
        return mp.sqrt(y * ell / 2) + (mp.sqrt(ell / (2 * y)) + mp.mpf(1) / 2) * _mp(vv)

    twin = np.concatenate(
        [
            math.sqrt(o.y_star * math.log(1 / o.delta_second) / 2.0)
            + (math.sqrt(math.log(1 / o.delta_second) / (2.0 * o.y_star)) + 0.5) * row
            for o, row in zip(odometers, v, strict=True)
        ]
    )
    with mp.workdps(DIGITS):
        want = [
            line(o, vv, _ell(o.delta_second))
            for o, row in zip(odometers, v, strict=True)
            for vv in row
        ]
        audit(list(got), want, rounded.up, ulps=14, twin=list(twin))


# ----------------------------------------------------------------------------- the module itself


def test_exact_rounding_is_the_nearest_float_on_each_side() -> None:
    rng = np.random.default_rng(1)
    nums = rng.integers(-(2**62), 2**62, N)
    dens = rng.integers(1, 2**62, N)
    for a, b in zip(nums, dens, strict=True):
        q = Fraction(int(a), int(b)) * Fraction(10) ** int(rng.integers(-300, 300))
        hi, lo = up_exact(q), down_exact(q)
        assert Fraction(lo) <= q <= Fraction(hi)
        assert math.nextafter(lo, math.inf) >= hi  # adjacent (or equal when q is a float)
    assert up_exact(Fraction(10) ** 400) == math.inf
    assert down_exact(Fraction(10) ** 400) == 1.7976931348623157e308
    assert up_exact(Fraction(1, 10**400)) == 5e-324
    assert down_exact(Fraction(1, 10**400)) == 0.0
    assert float(Fraction(1, 3)) != up_exact(Fraction(1, 3))  # nearest is below: the twin


def test_sums_and_mpmath_ends_round_outward() -> None:
    xs = [0.1, 0.2, 0.3, 1e-30, -1e-31]
    exact = sum(map(Fraction, xs), Fraction(0))
    assert Fraction(sum_down(xs)) <= exact <= Fraction(sum_up(xs))
    assert math.nextafter(sum_down(xs), math.inf) == sum_up(xs)
    assert math.fsum(xs) in (sum_down(xs), sum_up(xs))
    with mp.workdps(60):
        third = mp.mpf(1) / 3
        assert down_mp(third) < third < up_mp(third)
    interval = mp.iv.mpf([1, 2])
    assert (down_mp(interval), up_mp(interval)) == (1.0, 2.0)
    assert up_mp(mp.mpf("inf")) == math.inf


def test_ulp_moves_and_nudges() -> None:
    assert up(1.0, 2) == math.nextafter(math.nextafter(1.0, 2.0), 2.0)
    assert up(math.inf) == math.inf
    assert list(up_array([0.0, 1.0])) == [5e-324, math.nextafter(1.0, 2.0)]
    target = Fraction(1, 10)  # the nearest floats on each side are what the nudges must find
    start = up_exact(target)
    for ulps in range(6):  # from a few ulps on either side: exactly the nearest float
        for x in (up(start, ulps), down(start, ulps)):
            found = nudge_up(x, lambda y: Fraction(y) >= target)
            assert Fraction(found) >= target > Fraction(math.nextafter(found, 0.0))
            found = nudge_down(x, lambda y: Fraction(y) <= target)
            assert Fraction(found) <= target < Fraction(math.nextafter(found, 1.0))
    assert Fraction(nudge_down(0.2, lambda y: Fraction(y) <= target)) <= target  # far: still safe
    with pytest.raises(ValueError, match="NaN"):
        up(math.nan)
