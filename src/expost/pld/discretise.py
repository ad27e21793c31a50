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
Gauss–Legendre with `NODES` nodes on pieces at most `PIECE` wide (in units of the noise scale),
of the density times w or 1 − w, computed without cancellation as w = expm1(h − u)/expm1(h),
1 − w = e^{h−u}·expm1(u)/expm1(h), u = l − l_j. The integrands are analytic on each piece, so
the quadrature error is far below `pairs.MASS_MARGIN`, the relative margin every mass is raised
by; tests/test_pld_convolution.py checks masses against 50-digit quadrature.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from expost.pld.discrete import DiscreteLoss
from expost.pld.pairs import MASS_MARGIN, LossLaw, Part

__all__ = ["NODES", "PIECE", "discretise"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
NODES = 10
PIECE = 1.0 / 16.0
_T, _W = np.polynomial.legendre.leggauss(NODES)


def _split(u: FloatArray, h: float) -> tuple[FloatArray, FloatArray]:
    """(w, 1 − w) of the module doc at offsets u in the cell, without cancellation."""
    scale = math.expm1(h)
    left = np.maximum(np.expm1(h - u) / scale, 0.0)
    right = np.maximum(np.exp(h - u) * np.expm1(u) / scale, 0.0)
    return left, right


def _cells(part: Part, h: float) -> tuple[IntArray, FloatArray]:
    """Grid indices j of the cells the part's loss range meets, and the x-ends of the cells."""
    l_lo = float(part.loss(np.array([part.lo]))[0])
    l_hi = float(part.loss(np.array([part.hi]))[0])
    first, last = math.floor(l_lo / h), math.ceil(l_hi / h)
    idx = np.arange(first, last + 1, dtype=np.int64)
    ends = part.inverse(idx.astype(np.float64) * h)
    ends[0], ends[-1] = part.lo, part.hi
    return idx, np.maximum.accumulate(ends)


def _part_masses(part: Part, h: float) -> tuple[IntArray, FloatArray]:
    """(grid index, mass) pairs of one part, tails included."""
    idx, ends = _cells(part, h)
    width = np.diff(ends)
    count = np.maximum(1, np.ceil(width / PIECE)).astype(np.int64)
    cell = np.repeat(np.arange(width.size), count)
    k = np.arange(cell.size) - np.repeat(np.cumsum(count) - count, count)
    step = width[cell] / count[cell]
    start = ends[cell] + k * step
    x = (start[:, None] + 0.5 * step[:, None] * (_T[None, :] + 1.0)).ravel()
    wq = (0.5 * step[:, None] * _W[None, :]).ravel()
    j = np.repeat(idx[cell], NODES)
    u = part.loss(x) - j * h
    left, right = _split(u, h)
    dens = part.density(x) * wq
    js = np.concatenate([j, j + 1])
    ms = np.concatenate([dens * left, dens * right])
    lo_loss = float(part.loss(np.array([part.lo]))[0])
    tail_at = math.ceil(lo_loss / h) + 1  # the lower tail (L < L(lo)) moved up
    return np.append(js, tail_at), np.append(ms, part.below)


def _atom_masses(atoms: tuple[tuple[float, float], ...], h: float) -> tuple[IntArray, FloatArray]:
    js: list[int] = []
    ms: list[float] = []
    for loss, mass in atoms:
        j = math.floor(loss / h)
        left, right = _split(np.array([loss - j * h]), h)
        js += [j, j + 1]
        ms += [mass * float(left[0]), mass * float(right[0])]
    return np.array(js, dtype=np.int64), np.array(ms, dtype=np.float64)


def discretise(law: LossLaw, h: float, tail_mass: float) -> DiscreteLoss:
    """The connect-the-dots grid law of ``law`` on multiples of ``h`` (module doc), every mass
    raised by the relative `MASS_MARGIN`, upper tails at +∞."""
    pieces = [_atom_masses(law.atoms, h)] + [_part_masses(p, h) for p in law.parts]
    js = np.concatenate([p[0] for p in pieces])
    ms = np.concatenate([p[1] for p in pieces])
    keep = ms > 0
    js, ms = js[keep], ms[keep]
    first = int(js.min())
    masses = np.bincount(js - first, weights=ms) * (1.0 + MASS_MARGIN)
    inf = math.fsum(p.above for p in law.parts) * (1.0 + MASS_MARGIN)
    return DiscreteLoss(h, first, np.nextafter(masses, np.inf), inf, 0.0, tail_mass)
