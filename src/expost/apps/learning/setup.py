"""One experiment's hyper-parameters per data set, shared by every method (same q, C, lr, T).

Accuracy-first trains at noise multiplier ``sigma`` and checks after the cumulative step counts
``checkpoints`` (geometric, fixed in advance: the units its counting-filter grid prices), each
check a Brownian walk (`BrownianCheck`) charged to a check budget; the fixed, doubling and
oracle baselines train ``steps`` steps at the σ that spends their ε (`calibrate_sigma`).
Doubling checks after each attempt with a Gaussian count check of the same finest noise.

The check's constants follow rules stated once (`_rules`), from public sizes only (the documented
row count N of each data set, never the private n): n_val = 0.2·N validation rows; margin one
standard error of the validation accuracy at the target, √(t(1−t)/n_val); check budget
S_max = 4/n_val (μ = 2/√n_val: all checks together cost what one Gaussian count of noise
√n_val/2, the validation set's own sampling noise at accuracy 1/2, costs), with a grid of three
budgets S_max·2^(−2..0); finest level s_K = S_max/2 (two checks walked to the end); seven
Brownian levels s_K·2^(−6..0); stop when the released f is two noise deviations from 0;
doubling's Gaussian check at the finest noise 1/√s_K; checkpoints T/8·√2^k up to T.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from typing import Any

import numpy as np
from attrs import asdict, field, frozen

from expost.apps.learning.accounting import (
    DELTA,
    CheckedGrid,
    CountingGrid,
    Unit,
    checked_grid,
    counting_grid,
)
from expost.apps.learning.sgd import BrownianCheck, CountCheck, SGDConfig
from expost.errors import InvalidParameter

__all__ = ["DOCUMENTED_ROWS", "SETUPS", "Setup", "geometric_checkpoints", "grid_of"]

DOCUMENTED_ROWS = {
    "breast_cancer": 569,
    "digits": 1_797,
    "wine": 178,
    "synthetic": 4_000,
    "synthetic_large": 200_000,
}
"""Each data set's documented row count N: a public constant (the private n is never used)."""


def geometric_checkpoints(first: int, last: int, ratio: float) -> tuple[int, ...]:
    """Cumulative step counts first, ≈first·ratio, … up to last (distinct, increasing)."""
    if not (1 <= first <= last) or ratio <= 1.0:
        raise InvalidParameter(
            "checkpoints", (first, last, ratio), "need 1 <= first <= last, ratio > 1"
        )
    count = int(np.ceil(np.log(last / first) / np.log(ratio))) + 1
    points = np.unique(np.round(np.geomspace(first, last, count)).astype(int))
    return tuple(int(p) for p in points)


@frozen(eq=False)
class Setup:
    """The hyper-parameters of one data set's experiment (module docstring)."""

    dataset: str
    targets: tuple[float, ...]
    sampling_prob: float
    learning_rate: float
    steps: int
    sigma: float
    checkpoints: tuple[int, ...]
    check_levels: tuple[float, ...]
    check_budgets: tuple[float, ...]
    check_sigma: float
    margins: tuple[float, ...]
    fixed_eps: float
    doubling_eps0: float
    doubling_attempts: int
    oracle_grid: tuple[float, ...]
    clip: float = 1.0
    delta: float = field(default=DELTA)

    def config(self, sigma: float) -> SGDConfig:
        """DP-SGD at noise multiplier ``sigma`` with this setup's C, q, learning rate and the
        public expected batch q·0.6·N."""
        batch = self.sampling_prob * round(0.6 * DOCUMENTED_ROWS[self.dataset])
        return SGDConfig(self.clip, sigma, self.sampling_prob, self.learning_rate, batch)

    def margin(self, target: float) -> float:
        """The margin added to ``target`` (one of `targets`)."""
        return self.margins[self.targets.index(target)] if target in self.targets else 0.0

    def check(self, target: float) -> CountCheck:
        """Doubling's Gaussian check at ``target``."""
        return CountCheck(self.check_sigma, self.margin(target))

    def brownian_check(self, target: float) -> BrownianCheck:
        """Accuracy-first's Brownian check at ``target``."""
        return BrownianCheck(self.check_levels, self.margin(target))

    @property
    def units(self) -> tuple[Unit, ...]:
        """Accuracy-first's schedule: the steps between checkpoints (its checks are Brownian,
        priced by the grid's check budgets)."""
        bounds = (0, *self.checkpoints)
        return tuple(
            Unit(b - a, self.sigma, self.sampling_prob) for a, b in itertools.pairwise(bounds)
        )

    @property
    def grid(self) -> CheckedGrid:
        """Accuracy-first's counting filters on a grid of (units, check budget)."""
        return _checked(self.units, self.check_budgets, self.delta)

    def describe(self) -> dict[str, Any]:
        """The hyper-parameters as a JSON-ready dict."""
        out = asdict(self)
        grid = self.grid
        out["accuracy_first_grid"] = {
            "eps": [list(r) for r in grid.eps],
            "check_budgets": list(grid.budgets),
            "delta_each": grid.delta_each,
        }
        return out

    def doubling_levels(self) -> tuple[float, ...]:
        """The doubling attempts' budgets ε0, 2ε0, 4ε0, …"""
        return tuple(self.doubling_eps0 * 2.0**i for i in range(self.doubling_attempts))


