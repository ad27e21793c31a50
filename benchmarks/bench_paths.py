"""Timing of the exact path samplers against numpy's raw normal generation, in the same run.

Batch Brownian sampling of 10,000 trials x 1,000 grid points (d = 1) is compared with
``rng.standard_normal`` drawing the same number of values (median of several repeats); the
target is a throughput ratio of at least 0.5. Also reported: the per-step cost of the
interactive `BrownianPath.next`, and the batch Laplace, Koufogiannis and Skellam samplers on
the same grid. Run: ``python benchmarks/bench_paths.py [--repeats N]``. The ratio is printed last.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from timing import median_seconds  # benchmarks/timing.py, a sibling module

from expost.processes import (
    BrownianPath,
    sample_brownian_grid,
    sample_koufogiannis_grid,
    sample_laplace_grid,
    sample_skellam_grid,
)

__all__ = ["main"]

TRIALS = 10_000
GRID_POINTS = 1_000
TARGET_RATIO = 0.5


def interactive_step_microseconds(rng: np.random.Generator, grid: np.ndarray, paths: int) -> float:
    """Mean cost of one `BrownianPath.next` call, in microseconds."""
    start = time.perf_counter()
    for _ in range(paths):
        path = BrownianPath(1, rng)
        for t in grid:
            path.next(float(t))
    return 1e6 * (time.perf_counter() - start) / (paths * grid.size)


def main(repeats: int = 7) -> float:
    """Print all timings and return the batch/raw throughput ratio (printed last)."""
    rng = np.random.default_rng(2024)
    grid = np.linspace(1.0, 1e-3, GRID_POINTS)
    draws = TRIALS * GRID_POINTS

    raw = median_seconds(lambda: rng.standard_normal((TRIALS, GRID_POINTS, 1)), repeats)
    brownian = median_seconds(lambda: sample_brownian_grid(grid, TRIALS, 1, rng), repeats)
    step_us = interactive_step_microseconds(rng, grid, paths=20)
    others = {
        "sample_laplace_grid": lambda: sample_laplace_grid(grid, TRIALS, 1, rng),
        "sample_koufogiannis_grid": lambda: sample_koufogiannis_grid(grid, TRIALS, 1, rng),
        "sample_skellam_grid": lambda: sample_skellam_grid(grid, TRIALS, 1, rng),
    }

    print(f"grid: {TRIALS:,} trials x {GRID_POINTS:,} points, d = 1, median of {repeats}")
    print(f"raw standard_normal        {raw * 1e3:9.1f} ms  {draws / raw / 1e6:8.1f} M values/s")
    print(f"sample_brownian_grid       {brownian * 1e3:9.1f} ms  {draws / brownian / 1e6:8.1f} M/s")
    for name, run in others.items():
        seconds = median_seconds(run, max(3, repeats // 2))
        print(f"{name:<26} {seconds * 1e3:9.1f} ms  {draws / seconds / 1e6:8.1f} M values/s")
    print(f"BrownianPath.next          {step_us:9.2f} us per step")
    ratio = raw / brownian
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    print(
        f"throughput ratio batch Brownian / raw normal: {ratio:.3f} ({verdict} target {TARGET_RATIO})"
    )
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    main(parser.parse_args().repeats)
