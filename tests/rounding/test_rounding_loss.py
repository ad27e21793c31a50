"""Rounding audit of the privacy-loss variables (issue 21): ``delta_for_eps``, ``eps_for_delta``,
``renyi`` and the closed-form levels are never below a 50-digit mpmath reference computed here
and within a few ulps of it; each check catches its planted round-to-nearest twin.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import mpmath as mp
import numpy as np
from scipy.optimize import brentq

from expost.loss import (
    BrownianLoss,
    GaussianLoss,
    LaplaceLoss,
    LaplaceNoiseReductionLoss,
    rho_of_sigma,
)
from expost.rounding_registry import Rounded
from tests.rounding_audit import DIGITS, N, audit, audits, log_uniform

Mp = Any


def mp_gaussian_delta(rho: float, eps: float) -> Mp:
    """Balle–Wang with erfc: ½erfc((eps/μ − μ/2)/√2) − ½e^eps·erfc((eps/μ + μ/2)/√2)."""
    mu = mp.sqrt(2 * mp.mpf(rho))
    x = mp.mpf(eps) / mu
    r2 = mp.sqrt(2)
    return (mp.erfc((x - mu / 2) / r2) - mp.exp(eps) * mp.erfc((x + mu / 2) / r2)) / 2


def mp_laplace_delta(scale: float, distance: float, eps: float) -> Mp:
    level = mp.mpf(distance) / mp.mpf(scale)
    return 1 - mp.exp(-(level - eps) / 2) if eps < level else mp.mpf(0)


def _gaussian_inputs(seed: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    return log_uniform(rng, 1e-6, 1e3, N), rng.uniform(0.0, 1.0, N) ** 2 * 500.0


@audits("GaussianLoss.delta_for_eps")
def test_gaussian_delta_for_eps_is_an_upper_bound(rounded: Rounded) -> None:
    rhos, epss = _gaussian_inputs(1)
    got = [GaussianLoss(r).delta_for_eps(float(e)) for r, e in zip(rhos, epss, strict=True)]
    twin = [GaussianLoss(r)._delta_float(float(e)) for r, e in zip(rhos, epss, strict=True)]
    with mp.workdps(DIGITS):
        want = [mp_gaussian_delta(r, e) for r, e in zip(rhos, epss, strict=True)]
    audit(got, want, rounded.up, ulps=2, twin=twin)


@audits("GaussianLoss.eps_for_delta")
def test_gaussian_eps_for_delta_is_an_upper_bound(rounded: Rounded) -> None:
    """The smallest eps with the exact delta(eps) <= delta (root at 50 digits); the answer is
    above it by at most a few ulps. Twin: brentq's float root, as the old code returned it."""
    rng = np.random.default_rng(2)
    rhos = log_uniform(rng, 1e-3, 1e2, N)
    deltas = log_uniform(rng, 1e-300, 1e-3, N)
    losses = [GaussianLoss(r) for r in rhos]
    got = [x.eps_for_delta(float(d)) for x, d in zip(losses, deltas, strict=True)]
    with mp.workdps(DIGITS):
        want = [
            mp.findroot(lambda e, x=x, d=d: mp_gaussian_delta(x.rho, e) - d, mp.mpf(g))
            for x, d, g in zip(losses, deltas, got, strict=True)
        ]
    twin = [
        float(brentq(lambda e, x=x, d=d: x._delta_float(e) - d, g / 2, 2 * g, rtol=1e-14))
        for x, d, g in zip(losses[:300], deltas[:300], got[:300], strict=True)
    ]
    audit(got, want, rounded.up, ulps=8, twin=twin, twin_want=want[:300])


@audits(
    "GaussianLoss.renyi", "BrownianLoss.rho", "GaussianLoss.from_mechanism", "loss.rho_of_sigma"
)
def test_gaussian_and_brownian_levels_are_upper_bounds(rounded: Rounded) -> None:
    """renyi = alpha·rho, from_mechanism's rho = Δ²/(2σ²), BrownianLoss.rho = Δ²/(2t): exact
    rationals, so the answer is the smallest float >= them (0 or 1 ulp above)."""
    rng = np.random.default_rng(3)
    a, b = log_uniform(rng, 1e-50, 1e50, N), log_uniform(rng, 1e-50, 1e50, N)
    alpha = 1.0 + log_uniform(rng, 1e-12, 1e6, N)
    pairs = list(zip(a.tolist(), b.tolist(), strict=True))
    with mp.workdps(DIGITS):
        if rounded.name == "GaussianLoss.renyi":
            cases = list(zip(a.tolist(), alpha.tolist(), strict=True))
            got = [GaussianLoss(x).renyi(al) for x, al in cases]
            want = [mp.mpf(x) * mp.mpf(al) for x, al in cases]
            twin = [x * al for x, al in cases]
        elif rounded.name == "BrownianLoss.rho":
            got = [BrownianLoss(t, d).rho for d, t in pairs]
            exact = [Fraction(d) ** 2 / (2 * Fraction(t)) for d, t in pairs]
            want = [mp.mpf(q.numerator) / q.denominator for q in exact]
            twin = [d**2 / (2.0 * t) for d, t in pairs]
        elif rounded.name == "loss.rho_of_sigma":
            got = [rho_of_sigma(s, d) for d, s in pairs]
            want = [mp.mpf(d) ** 2 / (2 * mp.mpf(s) ** 2) for d, s in pairs]
            twin = [d**2 / (2.0 * s**2) for d, s in pairs]
        else:
            got = [GaussianLoss.from_mechanism(s, d).rho for d, s in pairs]
            want = [mp.mpf(d) ** 2 / (2 * mp.mpf(s) ** 2) for d, s in pairs]
            twin = [d**2 / (2.0 * s**2) for d, s in pairs]
        audit(got, want, rounded.up, ulps=1, twin=twin)


