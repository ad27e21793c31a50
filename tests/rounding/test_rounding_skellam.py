"""Rounding audit of `SkellamLoss` (issue 21): ``delta_for_eps``, ``eps_for_delta`` and
``renyi`` are never below a 50-digit reference computed here and within a few ulps of it; each
check catches its planted float twin.

The reference pmf is independent of `expost.skellam.pmf`'s normalisation: I_n(x) from mpmath's
``besseli`` at the two highest orders of a window, then the recurrence downwards, and sums over
a window grown until its edge terms are below 1e-70 of the sum.
"""

from __future__ import annotations

import math
from typing import Any

import mpmath as mp
import numpy as np
import pytest
from scipy.optimize import brentq

from expost.rounding import down
from expost.rounding_registry import Rounded
from expost.skellam.loss import SkellamLoss, akl_eps_for_delta, akl_renyi
from expost.skellam.pmf import mp_pmf
from tests.rounding_audit import DIGITS, N, audit, audits, log_uniform

Mp = Any
_EDGE = mp.mpf(10) ** -70  # the reference grows its window until edge terms are below this


class _Pmf:
    """The Skellam(mu1, mu2) pmf at 50 digits on [−low, high], grown on demand."""

    def __init__(self, mu1: float, mu2: float) -> None:
        self.m1, self.m2 = mp.mpf(mu1), mp.mpf(mu2)
        self.x = 2 * mp.sqrt(self.m1 * self.m2)
        self.top = -1
        self.orders: list[Mp] = []

    def _grow(self, top: int) -> None:
        above, here = mp.besseli(top + 1, self.x), mp.besseli(top, self.x)
        orders = [here]
        for n in range(top, 0, -1):
            above, here = here, above + 2 * n / self.x * here
            orders.append(here)
        self.orders, self.top = orders[::-1], top

    def __call__(self, y: int) -> Mp:
        if abs(y) > self.top:
            self._grow(max(2 * self.top, abs(y), 16))
        scale = mp.exp(-(self.m1 + self.m2)) * mp.sqrt(self.m1 / self.m2) ** y
        return scale * self.orders[abs(y)]


def _sum(term: Any, start: int, step: int, total: Mp) -> Mp:
    """Σ term(y) for y = start, start + step, … until a term is below _EDGE·(total + sum)."""
    y, acc = start, mp.mpf(0)
    while True:
        t = term(y)
        acc += t
        if t <= _EDGE * (total + acc) and abs(y - start) > 8:
            return acc
        y += step


def ref_delta(pmf: _Pmf, d: int, eps: float) -> Mp:
    """Σ (p(y) − e^eps·p(y − d))_+: the positive terms are a lower interval of y (L falls), whose
    end is found by doubling and bisection."""
    gain = mp.exp(eps)

    def positive(y: int) -> bool:
        return bool(pmf(y) - gain * pmf(y - d) > 0)

    below, above, step = (0, 1, 1) if positive(0) else (-1, 0, 1)
    while positive(above):
        below, above, step = above, above + step, 2 * step
    while not positive(below):
        if pmf(below) < mp.mpf(10) ** -400:
            return mp.mpf(0)
        above, below, step = below, below - step, 2 * step
    while above - below > 1:
        mid = (above + below) // 2
        below, above = (mid, above) if positive(mid) else (below, mid)
    return _sum(lambda k: max(pmf(k) - gain * pmf(k - d), mp.mpf(0)), below, -1, mp.mpf(0))


def ref_renyi(pmf: _Pmf, d: int, alpha: float) -> Mp:
    al = mp.mpf(alpha)

    def term(y: int) -> Mp:
        return pmf(y) ** al * pmf(y - d) ** (1 - al)

    middle = _sum(term, 0, -1, mp.mpf(0))
    total = middle + _sum(term, 1, 1, middle)
    return mp.log(total) / (al - 1)


