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
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from expost._validation import generator, positive, positive_int, strictly_decreasing
from expost.errors import InvalidParameter

__all__ = ["BrownianPath", "sample_brownian_grid", "sample_brownian_grid_privacy_time"]

FloatArray = npt.NDArray[np.float64]
_S = TypeVar("_S", bound=np.generic)
_N = TypeVar("_N", np.float64, np.int64)


def _decreasing_grid(name: str, values: npt.ArrayLike) -> FloatArray:
    """A non-empty, strictly decreasing grid of finite positive times (or scales)."""
    grid = strictly_decreasing(name, values)
    if grid[-1] <= 0.0:
        raise InvalidParameter(name, values, "must contain only values > 0")
    return grid


def _batch(
    name: str, values: npt.ArrayLike, trials: int, d: int, rng: object
) -> tuple[FloatArray, int, int, np.random.Generator]:
    """Validated ``(grid, trials, d, rng)`` of a batch sampler."""
    return (
        _decreasing_grid(name, values),
        positive_int("trials", trials),
        positive_int("d", d),
        generator(rng),
    )


def _gaps(grid: FloatArray) -> FloatArray:
    """``t_k − t_(k+1)`` along a decreasing grid, with ``t_(K+1) = 0``."""
    gaps: FloatArray = grid - np.append(grid[1:], 0.0)
    return gaps


def _cumsum_upward(steps: npt.NDArray[_N]) -> npt.NDArray[_N]:
    """In place: entry k becomes the sum of steps k..K−1 along axis 1 (smallest time upward)."""
    upward = steps[:, ::-1]
    np.cumsum(upward, axis=1, out=upward)
    return steps


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
    grid, trials, d, rng = _batch("times", times, trials, d, rng)
    steps = rng.standard_normal((trials, grid.size, d))
    steps *= np.sqrt(_gaps(grid))[:, None]
    return _cumsum_upward(steps)


def sample_brownian_grid_privacy_time(
    times: npt.ArrayLike, trials: int, d: int, rng: np.random.Generator
) -> FloatArray:
    """Same law as `sample_brownian_grid`, drawn forward in privacy time ``s = 1/t``.

    ``X(s) = s·B(1/s)`` is a standard BM (Lévy's time inversion, THEORY.md §3), so
    ``B(t_k) = t_k·X(s_k)`` with ``X`` a cumulative sum of ``N(0, s_k − s_(k−1))``, ``s_0 = 0``.
    """
    grid, trials, d, rng = _batch("times", times, trials, d, rng)
    privacy_times = 1.0 / grid
    steps = rng.standard_normal((trials, grid.size, d))
    steps *= np.sqrt(np.diff(privacy_times, prepend=0.0))[:, None]
    np.cumsum(steps, axis=1, out=steps)
    steps *= grid[:, None]
    return steps


class _DecreasingPath(Generic[_S]):
    """History and validation shared by the interactive samplers: times strictly decreasing, > 0."""

    __slots__ = ("_d", "_dtype", "_rng", "_times", "_values")

    def __init__(self, d: int, rng: np.random.Generator, dtype: type[_S]) -> None:
        self._d = positive_int("d", d)
        self._rng = generator(rng)
        self._dtype = dtype
        self._times: list[float] = []
        self._values: list[npt.NDArray[_S]] = []

    @property
    def d(self) -> int:
        """Dimension of every value."""
        return self._d

    @property
    def times(self) -> FloatArray:
        """The times drawn so far, in the order asked (a read-only copy)."""
        out = np.array(self._times, dtype=np.float64)
        out.flags.writeable = False
        return out

    @property
    def values(self) -> npt.NDArray[_S]:
        """The values drawn so far, shape ``(len(times), d)`` (a read-only copy)."""
        out = np.array(self._values, dtype=self._dtype).reshape(len(self._values), self._d)
        out.flags.writeable = False
        return out

    def _check_next(self, name: str, t: float) -> float:
        x = positive(name, t)
        if self._times and x >= self._times[-1]:
            raise InvalidParameter(name, t, f"must be < the previous one, {self._times[-1]!r}")
        return x

    def _record(self, t: float, value: npt.NDArray[_S]) -> npt.NDArray[_S]:
        self._times.append(t)
        self._values.append(value)
        return value.copy()


class BrownianPath(_DecreasingPath[np.float64]):
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
