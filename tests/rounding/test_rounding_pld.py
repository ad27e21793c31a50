"""Rounding audit of the privacy loss distributions (THEORY §12; issues 28, 35).

Drawn inputs (Gaussian rounds, randomised response, one Poisson-subsampled Gaussian round in each
direction, Laplace k <= 2) against exact profiles in 50 digits (`expost.testing.pld_reference`):
no reported δ below the exact value, no reported ε whose exact δ exceeds the target, no count
above the exact count. Each twin (the same law with every loss one grid step lower) must show
an unsafe value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np

from expost.pld import PrivacyLossDistribution, max_rounds
from expost.pld.discrete import DiscreteLoss
from expost.rounding_registry import Rounded
from expost.testing.pld_reference import (
    Mp,
    gaussian_delta,
    laplace_delta,
    randomised_response_delta,
    ratio,
    subsampled_gaussian_delta,
)
from tests.rounding_audit import audits

PLD = PrivacyLossDistribution
Case = tuple[DiscreteLoss, Callable[[float], Mp]]


def _lower(d: DiscreteLoss, steps: int = 1) -> DiscreteLoss:
    """The twin: every loss ``steps`` grid steps lower."""
    return DiscreteLoss(d.h, d.offset - steps, d.masses, d.inf_mass, d.error, d.tail_mass)


def _gaussian(mu: Mp, k: int, eps: float) -> Mp:
    return gaussian_delta(mu, eps, k)


def _rr(eps0: float, k: int, eps: float) -> Mp:
    return randomised_response_delta(eps0, eps, k)


def _subsampled(mu: Mp, q: float, direction: str, eps: float) -> Mp:
    return subsampled_gaussian_delta(mu, q, eps, direction)


def _laplace(eps0: Mp, k: int, eps: float) -> Mp:
    return laplace_delta(eps0, eps, k)


def _cases(rng: np.random.Generator) -> list[Case]:
    out: list[Case] = []
    for _ in range(4):
        sigma, k = float(np.exp(rng.uniform(0.0, 2.5))), int(rng.integers(1, 40))
        d = PLD.gaussian(sigma).self_compose(k).remove
        out.append((d, partial(_gaussian, ratio(1.0, sigma), k)))
    for _ in range(4):
        eps0, k = float(rng.uniform(0.05, 1.5)), int(rng.integers(1, 30))
        d = PLD.pure_dp(eps0).self_compose(k).remove
        out.append((d, partial(_rr, eps0, k)))
    for _ in range(3):
        mu, q = float(rng.uniform(0.3, 2.0)), float(rng.uniform(0.01, 0.5))
        pld = PLD.gaussian(1 / mu, sampling_prob=q)
        for name, d in (("remove", pld.remove), ("add", pld.add)):
            out.append((d, partial(_subsampled, ratio(1.0, 1 / mu), q, name)))
    for k in (1, 2):
        eps0 = float(rng.uniform(0.2, 2.0))
        d = PLD.laplace(1 / eps0).self_compose(k).remove
        out.append((d, partial(_laplace, ratio(1.0, 1 / eps0), k)))
    return out


@audits("pld.discrete.DiscreteLoss.delta")
def test_delta_is_never_below_the_exact_profile(rounded: Rounded) -> None:
    assert rounded.up
    rng = np.random.default_rng(35)
    unsafe_twins = 0
    checked = 0
    for d, exact in _cases(rng):
        for e in rng.uniform(0.0, 3.0, 3):
            want = exact(float(e))
            if want < 1e-12:
                continue
            got = d.delta(float(e))
            assert got >= want, f"unsafe: {got} < {want}"
            assert got <= want * 1.01 + 1e-13
            unsafe_twins += _lower(d).delta(float(e)) < want
            checked += 1
    assert checked >= 25
    assert unsafe_twins > 0


@audits("pld.discrete.DiscreteLoss.eps")
def test_eps_meets_the_target_exactly(rounded: Rounded) -> None:
    assert rounded.up
    rng = np.random.default_rng(36)
    unsafe_twins = 0
    checked = 0
    for d, exact in _cases(rng):
        for delta in (1e-2, 1e-4):
            e = d.eps(delta)
            if math.isinf(e) or e == 0.0:
                continue
            assert exact(e) <= delta, f"unsafe eps {e}"
            twin = _lower(d).eps(delta)
            unsafe_twins += exact(twin) > delta
            checked += 1
    assert checked >= 10
    assert unsafe_twins > 0


def _exact_count(eps0: float, eps: float, delta: float) -> int:
    k = 0
    while randomised_response_delta(eps0, eps, k + 1) <= delta:
        k += 1
    return k


@audits("pld.max_rounds")
def test_max_rounds_is_never_above_the_exact_count(rounded: Rounded) -> None:
    """Randomised response, whose k-fold profile is a binomial sum: the count is at most the
    exact one and at least 95% of it; the twin (losses a step lower) counts too many."""
    assert not rounded.up
    over = 0
    for eps0, eps, delta in ((0.3, 2.0, 1e-3), (0.5, 3.0, 1e-5), (0.2, 1.0, 1e-2)):
        exact = _exact_count(eps0, eps, delta)
        pld = PLD.pure_dp(eps0, value_discretization=1e-3)
        got = max_rounds(pld, eps, delta)
        assert 0.95 * exact <= got <= exact
        low = _lower(pld.remove, round(0.1 * eps0 / pld.remove.h))  # ε0 rounded 10% down
        over += max_rounds(PrivacyLossDistribution(low, low), eps, delta) > exact
    assert over > 0
