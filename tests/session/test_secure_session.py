"""The secure session mode (issue 22 item 3): exact integer releases, refusals that spend nothing."""

from __future__ import annotations

import numpy as np
import pytest

from expost import GaussianDPFilter, PrivateSession, TimeGrid, ZCDPCost, ZCDPFilter
from expost.errors import BudgetExceeded, InvalidParameter
from expost.exact.bits import GeneratorBits


def _secure(seed: int = 0, rho: float = 1.0) -> PrivateSession:
    return PrivateSession(
        ZCDPFilter(rho), np.random.default_rng(99), bits=GeneratorBits(np.random.default_rng(seed))
    )


def test_secure_releases_are_integers_and_are_charged() -> None:
    s = _secure()
    a = s.laplace([10, 20], sensitivity=1, eps=0.5)
    g = s.gaussian(7, sensitivity=1, rho=0.125)
    i = s.exponential_mechanism([3, 1, 2], eps=0.5, monotone=True)
    assert a.dtype == np.int64
    assert a.shape == (2,)
    assert g.dtype == np.int64
    assert isinstance(i, int)
    assert 0 <= i < 3
    # zCDP prices: 0.5²/2 (pure DP), 0.125 (discrete Gaussian), 0.5²/8 (exact exponential
    # mechanism, bounded range: a quarter of permute-and-flip's pure-DP 0.5²/2)
    assert s.spent == pytest.approx(0.125 + 0.125 + 0.03125)
    assert [r.mechanism for r in s.history] == ["laplace", "gaussian", "exponential"]


def test_the_same_bits_give_the_same_integers() -> None:
    first = [_secure(4).laplace(np.arange(5), 1, 1.0) for _ in range(2)]
    np.testing.assert_array_equal(first[0], first[1])
    assert not np.array_equal(first[0], _secure(5).laplace(np.arange(5), 1, 1.0))


def test_exact_true_uses_the_os_csprng() -> None:
    s = PrivateSession(ZCDPFilter(1.0), np.random.default_rng(0), exact=True)
    assert s.laplace(3, 1, 1.0).dtype == np.int64


def test_the_default_mode_is_unchanged() -> None:
    s = PrivateSession(ZCDPFilter(1.0), np.random.default_rng(0))
    assert s.laplace(3, 1, 1.0).dtype == np.float64


def test_a_mechanism_without_exact_version_is_refused_naming_the_alternative() -> None:
    s = _secure()
    with pytest.raises(InvalidParameter, match="SkellamNoiseReduction"):
        s.brownian(0.0, 1.0, TimeGrid([4.0, 1.0]))
    with pytest.raises(InvalidParameter, match="SkellamNoiseReduction"):
        s.laplace_noise_reduction(0.0, 1.0, [4.0, 1.0])
    assert s.spent == 0.0
    assert s.history == ()


def test_secure_doubling_runs_discrete_gaussian_tries_at_the_float_methods_price() -> None:
    """Same cap and rho as the float method; integer tries; refused on a float value first."""
    secure, plain = _secure(), PrivateSession(ZCDPFilter(1.0), np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="value"):
        secure.doubling(2.5)
    assert secure.spent == 0.0
    never = lambda _released: False  # every try is made: the whole cap is charged
    exact = secure.doubling(40, 1.0, 1e-3, 2.0, stop=never)
    floats = plain.doubling(40.0, 1.0, 1e-3, 2.0, stop=never)
    assert exact.released.dtype == np.int64
    assert exact.released.shape == floats.released.shape  # the same cap: 9 tries within rho = 1
    assert secure.history[0].request == ZCDPCost(floats.cost.rho)
    assert secure.spent == plain.spent


def test_float_values_are_refused_before_any_spend() -> None:
    s = _secure()
    with pytest.raises(InvalidParameter, match="value"):
        s.laplace(1.5, 1, 1.0)
    with pytest.raises(InvalidParameter, match="scores"):
        s.exponential_mechanism([0.5, 1.0], eps=1.0, monotone=True)
    with pytest.raises(InvalidParameter, match="sensitivity"):
        s.gaussian(1, 1.5, 0.1)
    assert s.spent == 0.0


def test_the_gdp_filter_refuses_a_discrete_gaussian_round() -> None:
    # the discrete Gaussian is not exactly mu-GDP: its cost is a ZCDPCost, which this filter refuses
    s = PrivateSession(
        GaussianDPFilter(1.0),
        np.random.default_rng(0),
        bits=GeneratorBits(np.random.default_rng(0)),
    )
    with pytest.raises((InvalidParameter, BudgetExceeded)):
        s.gaussian(1, 1, 0.1)
    assert s.history == ()
    assert s.laplace(1, 1, 0.5).dtype == np.int64  # a pure-DP round it prices


def test_secure_above_threshold_is_exact() -> None:
    s = _secure()
    result = s.above_threshold([-1000, 1000], eps=0.5, threshold=0)
    assert result.stop_index == 1  # wrong only if some |noise| > 500: probability < 4·e^-62
    assert s.spent == pytest.approx(0.125)
