"""The optimistic side: a grid law *dominated by* one direction's PLD (THEORY §12, §13).

Merging outcomes is a post-processing, so merging every outcome whose loss lies in a cell C_j
into one outcome gives a pair dominated by (P, Q); the merged outcome has P-mass P_j, Q-mass
Q_j and loss l̄_j = log(P_j/Q_j), somewhere inside the cell (a weighted mean of e^{−l}). Its
loss is then rounded *down* to a grid point and its mass *down* (a smaller measure at smaller
losses has smaller hockey-stick sums for every γ >= 0, and convolution keeps that order), so
the composed law's δ, minus the carried convolution error, is a lower bound on the exact δ.

Rounding down to a fixed grid would lose about h/2 per round (k·h/2 after k rounds: far too
much). The grid is therefore shifted: l_i = t + i·h with t chosen to minimise the mass-weighted
drop Σ_j P_j·((l̄_j − t) mod h), and the cells are placed so that the merged losses of smooth
parts fall just above grid points ([j·h + b, (j+1)·h + b] with b = t_atom − h/2 where a heavy
atom sits at t_atom mod h): for a smooth density the merged loss lies within O(h²) of the
cell's midpoint, so the drop per round is O(h²), not h/2.

Mass bounds: quadrature masses carry the relative error `pairs.MASS_MARGIN` (the same
assumption as the pessimistic side, tested against 50-digit quadrature), so P_j is lowered by
it and l̄_j by 4·MASS_MARGIN plus its float error. Mass beyond the loss cap sits at the cap
(moved down); tails are dropped.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from expost.pld.discrete import LOSS_CAP, DiscreteLoss
from expost.pld.discretise import capped, cell_range, quadrature, split_margin
from expost.pld.pairs import MASS_MARGIN, LossLaw, PartLike

__all__ = ["discretise_lower"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_U = 2.0**-53


def _best_shift(residues: FloatArray, masses: FloatArray, h: float) -> float:
    """The t in [0, h) among the residues minimising Σ m_j·((r_j − t) mod h)."""
    order = np.argsort(residues)
    r, m = residues[order], masses[order]
    below = np.concatenate([[0.0], np.cumsum(m)[:-1]])  # mass with r_j < r_k
    cost = float(np.dot(m, r)) - r * float(np.sum(m)) + h * below
    return float(r[int(np.argmin(cost))])


def _moved(part: PartLike, h: float, b: float) -> FloatArray:
    """How far to move each cell boundary down so that merged losses land on the cells'
    midpoints: a first pass gives each cell's offset d_j = l̄_j − midpoint (O(h²) for a smooth
    density); boundary k moves by the mean of its two cells' offsets."""
    idx = cell_range(part, h, b)
    j, x, dens, _, _ = quadrature(part, h, b)
    k = j - int(idx[0])
    pm = np.bincount(k, weights=dens, minlength=idx.size)
    qm = np.bincount(k, weights=dens * np.exp(-part.loss(x)), minlength=idx.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.log(pm) - np.log(qm) - ((idx + 0.5) * h + b)
    d = np.where(np.isfinite(d) & (np.abs(d) < 0.25 * h), d, 0.0)
    return np.concatenate([[d[0]], 0.5 * (d[1:] + d[:-1])])


def discretise_lower(law: LossLaw, h: float, tail_mass: float) -> DiscreteLoss:
    """A ``lower`` grid law of ``law`` (module doc): its hockey-stick sums are at most the
    exact PLD's, for every γ >= 0, after any number of compositions (minus the error)."""
    atoms = np.array(law.atoms, dtype=np.float64).reshape(-1, 2)
    a_loss, a_mass = atoms[:, 0], atoms[:, 1]
    inf = math.fsum(a_mass[np.isinf(a_loss)].tolist()) * (1.0 - 4.0 * _U)
    fin = np.isfinite(a_loss) & (a_mass > 0)
    a_loss, a_mass = np.minimum(a_loss[fin], LOSS_CAP), a_mass[fin]
    b = 0.0
    if a_mass.size and float(np.max(a_mass)) > 1e-3:
        b = float(a_loss[int(np.argmax(a_mass))]) % h - 0.5 * h
    # merged cells: P_j, Q_j per cell [j·h + b, (j+1)·h + b]
    js, ps, qs = [np.floor((a_loss - b) / h).astype(np.int64)], [a_mass], [a_mass * np.exp(-a_loss)]
    for part in law.parts:
        c = capped(part, LOSS_CAP)
        if c.hi <= c.lo:
            continue
        j, x, dens, _, _ = quadrature(c, h, b, _moved(c, h, b))
        js.append(j)
        ps.append(dens)
        qs.append(dens * np.exp(-c.loss(x)))
    j_all = np.concatenate(js)
    if j_all.size == 0:
        return DiscreteLoss(h, 0, np.array([0.0]), inf, 0.0, tail_mass, 0.0, True)
    first = int(j_all.min())
    pm = np.bincount(j_all - first, weights=np.concatenate(ps)).astype(np.float64)
    qm = np.bincount(j_all - first, weights=np.concatenate(qs)).astype(np.float64)
    keep = (pm > 0) & (qm > 0)
    pm, qm = pm[keep], qm[keep]
    margin = split_margin(LOSS_CAP, h) + MASS_MARGIN
    with np.errstate(over="ignore"):
        merged = np.log(pm) - np.log(qm)
    merged = merged - 4.0 * margin - 8.0 * _U * (np.abs(np.log(pm)) + np.abs(np.log(qm)) + 1.0)
    merged = np.minimum(merged, LOSS_CAP)
    t = _best_shift(np.mod(merged, h), pm, h)
    idx = np.floor((merged - t) / h).astype(np.int64)
    idx = np.where(t + idx * h > merged, idx - 1, idx)  # float rounding: never above
    low = int(idx.min())
    masses = np.bincount(idx - low, weights=pm * (1.0 - 2.0 * margin)) * (1.0 - 4.0 * _U)
    return DiscreteLoss(h, low, masses, inf, 0.0, tail_mass, t, True)
