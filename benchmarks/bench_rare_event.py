"""Importance sampling against plain Monte Carlo for the linear boundary at delta = 1e-6.

The deploy audit ``bm-ex-post/linear/uniform/sens-1/d-1`` (BM, linear boundary tuned at E = 1,
120 log-spaced times, uniform adversary; Girsanov drift 2a, weight bound delta) is run with
n = 1000, 2000, 4000, … runs until its betting interval (each side at the audit's level
1 − 1e-6) has a relative half-width <= 10%. Plain Monte Carlo is not run at delta: the runs it
would need for the same half-width come from its variance, ``n = z²·p(1 − p)/(0.1·p)²`` with
z = Φ⁻¹(1 − 1e-6) and p the importance estimate (a normal-approximation figure, the most
favourable one for plain Monte Carlo). Its time is that n times the cost per plain run, measured
here on 200,000 plain runs of the same simulator (θ = 0). Printed last: the sample and time
ratios plain / importance. Run from the repository root: ``python benchmarks/bench_rare_event.py``.
"""

from __future__ import annotations

import time
from functools import partial

import numpy as np
from scipy import stats

from expost.audit import ALPHA_AUDIT, betting_bounds
from expost.audit._shared import grid_times, neighbours
from expost.audit.deploy.brownian import Drift, crossing_weights, weight_bound
from expost.boundaries import LinearPrivacyBoundary

__all__ = ["main"]

DELTA, TARGET = 1e-6, 0.10


def main() -> None:
    psi = LinearPrivacyBoundary.tuned_for(1.0, DELTA, 1.0)
    fx, fxp = neighbours(1.0, 1)
    times = tuple(float(t) for t in grid_times(psi))
    proposal = Drift(2.0 * psi.a)
    bound = weight_bound(proposal, np.asarray(times), psi, 1.0)
    draw = partial(crossing_weights, proposal, times, tuple(fx), tuple(fxp), psi)
    n, start = 1000, time.perf_counter()
    while True:
        x = draw(n, np.random.default_rng([1, n]))
        lo, hi = betting_bounds(x / bound, ALPHA_AUDIT)
        estimate = float(x.mean())
        half = (hi - lo) * bound / 2.0 / estimate
        if half <= TARGET:
            break
        n *= 2
    seconds = time.perf_counter() - start  # every round of the doubling counts

    plain = partial(crossing_weights, Drift(0.0), times, tuple(fx), tuple(fxp), psi)
    probe = 200_000
    t0 = time.perf_counter()
    plain(probe, np.random.default_rng(2))
    per_run = (time.perf_counter() - t0) / probe
    z = float(stats.norm.isf(ALPHA_AUDIT))
    n_plain = z * z * estimate * (1.0 - estimate) / (TARGET * estimate) ** 2

    print(
        f"linear boundary, delta = {DELTA:g}: P = {estimate:.4g} (P/delta = {estimate / DELTA:.3f})"
    )
    print(f"importance sampling: {n} runs, relative half-width {half:.3f}, {seconds:.2f} s")
    print(
        f"plain Monte Carlo:   {n_plain:.3g} runs needed, ~{n_plain * per_run:.3g} s at "
        f"{per_run * 1e6:.2f} us/run (measured on {probe} runs)"
    )
    print(
        f"ratio plain/importance: samples {n_plain / n:.3g}, time {n_plain * per_run / seconds:.3g}"
    )


if __name__ == "__main__":
    main()
