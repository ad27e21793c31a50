"""The optimistic side: a grid law *dominated by* one direction's PLD (THEORY §12, §13).

Merging outcomes is a post-processing, so merging every outcome whose loss lies in a cell C_j
into one outcome gives a pair dominated by (P, Q); the merged outcome has P-mass P_j, Q-mass
Q_j and loss l̄_j = log(P_j/Q_j), somewhere inside the cell (a weighted mean of e^{−l}). Its
loss is then rounded *down* to a grid point and its mass *down* (a smaller measure at smaller
losses has smaller hockey-stick sums for every γ >= 0, and convolution keeps that order), so
the composed law's δ, minus the carried convolution error, is a lower bound on the exact δ.

Rounding each merged loss down to the grid would lose about h/2 per round (k·h/2 after k
rounds: far too much). Instead the merged cells, in ascending order of loss, are *pooled*
(`_pool`) from the top down and from the bottom up, meeting at the lightest cell: a group starts at a
cell, takes the grid point below (above) it plus a slack for the errors below as its target,
and collects lower (higher) cells until its merged loss reaches the target, taking the needed
fraction of the last one — sending a fraction of a cell's
outcomes to one group and the rest to the next is again a post-processing, and the fraction
keeps the cell's P/Q ratio. Every group then sits exactly on a grid point (plus the slack);
only the two groups meeting at the lightest cell are rounded down (a cell or two of mass). The grid l_i = t + i·h is aligned with the
heaviest atom, if any (a Laplace or randomised-response atom stays put).

Mass bounds: a merged cell's P_j and Q_j are quadrature sums of an analytic integrand (no
connect-the-dots weights, so no 1/h amplification of the loss's rounding); their relative
error is taken to be at most `MERGE_ERROR` = 2^-40 (tests/pld/test_pld_brackets.py checks them
against 50-digit quadrature; the pessimistic side allows 2^-30), so a group's merged loss must
clear its grid point by 4·MERGE_ERROR plus float error, and its mass is lowered by 2·MERGE_ERROR. Mass beyond the loss cap sits at the cap
(moved down); tails are dropped.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from expost.pld.discrete import LOSS_CAP, DiscreteLoss
from expost.pld.discretise import capped, quadrature
from expost.pld.pairs import LossLaw

__all__ = ["MERGE_ERROR", "coarsened_lower", "discretise_lower"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_U = 2.0**-53
MERGE_ERROR = 2.0**-40  # relative error allowed on a merged cell's P_j, Q_j (module doc)


def _pool(
    loss: FloatArray,
    pm: FloatArray,
    qm: FloatArray,
    grid: tuple[float, float, float],
    downward: bool,
) -> tuple[list[int], list[float]]:
    """Merged cells pooled into groups whose merged loss is a grid point t + i·h plus ``slack``
    (``grid`` = (t, h, slack)); each group's P-mass goes to that point (module doc). Downward:
    from the top cell, a group aims at the point below it and takes lower cells; upward: from
    the bottom, at the point above it, taking higher cells. A cell is split between two groups
    in proportion (its P/Q ratio kept in both). The last group stays on the safe side of its
    point (rounded down). Cells without P-mass are left out.

    The walk is sequential (the rest of a split cell starts the next group, its float value
    carried on), so it runs over Python floats, not numpy scalars; each cell's target point and
    on-the-point test are done beforehand, vectorised, by the same correctly rounded operations
    in the same order, so the groups are those of a cell-by-cell loop, bit for bit
    (tests/pld/test_pld_pool.py keeps that loop as the reference)."""
    t, h, slack = grid
    keep = pm > 0.0
    order = slice(None, None, -1 if downward else 1)
    loss, pm, qm = loss[keep][order], pm[keep][order], qm[keep][order]
    floor = np.floor((loss - slack - t) / h)
    on = loss - (t + floor * h) - slack < 1e-3 * h  # a group from this cell closes at once
    aim = (floor if downward else floor + ~on).astype(np.int64)  # the point a group aims at
    out_i: list[int] = []
    out_m: list[float] = []
    group_p = group_q = level = 0.0
    target = 0
    cells = zip(pm.tolist(), qm.tolist(), aim.tolist(), on.tolist(), strict=True)
    for p, q, aim_c, on_c in cells:
        if group_p > 0.0:  # an open group meets this cell
            surplus = group_p - level * group_q  # >= 0 downward, < 0 upward
            gain = p - level * q
            if (surplus + gain >= 0.0) == downward:  # the whole cell joins
                group_p, group_q = group_p + p, group_q + q
                continue
            share = -surplus / gain  # the fraction of the cell that brings it to the point
            out_i.append(target)
            out_m.append(group_p + share * p)
            group_p = group_q = 0.0
            p, q = (1.0 - share) * p, (1.0 - share) * q
            if not p > 0.0:
                continue
        if on_c:  # a new group from (the rest of) this cell, on its point
            out_i.append(aim_c)
            out_m.append(p)
        else:
            group_p, group_q, level, target = p, q, math.exp(t + aim_c * h + slack), aim_c
    if group_p > 0.0:  # the last group, on the safe side of its point
        out_i.append(target if downward else target - 1)
        out_m.append(group_p)
    return out_i, out_m


def discretise_lower(law: LossLaw, h: float, tail_mass: float) -> DiscreteLoss:
    """A ``lower`` grid law of ``law`` (module doc): its hockey-stick sums are at most the
    exact PLD's, for every γ >= 0, after any number of compositions (minus the error)."""
    atoms = np.array(law.atoms, dtype=np.float64).reshape(-1, 2)
    a_loss, a_mass = atoms[:, 0], atoms[:, 1]
    inf = math.fsum(a_mass[np.isinf(a_loss)].tolist()) * (1.0 - 4.0 * _U)
    fin = np.isfinite(a_loss) & (a_mass > 0) & (a_loss >= -LOSS_CAP)  # lower ones dropped
    a_loss, a_mass = np.minimum(a_loss[fin], LOSS_CAP), a_mass[fin]
    slack = 4.0 * MERGE_ERROR + 64.0 * _U * (LOSS_CAP + 1.0)
    t = 0.0
    if a_mass.size and float(np.max(a_mass)) > 1e-3:  # align the grid with the heaviest atom
        t = (float(a_loss[int(np.argmax(a_mass))]) - 2.0 * slack) % h
    # merged cells: P_j, Q_j per cell [j·h, (j+1)·h] of each part; atoms stay apart (an atom
    # on the grid must not be pulled off it by the density around it)
    js, ps, qs = [], [], []
    for part in law.parts:
        c = capped(part, LOSS_CAP)
        if c.hi <= c.lo:
            continue
        nodes = quadrature(c, h)
        js.append(nodes.j)
        ps.append(nodes.weight)
        qs.append(nodes.weight * np.exp(-c.loss(nodes.x)))
    pm, qm = a_mass, a_mass * np.exp(-a_loss)
    if js:
        j_all = np.concatenate(js)
        first = int(j_all.min())
        pm = np.concatenate([pm, np.bincount(j_all - first, weights=np.concatenate(ps))])
        qm = np.concatenate([qm, np.bincount(j_all - first, weights=np.concatenate(qs))])
    keep = (pm > 0) & (qm > 0)
    pm, qm = pm[keep].astype(np.float64), qm[keep].astype(np.float64)
    if pm.size == 0:
        return DiscreteLoss(h, 0, np.array([0.0]), inf, 0.0, tail_mass, 0.0, True)
    merged = np.minimum(np.log(pm) - np.log(qm), LOSS_CAP)
    order = np.argsort(merged, kind="stable")
    return _pooled(merged[order], pm[order], qm[order], (t, h, slack), (inf, 0.0, tail_mass))


