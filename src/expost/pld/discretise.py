"""Connect-the-dots discretisation of one direction's PLD (Doroshenko et al. 2022; THEORY §12).

Grid points l_j = j·h. A loss value l in the cell [l_j, l_{j+1}] is split between its two ends:
to l_j with probability w = (e^{−(l−l_j)} − e^{−h})/(1 − e^{−h}) and to l_{j+1} with 1 − w, so
that w e^{−l_j} + (1 − w) e^{−l_{j+1}} = e^{−l}. Why this keeps a dominating pair, for every
γ >= 0 (not only the profile at the grid points): refine each outcome of the pair (P, Q) into two
outcomes "(x, left)", "(x, right)" with P-masses P(x)·w, P(x)·(1 − w) and Q-masses
Q(x)·w e^{l − l_j}, Q(x)·(1−w) e^{l − l_{j+1}} (they sum to Q(x) by the identity). Forgetting the
refinement gives back (P, Q), so (P, Q) is a post-processing of the refined pair and
H_γ(P‖Q) <= H_γ(refined) for every γ >= 0 (data processing); the refined pair's loss takes only
grid values. Moving P-mass up (a lower tail to a grid point above it, an upper tail to +∞, an
atom's loss rounded up) is the same kind of refinement with the Q-deficit put on an outcome of
P-mass 0. So the discretised law, convolved, bounds the composed profile (THEORY §12 (a)–(c)).

Cell masses are integrals over the noise variable x (`expost.pld.pairs`): composite
Gauss–Legendre with `NODES` nodes on pieces at most `PIECE` wide (`NARROW_NODES` on pieces at
most `NARROW` wide: the error of an n-node rule scales as width^{2n}, about 1e-17 relative
there; in units of the noise scale;
a cell wider than `MAX_PIECES` pieces, where the loss is nearly flat, puts its closed-form mass
at its upper end: moved up),
of the density times w or 1 − w, computed without cancellation as w = expm1(h − u)/expm1(h),
1 − w = e^{h−u}·expm1(u)/expm1(h), u = l − l_j. The integrands are analytic on each piece, so
the quadrature error is far below `pairs.MASS_MARGIN`, the relative margin every mass is raised
by (more for losses far from 0 on a fine grid: `split_margin`); tests/pld/test_pld_convolution.py checks masses against 50-digit quadrature.

In the light tails (`_light_merged`) a run of `LIGHT_RUN` grid steps whose estimated mass is at
most `LIGHT_MASS` is one cell, split between its two ends l_j <= l <= l_j' the same way (the
identity w e^{−l_j} + (1 − w) e^{−l_j'} = e^{−l} is all the refinement above needs); it saves
the nodes of a subsampled pair's long, nearly empty upper tail (docs/pld.md, "Counting many
rounds", item 8).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from expost.pld.discrete import LOSS_CAP, DiscreteLoss, split_weights
from expost.pld.pairs import MASS_MARGIN, LossLaw, PartLike
from expost.rounding import up

__all__ = ["LOSS_CAP", "NODES", "PIECE", "atom_masses", "discretise", "split_margin"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
NODES = 10
PIECE = 1.0 / 16.0
MAX_PIECES = 4096  # a cell wider than this many pieces: its mass (closed form) to its upper end
NARROW = 1.0 / 64.0  # pieces at most this wide take `NARROW_NODES` nodes
NARROW_NODES = 4
LIGHT_RUN = 16  # grid steps per merged cell in the light tails (`_light_merged`)
LIGHT_MASS = 1e-15  # a run of cells estimated to hold at most this is merged
_T, _W = np.polynomial.legendre.leggauss(NODES)
_T_NARROW, _W_NARROW = np.polynomial.legendre.leggauss(NARROW_NODES)


def _cells(part: PartLike, h: float) -> tuple[IntArray, FloatArray]:
    """Grid indices j of the cells the part's loss range meets, and the x-ends of the cells."""
    l_lo = float(part.loss(np.array([part.lo]))[0])
    l_hi = float(part.loss(np.array([part.hi]))[0])
    first, last = math.floor(l_lo / h), math.ceil(l_hi / h)
    idx = np.arange(first, last + 1, dtype=np.int64)
    ends = part.inverse(idx.astype(np.float64) * h)
    ends[0], ends[-1] = part.lo, part.hi
    return idx, np.maximum.accumulate(ends)


