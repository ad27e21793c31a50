"""Exact sampling of Laplace noise-reduction paths (THEORY.md §3, BNR Sec. 4).

Two processes with ``ζ ~ Lap(t)`` at every scale t and independent increments as the scale grows,
each coordinate independent (APC Def C.1):

- the Koufogiannis chain (BNR eq. 3) on increasing scales ``t_1 < … < t_K``: ``ζ_1 ~ Lap(t_1)``,
  then ``ζ_n = ζ_(n−1)`` with probability ``(t_(n−1)/t_n)²``, else ``ζ_(n−1) + Lap(t_n)``;
- the continuous-time process on ``[η, T]`` (BNR Sec. 4): ``Z_t = Lap(η) + Σ_(𝒯_n <= t) Lap(𝒯_n)``
  over the arrivals ``𝒯_n`` of a Poisson process of intensity ``2/t``, so ``Z_t ~ Lap(t)``
  (BNR Thm D.1). The number of arrivals in ``[η, T]`` is ``Poisson(2·log(T/η))`` and, given it,
  their logarithms are iid uniform on ``[log η, log T]``: a whole path is drawn up front.

Both have the same finite-dimensional laws on any grid; ``P(ζ_s = ζ_t) = (s/t)²`` for ``s < t``.
Batch samplers take scales DECREASING (noisiest first) and return shape ``(trials, K, d)``.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from expost._validation import positive
from expost.errors import InvalidParameter
from expost.processes._paths import DecreasingPath, FloatArray, batch_arguments, cumsum_upward

__all__ = ["LaplaceProcess", "sample_koufogiannis_grid", "sample_laplace_grid"]

IntArray = npt.NDArray[np.int64]


def _keep_probability(smaller: FloatArray, larger: FloatArray) -> FloatArray:
    """Probability that the chain does not jump from scale ``smaller`` to ``larger`` (BNR eq. 3)."""
    return np.asarray((smaller / larger) ** 2, dtype=np.float64)


def _arrival_mean(eta: float, T: float) -> float:
    """Expected number of arrivals in ``[η, T]`` at intensity ``2/t``: ``2·log(T/η)`` (BNR Sec. 4)."""
    return 2.0 * math.log(T / eta)


def _arrivals(
    eta: float, T: float, paths: int, rng: np.random.Generator
) -> tuple[IntArray, FloatArray, FloatArray]:
    """Arrivals in ``[η, T]`` of ``paths`` independent processes: (path index, time, Lap(time) jump)."""
    counts = rng.poisson(_arrival_mean(eta, T), size=paths)
    owner = np.repeat(np.arange(paths, dtype=np.int64), counts)
    log_span = math.log(T / eta)
    # np.minimum guards against exp rounding a hair above T.
    times = np.minimum(eta * np.exp(log_span * rng.random(owner.size)), T)
    return owner, times, rng.laplace(0.0, times)


def sample_koufogiannis_grid(
    scales: npt.ArrayLike, trials: int, d: int, rng: np.random.Generator
) -> FloatArray:
    """``trials`` paths of the Koufogiannis chain (BNR eq. 3) at DECREASING ``scales``.

    Entry k is ``ζ`` at ``scales[k]``, ``~ Lap(scales[k])``; its increments are independent, so
    the chain is one cumulative sum from the smallest scale upward. Shape ``(trials, K, d)``.
    """
    grid, trials, d, rng = batch_arguments("scales", scales, trials, d, rng)
    shape = (trials, grid.size, d)
    keep = _keep_probability(np.append(grid[1:], 0.0), grid)
    steps = rng.laplace(0.0, grid[:, None], size=shape)
    steps[rng.random(shape) < keep[:, None]] = 0.0
    return cumsum_upward(steps)


def sample_laplace_grid(
    scales: npt.ArrayLike, trials: int, d: int, rng: np.random.Generator
) -> FloatArray:
    """``trials`` paths of the continuous Laplace process (BNR Sec. 4) at DECREASING ``scales``.

    ``η`` is the last scale and ``T`` the first; ``Z_t ~ Lap(t)`` (BNR Thm D.1). All arrivals are
    drawn at once and binned into grid cells, then summed from ``η`` upward. Shape ``(trials, K, d)``.
    """
    grid, trials, d, rng = batch_arguments("scales", scales, trials, d, rng)
    eta, T, K = float(grid[-1]), float(grid[0]), grid.size
    owner, times, jumps = _arrivals(eta, T, trials * d, rng)
    cell = K - 1 - np.searchsorted(grid[::-1], times, side="left")
    binned = np.bincount(owner * K + cell, weights=jumps, minlength=trials * d * K)
    steps = binned.astype(np.float64, copy=False).reshape(trials, d, K).transpose(0, 2, 1).copy()
    steps[:, -1, :] += rng.laplace(0.0, eta, size=(trials, d))
    return cumsum_upward(steps)


class LaplaceProcess(DecreasingPath[np.float64]):
    """One d-dim continuous Laplace process ``Z`` on ``[η, T]``, drawn whole at construction.

    ``Z_t ~ Lap(t)`` per coordinate, coordinates independent, increments independent
    (BNR Sec. 4, Thm D.1). ``at(scale)`` reads any scale in ``[η, T]`` exactly and always gives
    the same value; ``next(scale)`` reads strictly decreasing scales (noisiest first) and keeps
    the history. A rejected call changes nothing.
    """

    __slots__ = ("_T", "_base", "_eta", "_jumps", "_owner", "_times_of_arrival")

    def __init__(self, eta: float, T: float, d: int, rng: np.random.Generator) -> None:
        super().__init__(d, rng, np.float64)
        self._eta = positive("eta", eta)
        self._T = positive("T", T)
        if self._eta > self._T:
            raise InvalidParameter("T", T, f"must be >= eta = {self._eta!r}")
        self._owner, self._times_of_arrival, self._jumps = _arrivals(
            self._eta, self._T, self._d, self._rng
        )
        self._base = self._rng.laplace(0.0, self._eta, size=self._d)

    @property
    def eta(self) -> float:
        """Smallest (least noisy) scale of the path."""
        return self._eta

    @property
    def T(self) -> float:
        """Largest (noisiest) scale of the path."""
        return self._T

    def at(self, scale: float) -> FloatArray:
        """``Z(scale)`` for ``η <= scale <= T``; shape ``(d,)``."""
        s = positive("scale", scale)
        if not self._eta <= s <= self._T:
            raise InvalidParameter("scale", scale, f"must lie in [{self._eta!r}, {self._T!r}]")
        arrived = self._times_of_arrival <= s
        return self._base + np.bincount(
            self._owner[arrived], weights=self._jumps[arrived], minlength=self._d
        )

    def next(self, scale: float) -> FloatArray:
        """``Z(scale)`` for a scale in ``[η, T]`` below every scale asked so far."""
        s = self._check_next("scale", scale)
        return self._record(s, self.at(s))