@lru_cache(maxsize=64)
def grid_of(units: tuple[Unit, ...], delta: float) -> CountingGrid:
    """`counting_grid` of a schedule, computed once per schedule."""
    return counting_grid(units, delta)


@lru_cache(maxsize=64)
def _checked(units: tuple[Unit, ...], budgets: tuple[float, ...], delta: float) -> CheckedGrid:
    return checked_grid(units, budgets, delta)


def _powers(low: float, high: float) -> tuple[float, ...]:
    """low·2^(k/4) up to high: the oracle's grid of budgets (steps of 19 %)."""
    count = round(4 * np.log2(high / low)) + 1
    return tuple(float(x) for x in low * 2.0 ** (np.arange(count) / 4.0))


_STEPS = 300


def _rules(name: str, targets: tuple[float, ...]) -> dict[str, Any]:
    """The check's constants from the public size (module docstring)."""
    n_val = round(0.2 * DOCUMENTED_ROWS[name])
    budget = 4.0 / n_val
    finest = budget / 2.0
    return {
        "checkpoints": geometric_checkpoints(round(_STEPS / 8), _STEPS, math.sqrt(2.0)),
        "check_levels": tuple(finest * 2.0**-k for k in range(6, -1, -1)),
        "check_budgets": tuple(budget * 2.0**-k for k in range(2, -1, -1)),
        "check_sigma": 1.0 / math.sqrt(finest),
        "margins": tuple(math.sqrt(t * (1.0 - t) / n_val) for t in targets),
    }


# data set, targets, q, learning rate, σ, fixed ε, doubling ε0, oracle grid's ends
_TABLE = (
    ("breast_cancer", (0.93, 0.95), 0.05, 1.0, 2.0, 2.0, 0.25, (0.25, 16.0)),
    ("digits", (0.75, 0.78), 0.05, 1.0, 2.0, 2.0, 0.25, (0.25, 16.0)),
    ("wine", (0.90, 0.95), 0.1, 1.0, 2.0, 4.0, 0.5, (0.5, 32.0)),
    ("synthetic", (0.84, 0.86), 0.02, 2.0, 2.5, 1.0, 0.0625, (0.0625, 4.0)),
    ("synthetic_large", (0.84, 0.86), 0.002, 2.0, 2.5, 0.25, 0.015625, (0.015625, 4.0)),
)

SETUPS: dict[str, Setup] = {
    name: Setup(
        name,
        targets,
        sampling_prob=q,
        learning_rate=lr,
        steps=_STEPS,
        sigma=sigma,
        fixed_eps=fixed,
        doubling_eps0=eps0,
        doubling_attempts=7,
        oracle_grid=_powers(*ends),
        **_rules(name, targets),
    )
    for name, targets, q, lr, sigma, fixed, eps0, ends in _TABLE
}
"""Each data set's hyper-parameters (docs/apps/dp-sgd.md says how they were chosen)."""