class Nodes(NamedTuple):
    """Quadrature nodes (module doc): each node's cell (its grid index j and its span in grid
    steps), x and weight × density, and the wide cells (index, span, closed-form mass)."""

    j: IntArray
    x: FloatArray
    weight: FloatArray
    wide_j: IntArray
    wide_mass: FloatArray
    span: IntArray
    wide_span: IntArray


def quadrature(part: PartLike, h: float, light: bool = False) -> Nodes:
    """Nodes of the composite Gauss–Legendre rule per cell (module doc); with ``light``, the
    runs of cells in the light tails merged (`_light_merged`)."""
    idx, ends = _cells(part, h)
    if light:
        idx, ends = _light_merged(part, idx, ends)
    width = np.diff(ends)
    count = np.clip(np.ceil(width / PIECE), 1, MAX_PIECES + 1).astype(np.int64)
    wide = np.flatnonzero(count > MAX_PIECES)  # a nearly flat loss: the cell's mass moved up
    wide_ms = np.array([part.mass(float(ends[c]), float(ends[c + 1])) for c in wide])
    count[wide] = 0
    cell = np.repeat(np.arange(width.size), count)
    k = np.arange(cell.size) - np.repeat(np.cumsum(count) - count, count)
    step = width[cell] / count[cell]
    start = ends[cell] + k * step
    cs, xs, ws = [], [], []
    narrow = step <= NARROW
    for sel, (t, w) in ((~narrow, (_T, _W)), (narrow, (_T_NARROW, _W_NARROW))):
        st, sp = start[sel], step[sel]
        xs.append((st[:, None] + 0.5 * sp[:, None] * (t[None, :] + 1.0)).ravel())
        ws.append((0.5 * sp[:, None] * w[None, :]).ravel())
        cs.append(np.repeat(cell[sel], t.size))
    x, c = np.concatenate(xs), np.concatenate(cs)
    spans = np.diff(idx)
    dens = part.density(x) * np.concatenate(ws)
    return Nodes(idx[c], x, dens, idx[wide], wide_ms, spans[c], spans[wide])


def _light_merged(part: PartLike, idx: IntArray, ends: FloatArray) -> tuple[IntArray, FloatArray]:
    """The cells with every run of `LIGHT_RUN` grid steps (aligned on multiples of it) whose
    estimated mass (width × density at the midpoint) is at most `LIGHT_MASS` merged into one
    cell. Only a choice: connect-the-dots onto any two grid points around a loss is sound."""
    if idx.size < 3:
        return idx, ends
    estimate = np.diff(ends) * part.density(0.5 * (ends[:-1] + ends[1:]))
    run = idx[:-1] // LIGHT_RUN
    light = (np.bincount(run - run[0], weights=estimate) <= LIGHT_MASS)[run - run[0]]
    keep = np.ones(idx.size, dtype=bool)
    keep[1:-1] = ~(light[:-1] & light[1:]) | (idx[1:-1] % LIGHT_RUN == 0)
    return idx[keep], ends[keep]


def _part_masses(part: PartLike, h: float) -> tuple[IntArray, FloatArray]:
    """(grid index, mass) pairs of one part, tails included."""
    nodes = quadrature(part, h, True)  # light tails merged
    j, span = nodes.j, nodes.span
    left, right = split_weights(part.loss(nodes.x) - j * h, span.astype(np.float64) * h)
    js = np.concatenate([j, j + span, nodes.wide_j + nodes.wide_span])
    ms = np.concatenate([nodes.weight * left, nodes.weight * right, nodes.wide_mass])
    lo_loss = float(part.loss(np.array([part.lo]))[0])
    tail_at = math.ceil(lo_loss / h) + 1  # the lower tail (L < L(lo)) moved up
    return np.append(js, tail_at), np.append(ms, part.below)


def atom_masses(losses: FloatArray, masses: FloatArray, h: float) -> tuple[IntArray, FloatArray]:
    """(grid index, mass) pairs of atoms split between the two ends of their cells."""
    j = np.floor(losses / h).astype(np.int64)
    left, right = split_weights(losses - j * h, h)
    return np.concatenate([j, j + 1]), np.concatenate([masses * left, masses * right])


def capped(part: PartLike, cap: float) -> PartLike:
    """The part restricted to losses in [−cap, cap]: the mass cut above joins ``above`` (+∞),
    the mass cut below joins ``below`` (moved up to a grid point >= −cap). A part wholly above
    the cap goes to +∞ entirely; one wholly below keeps only ``below`` and ``above``."""
    lo, hi = part.lo, part.hi
    ends = part.inverse(np.array([-cap, cap]))
    new_lo, new_hi = max(lo, float(ends[0])), min(hi, float(ends[1]))
    if new_lo >= new_hi:
        whole = part.mass(lo, hi)
        if float(part.loss(np.array([0.5 * (lo + hi)]))[0]) > 0:
            return part.restricted(hi, hi, 0.0, part.above + whole + part.below)
        return part.restricted(lo, lo, part.below + whole, part.above)
    return part.restricted(
        new_lo, new_hi, part.below + part.mass(lo, new_lo), part.above + part.mass(new_hi, hi)
    )


