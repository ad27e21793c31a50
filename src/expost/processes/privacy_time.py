"""Lazy batch walks of Brownian mechanisms in privacy time (THEORY §3; APC Def 4.4, Sec. 7).

With s = 1/t increasing along a grid, X(s) = s·B(1/s) is a standard BM with independent
increments N(0, s_(k+1) − s_k) (Lévy's time inversion), and iterate k is f(x) + X(s_k)/s_k.
`lazy_brownian_walk` walks X forward a block of grid points at a time and advances only the
trials whose stopping rule has not fired, so a trial pays for the steps it walked
(`expost.mechanisms.trials.brownian_trials` runs it with a grid per trial).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from expost.stopping import BatchStoppingRule, MemorylessRule

__all__ = ["CHUNK", "Columns", "lazy_brownian_walk", "shared_columns"]

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
