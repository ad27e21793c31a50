"""Refusals at the number limits name the argument the caller passed and the limit (issue 41,
item 8): an exact AboveThreshold threshold beyond 2**1000, an RDP price beyond the floats, a
DP-SGD sigma whose rho overflows."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from expost import PrivateSession, ZCDPFilter
from expost.errors import BudgetExceeded, InvalidParameter
from expost.exact.bits import GeneratorBits
from expost.filters import RDPFilter, SubsampledGaussianCost, ZCDPCost
from expost.mechanisms import AboveThreshold


@pytest.mark.parametrize("exact", [False, True], ids=["float", "exact"])
@pytest.mark.parametrize("threshold", [1e308, 2**1000 + 1, -(2**1001), 10**400])
def test_an_above_threshold_threshold_beyond_the_limit_is_refused(
    threshold: float, exact: bool
) -> None:
    with pytest.raises(InvalidParameter, match=r"2\*\*1000") as info:
        AboveThreshold(1.0, threshold, 1, exact=exact)
    assert info.value.name == "threshold"
    assert "e308" not in str(info.value)  # a threshold may be derived from data: not printed


@pytest.mark.parametrize("exact", [False, True], ids=["float", "exact"])
def test_a_threshold_at_the_limit_is_accepted(exact: bool) -> None:
    at = AboveThreshold(1.0, 2**1000, 1, exact=exact)
    assert at.threshold == 2**1000
    assert AboveThreshold(1.0, -(2**1000), 1, exact=exact).threshold == -(2**1000)


def test_a_session_refuses_the_threshold_and_spends_nothing() -> None:
    s = PrivateSession(ZCDPFilter(1.0), bits=GeneratorBits(np.random.default_rng(0)))
    with pytest.raises(InvalidParameter, match=r"threshold=.*2\*\*1000.*nothing was spent"):
        s.above_threshold([1, 2, 3], 1.0, 1e308)
    assert s.spent == 0.0


def test_an_rdp_price_beyond_the_floats_is_refused_not_inf() -> None:
    f = RDPFilter(1.0, 1e-6)
    with pytest.raises(InvalidParameter, match="beyond the floats") as info:
        f.price(ZCDPCost(1e308))  # α·rho = 1.28e310 at the best order α = 128
    assert info.value.name == "cost"
    with pytest.raises(BudgetExceeded):
        f.spend(ZCDPCost(1e308))
    assert not f.admits(ZCDPCost(1e308))
    assert f.rounds == 0


def test_an_rdp_price_just_within_the_floats_is_a_safe_float() -> None:
    """Twin: 1e306 at α = 128 is 1.28e308, a float: returned, rounded up (exact rationals)."""
    f = RDPFilter(1.0, 1e-6)
    amount, delta = f.price(ZCDPCost(1e306))
    assert math.isfinite(amount)
    assert delta == 0.0
    assert Fraction(amount) >= Fraction(f.best_order) * Fraction(1e306)
    assert Fraction(math.nextafter(amount, 0.0)) < Fraction(f.best_order) * Fraction(1e306)


def test_a_sigma_whose_rho_overflows_is_named_sigma() -> None:
    s = PrivateSession(ZCDPFilter(1.0), np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="nothing was spent") as info:
        s.subsampled_gaussian(np.ones((3, 2)), 1, 1e-300, 0.5)
    assert info.value.name == "sigma"
    assert "rho" in info.value.rule  # says why: rho = 1/(2σ²) is beyond the floats
    assert s.spent == 0.0
    with pytest.raises(InvalidParameter) as direct:
        SubsampledGaussianCost.from_sigma(1e-300, 0.5)
    assert direct.value.name == "sigma"


def test_the_smallest_sigma_with_a_float_rho_is_accepted() -> None:
    """Twin: σ = 2**-511, rho = 2**1021 is a float: priced, not refused."""
    cost = SubsampledGaussianCost.from_sigma(2.0**-511, 0.5)
    assert cost.of.rho == 2.0**1021