def _inputs(seed: int) -> list[tuple[float, float, int]]:
    """(mu1, mu2, d): log-uniform means in [0.01, 100], a third asymmetric, d in 1..3."""
    rng = np.random.default_rng(seed)
    mu1 = log_uniform(rng, 1e-2, 1e2, N)
    mu2 = np.where(rng.uniform(size=N) < 1 / 3, log_uniform(rng, 1e-2, 1e2, N), mu1)
    d = rng.integers(1, 4, N)
    return [(float(a), float(b), int(k)) for a, b, k in zip(mu1, mu2, d, strict=True)]


def _loss(mu1: float, mu2: float, d: int) -> SkellamLoss:
    return SkellamLoss(mu1, d, mu2=mu2)


def test_mp_pmf_matches_besseli() -> None:
    """The library's Miller recurrence against mpmath's besseli at 50 digits."""
    for mu1, mu2, lo, hi in [(0.01, 0.01, -6, 6), (3.0, 0.5, -20, 12), (80.0, 80.0, -200, 60)]:
        with mp.workdps(DIGITS):
            pmf = _Pmf(mu1, mu2)
            got = mp_pmf(lo, hi, mu1, mu2)
            worst = max(abs(g / pmf(y) - 1) for y, g in zip(range(lo, hi + 1), got, strict=True))
        assert worst < mp.mpf(10) ** -45


@audits("SkellamLoss.delta_for_eps")
def test_skellam_delta_for_eps_is_an_upper_bound(rounded: Rounded) -> None:
    """eps is the loss at a random point where the pmf is above 1e-250 (so delta is a normal
    float); twin: the float profile (the search of eps_for_delta), rounded to nearest."""
    rng = np.random.default_rng(31)
    got, want, twin = [], [], []
    for mu1, mu2, d in _inputs(30):
        loss = _loss(mu1, mu2, d)
        with mp.workdps(DIGITS):
            pmf = _Pmf(mu1, mu2)
            y = int(rng.integers(-6, 2)) * max(1, math.ceil(math.sqrt(mu1 + mu2)))
            while pmf(y) < mp.mpf(10) ** -250:
                y = y // 2 + 1
            eps = max(float(mp.log(pmf(y) / pmf(y - d))), 0.0) * rng.uniform(0.9, 1.0)
            want.append(ref_delta(pmf, d, eps))
        got.append(loss.delta_for_eps(eps))
        twin.append(loss._profile_float(1e-300)(eps))
    audit(got, want, rounded.up, ulps=2, twin=twin)


def test_skellam_delta_for_eps_far_beyond_the_support() -> None:
    """Where delta is below every positive float the answer is the smallest one, 2^-1074."""
    for mu, d, eps in [(1.0, 1, 500.0), (0.01, 3, 100.0), (50.0, 1, 60.0)]:
        assert _loss(mu, mu, d).delta_for_eps(eps) == math.ulp(0.0)
        with mp.workdps(DIGITS):
            assert ref_delta(_Pmf(mu, mu), d, eps) < math.ulp(0.0)


@audits("SkellamLoss.eps_for_delta")
def test_skellam_eps_for_delta_is_an_upper_bound(rounded: Rounded) -> None:
    """delta log-uniform down to 1e-300. The answer must be admissible under the 50-digit
    profile and the float 8 ulps below it must not be (a few ulps from the exact root); twin:
    the float root of the float profile, as a plain brentq would return it."""
    assert rounded.up  # checked below: admissible, and 8 ulps lower is not
    rng = np.random.default_rng(32)
    deltas = log_uniform(rng, 1e-300, 1e-2, N)
    unsafe = loose = twin_unsafe = 0
    for (mu1, mu2, d), delta in zip(_inputs(33), deltas, strict=True):
        loss = _loss(mu1, mu2, d)
        got = loss.eps_for_delta(float(delta))
        with mp.workdps(DIGITS):
            pmf = _Pmf(mu1, mu2)
            unsafe += ref_delta(pmf, d, got) > delta
            loose += got > 0 and ref_delta(pmf, d, down(got, 8)) <= delta
            if twin_unsafe == 0 and got > 0:
                twin_unsafe += ref_delta(pmf, d, _float_root(loss, float(delta), got)) > delta
    assert unsafe == 0, f"{unsafe} answers below the exact smallest eps"
    assert loose == 0, f"{loose} answers more than 8 ulps above it"
    assert twin_unsafe > 0, "the check did not catch the float root"


