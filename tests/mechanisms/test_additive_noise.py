"""One additive mechanism per idea, the noise chosen by ``exact`` (issue 28, item 4).

`GaussianMechanism` and `LaplaceMechanism` draw float noise from a numpy Generator or, with
``exact=True``, the discrete Gaussian / discrete Laplace exactly from a `BitSource` (CKS Alg. 3,
Alg. 2). These tests check what the flag changes: the source each noise accepts, exact release
arithmetic (Python ints beyond int64, each with a wrapping int64 twin that must differ), exact
parameters, the price (`ZCDPCost`, not `GaussianCost`, for the discrete Gaussian), the refused
continuous loss, and the session table naming one class for both modes. The laws and black-box
audits of the exact noise are in tests/exact/test_exact_mechanisms.py, the exact (eps, delta) curve in
tests/rounding/test_discrete_gaussian_dp.py.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expost.errors import InvalidParameter
from expost.exact.bits import GeneratorBits
from expost.exact.samplers import discrete_gaussian, discrete_laplace
from expost.filters.costs import DPCost, GaussianCost, ZCDPCost
from expost.loss import GaussianLoss
from expost.mechanism_table import MECHANISMS
from expost.mechanisms.additive import GaussianMechanism, LaplaceMechanism
from expost.rounding import sqrt_up_exact

EXACT = [
    GaussianMechanism(3, Fraction(2, 7), exact=True),
    LaplaceMechanism(2, Fraction(3, 5), exact=True),
]
FLOAT = [GaussianMechanism(3.0, 0.25), LaplaceMechanism(2.0, 0.6)]


def bits(seed: int) -> GeneratorBits:
    return GeneratorBits(np.random.default_rng(seed))


def _draws(m: Any, seed: int, size: int) -> list[int]:
    """The sampler's own draws for ``m``'s exact noise, from the same bits."""
    if isinstance(m, GaussianMechanism):
        return list(discrete_gaussian(m.sigma2, bits(seed), size).tolist())
    return list(discrete_laplace(m.scale, bits(seed), size).tolist())


# -- exact releases: exactly value + the sampler's draws -------------------------------------


@pytest.mark.parametrize("m", EXACT, ids=["gaussian", "laplace"])
def test_an_exact_release_is_value_plus_the_sampler_draws(m: Any) -> None:
    value = [2**63 - 1, -(2**63), 5, 2**80]  # int64's ends and beyond
    out = m.run(value, bits(11))
    noise = _draws(m, 11, len(value))
    assert [int(x) for x in out] == [v + z for v, z in zip(value, noise, strict=True)]
    # planted twin: the int64 sum wraps at int64's ends (for this seed the noise moves one out)
    with np.errstate(over="ignore"):
        wrapped = np.array(value[:2], dtype=np.int64) + np.array(noise[:2], dtype=np.int64)
    assert wrapped.tolist() != [int(x) for x in out[:2]]


@pytest.mark.parametrize("m", EXACT, ids=["gaussian", "laplace"])
def test_an_exact_batch_is_value_plus_the_sampler_draws(m: Any) -> None:
    value = np.array([[1, 2], [3, 4]])
    out = m.run_batch(value, 5, bits(12))
    assert out.shape == (5, 2, 2)
    assert out.dtype == np.int64
    noise = np.array(_draws(m, 12, 20)).reshape(5, 2, 2)
    assert np.array_equal(out, value + noise)


# -- the source must match the noise ---------------------------------------------------------


@pytest.mark.parametrize("m", [*EXACT, *FLOAT], ids=["dg", "dl", "g", "l"])
def test_the_source_must_match_the_noise(m: Any) -> None:
    wrong: object = np.random.default_rng(0) if m.exact else bits(0)
    name = "source"  # `noise_source` names the argument, whichever the noise
    with pytest.raises(InvalidParameter, match=name):
        m.run(1, wrong)
    with pytest.raises(InvalidParameter, match=name):
        m.run_batch(1, 3, wrong)
    with pytest.raises(InvalidParameter, match=name):
        m.run(1, None)


def test_float_noise_is_unchanged_and_exact_values_must_be_integers() -> None:
    g = GaussianMechanism(1.0, 0.5)
    want = 10.0 + np.random.default_rng(3).normal(0.0, 1.0, 2)
    assert np.array_equal(g.run([10.0, 10.0], np.random.default_rng(3)), want)
    with pytest.raises(InvalidParameter, match="value"):
        GaussianMechanism(1, 1, exact=True).run(1.5, bits(0))


# -- parameters, flag, equality --------------------------------------------------------------


@pytest.mark.parametrize("cls", [GaussianMechanism, LaplaceMechanism])
def test_the_flag_is_checked_and_is_part_of_equality(cls: Any) -> None:
    for bad in (1, 0, np.True_, "yes", None):
        with pytest.raises(InvalidParameter, match="exact"):
            cls(1, 0.5, exact=bad)
    assert cls(1, 0.5, exact=True) != cls(1, 0.5)
    assert cls(1, 0.5, exact=True) == cls(1.0, Fraction(1, 2), exact=True)
    with pytest.raises(InvalidParameter, match="sensitivity"):
        cls(1.5, 1, exact=True)  # exact noise needs an integer sensitivity
    with pytest.raises(InvalidParameter):
        cls(1, Fraction(1, 2))  # float noise takes float parameters, as before


# an integer sensitivity and an exact level over 18 decades (most not floats)
_SENSITIVITY = st.integers(1, 10**6)
_LEVEL = st.fractions(min_value=Fraction(1, 10**9), max_value=10**9).filter(lambda q: q > 0)


def _reported_up(reported: float, exact: Fraction) -> None:
    """``reported`` is the least float >= ``exact``."""
    assert Fraction(reported) >= exact > Fraction(math.nextafter(reported, 0.0))


@settings(max_examples=200, deadline=None)
@given(_SENSITIVITY, _LEVEL)
def test_exact_gaussian_parameters_are_exact_and_reported_up(d: int, rho: Fraction) -> None:
    m = GaussianMechanism(d, rho, exact=True)
    assert m.rho == rho
    assert m.sigma2 * 2 * rho == d * d  # σ² = Δ²/(2·rho), no rounding
    assert GaussianMechanism.from_sigma2(d, m.sigma2, exact=True) == m
    assert type(m.cost()) is ZCDPCost
    assert m.guarantee().rho == m.cost().rho
    _reported_up(m.cost().rho, rho)
    s = m.sigma  # the least float whose square is >= σ²
    assert Fraction(s) ** 2 >= m.sigma2 > Fraction(math.nextafter(s, 0.0)) ** 2


@settings(max_examples=200, deadline=None)
@given(_SENSITIVITY, _LEVEL)
def test_exact_laplace_parameters_are_exact_and_reported_up(d: int, eps: Fraction) -> None:
    m = LaplaceMechanism(d, eps, exact=True)
    assert m.eps == eps
    assert m.scale == d / eps
    assert type(m.cost()) is DPCost
    assert m.guarantee().eps == m.cost().eps
    _reported_up(m.cost().eps, eps)


@settings(max_examples=300, deadline=None)
@given(st.fractions(min_value=Fraction(1, 10**30), max_value=10**30).filter(lambda q: q > 0))
def test_sqrt_up_exact_is_the_least_float_whose_square_is_above(q: Fraction) -> None:
    s = sqrt_up_exact(q)
    assert Fraction(s) ** 2 >= q > Fraction(math.nextafter(s, 0.0)) ** 2
    near = math.sqrt(float(q))  # planted twin: round to nearest, below sqrt(q) about half the time
    assert near in (s, math.nextafter(s, 0.0), math.nextafter(s, math.inf))


def test_sqrt_up_exact_twin_is_caught() -> None:
    """The twin (math.sqrt of the nearest float) lands below sqrt(q) on some of 2,000 inputs."""
    rng = np.random.default_rng(5)
    qs = [Fraction(int(a), int(b)) for a, b in rng.integers(1, 2**40, (2000, 2))]
    assert any(Fraction(math.sqrt(float(q))) ** 2 < q for q in qs)
    assert all(Fraction(sqrt_up_exact(q)) ** 2 >= q for q in qs)


def test_sigma_of_exact_noise_beyond_the_floats() -> None:
    assert GaussianMechanism(10**400, 1, exact=True).sigma == math.inf
    assert GaussianMechanism(1, 10**700, exact=True).sigma == math.ulp(0.0)
    assert GaussianMechanism.from_sigma(2, 0.1, exact=True).sigma2 == Fraction(0.1) ** 2


# -- price, loss and (eps, delta) -------------------------------------------------------------


def test_the_price_differs_by_noise() -> None:
    assert type(GaussianMechanism(1.0, 0.5).cost()) is GaussianCost
    assert type(GaussianMechanism(1, 0.5, exact=True).cost()) is ZCDPCost  # not GDP
    assert GaussianMechanism(1, 0.5, exact=True).cost() == ZCDPCost(0.5)
    assert LaplaceMechanism(1, 0.5, exact=True).cost() == LaplaceMechanism(1, 0.5).cost()


@pytest.mark.parametrize("m", EXACT, ids=["gaussian", "laplace"])
def test_the_continuous_loss_is_refused_for_exact_noise(m: Any) -> None:
    with pytest.raises(InvalidParameter, match="exact"):
        m.loss()


def test_the_float_curve_is_the_analytic_gaussian_and_the_exact_one_is_tighter() -> None:
    f = GaussianMechanism(1.0, 0.05)
    assert f.delta_for_eps(1.0) == GaussianLoss(0.05).delta_for_eps(1.0)
    assert f.eps_for_delta(1e-6) == GaussianLoss(0.05).eps_for_delta(1e-6)
    e = GaussianMechanism(1, 0.05, exact=True)  # σ² = 10
    assert e.delta_for_eps(1.0) != f.delta_for_eps(1.0)  # the discrete law's own curve
    assert e.eps_for_delta(1e-6) < 1.37


# -- the session's table: one class, the flag set by the mode ----------------------------------


@pytest.mark.parametrize(
    ("release", "args"), [("gaussian", (2, Fraction(1, 8))), ("laplace", (2, Fraction(1, 4)))]
)
def test_the_table_builds_one_class_with_the_modes_flag(release: str, args: Any) -> None:
    built = {mode: MECHANISMS[release, mode].build(*args) for mode in ("float", "exact")}
    assert MECHANISMS[release, "float"].mechanism is MECHANISMS[release, "exact"].mechanism
    assert type(built["float"]) is type(built["exact"])
    assert (built["float"].exact, built["exact"].exact) == (False, True)
    assert built["exact"].sensitivity == 2
    assert isinstance(built["exact"].sensitivity, int)
