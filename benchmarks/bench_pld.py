"""Privacy loss distributions: accuracy and time against exact values and dp-accounting (issue 35).

    PYTHONPATH=src python benchmarks/bench_pld.py [--repeats 3]

1. 1,000 Gaussian rounds (μ_total = 1 and 2): δ(ε) by `PrivacyLossDistribution` (default grid
   5e-4), the exact value (μ√k closed form, 50 digits), dp-accounting's pessimistic
   connect-the-dots δ (grid 1e-4) and prv-accountant's certified bracket, and the time of each
   (cold caches); the ratio of times dp-accounting / ours.
0. Speed at equal or smaller error (issue 40): 1,000 Gaussian rounds and 1,202 DP-SGD steps;
   for each dp-accounting grid its time and error, and ours at the coarsest setting whose
   certified bracket width is at most that error (time, width), and the ratio dp/ours.
2. `max_rounds` for the issue's three budgets (Laplace ε0 = 0.1 at (10, 1e-6) and (1, 1e-6);
   DP-SGD q = 0.01, σ = 1 at (2, 1e-5)) and its time, against dp-accounting's PLD searched the
   same way (doubling and bisection over self_compose). Without dp-accounting the baseline is
   a naive k-fold convolution of our own grid law (k convolutions instead of ~2 log2 k).
"""

from __future__ import annotations

import argparse
import importlib
import math
from collections.abc import Callable
from functools import partial
from typing import Any

from timing import median_seconds

from expost.pld import PrivacyLossDistribution, compose_rounds, counting, max_rounds
from expost.testing.pld_reference import gaussian_delta, ratio


def _optional(name: str) -> Any:
    """The module ``name``, or None where it is not installed (the accountants are optional)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


dp_pld = _optional("dp_accounting.pld.privacy_loss_distribution")
prv = _optional("prv_accountant")
prv_rv = _optional("prv_accountant.privacy_random_variables")

PLD = PrivacyLossDistribution
K = 1000


def _cold(run: Callable[[], object]) -> Callable[[], object]:
    def go() -> object:
        counting.clear_caches()
        return run()

    return go


def _ours_gaussian(sigma: float) -> object:
    return PLD.gaussian(sigma).self_compose(K)


def _dp_gaussian(sigma: float) -> object:
    return dp_pld.from_gaussian_mechanism(sigma).self_compose(K)


def gaussian_table(repeats: int) -> None:
    print(f"## {K} Gaussian rounds: delta(eps)")
    for mu_total, eps in ((1.0, (1.0, 4.0, 6.0, 6.5)), (2.0, (2.0, 8.0, 13.0, 14.0))):
        sigma = math.sqrt(K) / mu_total
        ours = PLD.gaussian(sigma).self_compose(K)
        t_ours = median_seconds(_cold(partial(_ours_gaussian, sigma)), repeats)
        line = f"mu_total={mu_total}: ours {t_ours:.2f} s"
        theirs = None
        if dp_pld is not None:
            theirs = dp_pld.from_gaussian_mechanism(sigma).self_compose(K)
            t_dp = median_seconds(partial(_dp_gaussian, sigma), repeats)
            line += f", dp-accounting {t_dp:.2f} s (ratio dp/ours {t_dp / t_ours:.2f})"
        print(line)
        acc = None
        if prv is not None:
            acc = prv.PRVAccountant(
                prvs=[prv_rv.GaussianMechanism(noise_multiplier=sigma)],
                max_self_compositions=[K],
                eps_error=0.01,
                delta_error=1e-12,
            )
        print("eps | exact | ours | ours/exact | dp-accounting | ours/dp | prv lower, upper")
        for e in eps:
            exact = float(gaussian_delta(ratio(1.0, sigma), e, K))
            got = ours.delta(e)
            dp = theirs.get_delta_for_epsilon(e) if theirs is not None else math.nan
            bracket = (
                acc.compute_delta(epsilon=e, num_self_compositions=[K])
                if acc is not None
                else (math.nan, math.nan, math.nan)
            )
            print(
                f"{e} | {exact:.6e} | {got:.6e} | {got / exact:.6f} | {dp:.6e} | "
                f"{got / dp:.6f} | {bracket[0]:.4e}, {bracket[2]:.4e}"
            )


def _dp_count(make: Callable[[], Any], eps: float, delta: float) -> int:
    """dp-accounting's PLD counted by doubling and bisection over self_compose."""
    base = make()
    k = 1
    while base.self_compose(2 * k).get_delta_for_epsilon(eps) <= delta:
        k *= 2
    low, high = k, 2 * k
    while high - low > 1:
        mid = (low + high) // 2
        if base.self_compose(mid).get_delta_for_epsilon(eps) <= delta:
            low = mid
        else:
            high = mid
    return low


