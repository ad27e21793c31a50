"""Composed PLDs at non-default ``tail_mass`` stay upper bounds (issue 41, item 7).

Randomised response composed k times by squarings (each composition cuts tails of up to
``tail_mass``: the top to +∞, the bottom moved up to the lowest kept loss) against the exact
δ(ε), a binomial sum at 50 digits (`expost.testing.pld_reference.randomised_response_delta`,
independent of the PLD code). The second guard, beside tests/house/test_planted_bugs.py
(total mass), of the planted bug "the bottom tail dropped when cut": it puts δ up to 0.26 below
the exact value here (0.737 against 0.9996 at ε0 = 0.5, k = 200, tail_mass = 1e-2).
"""

from __future__ import annotations

import numpy as np
import pytest

from expost.pld import PrivacyLossDistribution
from expost.testing.pld_reference import randomised_response_delta


@pytest.mark.parametrize(
    ("eps0", "k", "tail_mass"),
    [(0.3, 64, 1e-2), (0.5, 32, 1e-2), (0.2, 100, 1e-3), (0.5, 200, 1e-2), (1.0, 16, 5e-2)],
)
def test_composed_randomised_response_is_above_the_exact_delta(
    eps0: float, k: int, tail_mass: float
) -> None:
    pld = PrivacyLossDistribution.pure_dp(
        eps0, value_discretization=1e-3, tail_mass=tail_mass
    ).self_compose(k)
    for eps in np.linspace(0.0, 0.6 * k * eps0, 12).tolist():
        assert pld.delta(eps) >= randomised_response_delta(eps0, eps, k), eps
