"""Rounding audit of `PLDFilter`'s count and the DP-SGD step's cost (issue 35).

``PLDFilter.budget`` (K, a count: rounded *down*) is checked against 50-digit references: for
Gaussian rounds (closed form: k rounds of mu compose to sqrt(k)·mu-GDP, Balle–Wang's δ) on 400
drawn (rho, eps, delta), and for randomised-response rounds (the k-fold composition's exact
δ, a binomial sum) on a few: no K may be unsafe (δ_K(eps) > delta), and the Gaussian K must be
the exact count (up to one round where the rounded-down mu* sits at a boundary); the planted
twin K + 1 must be unsafe. Laplace and subsampled counts come from the PLD accountant
(`expost.pld`, audited there) and are bracketed by the certified counts in
tests/filters/test_pld_filter.py.

``SubsampledGaussianMechanism.cost`` (rho = 1/(2σ²), up) on 2,000 σ, against exact rationals;
the twin is the float quotient 1/(2σ²).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import mpmath as mp
import numpy as np

from expost.filters import DPCost, GaussianCost, PLDFilter
from expost.mechanisms import SubsampledGaussianMechanism
from expost.rounding_registry import Rounded
from tests.rounding_audit import DIGITS, N, audit, audits, log_uniform

Mp = Any


def _gaussian_delta(mu: Mp, eps: float) -> Mp:
    e = mp.mpf(eps)
    return mp.ncdf(-e / mu + mu / 2) - mp.exp(e) * mp.ncdf(-e / mu - mu / 2)


def _rr_delta(eps0: float, k: int, eps: float) -> Mp:
    """δ(eps) of k rounds of RR(eps0): the loss is eps0·(2j − k), j ~ Bin(k, p) under P."""
    e0, e = mp.mpf(eps0), mp.mpf(eps)
    p = mp.exp(e0) / (1 + mp.exp(e0))
    total = mp.mpf(0)
    for j in range(k + 1):
        loss = e0 * (2 * j - k)
        if loss > e:
            total += mp.binomial(k, j) * p**j * (1 - p) ** (k - j) * (1 - mp.exp(e - loss))
    return total


def _gaussian_cases(n: int) -> list[tuple[float, float, float]]:
    rng = np.random.default_rng(3535)
    rhos = log_uniform(rng, 1e-5, 0.5, n)
    eps = log_uniform(rng, 0.1, 10.0, n)
    deltas = log_uniform(rng, 1e-10, 1e-3, n)
    return [(float(r), float(e), float(d)) for r, e, d in zip(rhos, eps, deltas, strict=True)]


@audits("PLDFilter.budget")
def test_the_count_is_never_unsafe(rounded: Rounded) -> None:
    assert not rounded.up  # a budget: rounded down
    cases = _gaussian_cases(400)
    tight = 0  # cases where the planted twin K + 1 is unsafe: K is the exact count
    with mp.workdps(DIGITS):
        for rho, eps, delta in cases:
            k = int(PLDFilter(eps, delta, GaussianCost(rho)).budget)
            mu = mp.sqrt(2 * mp.mpf(rho))
            assert k == 0 or _gaussian_delta(mp.sqrt(k) * mu, eps) <= delta, (rho, eps, delta, k)
            more = _gaussian_delta(mp.sqrt(k + 1) * mu, eps) > delta
            tight += more
            assert more or _gaussian_delta(mp.sqrt(k + 2) * mu, eps) > delta  # at most one lost
        for eps0, eps, delta in [(0.1, 1.0, 1e-6), (0.5, 2.0, 1e-5), (0.05, 1.0, 1e-3)]:
            k = int(PLDFilter(eps, delta, DPCost(eps0)).budget)
            assert _rr_delta(eps0, k, eps) <= delta
            assert _rr_delta(eps0, math.ceil(k * 1.05) + 1, eps) > delta  # within 5% of exact
    assert tight >= 0.95 * len(cases)  # the twin is caught: the Gaussian count is the exact one


@audits("mechanisms.SubsampledGaussianMechanism.cost")
def test_the_step_rho_is_rounded_up(rounded: Rounded) -> None:
    rng = np.random.default_rng(3536)
    sigmas = [float(s) for s in log_uniform(rng, 1e-3, 1e3, N)]
    got = [SubsampledGaussianMechanism(1.0, s, 0.5).cost().of.rho for s in sigmas]
    with mp.workdps(DIGITS):
        want = [mp.mpf(1) / (2 * mp.mpf(s) ** 2) for s in sigmas]
    assert all(Fraction(g) >= 1 / (2 * Fraction(s) ** 2) for g, s in zip(got, sigmas, strict=True))
    twin = [1.0 / (2.0 * s * s) for s in sigmas]
    audit(got, want, rounded.up, ulps=2, twin=twin)
