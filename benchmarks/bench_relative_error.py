"""APC Sec. 7 (relative-error counts): the batch engine against a researcher's loop, same run.

(a) `expost.apps.relative_error.run_batch`: every trial of a size at once, lock-step rounds.
(b) A straightforward loop, written the way a researcher would (plain numpy, no expost): one
    trial, one round and one grid point at a time; each Brownian release samples its full path
    over the whole grid first (increments from the least noisy time up), then walks it; the
    budget is a float running sum of eps² against 2·rho*.

Both run the same protocol (APC Sec. 7 defaults) on the same sizes; (b) runs fewer trials and its
time is extrapolated to (a)'s. Agreement: for each size and method, the mean number of counts
returned and the mean precision of (a) and (b) must agree by a two-sample z-test at level 1e-6.
(a) is timed as the median of a few runs after a warm-up, (b) once after a warm-up. The speed
ratio (b)/(a) is printed last (target >= 50). Run from the repository root:
``python benchmarks/bench_relative_error.py [--trials 1000] [--baseline-trials 40] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats
from timing import median_seconds  # benchmarks/timing.py, a sibling module

from expost.apps import relative_error as re
from expost.apps.data import zipf_counts, zipf_probabilities

__all__ = ["baseline_trial", "main"]

TARGET_RATIO = 50.0
Z = float(stats.norm.isf(1e-6 / 2.0))


# ----------------------------------------------------------------------------- (b) the loop


def _accept(y: float, eps: float, alpha: float) -> bool:
    sd = 1.0 / eps
    return abs(y) > sd and 1.0 - alpha < abs((y + sd) / (y - sd)) <= 1.0 + alpha


def baseline_trial(
    counts: np.ndarray, method: str, rng: np.random.Generator
) -> tuple[int, int, float]:
    """One trial: (counts returned, how many within alpha, eps² spent incl. EM)."""
    alpha, eps_em, start, size = 0.1, 0.1, 1e-4, 1000
    ell = math.log(1e6)
    budget = 2.0 * (math.sqrt(ell + 10.0) - math.sqrt(ell)) ** 2  # sum of eps² <= 2 rho*
    em = eps_em**2 / 4.0  # eps_EM²/8 zCDP, in eps² units
    spent, returned, precise = 0.0, 0, 0
    left = list(range(counts.size))
    while left and spent + em + start <= budget:
        noisy = counts[left] + rng.gumbel(0.0, 1.0 / eps_em, len(left))
        i = left.pop(int(np.argmax(noisy)))
        spent += em
        y = float(counts[i])
        value = None
        if method == "bm":
            grid = np.linspace(start, budget - spent, size)  # eps², noisiest first
            times = 1.0 / grid
            increments = rng.normal(0.0, np.sqrt(np.diff(times[::-1], prepend=0.0)))
            path = np.cumsum(increments)[::-1]  # B(t_k), full path, t_1 > ... > t_K
            cost = grid[-1]
            for k in range(size):
                if _accept(y + path[k], math.sqrt(grid[k]), alpha):
                    value, cost = y + path[k], grid[k]
                    break
            spent += cost
        else:
            eps2 = start
            while spent + eps2 <= budget:
                spent += eps2
                noisy_y = y + rng.normal(0.0, 1.0 / math.sqrt(eps2))
                if _accept(noisy_y, math.sqrt(eps2), alpha):
                    value = noisy_y
                    break
                eps2 *= 2.0
        if value is not None:
            returned += 1
            precise += abs(value - y) < alpha * y
    return returned, precise, spent


def baseline(n: int, method: str, trials: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(returned, precision) per trial of the loop, each trial on fresh Zipf data."""
    rng = np.random.default_rng([seed, n, 0 if method == "bm" else 1])
    p = zipf_probabilities()
    out = []
    for _ in range(trials):
        counts = np.bincount(rng.choice(p.size, n, p=p), minlength=p.size).astype(float)
        out.append(baseline_trial(counts, method, rng))
    returned = np.array([r for r, _, _ in out])
    precision = np.array([q / r if r else 1.0 for r, q, _ in out])
    return returned, precision


# ----------------------------------------------------------------------------- comparison


def _agree(a: np.ndarray, b: np.ndarray) -> bool:
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    return abs(float(a.mean() - b.mean())) <= Z * max(se, 1e-12)


def main(trials: int = 1000, baseline_trials: int = 40, seed: int = 0, repeats: int = 3) -> float:
    """Print both engines' results and timings; return the speed ratio (printed last).

    The batch engine runs every cell (median of ``repeats`` timed runs after a warm-up), then
    the loop runs every cell once, after a one-trial warm-up.
    """
    settings = re.Settings()
    cells = [(n, m) for n in re.DEFAULT_SIZES for m in re.METHODS]
    data = {n: zipf_counts(np.random.default_rng([seed, n]), n, trials) for n in re.DEFAULT_SIZES}
    fast: dict[tuple[int, str], re.TrialResults] = {}

    def batch() -> None:
        for n, m in cells:
            fast[n, m] = re.run_batch(data[n], m, settings, np.random.default_rng([seed, n, 2]))

    batch_seconds = median_seconds(batch, repeats)
    baseline(8000, "bm", 1, seed + 1)  # warm-up
    began = time.perf_counter()
    slow = {(n, m): baseline(n, m, baseline_trials, seed) for n, m in cells}
    loop_seconds = (time.perf_counter() - began) * trials / baseline_trials
    agree = True
    print(f"{'n':>7} {'method':<8} {'batch results':>14} {'loop results':>13} "
          f"{'batch prec':>10} {'loop prec':>9}  agree")  # fmt: skip
    for n, m in cells:
        a, (returned, precision) = fast[n, m], slow[n, m]
        ok = _agree(a.returned.astype(float), returned.astype(float)) and _agree(
            a.precision, precision
        )
        agree &= ok
        print(
            f"{n:>7} {m:<8} {a.returned.mean():>14.2f} {returned.mean():>13.2f} "
            f"{a.precision.mean():>10.4f} {precision.mean():>9.4f}  {'yes' if ok else 'NO'}"
        )
    ratio = loop_seconds / batch_seconds
    print(
        f"batch engine: {batch_seconds:.2f} s for {trials} trials x 5 sizes x 2 methods "
        f"(median of {repeats})"
    )
    print(f"researcher loop: {loop_seconds:.1f} s extrapolated from {baseline_trials} trials/cell")
    print("engines agree (z-test, level 1e-6):", "yes" if agree else "NO")
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    print(f"speed ratio loop / batch: {ratio:.1f}x ({verdict} target {TARGET_RATIO:.0f}x)")
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--baseline-trials", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    main(args.trials, args.baseline_trials, args.seed, args.repeats)
