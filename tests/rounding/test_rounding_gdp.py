"""Rounding audit of the Gaussian-DP family (issue 28): ``gdp_delta`` and ``GaussianDP.eps_for``
never below, ``gdp_mu_for_dp`` never above, a 50-digit mpmath reference, and the GDP filter's
``pure_dp_mu`` and price never below theirs; each within its stated margin (gdp_delta: a
relative 1e-6 plus 2 ulps, about 2³³ ulps; pure_dp_mu: 2⁻⁴⁴, the price 2⁻⁴⁰ on top); each
check catches its planted round-to-nearest twin.

References (Dong–Roth–Su Cor. 2.13; THEORY §9): delta_mu(eps) = Φ(−eps/mu + mu/2) −
e^eps·Φ(−eps/mu − mu/2) at 50 digits (mpmath ``ncdf``); its inverses by a bracketed root at 50
digits; mu(eps) = 2·sqrt(2)·erfinv(tanh(eps/2)).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any

import mpmath as mp
import numpy as np

from expost import GaussianDP
from expost.filters import BoundedRangeCost, DPCost, ExPostCost
from expost.filters.gaussian_dp import gdp_price, pure_dp_mu
from expost.guarantees import _gdp_log_delta, gdp_delta, gdp_mu_for_dp
from expost.rounding_registry import Rounded
from tests.rounding_audit import DIGITS, EXTREMES, N, audit, audits, log_uniform

Mp = Any
MARGIN_ULPS = 2**34  # gdp_delta's relative 1e-6 is 2^33.2 ulps; its inverses inherit it
FEW = N // 4  # inputs of the inverses: each reference is a 50-digit root


def ref_delta(mu: float, eps: float) -> Mp:
    m, e = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)


def _root(f: Any, near: float) -> Mp:
    """The root of the monotone ``f`` near ``near``: bracketed by factors 1 ± 2⁻ᵏ, then Illinois."""
    x = mp.mpf(near)
    lo, hi, k = x * (1 - mp.mpf(2) ** -30), x * (1 + mp.mpf(2) ** -30), 30
    while f(lo) * f(hi) > 0:
        k -= 4
        lo, hi = x * (1 - mp.mpf(2) ** -k), x * (1 + mp.mpf(2) ** -k)
    return mp.findroot(f, (lo, hi), solver="illinois", verify=False)


def _pairs(seed: int, n: int) -> list[tuple[float, float]]:
    """(mu, eps): mu log-uniform in [0.05, 20], eps up to mu² + 10·mu (delta down to ~1e-25)."""
    rng = np.random.default_rng(seed)
    mus = log_uniform(rng, 0.05, 20.0, n)
    eps = rng.uniform(0.0, 1.0, n) * (mus * mus + 10.0 * mus)
    return [(float(m), float(e)) for m, e in zip(mus, eps, strict=True)]


@audits("guarantees.gdp_delta")
def test_gdp_delta_is_an_upper_bound(rounded: Rounded) -> None:
    """Twin: the float value exp(log delta) without the margin."""
    cases = _pairs(2830, N)
    got = [gdp_delta(m, e) for m, e in cases]
    twin = [math.exp(_gdp_log_delta(m, e)) for m, e in cases]
    with mp.workdps(DIGITS):
        want = [ref_delta(m, e) for m, e in cases]
    audit(got, want, rounded.up, ulps=MARGIN_ULPS, twin=twin)


def _targets(seed: int, n: int) -> list[tuple[float, float]]:
    """(mu, delta) with delta = delta_mu(eps) at a random eps of `_pairs`, kept in (1e-25, 0.5)."""
    out = []
    for m, e in _pairs(seed, 3 * n):
        d = math.exp(_gdp_log_delta(m, e))
        if 1e-25 < d < 0.5 and e > 1e-3:
            out.append((m, d))
    assert len(out) >= n
    return out[:n]


@audits("GaussianDP.eps_for")
def test_gdp_eps_for_is_an_upper_bound(rounded: Rounded) -> None:
    """The smallest eps with delta_mu(eps) <= delta; twin: the reference rounded to nearest."""
    cases = _targets(2831, FEW)
    got = [GaussianDP(m).eps_for(d) for m, d in cases]
    with mp.workdps(DIGITS):
        want = [
            _root(lambda e, m=m, d=d: ref_delta(m, e) - d, g)
            for (m, d), g in zip(cases, got, strict=True)
        ]
        # the margin is relative in delta: in eps it is scaled by delta/(eps·|delta'(eps)|),
        # delta'(eps) = −e^eps·Φ(−eps/mu − mu/2)
        scale = [
            float(d / (w * mp.exp(w) * mp.ncdf(-w / m - mp.mpf(m) / 2)))
            for (m, d), w in zip(cases, want, strict=True)
        ]
    twin = [float(w) for w in want]
    audit(got, want, rounded.up, ulps=MARGIN_ULPS, twin=twin, scale=scale, n=FEW)


@audits("guarantees.gdp_mu_for_dp")
def test_gdp_mu_for_dp_is_a_lower_bound(rounded: Rounded) -> None:
    """The largest mu with delta_mu(eps) <= delta; twin: the reference rounded to nearest."""
    deltas, levels = _targets(2832, FEW), _pairs(2833, FEW)
    cases = [(max(e, 1e-2), d) for (_, d), (_, e) in zip(deltas, levels, strict=True)]
    got = [gdp_mu_for_dp(e, d) for e, d in cases]
    with mp.workdps(DIGITS):
        want = [
            _root(lambda m, e=e, d=d: ref_delta(m, e) - d, g)
            for (e, d), g in zip(cases, got, strict=True)
        ]
    audit(got, want, rounded.up, ulps=MARGIN_ULPS, twin=[float(w) for w in want], n=FEW)


def ref_mu(eps: float | Fraction) -> Mp:
    """mu(eps) at 50 digits: 2·sqrt(2)·erfinv(tanh(eps/2)) up to eps = 30; beyond, where
    tanh(eps/2) is 1 at 50 digits, −2·Φ⁻¹(1/(1 + e^eps)) as the root of log Φ(−x/2)."""
    e = mp.mpf(eps.numerator) / eps.denominator if isinstance(eps, Fraction) else mp.mpf(eps)
    if e <= 30:
        return 2 * mp.sqrt(2) * mp.erfinv(mp.tanh(e / 2))
    target = -(e + mp.log1p(mp.exp(-e)))
    guess = 2 * mp.sqrt(2 * e)
    return _root(lambda x: mp.log(mp.ncdf(-x / 2)) - target, float(guess))


_EXTREME_EPS = [x for x in EXTREMES if x <= 1e300] + [2.0**-20, 2.0**-21, 1.0, 700.0, 709.78, 1e3]
"""Subnormal to 1e300 (beyond, mu(eps)² overflows: `test_gdp_price_overflows_to_inf`)."""


def _eps(seed: int) -> list[float]:
    drawn = log_uniform(np.random.default_rng(seed), 1e-4, 30.0, N)
    return [float(e) for e in drawn] + _EXTREME_EPS


@audits("filters.gaussian_dp.pure_dp_mu")
def test_pure_dp_mu_is_an_upper_bound(rounded: Rounded) -> None:
    """Within 2⁻⁴⁴ relative (2⁹ ulps) plus scipy's few ulps; twin: 2·sqrt(2)·erfinv(tanh(eps/2))
    in floats."""
    from scipy.special import erfinv

    epss = _eps(2834)
    got = [pure_dp_mu(e) for e in epss]
    twin = [float(2.0 * math.sqrt(2.0) * erfinv(math.tanh(e / 2.0))) for e in epss]
    with mp.workdps(DIGITS):
        want = [ref_mu(e) for e in epss]
    audit(got, want, rounded.up, ulps=2**9 + 8, twin=twin)


@audits("filters.gaussian_dp.gdp_price")
def test_gdp_price_of_a_pure_dp_round_is_an_upper_bound(rounded: Rounded) -> None:
    """mu(eps)² of DPCost(eps), within about 2⁻⁴⁰ + 2⁻⁴³ relative; twin: the float mu squared."""
    from scipy.special import erfinv

    epss = _eps(2835)
    costs = [DPCost(e) for e in epss] + [BoundedRangeCost(e) for e in _EXTREME_EPS]
    got = [gdp_price(c)[0] for c in costs]  # type: ignore[index]
    halves = [Fraction(c.eps) / (2 if isinstance(c, BoundedRangeCost) else 1) for c in costs]
    twin = [float(2.0 * math.sqrt(2.0) * erfinv(math.tanh(float(h) / 2.0))) ** 2 for h in halves]
    with mp.workdps(DIGITS):
        want = [ref_mu(h) ** 2 for h in halves]
    audit(got, want, rounded.up, ulps=2**14, twin=twin)


def test_gdp_price_overflows_to_inf_and_is_never_zero() -> None:
    """mu(eps)² beyond the floats is +inf (the only safe float); no positive eps costs 0."""
    for e in (*EXTREMES, sys.float_info.max):
        for cost in (DPCost(e), BoundedRangeCost(e), ExPostCost(e, eps_max=e)):
            price = gdp_price(cost)
            assert price is not None
            assert price[0] > 0.0
    for e in (1e308, sys.float_info.max):  # mu² ≈ 8·eps
        assert gdp_price(DPCost(e)) == (math.inf, 0.0)
