"""The optimistic side's pooling (`expost.pld.optimistic._pool`) against the loop it replaced.

    PYTHONPATH=src python benchmarks/bench_pool.py

Inputs: the cells a `delta_bracket` pools (captured from the call), for a subsampled Gaussian
(σ = 1, q = 0.01) on a grid of 1e-4, composed, coarsened (so both `discretise_lower` and
`coarsened_lower` pool) and composed again. The baseline is the cell-by-cell loop, verbatim,
timed in the same run (`tests/pld/test_pld_pool.py`'s `reference_pool`); the outputs must be
equal bit for bit. Prints both times and the ratio.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from timing import seconds

from expost.pld import PrivacyLossDistribution, counting, optimistic
from expost.pld.distribution import LOWER_FINER

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' reference loop
from tests.pld.test_pld_pool import reference_pool

FloatArray = npt.NDArray[np.float64]
Args = tuple[FloatArray, FloatArray, FloatArray, tuple[float, float, float], bool]
Pooled = tuple[list[int], list[float]]


def captured() -> list[Args]:
    """The arguments of every `_pool` call of one bracket."""
    calls: list[Any] = []
    pool = optimistic._pool

    def record(*args: Any) -> Pooled:
        calls.append(args)
        return pool(*args)

    counting.clear_caches()
    setattr(optimistic, "_pool", record)  # noqa: B010 (restored below)
    try:
        p = PrivacyLossDistribution.gaussian(1.0, sampling_prob=0.01, value_discretization=1e-4)
        q = p.compose(p).coarsened(2 * LOWER_FINER)
        q.compose(q).delta_bracket(2.0)
    finally:
        setattr(optimistic, "_pool", pool)  # noqa: B010
    return calls


def main() -> None:
    calls = captured()
    for args in calls:
        old, new = reference_pool(*args), optimistic._pool(*args)
        assert old[0] == new[0]
        assert [m.hex() for m in old[1]] == [m.hex() for m in new[1]]
    cells = sum(args[0].size for args in calls)
    steps = sorted({args[3][1] for args in calls})
    print(f"{len(calls)} calls, {cells:,} cells, grid steps {steps}; equal bit for bit")
    times: dict[str, list[float]] = {"loop": [], "new": []}
    for _ in range(7):  # interleaved: a load change on the shared machine hits both
        times["loop"] += seconds(lambda: [reference_pool(*args) for args in calls], 1)
        times["new"] += seconds(lambda: [optimistic._pool(*args) for args in calls], 1)
    before, after = (statistics.median(times[k]) for k in ("loop", "new"))
    print(f"cell-by-cell loop {before:.3f} s, _pool {after:.3f} s: {before / after:.2f}x")


if __name__ == "__main__":
    main()
