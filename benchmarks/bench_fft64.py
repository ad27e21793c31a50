"""The float64 FFT path against long double, both with their proven bounds (docs/theory/fft-error.md §6).

    PYTHONPATH=src python benchmarks/bench_fft64.py [--repeats 3]

1,202 DP-SGD steps (q = 0.01, σ = 1, grid 1e-3) by `self_compose`, δ bracket at ε = 2, for tail
masses where the rule does and does not admit float64; baseline in the same run: the same
composition with `FFT64_SHARE` = 0 (long double throughout). Prints both times, the ratio
long double / float64, the certified bracket widths and the carried convolution error.
"""

from __future__ import annotations

import argparse
from functools import partial

from timing import median_seconds

from expost.pld import PrivacyLossDistribution, counting, splitting
from expost.pld.convolution import FFT64_SHARE

STEPS = 1202


def _compose(tail: float) -> PrivacyLossDistribution:
    counting.clear_caches()
    law = PrivacyLossDistribution.gaussian(
        1.0, sampling_prob=0.01, tail_mass=tail, value_discretization=1e-3
    )
    return law.self_compose(STEPS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for tail in (1e-16, 1e-10):
        results = []
        for label, value in (("rule", FFT64_SHARE), ("long double", 0.0)):
            setattr(splitting, "FFT64_SHARE", value)  # noqa: B010 (the share convolve_within reads)
            t = median_seconds(partial(_compose, tail), args.repeats)
            pld = _compose(tail)
            low, high = pld.delta_bracket(2.0)
            results.append(t)
            print(
                f"tail mass {tail:.0e}, {label}: {t:.3f} s, bracket width {high / low - 1:.3e}, "
                f"convolution error {pld.remove.error:.1e}"
            )
        setattr(splitting, "FFT64_SHARE", FFT64_SHARE)  # noqa: B010
        print(f"tail mass {tail:.0e}: ratio long double / rule {results[1] / results[0]:.2f}")


if __name__ == "__main__":
    main()
