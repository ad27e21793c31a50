"""Exact sampling of a standard d-dimensional Brownian motion at decreasing times (THEORY.md §3).

A Brownian-mechanism run releases ``f(x) + B(t_k)`` for times ``t_1 > t_2 > … > 0``, noisiest
first (APC Def 4.4, BNR Def 3.1). On a grid known in advance the path is a cumulative sum of
independent increments ``B(t_k) − B(t_(k+1)) ~ N(0, t_k − t_(k+1))`` from the smallest time upward;
interactively each new value comes from the Brownian bridge to 0: given ``B(s)``,
``B(t) ~ N((t/s)·B(s), t(s − t)/s·I)`` for ``t < s`` (BNR appendix, "Simulating noise reduction").

Privacy time: with ``s = 1/t``, ``X(s) = s·B(1/s)`` is again a standard Brownian motion (Lévy's
time inversion). Walking B from noisiest to least noisy walks X forward in s with independent
increments ``X(s2) − X(s1) ~ N(0, s2 − s1)``, and ``B(t) = t·X(1/t)``;
`sample_brownian_grid_privacy_time` samples that way and has the same law as
`sample_brownian_grid`.

Every batch sampler of `expost.processes` returns an array of shape ``(trials, K, d)`` ordered as
the grid is given (noisiest first).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from expost._validation import positive_int
from expost.processes._paths import (
    DecreasingPath,
    batch_arguments,
    cumsum_upward,
    decreasing_grid,
    gaps,
)

if TYPE_CHECKING:
    from expost.backends import Draws

__all__ = [
    "BrownianPath",
    "sample_brownian_grid",
    "sample_brownian_grid_on",
    "sample_brownian_grid_privacy_time",
]

FloatArray = npt.NDArray[np.float64]


def _bridge_sd(t: float, s: float) -> float:
    """Standard deviation of B(t) given B(s), t < s: sqrt(t(s − t)/s) (Brownian bridge to 0)."""
    return math.sqrt(t * (s - t) / s)


def sample_brownian_grid(
    times: npt.ArrayLike, trials: int, d: int, rng: np.random.Generator
) -> FloatArray:
    """``trials`` exact paths ``B(t_1), …, B(t_K)`` of standard d-dim BM at decreasing ``times``.

    ``B(t_K) ~ N(0, t_K·I)`` plus independent increments ``N(0, t_k − t_(k+1))`` going up
    (BNR appendix); one ``standard_normal`` call and one cumulative sum. Shape ``(trials, K, d)``.
    """
    grid, trials, d, rng = batch_arguments("times", times, trials, d, rng)
    steps = rng.standard_normal((trials, grid.size, d))
    steps *= np.sqrt(gaps(grid))[:, None]
    return cumsum_upward(steps)


def sample_brownian_grid_on(times: npt.ArrayLike, trials: int, d: int, draws: Draws) -> Any:
    """`sample_brownian_grid` on an array backend (`expost.backends`): same law, same layout.

    The increments come from ``draws.normal`` and are summed upward with the backend's
    ``cumulative_sum``; the result (trials, K, d) stays on the backend's device.
    """
    grid = decreasing_grid("times", times)
    trials, d = positive_int("trials", trials), positive_int("d", d)
    xp = draws.xp
    steps = draws.normal((trials, grid.size, d)) * draws.asarray(np.sqrt(gaps(grid))[:, None])
    upward = xp.cumulative_sum(xp.flip(steps, axis=1), axis=1)
    return xp.flip(upward, axis=1)


def sample_brownian_grid_privacy_time(
    times: npt.ArrayLike, trials: int, d: int, rng: np.random.Generator
) -> FloatArray:
    """Same law as `sample_brownian_grid`, drawn forward in privacy time ``s = 1/t``.

    ``X(s) = s·B(1/s)`` is a standard BM (Lévy's time inversion, THEORY.md §3), so
    ``B(t_k) = t_k·X(s_k)`` with ``X`` a cumulative sum of ``N(0, s_k − s_(k−1))``, ``s_0 = 0``.
    """
    grid, trials, d, rng = batch_arguments("times", times, trials, d, rng)
    privacy_times = 1.0 / grid
    steps = rng.standard_normal((trials, grid.size, d))
    steps *= np.sqrt(np.diff(privacy_times, prepend=0.0))[:, None]
    np.cumsum(steps, axis=1, out=steps)
    steps *= grid[:, None]
    return steps


class BrownianPath(DecreasingPath[np.float64]):
    """One standard d-dim Brownian motion, drawn lazily at decreasing times (BNR appendix).

    ``next(t)`` returns ``B(t)`` for any ``t`` below every time asked so far: first
    ``N(0, t·I)``, then the Brownian bridge to 0, ``N((t/s)·B(s), t(s − t)/s·I)``. The values
    have exactly the law of `sample_brownian_grid` on the same times. A rejected call
    changes nothing.
    """

    __slots__ = ()

    def __init__(self, d: int, rng: np.random.Generator) -> None:
        super().__init__(d, rng, np.float64)

    def next(self, t: float) -> FloatArray:
        """``B(t)`` for ``0 < t <`` the last time asked; shape ``(d,)``."""
        t = self._check_next("t", t)
        noise = self._rng.standard_normal(self._d)
        if not self._times:
            return self._record(t, math.sqrt(t) * noise)
        s = self._times[-1]
        return self._record(t, (t / s) * self._values[-1] + _bridge_sd(t, s) * noise)
