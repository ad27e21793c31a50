"""Independent Brownian mechanisms, each trial with its own value and grid (APC Def 4.4, Sec. 7).

The batch form behind APC Sec. 7: `brownian_trials` walks every trial lazily in privacy time
(`expost.processes.privacy_time.lazy_brownian_walk`) on its own eps² row and returns the
trials' `BatchTranscript`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost._validation import finite_array, generator, positive, positive_int
from expost.errors import InvalidParameter
from expost.grids import ClippedGrids
from expost.mechanisms.transcript import BatchTranscript
from expost.processes.privacy_time import CHUNK, Columns, lazy_brownian_walk
from expost.stopping import MemorylessRule, rule_or_never

__all__ = ["Eps2Rows", "brownian_trials", "eps2_rows", "level_columns"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]


def level_columns(levels: Callable[[IntArray, int, int], FloatArray], d: float) -> Columns:
    """Columns of per-trial eps² rows ``levels(rows, lo, hi)``: s = eps²/Δ², t = 1/s."""

    def columns(rows: IntArray, lo: int, hi: int) -> tuple[FloatArray, FloatArray]:
        s = levels(rows, lo, hi)
        if d != 1.0:
            s = s / (d * d)
        return 1.0 / s, s

    return columns


def brownian_trials(
    values: npt.ArrayLike,
    grids: ClippedGrids | npt.ArrayLike,
    stop: object,
    rng: np.random.Generator,
    *,
    sensitivity: float = 1.0,
    chunk: int = CHUNK,
) -> BatchTranscript:
    """Independent Brownian mechanisms, each trial with its own value and grid (APC Def 4.4, Sec. 7).

    ``values`` (trials,) or (trials, d). ``grids``: `ClippedGrids` (one open grid clipped at
    each trial's budget, APC Sec. 7) or an array (trials, K) of eps² per trial, noisiest first,
    positive and non-decreasing (a repeated level repeats the iterate: a zero Brownian
    increment). Times t = Δ²/eps². Walked lazily in privacy time like
    `expost.mechanisms.BrownianNoiseReduction.run_batch`, in blocks of ``chunk`` points that double as the walk
    goes on (the few trials that walk far take few steps); stopped at eps² a trial costs
    rho = eps²/2 (APC Thm 3). ``stop`` must be a built-in (memoryless) rule; it sees each
    trial's own times. ``stop_index`` counts a padded row's repeats (a trial whose rule never
    fired ends at K − 1).
    """
    rule = rule_or_never(stop)
    if not isinstance(rule, MemorylessRule):
        raise InvalidParameter("stop", stop, "must be a built-in rule (e.g. RelativeError)")
    d = positive("sensitivity", sensitivity)
    step = positive_int("chunk", chunk)
    levels = grids if isinstance(grids, ClippedGrids) else eps2_rows(grids)
    n, K = levels.trials, levels.length
    v = finite_array("values", values)
    v = v[:, None] if v.ndim == 1 else v
    if v.ndim != 2 or v.shape[0] != n or v.shape[1] == 0:
        raise InvalidParameter("values", v.shape, f"must have shape ({n},) or ({n}, d)")
    columns = level_columns(levels.eps2, d)
    index, stopped, released = lazy_brownian_walk(
        v, generator(rng), rule, columns, K, d, step, grow=True
    )
    level = levels.at(index)
    return BatchTranscript(
        index, released, d * d / level, np.sqrt(level), stopped, level / 2.0, None, None
    )


@frozen(eq=False)
class Eps2Rows:
    """Explicit per-trial eps² rows (trials, K), with the `ClippedGrids` access pattern."""

    array: FloatArray

    @property
    def trials(self) -> int:
        """How many rows."""
        return int(self.array.shape[0])

    @property
    def length(self) -> int:
        """Points per row."""
        return int(self.array.shape[1])

    def eps2(self, rows: IntArray | None = None, lo: int = 0, hi: int | None = None) -> FloatArray:
        """eps² of ``rows`` (all: None), points lo..hi−1."""
        picked = self.array if rows is None else self.array[rows]
        return picked[:, lo:hi]

    def at(self, index: IntArray) -> FloatArray:
        """eps² of each row at its ``index``."""
        out: FloatArray = self.array[np.arange(self.trials), index]
        return out


def eps2_rows(eps2: npt.ArrayLike) -> Eps2Rows:
    """Checked rows (trials, K), K >= 1, of positive, non-decreasing eps²."""
    e2 = finite_array("grids", eps2)
    if e2.ndim != 2 or e2.shape[0] == 0 or e2.shape[1] == 0:
        raise InvalidParameter("grids", e2.shape, "must have shape (trials, K), K >= 1")
    if np.any(e2 < np.finfo(np.float64).tiny) or np.any(np.diff(e2, axis=1) < 0.0):
        raise InvalidParameter("grids", e2.shape, "rows must be positive and non-decreasing")
    return Eps2Rows(e2)
