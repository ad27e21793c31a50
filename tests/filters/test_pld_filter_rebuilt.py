"""A `PLDFilter` rebuilt from its rounds never overspends (issue 41, item 7).

A filter without a mechanism, rebuilt from recorded rounds (``realised=``), is fixed by the
first round, as the live filter was. Checked by the harm itself: after a round of Gaussian ρ1,
rounds of a noisier ρ2 are spent on the rebuilt filter until it refuses; the whole interaction —
one round of ρ1 and n of ρ2 — is a Gaussian of μ² = 2(ρ1 + n·ρ2) (Dong, Roth & Su 2022,
Cor. 2.13), whose exact δ(ε) (30 digits, mpmath) must be within the budget. The second guard,
beside tests/house/test_planted_bugs.py (the rebuilt filter equals the live one), of the planted
bug "a filter rebuilt from its rounds fixed by the last round": fixed by ρ2, it counts the ρ1
round as a ρ2 one and admits rounds past the budget.
"""

from __future__ import annotations

import mpmath as mp
import pytest

from expost.errors import BudgetExceeded
from expost.filters import GaussianCost, PLDFilter

EPS, DELTA = 1.0, 1e-6


def gaussian_delta(mu_squared: float, eps: float) -> mp.mpf:
    """δ(ε) of the μ-GDP Gaussian pair, μ² given (Dong, Roth & Su 2022, Cor. 2.13)."""
    with mp.workdps(30):
        m, e = mp.sqrt(mp.mpf(mu_squared)), mp.mpf(eps)
        return mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)


@pytest.mark.parametrize(("rho1", "rho2"), [(0.002, 0.0005), (0.001, 0.0002), (0.0005, 0.0004)])
def test_rounds_spent_on_a_rebuilt_filter_stay_within_the_budget(rho1: float, rho2: float) -> None:
    f = PLDFilter(EPS, DELTA, realised=(GaussianCost(rho1), GaussianCost(rho2)))
    n = 1
    while True:
        try:
            f = f.spend(GaussianCost(rho2))
        except BudgetExceeded:
            break
        n += 1
    assert n >= 2
    mu_squared = 2 * (mp.mpf(rho1) + n * mp.mpf(rho2))
    assert gaussian_delta(float(mu_squared), EPS) <= DELTA, n