def _laplace_inputs(seed: int) -> list[LaplaceLoss]:
    rng = np.random.default_rng(seed)
    scales, dists = log_uniform(rng, 1e-3, 1e3, 2 * N), log_uniform(rng, 1e-3, 1e3, 2 * N)
    losses = [LaplaceLoss(float(s), float(d)) for s, d in zip(scales, dists, strict=True)]
    kept = [x for x in losses if x.distance / x.scale <= 300.0][:N]  # e^-150: delta still > 0
    assert len(kept) == N
    return kept


@audits("LaplaceLoss.eps", "LaplaceNoiseReductionLoss.ex_post_bound")
def test_laplace_levels_are_upper_bounds(rounded: Rounded) -> None:
    """LaplaceLoss.eps and LaplaceNoiseReductionLoss.ex_post_bound = distance/scale, rounded up."""
    rng = np.random.default_rng(4)
    s, d = log_uniform(rng, 1e-150, 1e150, N), log_uniform(rng, 1e-150, 1e150, N)
    with mp.workdps(DIGITS):
        want = [mp.mpf(y) / mp.mpf(x) for x, y in zip(s, d, strict=True)]
    twin = [float(y / x) for x, y in zip(s, d, strict=True)]
    pairs = list(zip(s.tolist(), d.tolist(), strict=True))
    if rounded.name == "LaplaceLoss.eps":
        got = [LaplaceLoss(x, y).eps for x, y in pairs]
    else:
        got = [LaplaceNoiseReductionLoss(x, y).ex_post_bound for x, y in pairs]
    audit(got, want, rounded.up, ulps=1, twin=twin)


@audits("LaplaceLoss.delta_for_eps")
def test_laplace_delta_for_eps_is_an_upper_bound(rounded: Rounded) -> None:
    rng = np.random.default_rng(5)
    losses = _laplace_inputs(5)
    epss = [
        float(x.distance / x.scale * u) for x, u in zip(losses, rng.uniform(0, 1.2, N), strict=True)
    ]
    got = [x.delta_for_eps(e) for x, e in zip(losses, epss, strict=True)]
    twin = [x._delta_float(e) for x, e in zip(losses, epss, strict=True)]
    with mp.workdps(DIGITS):
        want = [mp_laplace_delta(x.scale, x.distance, e) for x, e in zip(losses, epss, strict=True)]
    audit(got, want, rounded.up, ulps=2, twin=twin)


@audits("LaplaceLoss.eps_for_delta")
def test_laplace_eps_for_delta_is_an_upper_bound(rounded: Rounded) -> None:
    """Exact root eps = ε + 2·log(1 − delta); its conditioning ε/eps scales the ulps allowed."""
    rng = np.random.default_rng(6)
    losses = _laplace_inputs(6)
    deltas = [
        float(-math.expm1(-x.distance / x.scale / 2) * u)
        for x, u in zip(losses, rng.uniform(0.01, 0.99, N), strict=True)
    ]
    got = [x.eps_for_delta(d) for x, d in zip(losses, deltas, strict=True)]
    with mp.workdps(DIGITS):
        level = [mp.mpf(x.distance) / mp.mpf(x.scale) for x in losses]
        want = [e + 2 * mp.log1p(-d) for e, d in zip(level, deltas, strict=True)]
        scale = [float(e / w) for e, w in zip(level, want, strict=True)]
    twin = [
        float(brentq(lambda e, x=x, d=d: x._delta_float(e) - d, 0.0, x.eps, rtol=1e-14))
        for x, d in zip(losses, deltas, strict=True)
    ]
    audit(got, want, rounded.up, ulps=8, twin=twin, scale=scale)


@audits("LaplaceLoss.renyi")
def test_laplace_renyi_is_an_upper_bound(rounded: Rounded) -> None:
    rng = np.random.default_rng(7)
    scales, dists = log_uniform(rng, 1e-2, 1e2, N), log_uniform(rng, 1e-4, 1e1, N)
    alphas = 1.0 + log_uniform(rng, 1e-6, 1e3, N)
    losses = [LaplaceLoss(float(s), float(d)) for s, d in zip(scales, dists, strict=True)]
    got = [x.renyi(float(a)) for x, a in zip(losses, alphas, strict=True)]
    twin = [x.cgf(float(a) - 1.0) / (float(a) - 1.0) for x, a in zip(losses, alphas, strict=True)]
    with mp.workdps(3 * DIGITS):  # the cancellation at small ε and α near 1 costs digits
        want = []
        for x, a in zip(losses, alphas, strict=True):
            e, al = mp.mpf(x.distance) / mp.mpf(x.scale), mp.mpf(a)
            mix = (al * mp.exp((al - 1) * e) + (al - 1) * mp.exp(-al * e)) / (2 * al - 1)
            want.append(mp.log(mix) / (al - 1))
    audit(got, want, rounded.up, ulps=2, twin=twin)