def _pooled(
    loss: FloatArray,
    pm: FloatArray,
    qm: FloatArray,
    grid: tuple[float, float, float],
    rest: tuple[float, float, float],
) -> DiscreteLoss:
    """The ``lower`` grid law of outcomes sorted by loss, pooled onto ``grid`` = (t, h, slack)
    (`_pool`), with ``rest`` = (mass at +∞, error, tail_mass)."""
    t, h, _ = grid
    middle = int(np.argmin(pm))  # the groups meet at the lightest cell
    up_i, up_m = _pool(loss[:middle], pm[:middle], qm[:middle], grid, False)
    down_i, down_m = _pool(loss[middle:], pm[middle:], qm[middle:], grid, True)
    idx = np.array(up_i + down_i, dtype=np.int64)
    mass = np.array(up_m + down_m, dtype=np.float64)
    low = int(idx.min())
    masses = np.bincount(idx - low, weights=mass * (1.0 - 2.0 * MERGE_ERROR)) * (1.0 - 4.0 * _U)
    return DiscreteLoss(h, low, masses, rest[0], rest[1], rest[2], t, True)


def coarsened_lower(d: DiscreteLoss, factor: int) -> DiscreteLoss:
    """A ``lower`` law on the grid shift + i·factor·h whose hockey-stick sums are at most
    ``d``'s: its outcomes (P-mass m_i, Q-mass m_i·e^{−l_i}) pooled as in `discretise_lower`.
    For a group G of (fractions of) outcomes, (P_G − γQ_G)_+ <= Σ_{i∈G} (P_i − γQ_i)_+, and
    its loss put at a grid point at most log(P_G/Q_G) lowers its term further; so the sums
    only fall, and the lower promise (sums minus the error at most the exact ones) is kept
    with the same error and mass at +∞ (docs/pld.md, "Counting many rounds")."""
    keep = d.masses > 0
    loss = d.losses[keep]
    pm = d.masses[keep]
    if pm.size == 0:
        return DiscreteLoss(
            d.h * factor, 0, np.array([0.0]), d.inf_mass, d.error, d.tail_mass, d.shift, True
        )
    qm = pm * np.exp(-loss)
    slack = 4.0 * MERGE_ERROR + 64.0 * _U * (LOSS_CAP + abs(d.shift) + 1.0)
    grid = (d.shift, d.h * factor, slack)
    return _pooled(loss, pm, qm, grid, (d.inf_mass, d.error, d.tail_mass))
