"""The optimistic side's pooling (`expost.pld.optimistic._pool`) against the cell-by-cell loop.

`_pool` walks over Python floats with each cell's target point and level computed beforehand;
its groups must be those of the cell-by-cell loop it replaced, bit for bit (the lower laws are
part of certified brackets, and the proof of the pooling in the module doc is about that
loop). `reference_pool` below is that loop, verbatim. Twins: the loop with the fractional share
of the closing cell dropped, and with the last upward group rounded the wrong way, must differ.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from expost.pld import PrivacyLossDistribution, counting, optimistic
from expost.pld.discrete import LOSS_CAP
from expost.pld.distribution import LOWER_FINER

FloatArray = npt.NDArray[np.float64]
Pooled = tuple[list[int], list[float]]
Pool = Callable[[FloatArray, FloatArray, FloatArray, tuple[float, float, float], bool], Pooled]
COARSER = 2 * LOWER_FINER  # coarsens the lower law by 2 (`distribution._lower`)
SLACK = 4.0 * optimistic.MERGE_ERROR + 64.0 * 2.0**-53 * (LOSS_CAP + 1.0)


def reference_pool(
    loss: FloatArray,
    pm: FloatArray,
    qm: FloatArray,
    grid: tuple[float, float, float],
    downward: bool,
    *,
    drop_share: bool = False,
    last_up: bool = False,
) -> Pooled:
    """The cell-by-cell loop `_pool` replaced (verbatim but for the two planted bugs)."""
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
            out_m.append(group_p + (0.0 if drop_share else share * p))
            group_p = group_q = 0.0
            p, q = (1.0 - share) * p, (1.0 - share) * q
    if group_p > 0.0:  # the last group, on the safe side of its point
        out_i.append(target if downward or last_up else target - 1)
        out_m.append(group_p)
    return out_i, out_m


def same(a: Pooled, b: Pooled) -> bool:
    """The same points (ints) and the same masses, bit for bit."""
    return (
        a[0] == b[0]
        and all(type(i) is int for i in b[0])
        and [m.hex() for m in a[1]] == [float(m).hex() for m in b[1]]
    )


def cells(
    rng: np.random.Generator, n: int, h: float, spacing: float, t: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``n`` cells sorted by loss, ``spacing`` grid steps apart on average, masses over many
    orders of magnitude; some exactly on a grid point plus the slack (on the point), some a
    hair above it, some with no P-mass (left out by both)."""
    loss = np.sort(rng.uniform(-1.0, 1.0, n)) * n * spacing * h / 2.0
    points = rng.random(n) < 0.15
    loss[points] = t + np.round(loss[points] / h) * h + SLACK
    hair = rng.random(n) < 0.05
    loss[hair] += rng.uniform(0.0, 2e-3 * h, int(hair.sum()))
    loss = np.sort(loss)
    pm = np.exp(rng.uniform(-30.0, 0.0, n)) * (rng.random(n) > 0.05)
    qm = pm * np.exp(-loss) * np.exp(rng.normal(0.0, 1e-9, n))
    return loss, pm, qm


def check(pool: Pool, seed: int) -> bool:
    """``pool`` against `reference_pool` on varied random inputs, both directions."""
    rng = np.random.default_rng(seed)
    for n in (0, 1, 2, 3, 10, 200):
        for spacing in (0.3, 1.0, 2.5):
            h = float(rng.choice([1e-3, 0.05, 0.5]))
            t = float(rng.uniform(0.0, h))
            loss, pm, qm = cells(rng, n, h, spacing, t)
            for downward in (True, False):
                args = (loss, pm, qm, (t, h, SLACK), downward)
                if not same(reference_pool(*args), pool(*args)):
                    return False
    return True


@pytest.mark.parametrize("seed", range(6))
def test_pool_equals_the_cell_by_cell_loop_bit_for_bit(seed: int) -> None:
    assert check(optimistic._pool, seed)


def test_the_inputs_reach_every_branch() -> None:
    """The random inputs above split cells, close groups on their point, join whole cells
    and leave a last group open, in both directions (else the comparison proves little)."""
    seen: set[str] = set()
    rng = np.random.default_rng(0)
    for spacing in (0.3, 1.0, 2.5):
        loss, pm, qm = cells(rng, 200, 0.05, spacing, 0.01)
        for downward in (True, False):
            args = (loss, pm, qm, (0.01, 0.05, SLACK), downward)
            full = reference_pool(*args)
            if not same(full, reference_pool(*args, drop_share=True)):
                seen.add(f"split {downward}")
            if not same(full, reference_pool(*args, last_up=True)):
                seen.add("last up")
            if len(full[0]) < np.count_nonzero(pm):
                seen.add(f"join {downward}")
            on = (loss - (0.01 + np.floor((loss - SLACK - 0.01) / 0.05) * 0.05) - SLACK) < 5e-5
            if np.any(on & (pm > 0)):
                seen.add("on the point")
    assert seen == {
        "split True",
        "split False",
        "join True",
        "join False",
        "last up",
        "on the point",
    }


@pytest.mark.parametrize(
    "bug", [{"drop_share": True}, {"last_up": True}], ids=["share dropped", "last group up"]
)
def test_planted_bugs_are_caught(bug: dict[str, bool]) -> None:
    """The twins: the loop with a planted bug must fail the same comparison."""
    buggy: Pool = functools.partial(
        reference_pool, drop_share=bug.get("drop_share", False), last_up=bug.get("last_up", False)
    )
    assert not all(check(buggy, seed) for seed in range(6))


def test_the_laws_of_a_bracket_are_pooled_as_by_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the cells `discretise_lower` and `coarsened_lower` really pool (a subsampled
    Gaussian, composed and coarsened), `_pool` and the loop agree bit for bit."""
    calls: list[tuple[float, int, bool]] = []
    pool = optimistic._pool

    def both(
        loss: FloatArray,
        pm: FloatArray,
        qm: FloatArray,
        grid: tuple[float, float, float],
        downward: bool,
    ) -> Pooled:
        new = pool(loss, pm, qm, grid, downward)
        old = reference_pool(loss, pm, qm, grid, downward)
        calls.append((grid[1], loss.size, same(old, new)))
        return new

    counting.clear_caches()
    monkeypatch.setattr(optimistic, "_pool", both)
    p = PrivacyLossDistribution.gaussian(1.0, sampling_prob=0.05, value_discretization=1e-3)
    low, high = p.compose(p).coarsened(COARSER).delta_bracket(1.0)
    assert 0.0 < low <= high
    assert len({h for h, _, _ in calls}) == 2  # discretise_lower's grid and a coarser one
    assert sum(n for _, n, _ in calls) > 1000
    assert all(ok for _, _, ok in calls)


def test_a_cell_taken_whole_by_the_closing_share_starts_no_group() -> None:
    """Upward, a group's surplus −1/4 and the next cell's gain +1/4, both exact: the share is
    1, nothing of the cell is left, and the third cell starts the next group."""
    t, h = 0.0, 0.5
    level = math.exp(t + 1 * h + SLACK)  # the level of point 1, which cell 0 aims at
    pm = np.array([level - 0.25, level + 0.25, 3.0])
    qm = np.array([1.0, 1.0, 1.0])
    loss = np.log(pm / qm)
    args = (loss, pm, qm, (t, h, SLACK), False)
    expected = reference_pool(*args)
    assert expected[0] == [1, 2]  # the first two cells, then the third (the last group)
    assert expected[1][0] == float(pm[0]) + float(pm[1])  # the share is exactly 1
    assert same(expected, optimistic._pool(*args))
