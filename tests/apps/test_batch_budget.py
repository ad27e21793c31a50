"""`BatchBudget` (expost.apps.batch_budget): the zCDP and GDP filters' rule vectorised over trials."""

from __future__ import annotations

import math

import numpy as np
import pytest

from expost.apps.batch_budget import BatchBudget
from expost.errors import BudgetExceeded, InvalidParameter
from expost.filters import (
    BrownianCost,
    Cost,
    GaussianCost,
    GaussianDPFilter,
    UnifiedFilter,
    ZCDPCost,
)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- BatchBudget: never admits what the scalar filter refuses ----------------------------------


def _budget_walk(
    naive: bool, seed: int, trials: int = 60, rounds: int = 50, *, gdp: bool = False
) -> tuple[int, int]:
    """Random cost sequences fed to scalar `UnifiedFilter`s (``gdp``: `GaussianDPFilter`s, held
    by the batch in rho units, mu²/2) and to one `BatchBudget`.

    Costs: random Gaussian rounds, random BM stops, and edge cases (the scalar's exact
    ``remaining`` and ``max_bm_eps`` nudged by ulps). ``naive``: the planted twin, a float
    running sum compared with the budget and BMs charged eps²/2 without rounding up. Returns
    (admitted by the batch but refused by the scalar filter, disagreements on the non-edge costs).
    """
    rng = _rng(seed)
    start: UnifiedFilter | GaussianDPFilter = (
        GaussianDPFilter.from_dp(10.0, 1e-6) if gdp else UnifiedFilter.from_dp(10.0, 1e-6)
    )
    unit = 2.0 if gdp else 1.0
    scalar = [start] * trials
    batch = BatchBudget.start(start, trials)
    naive_spent = np.zeros(trials)
    unsafe = plain_disagree = 0
    for _ in range(rounds):
        kinds = rng.integers(0, 4, trials)
        costs: list[Cost] = []
        charged = np.empty(trials)
        for i, kind in enumerate(kinds):
            nudge = int(rng.integers(-2, 3))
            if kind == 0:
                gauss = GaussianCost(float(rng.uniform(1e-6, 0.1)))
                costs.append(gauss)
                charged[i] = gauss.rho
            elif kind == 1:
                e2 = float(rng.uniform(1e-4, 0.2))
                costs.append(BrownianCost(1.0 / e2))
                charged[i] = e2 / 2.0 if naive else BatchBudget.bm_cost(e2)
            elif kind == 2:
                c = max(_nudge(scalar[i].remaining / unit, nudge), 1e-300)
                costs.append(GaussianCost(c))
                charged[i] = c
            else:
                e = max(_nudge(scalar[i].max_bm_eps(), abs(nudge)), 1e-3)
                costs.append(BrownianCost.from_eps(e))
                charged[i] = e * e / 2.0 if naive else BatchBudget.bm_cost(e * e)
        ok = naive_spent + charged <= start.budget / unit if naive else batch.admits(charged)
        sok = np.array([f.admits(c) for f, c in zip(scalar, costs, strict=True)])
        unsafe += int(np.sum(ok & ~sok))
        plain_disagree += int(np.sum((ok != sok) & (kinds < 2)))
        both = np.flatnonzero(ok & sok)
        for j in both.tolist():
            scalar[j] = scalar[j].spend(costs[j])
        if naive:
            naive_spent[both] += charged[both]
        else:
            batch = batch.spend(charged[both], both)
    return unsafe, plain_disagree


def _nudge(x: float, ulps: int) -> float:
    for _ in range(abs(ulps)):
        x = math.nextafter(x, math.inf if ulps > 0 else 0.0)
    return x


@pytest.mark.parametrize("gdp", [False, True])
def test_batch_budget_is_conservative_and_agrees_away_from_the_edge(gdp: bool) -> None:
    for seed in range(2):
        assert _budget_walk(naive=False, seed=seed, gdp=gdp) == (0, 0)
    unsafe, _ = _budget_walk(naive=True, seed=0, gdp=gdp)
    assert unsafe > 0  # twin: the naive float check overspends


def test_batch_budget_holds_a_gdp_filter_in_rho_units() -> None:
    f = GaussianDPFilter.from_dp(10.0, 1e-6).spend(BrownianCost.from_eps(0.5))
    b = BatchBudget.start(f, 2)
    assert b.rho == f.budget / 2.0
    np.testing.assert_array_equal(b.spent, [f.spent / 2.0] * 2)
    e = b.max_bm_eps()
    assert f.admits(BrownianCost.from_eps(float(e[0])))  # what the batch allows, the filter does
    assert math.isclose(e[0], f.max_bm_eps(), rel_tol=1e-12)
    with pytest.raises(InvalidParameter, match="GaussianDPFilter"):
        BatchBudget.start(ZCDPCost(0.1), 2)  # type: ignore[arg-type]


def test_batch_budget_max_bm_eps_and_spend() -> None:
    f = UnifiedFilter.from_dp(10.0, 1e-6).spend(ZCDPCost(0.3)).spend(BrownianCost.from_eps(0.5))
    b = BatchBudget.start(f, 3).spend(np.array([0.0, 0.1, 0.0]))
    b = b.spend(b.remaining([2]), [2])  # trial 2 spends all that is left
    e = b.max_bm_eps()
    for i, spent in enumerate([0.0, 0.1]):
        g = f.spend(ZCDPCost(spent)) if spent else f
        assert g.admits(
            BrownianCost.from_eps(float(e[i]))
        )  # what the batch allows, the filter does
        assert e[i] <= g.max_bm_eps()
        assert math.isclose(e[i], g.max_bm_eps(), rel_tol=1e-12)
    assert not np.any(b.admits(BatchBudget.bm_cost(np.nextafter(e[:2], np.inf) ** 2), [0, 1]))
    np.testing.assert_allclose(b.remaining(), [f.remaining, f.remaining - 0.1, 0.0], atol=1e-12)
    assert e[2] == 0.0
    assert not b.admits(1e-12, [2])[0]
    with pytest.raises(BudgetExceeded):
        b.spend(0.01, [1, 2])
    with pytest.raises(BudgetExceeded):
        b.spend(-0.01, [1])
    assert b.spend(0.01, [1]).spent[1] > b.spent[1]
    with pytest.raises(InvalidParameter):
        BatchBudget.start(f, 0)
