"""The one σ ↔ rho conversion of Gaussian noise (`expost.loss.rho_of_sigma`, `sigma_of_rho`):
rho = Δ²/(2σ²) rounded up, σ rounded to the safe side each way, checked in exact rationals."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from expost.filters import SubsampledGaussianCost
from expost.loss import GaussianLoss, rho_of_sigma, sigma_of_rho
from expost.mechanisms import GaussianMechanism

POSITIVE = hs.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False)


def exact_rho(sigma: float, sensitivity: float) -> Fraction:
    return Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2)


@settings(max_examples=300, deadline=None)
@given(POSITIVE, POSITIVE)
def test_rho_of_sigma_is_the_least_float_above_the_exact_value(sigma: float, s: float) -> None:
    rho = rho_of_sigma(sigma, s)
    assert Fraction(rho) >= exact_rho(sigma, s)
    assert Fraction(math.nextafter(rho, 0.0)) < exact_rho(sigma, s)


@settings(max_examples=300, deadline=None)
@given(POSITIVE, POSITIVE)
def test_sigma_of_rho_is_on_the_safe_side_within_a_few_ulps(rho: float, s: float) -> None:
    up, down = sigma_of_rho(rho, s), sigma_of_rho(rho, s, up=False)
    assert exact_rho(up, s) <= Fraction(rho) <= exact_rho(down, s)  # up: meets the budget
    root = s / math.sqrt(2.0 * rho)  # within a few ulps of the float estimate of the root
    assert abs(up - root) <= 4 * math.ulp(root)
    assert abs(down - root) <= 4 * math.ulp(root)


def test_the_plain_float_formula_is_not_safe() -> None:  # planted twin: no rounding step
    misses = [
        r
        for r in (k / 7 for k in range(1, 200))
        if exact_rho(1.0 / math.sqrt(2.0 * r), 1.0) > Fraction(r)  # σ too small for rho
    ]
    assert misses, "the plain formula would be safe here: the rounding test would not bite"
    for r in misses:
        assert exact_rho(sigma_of_rho(r), 1.0) <= Fraction(r)


@pytest.mark.parametrize(("sigma", "sensitivity"), [(1.0, 1.0), (0.3, 2.0), (7.0, 0.1)])
def test_the_library_converts_through_the_one_home(sigma: float, sensitivity: float) -> None:
    rho = rho_of_sigma(sigma, sensitivity)
    assert GaussianLoss.from_mechanism(sigma, sensitivity).rho == rho
    assert SubsampledGaussianCost.from_sigma(sigma, 0.5).of.rho == rho_of_sigma(sigma)
    assert SubsampledGaussianCost(rho_of_sigma(sigma), sampling_prob=0.5).of.noise_multiplier == (
        sigma_of_rho(rho_of_sigma(sigma), up=False)
    )
    assert GaussianMechanism(sensitivity, rho).sigma == sigma_of_rho(rho, sensitivity)