def split_margin(largest_loss: float, h: float) -> float:
    """The relative margin on a grid law's masses: `MASS_MARGIN`, or more where the offsets
    u = l − l_j lose precision. fl(l) and fl(j·h) are within about 16 ulps of |l| (libm log1p
    and expm1, a product, a difference), and w and 1 − w change by at most |δu|/h relative to
    a cell's mass, so 2^-46·|l|/h (4 times 2·16·2^-53·|l|/h) covers them."""
    return max(MASS_MARGIN, 2.0**-46 * max(largest_loss, 1.0) / h)


def discretise(law: LossLaw, h: float, tail_mass: float) -> DiscreteLoss:
    """The connect-the-dots grid law of ``law`` on multiples of ``h`` (module doc), every mass
    raised by the relative `split_margin`, upper tails and losses above `LOSS_CAP` at +∞,
    losses below −`LOSS_CAP` moved up to the lowest other loss."""
    atoms = np.array(law.atoms, dtype=np.float64).reshape(-1, 2)
    losses, weights = atoms[:, 0], atoms[:, 1]
    over = losses > LOSS_CAP
    inf = math.fsum(weights[over].tolist())
    losses, weights = losses[~over], weights[~over]
    parts = [capped(p, LOSS_CAP) for p in law.parts]
    # losses below −LOSS_CAP move up to the lowest loss above it (no long empty grid)
    floors = [float(x) for x in losses[losses >= -LOSS_CAP]]
    floors += [float(p.loss(np.array([p.lo]))[0]) for p in parts if p.hi > p.lo]
    losses = np.maximum(losses, min(floors, default=-LOSS_CAP))
    pieces = [atom_masses(losses, weights, h)] + [_part_masses(p, h) for p in parts if p.hi > p.lo]
    pieces += [
        (np.array([math.ceil(-LOSS_CAP / h) + 1]), np.array([p.below]))
        for p in parts
        if p.hi <= p.lo
    ]
    js = np.concatenate([p[0] for p in pieces])
    ms = np.concatenate([p[1] for p in pieces])
    keep = ms > 0
    js, ms = js[keep], ms[keep]
    if js.size == 0:  # every mass at +∞
        js, ms = np.array([0]), np.array([0.0])
    first = int(js.min())
    margin = 1.0 + split_margin(max(abs(first), abs(int(js.max()))) * h, h)
    masses = np.nextafter(np.bincount(js - first, weights=ms) * margin, np.inf)
    inf = up((inf + math.fsum(p.above for p in parts)) * margin, 2)
    return DiscreteLoss(h, first, _at_most_one(masses, inf), inf, 0.0, tail_mass)


def _at_most_one(masses: FloatArray, inf: float) -> FloatArray:
    """The masses with their excess over total 1 taken from the lowest losses up.

    The exact law P has total 1 (with its mass at +∞), and the raised masses m >= c, the
    connect-the-dots law of P entrywise. Taking mass m_total − 1 off the bottom leaves m' with
    total 1 whose upper sums Σ_{l_i >= t} m'_i are each either m's (>= c's) or the whole total
    1 (>= c's), so m' dominates c stochastically and every hockey-stick sum, a nondecreasing
    function of the loss, is still >= c's. Without this the margins' excess (relative 2^-30
    per round and more) compounds over 10⁷ rounds. At most the computed excess, rounded
    down, is removed, float sums being bounded by n·u."""
    excess = math.fsum([*masses.tolist(), inf, -1.0]) * (1.0 - 2.0**-30)  # fsum: exact, rounded
    if excess <= 0.0 or masses.size >= 1 << 22:
        return masses
    sums = np.cumsum(masses)  # within a relative n·u < 2^-30 of the exact prefix sums
    n = int(np.searchsorted(sums, excess, side="right"))
    if n >= masses.size:
        return masses
    out = masses.copy()
    out[:n] = 0.0
    left = excess - (float(sums[n - 1]) if n else 0.0)  # what is still to take, at most
    out[n] = max(0.0, np.nextafter(out[n] - max(0.0, left) * (1.0 - 2.0**-30), np.inf))
    return out
