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
from typing import Any

import mpmath as mp
import numpy as np

from expost import GaussianDP
from expost.filters import DPCost
from expost.filters.gaussian_dp import gdp_price, pure_dp_mu
from expost.guarantees import _gdp_log_delta, gdp_delta, gdp_mu_for_dp
from expost.rounding_registry import Rounded
from tests.rounding_audit import DIGITS, N, audit, audits, log_uniform

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


def ref_mu(eps: float) -> Mp:
    return 2 * mp.sqrt(2) * mp.erfinv(mp.tanh(mp.mpf(eps) / 2))


def _eps(seed: int) -> list[float]:
    return [float(e) for e in log_uniform(np.random.default_rng(seed), 1e-4, 30.0, N)]


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
    got = [gdp_price(DPCost(e))[0] for e in epss]  # type: ignore[index]
    twin = [float(2.0 * math.sqrt(2.0) * erfinv(math.tanh(e / 2.0))) ** 2 for e in epss]
    with mp.workdps(DIGITS):
        want = [ref_mu(e) ** 2 for e in epss]
    audit(got, want, rounded.up, ulps=2**14, twin=twin)
