"""Timing helper shared by the benchmark scripts (run them as ``python benchmarks/bench_*.py``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

__all__ = ["median_seconds", "seconds"]


def seconds(run: Callable[[], object], repeats: int) -> list[float]:
    """Wall times of ``repeats`` calls of ``run()``, after one warm-up call."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``run()`` over ``repeats`` calls, after one warm-up call."""
    return statistics.median(seconds(run, repeats))
