"""Runs per second of the BNR Sec. 6 experiment, vectorised over runs vs one run at a time.

For each task at the paper's size (synthetic data, n = 10,000, d = 38 / 77, 60 privacy levels):

- vectorised: `run_task` with ``--runs`` runs (a run = one BM and one LNR path, the Figure 2
  losses at every level and the three checkers of Figure 3);
- one at a time: `single_run` for each (mechanism, checker) pair with interactive samplers
  (`BrownianNoiseReduction.run`, `LaplaceNoiseReduction.run`, `AboveThreshold.run`,
  `ReducedAboveThreshold.run` / `run_with_brownian`); a run = the six pairs, stopping early.

Run: ``python benchmarks/bench_erm.py [--runs N] [--single N]``. The ratio is printed last.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from expost.apps.data import synthetic_classification, synthetic_regression
from expost.apps.erm import (
    CHECKERS,
    METHODS,
    TARGETS,
    ERMTask,
    LogisticRegression,
    Mechanisms,
    RidgeRegression,
    privacy_levels,
    run_task,
    single_run,
)

__all__ = ["main"]


def vectorised_seconds_per_run(task: ERMTask, runs: int) -> float:
    levels = privacy_levels()
    start = time.perf_counter()
    run_task(task, levels, runs, np.random.SeedSequence(1), target=TARGETS[task.name])
    return (time.perf_counter() - start) / runs


def single_seconds_per_run(task: ERMTask, runs: int) -> float:
    mechanisms = Mechanisms.build(task, privacy_levels())
    rng = np.random.default_rng(2)
    start = time.perf_counter()
    for _ in range(runs):
        for method in METHODS:
            for checker in CHECKERS:
                single_run(task, mechanisms, method, checker, TARGETS[task.name], rng)
    return (time.perf_counter() - start) / runs


def main(runs: int = 200, single: int = 5) -> float:
    """Print runs per second per task both ways; return (and print last) the overall ratio."""
    tasks: list[ERMTask] = [
        LogisticRegression(synthetic_classification(np.random.default_rng(0))),
        RidgeRegression(synthetic_regression(np.random.default_rng(0))),
    ]
    total_vector = total_single = 0.0
    for task in tasks:
        vector = vectorised_seconds_per_run(task, runs)
        one = single_seconds_per_run(task, single)
        total_vector += vector
        total_single += one
        print(
            f"{task.name:<9} vectorised {1.0 / vector:9.1f} runs/s ({runs} runs)   "
            f"one at a time {1.0 / one:7.2f} runs/s ({single} runs)   ratio {one / vector:6.1f}"
        )
    ratio = total_single / total_vector
    print(f"ratio (vectorised / one at a time, runs per second, both tasks): {ratio:.1f}")
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--single", type=int, default=5)
    args = parser.parse_args()
    main(args.runs, args.single)
