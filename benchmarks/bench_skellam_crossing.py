"""Exact Skellam crossing probability (`expost.audit.skellam_crossing`): FFT against direct sums.

A 100-time geometric grid from λT_1 down to 1 (λ = 1) with a constant boundary, at
λT_1 = 10^2 … 10^5: the library's FFT convolutions (O(K log K) per step) against the same
recursion with direct convolutions (``numpy.convolve``, O(K²) per step; the baseline), in the same
run (median of ``--repeats``). Prints the support K, both times, the ratio and the largest
difference of the two probabilities (it must lie within the stated round-off bounds).
Run: ``python benchmarks/bench_skellam_crossing.py [--repeats 3]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import median_seconds  # benchmarks/timing.py, a sibling module

import expost.audit.skellam_crossing as sc

__all__ = ["main"]

TIMES = 100
PSI = 0.05


def _direct(mass: np.ndarray, increment_mean: float) -> tuple[np.ndarray, float]:
    """Baseline transition: the same window, by direct summation (error bound not needed here)."""
    k = mass.size // 2
    step = sc._pmf(increment_mean, np.arange(-2 * k, 2 * k + 1, dtype=np.int64))
    return np.convolve(step, mass, mode="valid"), 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{'λT_1':>8} {'K':>6} {'fft s':>9} {'direct s':>9} {'ratio':>7} {'P':>12} {'|ΔP|':>9} {'bound':>9}"
    )
    for top in (1e2, 1e3, 1e4, 1e5):
        grid = np.geomspace(top, 1.0, TIMES)
        psi = np.full(TIMES, PSI)

        def run(grid: np.ndarray = grid, psi: np.ndarray = psi) -> object:
            return sc.skellam_crossing_probability(1.0, grid, 1, psi)

        fast = sc.skellam_crossing_probability(1.0, grid, 1, psi)
        fft_s = median_seconds(run, args.repeats)
        honest = sc._transition
        sc._transition = _direct  # the baseline, swapped in for timing
        try:
            slow = sc.skellam_crossing_probability(1.0, grid, 1, psi)
            direct_s = median_seconds(run, args.repeats)
        finally:
            sc._transition = honest
        gap = abs(fast.probability - slow.probability)
        print(
            f"{top:>8.0e} {fast.support:>6} {fft_s:>9.3f} {direct_s:>9.3f} {direct_s / fft_s:>7.1f} "
            f"{fast.probability:>12.9f} {gap:>9.1e} {fast.roundoff:>9.1e}"
        )
        assert gap <= fast.roundoff + 1e-12, gap


if __name__ == "__main__":
    main()
