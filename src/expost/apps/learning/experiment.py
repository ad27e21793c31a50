"""The DP-SGD reproduction: every method on every seed, then the summary per data set and target.

Seed s fixes the split (`split` with ``default_rng([s, 0])``) and each method's session rng
(``default_rng([s, code, target index])``): every method sees the same rows, and a run's result
does not depend on which other runs were made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from expost.apps.learning.data import load_rows, split
from expost.apps.learning.methods import METHODS, Run, accuracy_first, doubling, fixed, oracle
from expost.apps.learning.setup import Setup

__all__ = ["run_setup", "summarise"]


def _rng(seed: int, code: int, index: int = 0) -> np.random.Generator:
    return np.random.default_rng([seed, code, index])


def run_setup(
    setup: Setup,
    seeds: Sequence[int],
    targets: Sequence[float] | None = None,
    tick: Callable[[], None] | None = None,
) -> list[Run]:
    """Every method on every seed for ``targets`` (default: the setup's), in a fixed order."""
    rows = load_rows(setup.dataset)
    goals = tuple(setup.targets if targets is None else targets)
    runs: list[Run] = []
    for seed in seeds:
        data = split(rows, setup.dataset, _rng(seed, 0))
        for i, target in enumerate(goals):
            runs.append(accuracy_first(setup, data, target, seed, _rng(seed, 1, i)))
            runs.append(doubling(setup, data, target, seed, _rng(seed, 2, i)))
        runs.extend(fixed(setup, data, goals, seed, _rng(seed, 3)))
        runs.extend(oracle(setup, data, goals, seed, _rng(seed, 4)))
        if tick is not None:
            tick()
    return runs


def _quartiles(values: Sequence[float]) -> dict[str, float]:
    q25, median, q75 = np.quantile(np.asarray(values, dtype=np.float64), [0.25, 0.5, 0.75])
    return {"median": float(median), "q25": float(q25), "q75": float(q75)}


def summarise(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Per data set, target and method: quartiles of the reported ε, the share of runs that met
    the target on the test rows, the median steps and checks (and, for accuracy-first, the
    median of each route and the share stopped by the budget)."""
    groups: dict[tuple[str, float, str], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.dataset, r.target, r.method), []).append(r)
    out = []
    for (dataset, target, method), members in sorted(
        groups.items(),
        key=lambda kv: (kv[0][0], kv[0][1], METHODS.index(kv[0][2])),
    ):
        row: dict[str, Any] = {
            "dataset": dataset,
            "target": target,
            "method": method,
            "runs": len(members),
            "eps": _quartiles([r.eps for r in members]),
            "met_share": float(np.mean([r.met_target for r in members])),
            "median_steps": float(np.median([r.steps for r in members])),
            "median_checks": float(np.median([r.checks for r in members])),
        }
        if method == "accuracy-first":
            row["eps_grid"] = _quartiles([r.eps_grid or 0.0 for r in members])
            row["eps_rdp"] = _quartiles([r.eps_rdp or 0.0 for r in members])
            row["stopped_by_budget"] = float(np.mean([r.stopped_by == "budget" for r in members]))
        out.append(row)
    return out