def _float_root(loss: SkellamLoss, delta: float, near: float) -> float:
    profile = loss._profile_float(delta)
    return float(brentq(lambda e: profile(e) - delta, 0.0, 2 * near + 1, rtol=1e-15))


@audits("SkellamLoss.renyi")
@pytest.mark.parametrize("alphas", ["near one", "large"])
def test_skellam_renyi_is_an_upper_bound(alphas: str, rounded: Rounded) -> None:
    """D_alpha at alpha = 1 + [1e-6, 0.1] (cancellation) and 1 + [0.1, 30] (far tails); twin:
    the float cgf of the truncated support, cgf(alpha − 1)/(alpha − 1)."""
    rng = np.random.default_rng(34 if alphas == "near one" else 35)
    lo, hi = (1e-6, 0.1) if alphas == "near one" else (0.1, 30.0)
    orders = 1.0 + log_uniform(rng, lo, hi, N // 2)
    got, want, twin = [], [], []
    for (mu1, mu2, d), alpha in zip(_inputs(36)[: N // 2], orders, strict=True):
        loss = _loss(mu1, mu2, d)
        got.append(loss.renyi(float(alpha)))
        twin.append(loss.cgf(float(alpha) - 1.0) / (float(alpha) - 1.0))
        with mp.workdps(DIGITS):
            want.append(ref_renyi(_Pmf(mu1, mu2), d, float(alpha)))
    audit(got, want, rounded.up, ulps=2, twin=twin, n=N // 2)


def _mp_akl(alpha: int, mu: float, d: int) -> Mp:
    m, dd = mp.mpf(mu), mp.mpf(d)
    extra = min(((2 * alpha - 1) * dd**2 + 6 * dd) / (16 * m**2), 3 * dd / (4 * m))
    return alpha * dd**2 / (4 * m) + extra


def _float_akl(alpha: int, mu: float, d: int) -> float:
    extra = min(((2 * alpha - 1) * d * d + 6 * d) / (16 * mu * mu), 3 * d / (4 * mu))
    return alpha * d * d / (4 * mu) + extra


@audits("skellam.akl_renyi", "skellam.akl_eps_for_delta")
def test_akl_renyi_and_eps_are_upper_bounds(rounded: Rounded) -> None:
    """AKL's bound (a rational: the smallest float above it) and its Mironov conversion (the
    log rounded up by 2 ulps, then exact sums: within a few ulps); twins: the float formulas."""
    rng = np.random.default_rng(37)
    alphas = rng.integers(2, 257, N)
    mus = log_uniform(rng, 1e-3, 1e6, N)
    ds = rng.integers(1, 11, N)
    deltas = log_uniform(rng, 1e-300, 0.5, N)
    cases = list(zip(alphas.tolist(), mus.tolist(), ds.tolist(), deltas.tolist(), strict=True))
    with mp.workdps(DIGITS):
        if rounded.name == "skellam.akl_renyi":
            audit(
                [akl_renyi(a, m, d) for a, m, d, _ in cases],
                [_mp_akl(a, m, d) for a, m, d, _ in cases],
                rounded.up,
                ulps=1,
                twin=[_float_akl(a, m, d) for a, m, d, _ in cases],
            )
            return
        want, twin = [], []
        for _, m, d, delta in cases:
            floats = {a: _float_akl(a, m, d) - math.log(delta) / (a - 1) for a in range(2, 257)}
            twin.append(min(floats.values()))
            near = [a for a, v in floats.items() if v <= twin[-1] * (1 + 1e-9)]  # holds the min
            want.append(min(_mp_akl(a, m, d) - mp.log(delta) / (a - 1) for a in near))
        audit(
            [akl_eps_for_delta(m, d, delta) for _, m, d, delta in cases],
            want,
            rounded.up,
            ulps=4,
            twin=twin,
        )
