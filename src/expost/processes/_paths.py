"""Shared pieces of the path samplers: batch arguments, increments, the interactive-path base."""

from __future__ import annotations

from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from expost._validation import generator, positive, positive_int, strictly_decreasing
from expost.errors import InvalidParameter

__all__ = ["DecreasingPath", "batch_arguments", "cumsum_upward", "decreasing_grid", "gaps"]

FloatArray = npt.NDArray[np.float64]
_S = TypeVar("_S", bound=np.generic)
_N = TypeVar("_N", np.float64, np.int64)


def decreasing_grid(name: str, values: npt.ArrayLike) -> FloatArray:
    """A non-empty, strictly decreasing grid of finite positive times (or scales)."""
    grid = strictly_decreasing(name, values)
    if grid[-1] <= 0.0:
        raise InvalidParameter(name, values, "must contain only values > 0")
    return grid


def batch_arguments(
    name: str, values: npt.ArrayLike, trials: int, d: int, rng: object
) -> tuple[FloatArray, int, int, np.random.Generator]:
    """Validated ``(grid, trials, d, rng)`` of a batch sampler."""
    return (
        decreasing_grid(name, values),
        positive_int("trials", trials),
        positive_int("d", d),
        generator(rng),
    )


def gaps(grid: FloatArray) -> FloatArray:
    """``t_k − t_(k+1)`` along a decreasing grid, with ``t_(K+1) = 0``."""
    gaps: FloatArray = grid - np.append(grid[1:], 0.0)
    return gaps


def cumsum_upward(steps: npt.NDArray[_N]) -> npt.NDArray[_N]:
    """In place: entry k becomes the sum of steps k..K−1 along axis 1 (smallest time upward)."""
    upward = steps[:, ::-1]
    np.cumsum(upward, axis=1, out=upward)
    return steps


class DecreasingPath(Generic[_S]):
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
