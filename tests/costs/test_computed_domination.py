"""Domination by computation (`expost.costs.domination`, THEORY §13): the certified profile
bounds against 50-digit references, the decision in both directions, domination up to τ in
`PLDFilter`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from expost.costs import PairCost, PoissonSampled
from expost.costs.domination import dominated, profile_bounds
from expost.costs.pairs import ClosedPair, PmfPair
from expost.errors import InvalidParameter
from expost.filters import DPCost, LaplaceCost, PLDFilter

EPS = np.array([0.0, 0.05, 0.3, 1.0, 2.5])
USER = PmfPair((0.5, 0.3, 0.2), (0.4, 0.3, 0.3))
ONE_WAY = PmfPair((0.5, 0.5, 0.0), (0.45, 0.45, 0.1))


def _finite(p: tuple[float, ...], q: tuple[float, ...], eps: float) -> mp.mpf:
    return sum(
        max(mp.mpf(a) - mp.e ** mp.mpf(eps) * mp.mpf(b), 0) for a, b in zip(p, q, strict=True)
    )


def _reference(pair: ClosedPair | PmfPair, eps: float, direction: str) -> mp.mpf:
    with mp.workdps(50):
        if isinstance(pair, PmfPair):
            p, q = (pair.p, pair.q) if direction == "remove" else (pair.q, pair.p)
            return _finite(p, q, eps)
        e0 = mp.mpf(pair.level)
        if pair.family == "laplace":
            return max(1 - mp.e ** ((eps - e0) / 2), 0)
        if pair.family == "rr":
            a = mp.e**e0 / (1 + mp.e**e0)
            return max(a - mp.e ** mp.mpf(eps) * (1 - a), 0)
        mu = 1 / e0
        return mp.ncdf(-eps / mu + mu / 2) - mp.e**eps * mp.ncdf(-eps / mu - mu / 2)


PAIRS = [
    USER,
    ONE_WAY,
    PmfPair((0.35, 0.34, 0.31), (0.33, 0.34, 0.33), 0.5),
    ClosedPair("gaussian", 1.0),
    ClosedPair("gaussian", 0.3),
    ClosedPair("laplace", 0.5),
    ClosedPair("rr", 1.2),
]


@pytest.mark.parametrize("pair", PAIRS, ids=repr)
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_the_bounds_bracket_the_exact_profile(pair: ClosedPair | PmfPair, direction: str) -> None:
    low, high = profile_bounds(pair, EPS, direction)
    for e, lo, hi in zip(EPS, low, high, strict=True):
        exact = (
            _reference(pair, float(e), direction)
            if not isinstance(pair, PmfPair) or pair.rate == 1.0
            else None
        )
        if exact is None:  # a subsampled pmf pair: the mixture's own laws
            _, q, m = pair.laws()  # type: ignore[union-attr]
            a, b = (m, q) if direction == "remove" else (q, m)
            with mp.workdps(50):
                exact = sum(
                    max(
                        mp.mpf(x.numerator) / x.denominator
                        - mp.e ** mp.mpf(float(e)) * mp.mpf(y.numerator) / y.denominator,
                        0,
                    )
                    for x, y in zip(a, b, strict=True)
                )
        assert lo <= exact <= hi, (e, lo, exact, hi)
        assert hi - lo <= 1e-11


def test_the_directions_differ_planted_twin() -> None:
    """The remove direction's bounds do not bound the add direction of a one-way pair: a check
    of one direction only would be wrong (the twin the decision must not make)."""
    remove_high = profile_bounds(ONE_WAY, [0.5], "remove")[1][0]
    add_low = profile_bounds(ONE_WAY, [0.5], "add")[0][0]
    assert remove_high < add_low


def test_domination_is_decided_in_both_directions() -> None:
    rr = ClosedPair("rr", 0.5)
    assert dominated(rr, USER)
    assert not dominated(rr, ONE_WAY)  # remove direction dominated, add direction not
    assert not dominated(ClosedPair("laplace", 0.5), ClosedPair("rr", 0.5))
    assert not dominated(rr, ClosedPair("gaussian", 5.0))  # unbounded loss: no tail argument


def test_a_filter_admits_by_computation_and_refuses_one_direction() -> None:
    f = PLDFilter(2.0, 0.05, DPCost(0.5))
    assert f.admits(PairCost.from_pmfs(USER.p, USER.q))
    with pytest.raises(InvalidParameter, match="both neighbour directions"):
        f.check(PairCost.from_pmfs(ONE_WAY.p, ONE_WAY.q))
    assert PLDFilter(1.0, 1e-6, LaplaceCost(0.5)).admits(LaplaceCost(0.2))  # closed form


def _reveal(p: list[float], q: list[float], tau: float) -> PairCost:
    """Reveal the record with probability τ, else run (p, q)."""
    return PairCost.from_pmfs(
        [tau, 0.0, *((1 - tau) * x for x in p)], [0.0, tau, *((1 - tau) * y for y in q)]
    )


def test_domination_up_to_tau_charges_tau_per_round() -> None:
    """A round dominated only up to τ is admitted by a filter with that τ, and the count K keeps
    δ_K(ε) + K·τ <= δ; without τ it is refused."""
    fixed = PairCost.from_pmfs([0.5, 0.3, 0.2], [0.4, 0.3, 0.3])
    inner = ([0.45, 0.3, 0.25], [0.4, 0.3, 0.3])
    reveal = _reveal(*inner, 1e-4)
    plain = PLDFilter(2.0, 0.05, fixed)
    assert not plain.accepts(reveal)
    tolerant = PLDFilter(2.0, 0.05, fixed, tau=1e-4)
    assert tolerant.admits(reveal)
    k = int(tolerant.budget)
    assert 0 < k <= plain.budget
    pld = fixed.pair().pld(5e-4)
    assert Fraction(pld.self_compose(k).delta(2.0)) + k * Fraction(1e-4) <= Fraction(0.05)
    assert not tolerant.accepts(_reveal(*inner, 2e-4))  # τ fixed in advance: a larger one refused


def test_a_subsample_of_the_fixed_mechanism_is_admitted_by_its_order() -> None:
    c = PairCost.from_pmfs(USER.p, USER.q)
    f = PLDFilter(2.0, 1e-5, PoissonSampled(c, 0.5))
    assert f.admits(PoissonSampled(c, 0.2))
    assert not f.accepts(c)  # rate 1 > 0.5
    assert math.isfinite(f.budget)


def test_a_fixed_pair_without_closed_bounds_uses_its_pld_sides() -> None:
    """Under a subsampled Gaussian (no closed form for its lower δ) a mild pmf pair is admitted
    from the PLD's optimistic side, a blatant one refused."""
    from expost.filters import SubsampledGaussianCost

    f = PLDFilter(8.0, 0.05, SubsampledGaussianCost.from_sigma(1.0, 0.5))
    assert f.budget > 0
    assert f.admits(PairCost.from_pmfs([0.34, 0.33, 0.33], [0.33, 0.33, 0.34]))
    assert not f.accepts(PairCost.from_pmfs([0.6, 0.2, 0.2], [0.2, 0.2, 0.6]))
