"""Rounding audit of the Canonne–Kamath–Steinke conversions (issue 28): ``cks_delta`` and the eps
of ``cks_zcdp_to_dp`` are never below a 50-digit mpmath reference and ``cks_rho_for_dp`` never
above it, each within a few ulps; each check catches its planted round-to-nearest twin.

References (CKS 2020, Prop. 12 and its inversions), each an optimum over the order a > 1 found
at 50 digits from a bracketed root of its derivative:

- delta(rho, eps) = min_a exp(L(a)), L(a) = (a−1)(a·rho − eps) − log a + (a−1)·log(1 − 1/a);
- eps(rho, delta) = max(0, min_a E(a)), E(a) = a·rho + log(1 − 1/a) + (log(1/delta) − log a)/(a−1),
  since L(a) <= log delta is E(a) <= eps;
- rho(eps, delta) = max_a R(a), R(a) = (eps − log(1 − 1/a))/a − (log(1/delta) − log a)/(a(a−1)),
  the same inequality solved for rho.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import mpmath as mp
import numpy as np
import pytest

from expost.errors import InvalidParameter
from expost.guarantees import (
    ZCDP,
    _cks_log_delta,
    _cks_order,
    cks_delta,
    cks_rho_for_dp,
    cks_zcdp_to_dp,
    rho_for_dp,
    zcdp_to_dp,
)
from expost.rounding import SMALLEST
from expost.rounding_registry import Rounded
from tests.rounding_audit import DIGITS, EXTREMES, N, audit, audits, log_uniform

Mp = Any


def _argmin(slope: Callable[[Mp], Mp], a0: float) -> Mp:
    """The root of the increasing ``slope`` of a > 1, from the float order ``a0`` (a start only):
    bracketed in b = a − 1 by halving and doubling, then Illinois at 50 digits."""
    b0 = mp.mpf(max(a0 - 1.0, 1e-300))
    lo, hi = b0, b0
    while slope(1 + lo) > 0:
        lo /= 2
    while slope(1 + hi) < 0:
        hi *= 2
    if lo == hi:
        return 1 + lo
    return 1 + mp.findroot(lambda b: slope(1 + b), (lo, hi), solver="illinois", verify=False)


def ref_delta(rho: float, eps: float) -> Mp:
    r, e = mp.mpf(rho), mp.mpf(eps)

    def log_delta(a: Mp) -> Mp:
        return (a - 1) * (a * r - e) - mp.log(a) + (a - 1) * mp.log1p(-1 / a)

    a = _argmin(lambda a: (2 * a - 1) * r - e + mp.log1p(-1 / a), _cks_order(rho, eps))
    return min(mp.mpf(1), mp.exp(log_delta(a)))


def ref_eps(rho: float, delta: float, near: float) -> Mp:
    r, ell = mp.mpf(rho), -mp.log(mp.mpf(delta))

    def slope(a: Mp) -> Mp:  # E'(a)
        return r + 1 / (a * (a - 1)) - ((a - 1) / a + ell - mp.log(a)) / (a - 1) ** 2

    a = _argmin(slope, _cks_order(rho, near))
    return max(mp.mpf(0), a * r + mp.log(1 - 1 / a) + (ell - mp.log(a)) / (a - 1))


def ref_rho(eps: float, delta: float, near: float) -> Mp:
    e, ell = mp.mpf(eps), -mp.log(mp.mpf(delta))

    def minus_slope(a: Mp) -> Mp:  # −R'(a): R is largest where it changes sign
        first = (-1 / (a - 1) - e + mp.log(1 - 1 / a)) / a**2
        second = ((a - 1) + (ell - mp.log(a)) * (2 * a - 1)) / (a * (a - 1)) ** 2
        return -(first + second)

    a = _argmin(minus_slope, _cks_order(near, eps))
    return (e - mp.log(1 - 1 / a)) / a - (ell - mp.log(a)) / (a * (a - 1))


def _inputs(seed: int, n: int) -> list[tuple[float, float]]:
    """(rho, delta''): rho log-uniform in [1e-8, 1e3], delta'' in [1e-300, 0.5]."""
    rng = np.random.default_rng(seed)
    rhos, deltas = log_uniform(rng, 1e-8, 1e3, n), log_uniform(rng, 1e-300, 0.5, n)
    return [(float(r), float(d)) for r, d in zip(rhos, deltas, strict=True)]


@audits("cks_delta")
def test_cks_delta_is_an_upper_bound(rounded: Rounded) -> None:
    """eps between a half and the whole Bun–Steinke eps for a target delta down to 1e-300, so
    delta spans the floats; twin: the old float value, exp of the float exponent."""
    rng = np.random.default_rng(2820)
    cases = [
        (r, (r + 2.0 * math.sqrt(r * -math.log(d))) * float(rng.uniform(0.5, 1.0)))
        for r, d in _inputs(2821, N)
    ]
    got = [cks_delta(r, e) for r, e in cases]
    twin = [min(1.0, math.exp(_cks_log_delta(r, e))) for r, e in cases]
    with mp.workdps(DIGITS):
        want = [ref_delta(r, e) for r, e in cases]
    audit(got, want, rounded.up, ulps=2, twin=twin)


def test_cks_delta_underflow_gives_the_smallest_float() -> None:
    """Where delta is below every positive float (about 1e-153698 at rho = 1, eps = 1500) the
    answer is 2⁻¹⁰⁷⁴, never 0.0 (the old float value)."""
    for rho, eps in [(1.0, 1500.0), (1e-3, 50.0), (10.0, 3000.0)]:
        assert cks_delta(rho, eps) == SMALLEST
        assert math.exp(_cks_log_delta(rho, eps)) == 0.0  # the twin
        with mp.workdps(DIGITS):
            assert ref_delta(rho, eps) < SMALLEST


@audits("cks_zcdp_to_dp")
def test_cks_eps_is_an_upper_bound(rounded: Rounded) -> None:
    """eps of cks_zcdp_to_dp (its delta is `zcdp_to_dp`'s, audited there); twin: the
    reference rounded to nearest."""
    cases = _inputs(2822, N)
    got = [cks_zcdp_to_dp(ZCDP(r), d).eps for r, d in cases]
    with mp.workdps(DIGITS):
        want = [ref_eps(r, d, g) for (r, d), g in zip(cases, got, strict=True)]
    audit(got, want, rounded.up, ulps=2, twin=[float(w) for w in want])


@audits("cks_rho_for_dp")
def test_cks_rho_for_dp_is_a_lower_bound(rounded: Rounded) -> None:
    """eps log-uniform in [1e-3, 500], delta'' in [1e-300, 0.5]; twin: the reference rounded to
    nearest."""
    rng = np.random.default_rng(2823)
    epss, deltas = log_uniform(rng, 1e-3, 500.0, N // 2), log_uniform(rng, 1e-300, 0.5, N // 2)
    cases = [(float(e), float(d)) for e, d in zip(epss, deltas, strict=True)]
    got = [cks_rho_for_dp(e, d) for e, d in cases]
    with mp.workdps(DIGITS):
        want = [ref_rho(e, d, g) for (e, d), g in zip(cases, got, strict=True)]
    audit(got, want, rounded.up, ulps=2, twin=[float(w) for w in want], n=N // 2)


DELTAS = (5e-324, 1e-300, 1e-6, 0.5)


def test_cks_delta_at_extreme_arguments_is_safe() -> None:
    """Subnormal to the largest rho and eps: in [2⁻¹⁰⁷⁴, 1] (2⁻¹⁰⁷⁴ where the exact delta is below
    every positive float), never a raw error, and never below the 50-digit reference where that
    reference can find its order (1e-14 < a − 1 < 1e40: not clipped, and 50 digits hold 1/a)."""
    compared = 0
    with mp.workdps(DIGITS):
        for r in EXTREMES:
            for e in (0.0, *EXTREMES):
                got = cks_delta(r, e)
                assert SMALLEST <= got <= 1.0
                if 1e-14 < _cks_order(r, e) - 1.0 < 1e40:
                    assert mp.mpf(got) >= ref_delta(r, e), (r, e)
                    compared += 1
    assert compared >= 10  # the others: the range check only


def test_cks_conversions_at_extreme_arguments() -> None:
    """Between Bun–Steinke and exact: CKS's eps never above `zcdp_to_dp`'s and its rho never below
    `rho_for_dp`'s (both valid for CKS); an eps beyond the floats is refused naming the guarantee."""
    for r in EXTREMES:
        for d in DELTAS:
            bun_steinke = zcdp_to_dp(ZCDP(r), d).eps
            assert 0.0 <= cks_zcdp_to_dp(ZCDP(r), d).eps <= bun_steinke
    for convert in (zcdp_to_dp, cks_zcdp_to_dp):  # rho + 2·sqrt(rho·log 2) > max float
        with pytest.raises(InvalidParameter, match=r"^guarantee="):
            convert(ZCDP(sys.float_info.max), 0.5)
    for e in EXTREMES:
        for d in DELTAS:
            assert cks_rho_for_dp(e, d) >= rho_for_dp(e, d)
