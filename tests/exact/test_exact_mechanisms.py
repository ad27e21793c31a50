"""Exact mechanisms (issue 22 item 2): laws, costs, and black-box audits with planted twins."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from expost.errors import InvalidParameter
from expost.exact.bits import GeneratorBits
from expost.filters.costs import DPCost, ZCDPCost
from expost.mechanisms.additive import GaussianMechanism, LaplaceMechanism
from expost.mechanisms.exponential import ExponentialMechanism
from expost.mechanisms.permute_and_flip import PermuteAndFlip
from expost.testing import audit_mechanism
from tests.stats import proportion_is_consistent

SAMPLES = 20_000  # per side in the audit's final test; alpha = 1e-3 (the auditor's default)


def bits(seed: int) -> GeneratorBits:
    return GeneratorBits(np.random.default_rng(seed))


class Count:
    """The count of a dataset released by an exact additive mechanism (a black-box mechanism)."""

    def __init__(self, mechanism: LaplaceMechanism | GaussianMechanism) -> None:
        self.mechanism = mechanism

    def __call__(self, data: Sequence[Any], rng: np.random.Generator) -> int:
        return int(self.mechanism.run(len(data), GeneratorBits(rng)))

    def batch(self, data: Sequence[Any], n: int, rng: np.random.Generator) -> npt.NDArray[Any]:
        return self.mechanism.run_batch(len(data), n, GeneratorBits(rng))


class Select:
    """An exact selection over scores (count, 2): monotone, sensitivity 1 under add/remove."""

    def __init__(self, mechanism: PermuteAndFlip | ExponentialMechanism) -> None:
        self.mechanism = mechanism

    def __call__(self, data: Sequence[Any], rng: np.random.Generator) -> int:
        return self.mechanism.run([len(data), 2], GeneratorBits(rng))

    def batch(self, data: Sequence[Any], n: int, rng: np.random.Generator) -> npt.NDArray[Any]:
        return self.mechanism.run_batch([len(data), 2], n, GeneratorBits(rng))


def audit(mechanism: Any, eps: float, delta: float = 0.0) -> bool:
    result = audit_mechanism(
        mechanism, eps=eps, delta=delta, datasets=[[1, 2]], samples=SAMPLES, seed=3
    )
    return result.refuted


# -- values, shapes, costs ---------------------------------------------------------------------


def test_discrete_laplace_releases_integers_shaped_like_the_value() -> None:
    m = LaplaceMechanism(1, Fraction(1, 2), exact=True)
    out = m.run(np.array([[3, 4, 5]]), bits(0))
    assert out.dtype == np.int64
    assert out.shape == (1, 3)
    assert m.run_batch(7, 5, bits(0)).shape == (5,)
    assert m.scale == 2


def test_costs_are_the_float_siblings_with_safe_rounding() -> None:
    third = LaplaceMechanism(1, Fraction(1, 3), exact=True)
    assert third.cost() == DPCost(third.guarantee().eps)
    assert Fraction(third.guarantee().eps) >= Fraction(1, 3)
    g = GaussianMechanism.from_sigma2(1, 3, exact=True)  # rho = 1/6, not a float
    assert isinstance(g.cost(), ZCDPCost)
    assert type(g.cost()) is ZCDPCost  # not GaussianCost: not exactly mu-GDP
    assert g.rho == Fraction(1, 6)  # kept exact; reported rounded up:
    reported = g.cost().rho
    assert g.guarantee().rho == reported
    assert Fraction(reported) >= Fraction(1, 6)
    assert Fraction(math.nextafter(reported, 0.0)) < Fraction(1, 6)  # the least such float
    assert GaussianMechanism(2, 0.5, exact=True).sigma2 == 4


def test_a_float_parameter_is_used_exactly() -> None:
    assert LaplaceMechanism(1, 0.1, exact=True).eps == Fraction(0.1)
    assert LaplaceMechanism(1, 0.1, exact=True).eps != Fraction(1, 10)
    assert GaussianMechanism(1, 0.1, exact=True).rho == Fraction(0.1)


@pytest.mark.parametrize(
    ("args", "name"),
    [((1.5, 1), "sensitivity"), ((1, 0), "eps"), ((1, -1.0), "eps"), ((1, math.inf), "eps")],
)
def test_bad_parameters_are_refused(args: tuple[Any, Any], name: str) -> None:
    with pytest.raises(InvalidParameter, match=name):
        LaplaceMechanism(*args, exact=True)


def test_float_values_are_refused() -> None:
    with pytest.raises(InvalidParameter, match="value"):
        LaplaceMechanism(1, 1, exact=True).run(1.5, bits(0))


# -- laws --------------------------------------------------------------------------------------


def test_permute_and_flip_law() -> None:
    # scores (3, 2), eps = 1: candidate 1's coin is heads w.p. e^{-1/2}, then a fair pick
    n = 20_000
    choice = PermuteAndFlip(1).run_batch([3, 2], n, bits(5))
    p = math.exp(-0.5) / 2
    assert proportion_is_consistent(int((choice == 1).sum()), n, p)
    # planted twin: the exponential mechanism's law at the same eps, 1/(1 + e^{1/2})
    assert not proportion_is_consistent(int((choice == 1).sum()), n, 1 / (1 + math.exp(0.5)))


def test_permute_and_flip_respects_candidates() -> None:
    choice = PermuteAndFlip(1).run_batch([9, 2, 1], 500, bits(6), candidates=[False, True, True])
    assert set(np.unique(choice).tolist()) <= {1, 2}
    assert PermuteAndFlip(1).run([5], bits(0)) == 0


# -- black-box audits: not refuted at the claim; planted twins refuted ----------------------------


def test_discrete_laplace_is_not_refuted_at_its_claim() -> None:
    assert not audit(Count(LaplaceMechanism(1, Fraction(1, 2), exact=True)), eps=0.5)


def test_discrete_laplace_twin_is_refuted() -> None:
    # planted bug: scale Δ/(2·eps) (noise half as wide), still claimed eps-DP
    assert audit(Count(LaplaceMechanism(1, 1, exact=True)), eps=0.5)


def _gaussian_claim(rho: float, delta: float) -> float:
    """The standard zCDP → DP conversion: eps = rho + 2·sqrt(rho·log(1/delta)) (Bun–Steinke)."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def test_discrete_gaussian_is_not_refuted_at_its_claim() -> None:
    m = GaussianMechanism.from_sigma2(1, 4, exact=True)  # rho = 1/8
    assert not audit(Count(m), eps=_gaussian_claim(m.guarantee().rho, 1e-3), delta=1e-3)


def test_discrete_gaussian_twin_is_refuted() -> None:
    # planted bug: σ² = Δ²/(2·rho)/16, claimed at the same (eps, delta)
    assert audit(
        Count(GaussianMechanism.from_sigma2(1, Fraction(1, 4), exact=True)),
        _gaussian_claim(0.125, 1e-3),
        1e-3,
    )


def test_permute_and_flip_is_not_refuted_at_its_claim() -> None:
    assert not audit(Select(PermuteAndFlip(1)), eps=1.0)


def test_permute_and_flip_twin_is_refuted() -> None:
    # planted bug: eps four times too large (the factor 2 and Δ dropped twice); on gaps of 1
    # its likelihood ratio is e^2 > e^1
    assert audit(Select(PermuteAndFlip(4)), eps=1.0)
