"""The optimistic side's pooling (`expost.pld.optimistic._pool`) against the loop it replaced.

    PYTHONPATH=src python benchmarks/bench_pool.py

Inputs: the cells a `delta_bracket` pools (captured from the call), for a subsampled Gaussian
(σ = 1, q = 0.01) on a grid of 1e-4, composed, coarsened (so both `discretise_lower` and
`coarsened_lower` pool) and composed again. The baseline is the cell-by-cell loop, verbatim,
timed in the same run; the outputs must be equal bit for bit. Prints both times and the ratio.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import numpy.typing as npt
from timing import seconds

from expost.pld import PrivacyLossDistribution, counting, optimistic
from expost.pld.distribution import LOWER_FINER

FloatArray = npt.NDArray[np.float64]
Args = tuple[FloatArray, FloatArray, FloatArray, tuple[float, float, float], bool]
Pooled = tuple[list[int], list[float]]


def loop_pool(
    loss: FloatArray,
    pm: FloatArray,
    qm: FloatArray,
    grid: tuple[float, float, float],
    downward: bool,
) -> Pooled:
    """The cell-by-cell `_pool` before the change (verbatim)."""
    t, h, slack = grid
    out_i: list[int] = []
    out_m: list[float] = []
    group_p = group_q = level = 0.0
    target = 0
    for c in range(loss.size - 1, -1, -1) if downward else range(loss.size):
        p, q = float(pm[c]), float(qm[c])
        while p > 0.0:
            if group_p == 0.0:  # a new group from (the rest of) this cell
                target = math.floor((float(loss[c]) - slack - t) / h)
                group_p, group_q, p = p, q, 0.0
                if float(loss[c]) - (t + target * h) - slack < 1e-3 * h:  # on the point
                    out_i.append(target)
                    out_m.append(group_p)
                    group_p = group_q = 0.0
                elif not downward:
                    target += 1
                level = math.exp(t + target * h + slack)
                break
            surplus = group_p - level * group_q  # >= 0 downward, < 0 upward
            gain = p - level * q
            if (surplus + gain >= 0.0) == downward:  # the whole cell joins
                group_p, group_q, p = group_p + p, group_q + q, 0.0
                break
            share = -surplus / gain  # the fraction of the cell that brings it to the point
            out_i.append(target)
            out_m.append(group_p + share * p)
            group_p = group_q = 0.0
            p, q = (1.0 - share) * p, (1.0 - share) * q
    if group_p > 0.0:  # the last group, on the safe side of its point
        out_i.append(target if downward else target - 1)
        out_m.append(group_p)
    return out_i, out_m


def captured() -> list[Args]:
    """The arguments of every `_pool` call of one bracket."""
    calls: list[Args] = []
    pool = optimistic._pool

    def record(
        loss: FloatArray,
        pm: FloatArray,
        qm: FloatArray,
        grid: tuple[float, float, float],
        downward: bool,
    ) -> Pooled:
        calls.append((loss, pm, qm, grid, downward))
        return pool(loss, pm, qm, grid, downward)

    counting.clear_caches()
    optimistic._pool = record  # restored below
    try:
        p = PrivacyLossDistribution.gaussian(1.0, sampling_prob=0.01, value_discretization=1e-4)
        q = p.compose(p).coarsened(2 * LOWER_FINER)
        q.compose(q).delta_bracket(2.0)
    finally:
        optimistic._pool = pool
    return calls


def main() -> None:
    calls = captured()
    for args in calls:
        old, new = loop_pool(*args), optimistic._pool(*args)
        assert old[0] == new[0]
        assert [m.hex() for m in old[1]] == [m.hex() for m in new[1]]
    cells = sum(args[0].size for args in calls)
    steps = sorted({args[3][1] for args in calls})
    print(f"{len(calls)} calls, {cells:,} cells, grid steps {steps}; equal bit for bit")
    times: dict[str, list[float]] = {"loop": [], "new": []}
    for _ in range(7):  # interleaved: a load change on the shared machine hits both
        times["loop"] += seconds(lambda: [loop_pool(*args) for args in calls], 1)
        times["new"] += seconds(lambda: [optimistic._pool(*args) for args in calls], 1)
    before, after = (statistics.median(times[k]) for k in ("loop", "new"))
    print(f"cell-by-cell loop {before:.3f} s, _pool {after:.3f} s: {before / after:.2f}x")


if __name__ == "__main__":
    main()