def _count(make: Callable[[], PLD], eps: float, delta: float) -> int:
    return max_rounds(make(), eps, delta)


def _dp_make(kind: str, parameter: float, q: float = 1.0) -> Any:
    if kind == "laplace":
        return dp_pld.from_laplace_mechanism(parameter)
    return dp_pld.from_gaussian_mechanism(parameter, sampling_prob=q)


def counts(repeats: int) -> None:
    print("\n## max_rounds")
    laplace = partial(PLD.laplace, 10.0)
    dp_sgd = partial(PLD.gaussian, 1.0, sampling_prob=0.01)
    cases: list[tuple[str, Callable[[], PLD], float, float, int]] = [
        ("Laplace eps0=0.1 at (10, 1e-6)", laplace, 10.0, 1e-6, 357),
        ("Laplace eps0=0.1 at (1, 1e-6)", laplace, 1.0, 1e-6, 10),
        ("DP-SGD q=0.01 sigma=1 at (2, 1e-5)", dp_sgd, 2.0, 1e-5, 1202),
    ]
    theirs_make: list[Callable[[], Any]] = [
        partial(_dp_make, "laplace", 10.0),
        partial(_dp_make, "laplace", 10.0),
        partial(_dp_make, "gaussian", 1.0, 0.01),
    ]
    for (name, make, eps, delta, exact), other in zip(cases, theirs_make, strict=True):
        k = max_rounds(make(), eps, delta)
        t = median_seconds(_cold(partial(_count, make, eps, delta)), repeats)
        line = f"{name}: ours {k} (exact {exact}) in {t:.2f} s"
        if dp_pld is not None:
            t_dp = median_seconds(partial(_dp_count, other, eps, delta), 1)
            line += f"; dp-accounting {_dp_count(other, eps, delta)} in {t_dp:.2f} s"
            line += f" (ratio dp/ours {t_dp / t:.2f})"
        print(line)


def _squared() -> object:
    return PLD.gaussian(8.0).self_compose(64)


def naive_baseline(repeats: int) -> None:
    """Without dp-accounting: 64 rounds by squaring against 64 one-at-a-time compositions."""
    p = PLD.gaussian(8.0)
    fast = median_seconds(_cold(_squared), repeats)

    def slow() -> object:
        counting.clear_caches()
        out = PLD.gaussian(8.0)
        for _ in range(63):
            out = out.compose(p)
        return out

    t_slow = median_seconds(slow, repeats)
    print(
        f"\n## 64 Gaussian rounds: squaring {fast:.3f} s, one at a time {t_slow:.3f} s, "
        f"ratio {t_slow / fast:.1f}"
    )


# compose_rounds settings (resolution, round_resolution), coarsest first, all with tails of at
# most DP_SGD_TAIL: the benchmark takes the first whose certified width meets the error (chosen by
# width alone, never by time)
LADDER = (
    (0.18, 0.72),
    (0.125, 1.0),
    (0.35, 1.4),
    (0.25, 2.0),
    (0.5, 2.0),
    (0.7, 2.8),
    (1.0, 4.0),
    (1.25, 5.0),
    (1.25, 10.0),
    (2.0, 16.0),
)
DP_SGD_TAIL = 1e-14  # 1,202 steps cut about 2.6e-11 in all: 2.6e-6 of δ = 1e-5
GRIDS = (2e-2, 1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4)  # Gaussian rounds, coarsest first


def _width(bracket: tuple[float, float]) -> float:
    """Our certified relative error bound: upper/lower − 1 (inf without a lower bound)."""
    low, high = bracket
    return high / low - 1.0 if low > 0 else math.inf


def _ours_gaussian_at(sigma: float, grid: float) -> PLD:
    return PLD.gaussian(sigma, value_discretization=grid).self_compose(K)


