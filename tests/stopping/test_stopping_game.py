"""Exact adaptive-stopping games (expost.symbolic.stopping), checked by hand-computed values."""

from __future__ import annotations

from fractions import Fraction as Fr

import pytest

from expost.errors import InvalidParameter
from expost.symbolic.stopping import (
    Game,
    best_value,
    hockey_stick,
    kinks,
    pair_product,
    randomized_response,
    reverse,
    strategies,
    strategy_value,
)

RR2 = randomized_response(Fr(2))  # P = (2/3, 1/3), Q = (1/3, 2/3)


def test_hockey_stick_of_randomised_response_by_hand() -> None:
    assert ((Fr(2, 3), Fr(1, 3)), (Fr(1, 3), Fr(2, 3))) == RR2
    assert hockey_stick(RR2, Fr(1)) == Fr(1, 3)  # total variation
    assert hockey_stick(RR2, Fr(2)) == 0
    assert hockey_stick(RR2, Fr(0)) == 1
    # two rounds: outputs (0,0) has P = 4/9, Q = 1/9; at γ = 2: (4/9 − 2/9) = 2/9
    assert hockey_stick(pair_product([RR2, RR2]), Fr(2)) == Fr(2, 9)
    assert reverse(RR2) == (RR2[1], RR2[0])


def test_best_value_is_the_maximum_over_enumerated_strategies() -> None:
    game = Game((RR2, randomized_response(Fr(3))), 2)
    listed = list(strategies(game))
    assert len(listed) == 1 + 2 * 3**2  # stop, or one of 2 items then (stop | 2 items) per output
    for gamma in (Fr(1, 2), Fr(1), Fr(3, 2), Fr(2)):
        assert max(strategy_value(game, s, gamma) for s in listed) == best_value(game, gamma)


def test_admission_rule_limits_the_tree() -> None:
    game = Game((RR2,), 5, lambda history: len(history) <= 2)
    assert best_value(game, Fr(2)) == hockey_stick(pair_product([RR2, RR2]), Fr(2))
    assert strategy_value(game, None, Fr(1, 2)) == Fr(1, 2)


def test_kinks_cover_the_leaf_ratios() -> None:
    points = kinks([RR2], 2)
    assert points == (Fr(0), Fr(1, 4), Fr(1, 2), Fr(1), Fr(2), Fr(4), Fr(5))


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(InvalidParameter):
        randomized_response(Fr(1, 2))
    with pytest.raises(InvalidParameter):
        Game((RR2,), -1)
