"""One experiment's hyper-parameters per data set, shared by every method (same q, C, lr, T).

Accuracy-first trains at noise multiplier ``sigma`` and checks after the cumulative step counts
``checkpoints`` (geometric, fixed in advance: the schedule of units its counting-filter grid
prices); the fixed, doubling and oracle baselines train ``steps`` steps at the σ that spends
their ε (`calibrate_sigma`). Doubling checks after each attempt with the same count check.
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from typing import Any

import numpy as np
from attrs import asdict, field, frozen

from expost.apps.learning.accounting import DELTA, CountingGrid, Unit, counting_grid
from expost.apps.learning.sgd import CountCheck, SGDConfig
from expost.errors import InvalidParameter

__all__ = ["SETUPS", "Setup", "geometric_checkpoints", "grid_of"]


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
    check_sigma: float
    margin: float
    fixed_eps: float
    doubling_eps0: float
    doubling_attempts: int
    oracle_grid: tuple[float, ...]
    clip: float = 1.0
    delta: float = field(default=DELTA)

    def config(self, sigma: float) -> SGDConfig:
        """DP-SGD at noise multiplier ``sigma`` with this setup's C, q and learning rate."""
        return SGDConfig(self.clip, sigma, self.sampling_prob, self.learning_rate)

    @property
    def check(self) -> CountCheck:
        """The private validation check every checking method uses."""
        return CountCheck(self.check_sigma, self.margin)

    @property
    def units(self) -> tuple[Unit, ...]:
        """Accuracy-first's schedule: the steps between checkpoints, each with its check."""
        bounds = (0, *self.checkpoints)
        return tuple(
            Unit(b - a, self.sigma, self.sampling_prob, self.check_sigma)
            for a, b in itertools.pairwise(bounds)
        )

    @property
    def grid(self) -> CountingGrid:
        """Accuracy-first's counting filters on a grid of budgets (one per check)."""
        return grid_of(self.units, self.delta)

    def describe(self) -> dict[str, Any]:
        """The hyper-parameters as a JSON-ready dict."""
        out = asdict(self)
        out["accuracy_first_grid"] = {"eps": list(self.grid.eps), "deltas": list(self.grid.deltas)}
        return out

    def doubling_levels(self) -> tuple[float, ...]:
        """The doubling attempts' budgets ε0, 2ε0, 4ε0, …"""
        return tuple(self.doubling_eps0 * 2.0**i for i in range(self.doubling_attempts))


@lru_cache(maxsize=64)
def grid_of(units: tuple[Unit, ...], delta: float) -> CountingGrid:
    """`counting_grid` of a schedule, computed once per schedule."""
    return counting_grid(units, delta)


def _powers(low: float, high: float) -> tuple[float, ...]:
    """low·2^(k/4) up to high: the oracle's grid of budgets (steps of 19 %)."""
    count = round(4 * np.log2(high / low)) + 1
    return tuple(float(x) for x in low * 2.0 ** (np.arange(count) / 4.0))


_CHECKS = geometric_checkpoints(40, 300, 2.0)  # 40, 78, 153, 300

# data set, targets, q, learning rate, σ, σ_c, margin, fixed ε, doubling ε0, oracle grid's ends
_TABLE = (
    ("breast_cancer", (0.93, 0.95), 0.05, 1.0, 2.0, 5.0, 0.03, 2.0, 0.25, (0.25, 16.0)),
    ("digits", (0.80, 0.85), 0.05, 1.0, 2.0, 10.0, 0.02, 2.0, 0.25, (0.25, 16.0)),
    ("wine", (0.90, 0.95), 0.1, 1.0, 2.0, 3.0, 0.05, 4.0, 0.5, (0.5, 32.0)),
    ("synthetic", (0.84, 0.86), 0.02, 2.0, 2.5, 16.0, 0.02, 1.0, 0.0625, (0.0625, 4.0)),
)

SETUPS: dict[str, Setup] = {
    name: Setup(
        name,
        targets,
        sampling_prob=q,
        learning_rate=lr,
        steps=300,
        sigma=sigma,
        checkpoints=_CHECKS,
        check_sigma=check_sigma,
        margin=margin,
        fixed_eps=fixed,
        doubling_eps0=eps0,
        doubling_attempts=7,
        oracle_grid=_powers(*ends),
    )
    for name, targets, q, lr, sigma, check_sigma, margin, fixed, eps0, ends in _TABLE
}
"""Each data set's hyper-parameters (docs/apps/dp-sgd.md says how they were chosen)."""
