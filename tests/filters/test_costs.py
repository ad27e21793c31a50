"""The round costs a filter prices: the subsampled Gaussian step and the Laplace round."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from expost.costs import PoissonSampled
from expost.costs.pairs import ClosedPair
from expost.errors import InvalidParameter
from expost.filters import (
    DPCost,
    GaussianCost,
    LaplaceCost,
    SubsampledGaussianCost,
    UnifiedFilter,
)

SIGMAS = st.floats(min_value=1e-150, max_value=1e150, allow_nan=False)


@given(SIGMAS, st.floats(min_value=1e-12, max_value=1.0))
def test_a_step_is_a_gaussian_round_priced_on_the_safe_side(sigma: float, q: float) -> None:
    cost = SubsampledGaussianCost.from_sigma(sigma, q)
    assert isinstance(cost, PoissonSampled)
    assert isinstance(cost.of, GaussianCost)
    assert Fraction(cost.of.rho) >= 1 / (2 * Fraction(sigma) ** 2)  # rho rounded up
    assert cost.of.noise_multiplier == sigma  # σ carried, not rounded back from rho
    assert cost.pair() == ClosedPair("gaussian", sigma, q)
    assert cost.sampling_prob == q


def test_a_step_without_the_safe_side_would_be_caught() -> None:
    # twin: the nearest-float rho of σ = 3 is below 1/18, which the audit above rejects
    assert Fraction(1.0 / (2 * 3.0**2)) < Fraction(1, 18)
    assert Fraction(SubsampledGaussianCost.from_sigma(3.0, 0.5).of.rho) >= Fraction(1, 18)


@pytest.mark.parametrize("q", [0.0, -0.1, 1.5, float("nan"), float("inf")])
def test_a_sampling_rate_outside_zero_one_is_refused(q: float) -> None:
    with pytest.raises(InvalidParameter, match="sampling_prob"):
        SubsampledGaussianCost.from_sigma(1.0, q)


def test_every_filter_that_prices_a_gaussian_prices_a_step_as_one() -> None:
    f = UnifiedFilter.from_dp(10.0, 1e-6)
    step = SubsampledGaussianCost.from_sigma(2.0, 0.01)
    assert f.price(step) == f.price(GaussianCost(step.of.rho))


def test_a_laplace_round_is_a_pure_dp_round_with_delta_zero() -> None:
    assert isinstance(LaplaceCost(0.1), DPCost)
    f = UnifiedFilter.from_dp(10.0, 1e-6)
    assert f.price(LaplaceCost(0.1)) == f.price(DPCost(0.1))
    with pytest.raises(InvalidParameter, match="delta"):
        LaplaceCost(0.1, 1e-9)
