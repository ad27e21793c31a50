"""Vectorised boundary evaluation against per-value scalar calls, in the same run.

Each boundary is evaluated on 10^6 values of v (one array call, median of several repeats)
and, as the baseline, one Python call per value on a 2,000-value subsample, extrapolated
to 10^6. Then the one-sided normal mixture against confseq's
``confseq.boundaries.normal_mixture_bound(v, alpha, v_opt, alpha_opt, is_one_sided=True)``
(C++, a bisection per value) on the same parameters: confseq's mixing precision is
rho = v_opt/(2ℓ + log(1 + 2ℓ)), ℓ = log(1/(2·alpha_opt)), which is our ``r``. confseq
(``pip install confseq``; not a dependency) is timed on a subsample and extrapolated; the
comparison is skipped with a message when it is absent. Run:
``python benchmarks/bench_boundaries.py [--repeats N]``. The smallest speed-up over all
boundaries is printed last.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
from functools import partial
from typing import Any

import numpy as np
from timing import median_seconds  # benchmarks/timing.py, a sibling module

from expost.boundaries import (
    FACStitched,
    LinearPrivacyBoundary,
    LineCrossing,
    MixturePrivacyBoundary,
    NormalMixture,
    PolynomialStitching,
)

__all__ = ["main"]

VALUES = 1_000_000
SUBSAMPLE = 2_000
CONFSEQ_SUBSAMPLE = 20_000
DELTA = 1e-6
V_OPT, ALPHA_OPT = 10.0, 0.05  # confseq's parametrisation of the mixing precision


def per_value(boundary: Any, values: list[float]) -> list[float]:
    """The scalar baseline: one Python call per value."""
    return [boundary(x) for x in values]


def confseq_comparison(v: np.ndarray[Any, Any], repeats: int) -> None:
    """Print the one-sided normal mixture against confseq's, same parameters, same run."""
    if importlib.util.find_spec("confseq") is None:
        print("confseq comparison skipped: confseq is not installed (pip install confseq)")
        return
    from confseq.boundaries import normal_mixture_bound

    ell = math.log(1.0 / (2.0 * ALPHA_OPT))
    ours = NormalMixture(V_OPT / (2.0 * ell + math.log1p(2.0 * ell)), DELTA, sides=1)
    sub = v[:CONFSEQ_SUBSAMPLE]

    def theirs() -> object:
        return normal_mixture_bound(sub, DELTA, V_OPT, ALPHA_OPT, True)

    mine = median_seconds(partial(ours, v), repeats)
    other = median_seconds(theirs, max(1, repeats // 2)) * (VALUES / CONFSEQ_SUBSAMPLE)
    gap = np.max(np.abs(ours(sub) / np.asarray(theirs()) - 1.0))
    print(
        f"one-sided normal mixture, r = rho(v_opt={V_OPT}, alpha_opt={ALPHA_OPT}), "
        f"delta={DELTA}: expost {mine * 1e3:.1f} ms, confseq {other * 1e3:.1f} ms "
        f"(on {CONFSEQ_SUBSAMPLE:,}, extrapolated), confseq/expost {other / mine:.1f}x, "
        f"max relative difference {gap:.1e}"
    )


def main(repeats: int = 5) -> float:
    """Print the timings and return the smallest vectorised/scalar speed-up (printed last)."""
    v = np.random.default_rng(2024).uniform(1e-3, 1e4, VALUES)
    confseq_comparison(v, repeats)
    scalars = [float(x) for x in v[:SUBSAMPLE]]
    boundaries: dict[str, Any] = {
        "LineCrossing": LineCrossing.for_delta(1.0, 1e-6),
        "NormalMixture sides=2": NormalMixture(r=1.0, delta=1e-6, sides=2),
        "NormalMixture sides=1": NormalMixture(r=1.0, delta=1e-6, sides=1),
        "PolynomialStitching": PolynomialStitching(1.0, 1e-6),
        "FACStitched": FACStitched(1e-3, 1e-6),
        "MixturePrivacyBoundary": MixturePrivacyBoundary(10.0, 1e-6),
        "LinearPrivacyBoundary": LinearPrivacyBoundary.tuned_for(0.3, 1e-6),
    }
    print(f"{VALUES:,} values of v; scalar baseline on {SUBSAMPLE:,}, extrapolated")
    print(f"{'boundary':<24} {'vectorised':>12} {'scalar':>12} {'speed-up':>10}")
    ratios = []
    for name, boundary in boundaries.items():
        vectorised = median_seconds(partial(boundary, v), repeats)
        baseline = partial(per_value, boundary, scalars)
        scalar = median_seconds(baseline, max(1, repeats // 2)) * (VALUES / SUBSAMPLE)
        ratios.append(scalar / vectorised)
        print(f"{name:<24} {vectorised * 1e3:9.1f} ms {scalar:10.2f} s {ratios[-1]:9.0f}x")
    worst = min(ratios)
    print(f"smallest speed-up, vectorised vs per-value scalar: {worst:.0f}x")
    return worst


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    main(parser.parse_args().repeats)
