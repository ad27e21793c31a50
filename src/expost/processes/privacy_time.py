"""Lazy batch walks of Brownian mechanisms in privacy time (THEORY §3; APC Def 4.4, Sec. 7).

With s = 1/t increasing along a grid, X(s) = s·B(1/s) is a standard BM with independent
increments N(0, s_(k+1) − s_k) (Lévy's time inversion), and iterate k is f(x) + X(s_k)/s_k.
`lazy_brownian_walk` walks X forward a block of grid points at a time and advances only the
trials whose stopping rule has not fired, so a trial pays for the steps it walked;
`brownian_trials` runs independent Brownian mechanisms, each trial with its own value and grid.
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
from expost.stopping import BatchStoppingRule, MemorylessRule, rule_or_never

__all__ = [
    "Columns",
    "Eps2Rows",
    "brownian_trials",
    "eps2_rows",
    "lazy_brownian_walk",
    "level_columns",
    "shared_columns",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

CHUNK = 64
"""Default block of grid points walked at a time."""


Columns = Callable[[IntArray, int, int], tuple[FloatArray, FloatArray]]
"""(times t, privacy times s = 1/t) of grid points lo..hi−1 for the trials ``rows``: each
(hi − lo,) when every trial shares the grid, else (len(rows), hi − lo)."""


def lazy_brownian_walk(
    value: FloatArray,
    rng: np.random.Generator,
    rule: BatchStoppingRule,
    columns: Columns,
    K: int,
    sensitivity: float,
    chunk: int | None,
    grow: bool = False,
) -> tuple[IntArray, npt.NDArray[np.bool_], FloatArray]:
    """Walk X forward in privacy time s, ``chunk`` grid points at a time (None: all at once).

    ``value`` (trials, d); the grid's K points come from ``columns`` a block at a time, so
    per-trial grids are never built beyond the points walked. ``grow``: each block twice the
    last (few trials walk far, so fewer, larger blocks for them).
    """
    trials, d = value.shape
    width = K if chunk is None else chunk
    fires = rule.fires if isinstance(rule, MemorylessRule) else None  # grid checked already
    index: IntArray = np.full(trials, K - 1, dtype=np.intp)
    stopped = np.zeros(trials, dtype=np.bool_)
    values = np.empty((trials, d))
    position = np.zeros((trials, d))
    previous = np.zeros(trials)
    active = np.arange(trials)
    start = 0
    while start < K:
        end = min(start + width, K)
        seen, s = columns(active, start, end)
        block = np.broadcast_to(s, (active.size, end - start))
        steps = rng.standard_normal((active.size, end - start, d))
        steps *= np.sqrt(np.diff(block, axis=1, prepend=previous[active, None]))[..., None]
        steps[:, 0] += position[active]
        np.cumsum(steps, axis=1, out=steps)
        iterates = value[active, None, :] + steps / block[..., None]
        if fires is None:
            fired = np.asarray(rule.stops(iterates, seen, sensitivity, start=start), dtype=bool)
        else:
            fired = fires(iterates, seen, sensitivity, np.arange(start, end))
        first = np.argmax(fired, axis=1)
        hit = fired[np.arange(active.size), first]
        done = active[hit]
        index[done] = start + first[hit]
        stopped[done] = True
        values[done] = iterates[hit, first[hit]]
        going = ~hit
        active = active[going]
        if active.size == 0:
            break
        position[active] = steps[going, -1]
        previous[active] = block[going, -1]
        values[active] = iterates[going, -1]  # final unless a later block stops
        start, width = end, 2 * width if grow else width
    return index, stopped, values


def shared_columns(times: FloatArray, s: FloatArray) -> Columns:
    """Columns of one grid shared by every trial: times t and privacy times s = 1/t."""
    return lambda _rows, lo, hi: (times[lo:hi], s[lo:hi])


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
