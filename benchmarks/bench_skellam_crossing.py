"""Exact Skellam crossing probability (`expost.skellam.crossing`): FFT against direct sums.

A 100-time geometric grid from λT_1 down to 1 (λ = 1, ψ = 0.05) at λT_1 = 10^2 … 10^5: the
``method="fft"`` convolutions (O(K log K) per step) against ``method="direct"`` (numpy.convolve,
O(K²) per step, the default), in the same run (median of ``--repeats``). Prints the support K,
both times, their ratio, the probability, the difference of the two results and both stated
round-off bounds (the difference must lie within them).
Run: ``python benchmarks/bench_skellam_crossing.py [--repeats 3]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import median_seconds  # benchmarks/timing.py, a sibling module

from expost.skellam.crossing import Method, SkellamCrossing, skellam_crossing_probability

__all__ = ["main"]

TIMES = 100
PSI = 0.05


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{'λT_1':>8} {'K':>6} {'fft s':>8} {'direct s':>9} {'ratio':>6} {'P':>12} "
        f"{'|ΔP|':>8} {'fft bound':>10} {'direct bound':>12}"
    )
    for top in (1e2, 1e3, 1e4, 1e5):
        grid, psi = np.geomspace(top, 1.0, TIMES), np.full(TIMES, PSI)

        def run(method: Method, grid: np.ndarray = grid, psi: np.ndarray = psi) -> SkellamCrossing:
            return skellam_crossing_probability(1.0, grid, 1, psi, method=method)

        fft, direct = run("fft"), run("direct")
        fft_s = median_seconds(lambda: run("fft"), args.repeats)
        direct_s = median_seconds(lambda: run("direct"), args.repeats)
        gap = abs(fft.probability - direct.probability)
        print(
            f"{top:>8.0e} {fft.support:>6} {fft_s:>8.3f} {direct_s:>9.3f} {direct_s / fft_s:>6.2f} "
            f"{direct.probability:>12.9f} {gap:>8.1e} {fft.roundoff:>10.1e} {direct.roundoff:>12.1e}"
        )
        assert gap <= fft.roundoff + direct.roundoff, gap


if __name__ == "__main__":
    main()
