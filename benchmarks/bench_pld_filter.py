"""Per-round cost of `PLDFilter` as rounds grow: it must stay flat (issue 35, item 4a).

A counting filter computes its count K once per (mechanism, eps, delta) from the composed
privacy loss distribution (`expost.pld.max_rounds`, cached) and then charges each round O(1):
admit + spend of one DP-SGD step (q = 0.01, σ = 1) at (2, 1e-5), K about 1,200, timed as the
median over a window of rounds starting after 10 and after 1,000 recorded rounds, through the
filter alone and through a `PrivateSession` (accounting only: a no-op in place of the
mechanism). The one-off computation of K is timed apart. The ratios (round 1,000 / round 10)
come last; the issue asks for at most 2×.

Run: ``python benchmarks/bench_pld_filter.py [--window N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from expost import PLDFilter, PrivateSession
from expost.filters import SubsampledGaussianCost
from expost.filters.pld import round_count
from expost.rounds import fixed

__all__ = ["filter_round", "main", "session_round"]

STEP = SubsampledGaussianCost.from_sigma(1.0, 0.01)
EPS, DELTA = 2.0, 1e-5


def _median(step: Callable[[], object], window: int) -> float:
    times = []
    for _ in range(window):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def filter_round(recorded: int, window: int) -> float:
    """Median seconds of admits + spend of one step after ``recorded`` steps."""
    f = PLDFilter(EPS, DELTA, STEP)
    for _ in range(recorded):
        f = f.spend(STEP)
    state = [f]

    def step() -> None:
        g = state[0]
        if g.admits(STEP):
            state[0] = g.spend(STEP)

    return _median(step, window)


def session_round(recorded: int, window: int) -> float:
    """Median seconds of one session round's accounting after ``recorded`` rounds."""
    session = PrivateSession(PLDFilter(EPS, DELTA, STEP), np.random.default_rng(0))

    def step() -> None:
        session._release(fixed("subsampled-gaussian", STEP, lambda: None))

    for _ in range(recorded):
        step()
    return _median(step, window)


def main(window: int = 64) -> dict[str, float]:
    """Print the per-round costs and return the ratios (printed last)."""
    round_count.cache_clear()
    start = time.perf_counter()
    count = PLDFilter(EPS, DELTA, STEP).budget
    once = time.perf_counter() - start
    print(f"K = {count:,.0f} steps at ({EPS}, {DELTA}); computed once in {once * 1e3:.0f} ms")
    rows = {"filter": filter_round, "session": session_round}
    ratios = {}
    print(f"{'per-round cost, µs':<24} {'after 10':>10} {'after 1,000':>12}")
    for label, timed in rows.items():
        early, late = timed(10, window), timed(1_000, window)
        ratios[label] = late / early
        print(f"{label:<24} {early * 1e6:>10.1f} {late * 1e6:>12.1f}")
    for label, ratio in ratios.items():
        print(f"PLDFilter {label} round at 1,000 vs 10 rounds: {ratio:.2f}x")
    return ratios


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--window", type=int, default=64)
    main(parser.parse_args().window)