def _dp_gaussian_at(sigma: float, grid: float) -> Any:
    return dp_pld.from_gaussian_mechanism(sigma, value_discretization_interval=grid).self_compose(K)


def _ours_dp_sgd(setting: tuple[float, float]) -> PLD:
    """1,202 steps by `compose_rounds` (the input's grid is rebuilt from the pair: a coarse one
    is cheaper to make)."""
    pld = PLD.gaussian(1.0, sampling_prob=0.01, value_discretization=2e-3)
    resolution, rounds = setting
    return compose_rounds(
        pld, 1202, resolution=resolution, round_resolution=rounds, tail_mass=DP_SGD_TAIL
    )


def _bracket(setting: tuple[float, float]) -> tuple[float, float]:
    return _ours_dp_sgd(setting).delta_bracket(2.0)


def _dp_dp_sgd(grid: float) -> Any:
    return dp_pld.from_gaussian_mechanism(
        1.0, sampling_prob=0.01, value_discretization_interval=grid
    ).self_compose(1202)


def _matched(line: str, t_dp: float, error: float, ours: list[tuple[str, float, float]]) -> str:
    """The coarsest of ``ours`` (setting, width, time) whose width is at most ``error``."""
    for setting, width, t in ours:
        if width <= error:
            return f"{line}; ours ({setting}) {t:.3f} s, width {width:.1e}: ratio {t_dp / t:.2f}"
    return f"{line}; ours: no setting reaches width {error:.1e}"


def speed(repeats: int) -> None:
    """Issue 40 item 7: composition time against dp-accounting at equal or smaller error, in
    one run. dp-accounting's error: against the exact value (Gaussian rounds), or at least its
    distance to our reference bracket (DP-SGD; ours at resolution 8, width printed, untimed).
    Ours: the coarsest setting whose certified width (upper/lower − 1, a bound on our error)
    is at most that error; both timed cold; ratio dp-accounting / ours."""
    print("\n## speed at equal or smaller error (ours: certified bracket width, safe side)")
    if dp_pld is None:
        print("dp-accounting is not installed: skipped")
        return
    sigma = math.sqrt(K)
    exact = float(gaussian_delta(ratio(1.0, sigma), 4.0, K))
    ours = []
    for grid in GRIDS:
        width = _width(_ours_gaussian_at(sigma, grid).delta_bracket(4.0))
        t = median_seconds(_cold(partial(_ours_gaussian_at, sigma, grid)), repeats)
        ours.append((f"grid {grid}", width, t))
    for grid in (1e-4, 1e-3):
        t_dp = median_seconds(partial(_dp_gaussian_at, sigma, grid), repeats)
        error = abs(_dp_gaussian_at(sigma, grid).get_delta_for_epsilon(4.0) / exact - 1.0)
        line = f"{K} Gaussian rounds (eps 4): dp-accounting grid {grid} {t_dp:.3f} s, error {error:.1e}"
        print(_matched(line, t_dp, error, ours))
    lo, hi = _bracket((4.0, 16.0))
    print(f"1202 DP-SGD steps (q 0.01, sigma 1, eps 2): reference bracket width {hi / lo - 1:.1e}")
    ours = []
    for setting in LADDER:
        width = _width(_bracket(setting))
        t = median_seconds(_cold(partial(_ours_dp_sgd, setting)), repeats)
        t_both = median_seconds(_cold(partial(_bracket, setting)), 1)
        ours.append((f"resolution {setting[0]}, rounds {setting[1]}", width, t))
        print(
            f"  ours {setting}: delta {t:.3f} s, with its bracket {t_both:.3f} s, width {width:.1e}"
        )
    for grid in (1e-4, 3e-4, 1e-3):
        t_dp = median_seconds(partial(_dp_dp_sgd, grid), repeats)
        dp = _dp_dp_sgd(grid).get_delta_for_epsilon(2.0)
        error = max(dp / hi - 1.0, 1.0 - dp / lo, 0.0)  # at least this far from the exact δ
        line = f"1202 DP-SGD steps: dp-accounting grid {grid} {t_dp:.3f} s, error >= {error:.1e}"
        print(_matched(line, t_dp, error, ours))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    speed(args.repeats)
    gaussian_table(args.repeats)
    counts(args.repeats)
    if dp_pld is None:
        naive_baseline(args.repeats)


if __name__ == "__main__":
    main()
