"""Rounding audit of the mechanisms' RDP curves and the one-order RDP filter (THEORY §12; issue 35).

`expost.rdp_curves`'s curves are interval enclosures rounded up, within a few ulps: audited against a
50-digit evaluation of the same formula (randomised response's and Mironov's Laplace closed
forms; the subsampled Gaussian's sum Σ C(n,k)(1−q)^(n−k) q^k e^((k²−k)·rho) with exact binomials
and one exp per term, the convexity line between integer orders). `RenyiFilter.budget` (CKS
solved for the RDP level) never above its 50-digit value. Each check rejects its planted
round-to-nearest twin.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np

from expost.filters.renyi import RenyiFilter
from expost.rdp_curves import laplace_renyi, pure_dp_renyi, subsampled_gaussian_renyi
from expost.rounding_registry import Rounded
from tests.rounding_audit import DIGITS, Mp, N, audit, audits, log_uniform


def ref_pure_dp(eps: float, alpha: float) -> Mp:
    """min of randomised response's ε_α and α·eps²/2 (the two bounds the price is the smaller of).

    The log of a ratio within ~eps² of 1 (and α − 1 near 0) cancels about 2·log10(1/eps) +
    log10(1/(α−1)) digits: they are added to the working precision."""
    with mp.workdps(mp.mp.dps + _cancelled(eps, alpha)):
        e, a = mp.mpf(eps), mp.mpf(alpha)
        rr = mp.log((mp.exp(a * e) + mp.exp((1 - a) * e)) / (1 + mp.exp(e))) / (a - 1)
        return +min(rr, a * e * e / 2)


def _cancelled(eps: float, alpha: float) -> int:
    return 10 + int(2 * max(0.0, -math.log10(eps)) + max(0.0, -math.log10(alpha - 1)))


def ref_laplace(eps: float, alpha: float) -> Mp:
    with mp.workdps(mp.mp.dps + _cancelled(eps, alpha)):
        e, a = mp.mpf(eps), mp.mpf(alpha)
        lap = mp.log((a * mp.exp((a - 1) * e) + (a - 1) * mp.exp(-a * e)) / (2 * a - 1)) / (a - 1)
        return +min(lap, ref_pure_dp(eps, alpha))


def _log_a(rho: float, q: float, n: int) -> Mp:
    r, p = mp.mpf(rho), mp.mpf(q)
    terms = (
        math.comb(n, k) * (1 - p) ** (n - k) * p**k * mp.exp((k * k - k) * r) for k in range(n + 1)
    )
    return mp.log(mp.fsum(terms))


def ref_subsampled(rho: float, q: float, alpha: float) -> Mp:
    """The convexity line through log A at ⌊α⌋ and ⌈α⌉ (log A_1 = 0), over α − 1."""
    a, n = mp.mpf(alpha), math.floor(alpha)
    low = _log_a(rho, q, n) if n > 1 else mp.mpf(0)
    if alpha == n:
        value = low / (n - 1)
    else:
        value = ((n + 1 - a) * low + (a - n) * _log_a(rho, q, n + 1)) / (a - 1)
    return min(value, a * mp.mpf(rho))


def _pure_inputs(seed: int, n: int) -> list[tuple[float, float]]:
    rng = np.random.default_rng(seed)
    eps, alpha = log_uniform(rng, 1e-6, 30.0, n), 1.0 + log_uniform(rng, 1e-3, 1e4, n)
    return [(float(e), float(a)) for e, a in zip(eps, alpha, strict=True)]


@audits("rdp_curves.pure_dp_renyi", "rdp_curves.laplace_renyi")
def test_pure_dp_and_laplace_renyi_round_up(rounded: Rounded) -> None:
    """eps log-uniform in [1e-6, 30], α − 1 in [1e-3, 1e4]; twin: the reference to nearest."""
    pure = rounded.name == "rdp_curves.pure_dp_renyi"
    function, reference = (pure_dp_renyi, ref_pure_dp) if pure else (laplace_renyi, ref_laplace)
    cases = _pure_inputs(3501 if pure else 3502, N)
    got = [function(e, a) for e, a in cases]
    with mp.workdps(DIGITS):
        want = [reference(e, a) for e, a in cases]
    audit(got, want, rounded.up, ulps=6, twin=[float(w) for w in want])


@audits("rdp_curves.subsampled_gaussian_renyi")
def test_subsampled_gaussian_renyi_rounds_up(rounded: Rounded) -> None:
    """σ log-uniform in [0.3, 30] (rho = 1/(2σ²)), q in [1e-5, 1], orders up to 64: integers
    half the time (the exact sum), else fractional (the convexity line)."""
    n = N // 4
    rng = np.random.default_rng(3503)
    sigma, q = log_uniform(rng, 0.3, 30.0, n), log_uniform(rng, 1e-5, 1.0, n)
    alpha = 1.0 + log_uniform(rng, 1e-2, 63.0, n)
    alpha = np.where(rng.random(n) < 0.5, np.maximum(2.0, np.round(alpha)), alpha)
    cases = [
        (float(Fraction(1, 2) / Fraction(float(s)) ** 2), float(p), float(a))
        for s, p, a in zip(sigma, q, alpha, strict=True)
    ]
    got = [subsampled_gaussian_renyi(r, p, a) for r, p, a in cases]
    with mp.workdps(DIGITS):
        want = [ref_subsampled(r, p, a) for r, p, a in cases]
    audit(got, want, rounded.up, ulps=6, twin=[float(w) for w in want], n=n)


@audits("RenyiFilter.budget")
def test_renyi_budget_rounds_down(rounded: Rounded) -> None:
    """B = eps − log((α−1)/α) + (log delta + log α)/(α−1) where it is > 0 (else 0: nothing is
    admitted), within a few ulps of the log terms (where eps and they nearly cancel)."""
    rng = np.random.default_rng(3504)
    eps, delta = log_uniform(rng, 0.1, 100.0, 3 * N), log_uniform(rng, 1e-15, 0.5, 3 * N)
    alpha = 1.0 + log_uniform(rng, 1e-2, 1e3, 3 * N)
    got, want, twin, scale = [], [], [], []
    with mp.workdps(DIGITS):
        for e, d, a in zip(eps, delta, alpha, strict=True):
            x, y = mp.mpf(a), (mp.log(mp.mpf(d)) + mp.log(mp.mpf(a))) / (mp.mpf(a) - 1)
            value = mp.mpf(e) - mp.log((x - 1) / x) + y
            if value <= 0:
                assert RenyiFilter(float(e), float(d), float(a)).budget == 0.0
                continue
            got.append(RenyiFilter(float(e), float(d), float(a)).budget)
            want.append(value)
            twin.append(e - math.log((a - 1) / a) + (math.log(d) + math.log(a)) / (a - 1))
            scale.append(max(1.0, math.ulp(float(abs(y))) / math.ulp(float(value))))
    audit(got, want, rounded.up, ulps=4, twin=twin, scale=scale, n=N // 2)
