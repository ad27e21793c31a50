"""`expost.testing`: the Hypothesis strategies draw valid values, and the assertion helpers pass
true claims and raise a readable AssertionError on their planted-bug twins.

The assertions run at alpha_audit = 1e-6 with fixed seeds; each passing check has a twin (a
wrong bound or mechanism) that the same helper must reject.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings

from expost.errors import InvalidParameter
from expost.grids import EpsilonGrid, TimeGrid
from expost.guarantees import ZCDP, ApproxDP, ExPost, ProbabilisticDP, PureDP
from expost.mechanisms.additive import GaussianMechanism, LaplaceMechanism
from expost.stopping import AtIndex, Never, RelativeError, StoppingRule
from expost.testing import (
    AdaptiveAnalyst,
    AdaptiveStep,
    BrownianRequest,
    Request,
    ZCDPRequest,
    adaptive_analysts,
    assert_dp_lower_bound_below,
    assert_e_value,
    assert_ex_post,
    eps_grids,
    guarantees,
    stopping_rules,
    time_grids,
)

FloatArray = npt.NDArray[np.float64]
RHO = 0.5


def test_import_expost_does_not_import_testing_or_hypothesis() -> None:
    code = (
        "import sys, expost; "
        "assert 'expost.testing' not in sys.modules; assert 'hypothesis' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- strategies -------------------------------------------------------------------------------


@settings(max_examples=60)
@given(guarantees())
def test_guarantees_are_valid(g: object) -> None:
    assert isinstance(g, PureDP | ApproxDP | ZCDP | ProbabilisticDP | ExPost)


@settings(max_examples=30)
@given(guarantees(kinds=["zcdp"], max_delta=1e-3))
def test_guarantees_restricted_to_kinds(g: object) -> None:
    assert isinstance(g, ZCDP)
    assert g.delta < 1e-3


def test_guarantees_reject_unknown_kind() -> None:
    with pytest.raises(ValueError, match="kinds"):
        guarantees(kinds=["renyi"])


@settings(max_examples=50)
@given(time_grids(min_size=2, max_size=10))
def test_time_grids_are_strictly_decreasing(grid: TimeGrid) -> None:
    times = grid.array
    assert 2 <= len(grid) <= 10
    assert np.all(np.diff(times) < 0)
    assert np.all(times > 0)


@settings(max_examples=50)
@given(eps_grids(max_size=10))
def test_eps_grids_are_strictly_increasing(grid: EpsilonGrid) -> None:
    assert np.all(np.diff(grid.eps) > 0)
    assert np.all(np.diff(grid.times.array) < 0)
    assert 1e-3 * (1 - 1e-12) <= grid.first_eps <= grid.last_eps <= 10.0 * (1 + 1e-12)


@settings(max_examples=40)
@given(stopping_rules(max_index=3))
def test_stopping_rules_are_built_in_rules(rule: StoppingRule) -> None:
    assert isinstance(rule, RelativeError | AtIndex | Never)
    if isinstance(rule, AtIndex):
        assert rule.k <= 3


def _worst_rho(request: Request) -> float:
    if isinstance(request, ZCDPRequest):
        return request.rho
    return request.grid.max_rho


@settings(max_examples=40, deadline=None)
@given(adaptive_analysts(max_rounds=5, max_rho=0.5))
def test_adaptive_analysts_play_a_program(analyst: AdaptiveAnalyst) -> None:
    assert 1 <= len(analyst) <= 5
    transcript = analyst.run(lambda request: 1.0 if _worst_rho(request) > 0.1 else -1.0)
    assert len(transcript) == len(analyst)
    for request, _ in transcript:
        assert isinstance(request, ZCDPRequest | BrownianRequest)
        assert _worst_rho(request) <= 0.5 * (1 + 1e-12)
        if isinstance(request, BrownianRequest) and isinstance(request.stop, AtIndex):
            assert request.stop.k < len(request.grid)
    assert analyst.next_request([0.0] * len(analyst)) is None


def test_adaptive_analyst_requests_depend_on_released_values() -> None:
    cheap, dear = ZCDPRequest(0.01), ZCDPRequest(0.2)
    analyst = AdaptiveAnalyst((AdaptiveStep(cheap, dear, 0.0), AdaptiveStep(cheap, dear, 0.0)))
    assert analyst.next_request([]) == cheap
    assert analyst.next_request([1.0]) == dear
    assert analyst.next_request([-1.0]) == cheap
    refused = analyst.run(lambda request: None if request == dear else 5.0)
    assert refused == [(cheap, 5.0)]


# --- assertion helpers ------------------------------------------------------------------------


def _gaussian_losses(n: int, rng: np.random.Generator) -> FloatArray:
    """Loss of N(f(x), σ²) at f(x) = 0 against f(x') = 1: exactly N(rho, 2 rho)."""
    mech = GaussianMechanism(1.0, RHO)
    y = np.asarray(mech.run_batch(0.0, n, rng), dtype=np.float64)
    return ((y - 1.0) ** 2 - y**2) / (2.0 * mech.sigma**2)


def _losses_and_bounds(
    delta: float,
) -> Callable[[int, np.random.Generator], tuple[FloatArray, FloatArray]]:
    def sample(n: int, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
        bound = RHO + 2.0 * math.sqrt(RHO * math.log(1.0 / delta))
        return _gaussian_losses(n, rng), np.full(n, bound)

    return sample


def test_assert_ex_post_passes_a_true_bound_and_catches_a_planted_bug() -> None:
    result = assert_ex_post(_losses_and_bounds(0.05), 0.05, n=20_000, seed=1)
    assert result.verdict.word == "holds"
    assert result.verdict.n == 20_000
    with pytest.raises(AssertionError, match=r"claim refuted: P\(loss > ex-post bound\)"):
        assert_ex_post(_losses_and_bounds(0.05), 0.0005, n=20_000, seed=1)


def test_assert_ex_post_accepts_arrays() -> None:
    rng = np.random.default_rng(2)
    losses = _gaussian_losses(20_000, rng)
    bound = np.full(20_000, RHO + 2.0 * math.sqrt(RHO * math.log(20.0)))
    assert_ex_post((losses, bound), 0.05)
    with pytest.raises(AssertionError, match="refuted"):
        assert_ex_post((losses, bound - 1.0), 0.05)
    with pytest.raises(InvalidParameter, match="bounds"):
        assert_ex_post((losses, bound[:10]), 0.05)


def _martingale(drift: float) -> Callable[[int, np.random.Generator], FloatArray]:
    def sample(n: int, rng: np.random.Generator) -> FloatArray:
        return np.exp(rng.standard_normal(n) - drift)

    return sample


def test_assert_e_value_passes_an_e_value_and_catches_a_planted_bug() -> None:
    assert_e_value(_martingale(0.5), n=20_000, seed=3)
    with pytest.raises(AssertionError, match=r"E\[X\] <= 1") as info:
        assert_e_value(_martingale(0.25), n=20_000, seed=3)
    message = str(info.value)
    assert "lower bound" in message
    assert "expected holds, got refuted" in message


def test_assert_e_value_accepts_arrays_and_other_bounds() -> None:
    x = np.random.default_rng(4).exponential(2.0, 5000)
    assert_e_value(x, bound=2.0)
    with pytest.raises(AssertionError):
        assert_e_value(x)


def _laplace(eps: float, value: float) -> Callable[[int, np.random.Generator], FloatArray]:
    def sample(n: int, rng: np.random.Generator) -> FloatArray:
        return LaplaceMechanism(1.0, eps).run_batch(value, n, rng)

    return sample


def test_assert_dp_lower_bound_below_passes_laplace_and_catches_half_the_noise() -> None:
    result = assert_dp_lower_bound_below(_laplace(1.0, 0.0), _laplace(1.0, 1.0), 1.0, seed=5)
    assert result.verdict.bound <= 1.0
    with pytest.raises(AssertionError, match="1-DP"):
        assert_dp_lower_bound_below(_laplace(2.0, 0.0), _laplace(2.0, 1.0), 1.0, seed=5)


def test_assert_dp_lower_bound_below_accepts_arrays() -> None:
    rng = np.random.default_rng(6)
    a, b = _laplace(1.0, 0.0)(40_000, rng), _laplace(1.0, 1.0)(40_000, rng)
    assert_dp_lower_bound_below(a, b, 1.0)
    with pytest.raises(AssertionError):
        assert_dp_lower_bound_below(a, b, 0.5)
    with pytest.raises(InvalidParameter, match="sample_x_prime"):
        assert_dp_lower_bound_below(a, b[:10], 1.0)
    with pytest.raises(InvalidParameter, match="sample_x"):
        assert_dp_lower_bound_below(a, _laplace(1.0, 1.0), 1.0)
