"""Computed domination has no tolerance (issue 41, item 7).

`dominated` decides δ_B <= δ_A on a grid from certified bounds, comparing exactly where floats
cannot tell. The fixed pair A here is the symmetric (0, t) pair — outcomes (0, ∞, −∞) with P =
(1 − t, t, 0), Q = (1 − t, 0, t) — whose δ is t at every ε in both directions, so the right
side is flat. The new pair B is randomised response with P = (1/2 + x, 1/2 − x) and Q swapped:
δ_B(0) = 2x, its total variation, and δ_B <= 2x everywhere. With 2x = t·(1 + 1e-10), B is not
dominated (δ_B(0) > t: exact, decided here in rationals); with 2x = t·(1 − 1e-6) it is. A
relative tolerance of 1e-9 in the grid's comparison (the planted bug) calls the first
dominated; two routes check it, `dominated` itself and a `PLDFilter` fixed on A.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from expost.costs.domination import dominated
from expost.costs.pairs import PmfPair
from expost.costs.wrappers import PairCost
from expost.errors import InvalidParameter
from expost.filters import PLDFilter

T = 0.01
FIXED_P, FIXED_Q = [1.0 - T, T, 0.0], [1.0 - T, 0.0, T]


def _rr(total_variation: float) -> tuple[list[float], list[float]]:
    x = total_variation / 2
    return [0.5 + x, 0.5 - x], [0.5 - x, 0.5 + x]


ABOVE, BELOW = _rr(T * (1 + 1e-10)), _rr(T * (1 - 1e-6))


def _tv(p: list[float], q: list[float]) -> Fraction:
    """δ(0) = Σ (p_i − q_i)⁺, exactly."""
    return sum(
        (max(Fraction(a) - Fraction(b), Fraction(0)) for a, b in zip(p, q, strict=True)),
        Fraction(0),
    )


def test_a_pair_a_hair_above_the_fixed_one_is_not_dominated() -> None:
    assert _tv(*ABOVE) > _tv(FIXED_P, FIXED_Q) == Fraction(T)  # truly not dominated at ε = 0
    assert _tv(*BELOW) < Fraction(T)
    fixed = PmfPair(FIXED_P, FIXED_Q)
    assert not dominated(fixed, PmfPair(*ABOVE))
    assert dominated(fixed, PmfPair(*BELOW))


def test_a_filter_fixed_on_it_refuses_a_round_a_hair_above() -> None:
    f = PLDFilter(1.0, 0.1, mechanism=PairCost.from_pmfs(FIXED_P, FIXED_Q))
    with pytest.raises(InvalidParameter, match="dominates"):
        f.admits(PairCost.from_pmfs(*ABOVE))
    assert f.admits(PairCost.from_pmfs(*BELOW))
