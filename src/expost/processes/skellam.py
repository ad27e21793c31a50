"""Exact sampling of Skellam noise-reduction paths (THEORY.md §3, BNR App. E).

``X_t = P1(t) − P2(t)`` for independent Poisson processes of rates ``λ1, λ2``: ``X_t ~
Skellam(tλ1, tλ2)`` with independent increments. Batch paths are cumulative sums of independent
Poisson increments from the smallest time upward; interactive paths thin each Poisson count:
given ``N(s) = n``, ``N(t) ~ Binomial(n, t/s)`` for ``t < s``.

Values are integers, returned as ``int64`` arrays (exact, and ready to add to integer queries).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from expost._validation import positive
from expost.processes._paths import DecreasingPath, batch_arguments, cumsum_upward, gaps

__all__ = ["SkellamPath", "sample_skellam_grid"]

IntArray = npt.NDArray[np.int64]


def _thinning_probability(t: float, s: float) -> float:
    """Probability that a Poisson arrival before ``s`` also comes before ``t < s``: ``t/s``."""
    return t / s


def sample_skellam_grid(
    times: npt.ArrayLike,
    trials: int,
    d: int,
    rng: np.random.Generator,
    *,
    rate1: float = 1.0,
    rate2: float = 1.0,
) -> IntArray:
    """``trials`` paths ``X(t_1), …, X(t_K)`` at DECREASING ``times``; ``X_t ~ Skellam(tλ1, tλ2)``.

    Independent ``Poisson(λ·(t_k − t_(k+1)))`` increments summed from the smallest time upward
    (BNR App. E). Shape ``(trials, K, d)``, dtype ``int64``.
    """
    grid, trials, d, rng = batch_arguments("times", times, trials, d, rng)
    lam1, lam2 = positive("rate1", rate1), positive("rate2", rate2)
    step = gaps(grid)[:, None]
    shape = (trials, grid.size, d)
    steps = rng.poisson(lam1 * step, size=shape) - rng.poisson(lam2 * step, size=shape)
    return cumsum_upward(steps.astype(np.int64, copy=False))


class SkellamPath(DecreasingPath[np.int64]):
    """One d-dim Skellam process ``P1(t) − P2(t)``, drawn lazily at decreasing times (BNR App. E).

    ``next(t)``: first call ``N_i(t) ~ Poisson(λ_i·t)``; later, given ``N_i(s) = n``,
    ``N_i(t) ~ Binomial(n, t/s)``. Same law as `sample_skellam_grid` on the same times. Values are
    ``int64``. A rejected call changes nothing.
    """

    __slots__ = ("_counts", "_rates")

    def __init__(
        self, d: int, rng: np.random.Generator, rate1: float = 1.0, rate2: float = 1.0
    ) -> None:
        super().__init__(d, rng, np.int64)
        self._rates = np.array([positive("rate1", rate1), positive("rate2", rate2)])
        self._counts = np.zeros((2, self._d), dtype=np.int64)

    @property
    def rate1(self) -> float:
        """Rate λ1 of the positive Poisson process."""
        return float(self._rates[0])

    @property
    def rate2(self) -> float:
        """Rate λ2 of the negative Poisson process."""
        return float(self._rates[1])

    def next(self, t: float) -> IntArray:
        """``X(t)`` for ``0 < t <`` the last time asked; shape ``(d,)``, dtype ``int64``."""
        t = self._check_next("t", t)
        if not self._times:
            counts = self._rng.poisson(self._rates[:, None] * t, size=(2, self._d))
        else:
            counts = self._rng.binomial(self._counts, _thinning_probability(t, self._times[-1]))
        self._counts = counts.astype(np.int64, copy=False)
        return self._record(t, self._counts[0] - self._counts[1])
