"""The DP-SGD reproduction: every method on every seed, then the summary per data set and target.

Seed s fixes the split (`split` with ``default_rng([s, 0])``) and each method's session rng
(``default_rng([s, code, target index])``): every method sees the same rows, and a run's result
does not depend on which other runs were made, nor on how many processes ran them
(`run_all`'s ``jobs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from typing import Any

import numpy as np

from expost.apps.learning.data import LabelledRows, load_rows, split
from expost.apps.learning.methods import METHODS, Run, accuracy_first, doubling, fixed, oracle
from expost.apps.learning.setup import SETUPS, Setup

__all__ = ["run_all", "run_seed", "run_setup", "summarise"]


def _rng(seed: int, code: int, index: int = 0) -> np.random.Generator:
    return np.random.default_rng([seed, code, index])


@lru_cache(maxsize=2)
def _rows(name: str) -> LabelledRows:
    return load_rows(name)


def run_seed(setup: Setup, seed: int, targets: Sequence[float] | None = None) -> list[Run]:
    """Every method on one seed for ``targets`` (default: the setup's), in a fixed order."""
    goals = tuple(setup.targets if targets is None else targets)
    data = split(_rows(setup.dataset), setup.dataset, _rng(seed, 0))
    runs: list[Run] = []
    for i, target in enumerate(goals):
        runs.append(accuracy_first(setup, data, target, seed, _rng(seed, 1, i)))
        runs.append(doubling(setup, data, target, seed, _rng(seed, 2, i)))
    runs.extend(fixed(setup, data, goals, seed, _rng(seed, 3)))
    runs.extend(oracle(setup, data, goals, seed, _rng(seed, 4)))
    return runs


def run_setup(
    setup: Setup,
    seeds: Sequence[int],
    targets: Sequence[float] | None = None,
    tick: Callable[[], None] | None = None,
) -> list[Run]:
    """`run_seed` on every seed, in order, in this process."""
    runs: list[Run] = []
    for seed in seeds:
        runs.extend(run_seed(setup, seed, targets))
        if tick is not None:
            tick()
    return runs


def _job(task: tuple[str, int, tuple[float, ...] | None]) -> list[Run]:
    name, seed, targets = task
    return run_seed(SETUPS[name], seed, targets)


def run_all(
    tasks: Sequence[tuple[str, int, tuple[float, ...] | None]],
    jobs: int = 1,
    tick: Callable[[], None] | None = None,
) -> list[Run]:
    """`run_seed` for each (data set, seed, targets) task, on ``jobs`` processes; the runs come
    back in the order of ``tasks`` whatever ``jobs`` is (each run depends on its seed alone)."""
    if jobs <= 1:
        out: list[Run] = []
        for task in tasks:
            out.extend(_job(task))
            if tick is not None:
                tick()
        return out
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_job, task) for task in tasks]
        results: list[Run] = []
        for future in futures:
            results.extend(future.result())
            if tick is not None:
                tick()
    return results


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
