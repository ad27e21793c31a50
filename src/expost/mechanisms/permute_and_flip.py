"""Permute-and-flip (McKenna–Sheldon, NeurIPS 2020): a selection mechanism of its own.

Visit the candidates in a uniformly random order and stop at the first r whose coin
Bernoulli(exp(eps·(u_r − u*)/(2Δ))) comes up heads, u* the best allowed score. Every coin is an
exact Bernoulli(exp(−γ)) with rational γ (CKS Alg. 1), the order an exact uniform permutation, so
no float touches the choice. Drawing every candidate's coin up front and choosing uniformly among
the heads has the same law (the order is independent of the coins; the best candidate's coin is
always heads), which vectorises over trials.

Why it is not the exponential mechanism's exact sampler: its law differs (its expected score is
never below the exponential mechanism's at the same eps, McKenna–Sheldon 2020) and so does its
price: it is eps-DP, but the eps-bounded-range property that gives the exponential mechanism its
eps²/8 zCDP price (Cesar–Rogers) is not proven for it, so a zCDP filter charges eps²/2. The
session's ``exponential_mechanism`` therefore draws the exponential mechanism's own law in both
modes (`ExponentialMechanism`, ``exact=True`` in secure mode: 4× cheaper under a zCDP filter),
and permute-and-flip stays a separate mechanism for pure-DP budgets, with exact noise only (a
float version would add a float leak and no new idea).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import exact_sensitivity, positive_int, rational
from expost.errors import InvalidParameter
from expost.exact.bits import BitSource
from expost.exact.samplers import bernoulli_exp_ratio
from expost.filters.costs import DPCost
from expost.guarantees import PureDP
from expost.mechanisms.exact_additive import integers
from expost.mechanisms.selection_inputs import candidates_mask
from expost.rounding import up_exact

__all__ = ["PermuteAndFlip"]

IndexArray = npt.NDArray[np.intp]


def _eps(value: Fraction | float) -> Fraction:
    return rational("eps", value)


@frozen
class PermuteAndFlip:
    """Permute-and-flip on integer scores u with sensitivity Δ: eps-DP for any scores
       (McKenna–Sheldon 2020; its expected score is never below the exponential mechanism's).
    Its cost is DPCost(eps), not `BoundedRangeCost`: the
       eps-bounded-range property that gives Gumbel-max its eps²/8 zCDP price (Cesar–Rogers) is
       not proven for permute-and-flip, so a zCDP filter charges the pure-DP price eps²/2. No
       monotone-scores discount is claimed either.
    """

    eps: Fraction = field(converter=_eps)
    sensitivity: int = field(default=1, converter=exact_sensitivity)

    def guarantee(self) -> PureDP:
        """eps-DP (McKenna–Sheldon 2020), eps rounded up."""
        return PureDP(up_exact(self.eps))

    def cost(self) -> DPCost:
        """DPCost(eps): the safe price (see the class docstring)."""
        return DPCost(up_exact(self.eps))

    def run(
        self, scores: npt.ArrayLike, bits: BitSource, candidates: npt.ArrayLike | None = None
    ) -> int:
        """One choice: the index of an allowed candidate for integer scores (m,)."""
        return int(self.run_batch(scores, 1, bits, candidates)[0])

    def run_batch(
        self,
        scores: npt.ArrayLike,
        trials: int,
        bits: BitSource,
        candidates: npt.ArrayLike | None = None,
    ) -> IndexArray:
        """``trials`` independent choices for integer scores (m,), shape (trials,)."""
        u = integers("scores", scores)
        if u.ndim != 1 or u.size == 0:
            raise InvalidParameter("scores", u.shape, "must be a non-empty vector")
        n = positive_int("trials", trials)
        allowed = candidates_mask(candidates, u.shape)
        mask = np.ones(u.shape, bool) if allowed is None else np.asarray(allowed, bool)
        allowed_at = np.flatnonzero(mask)
        scored = u[allowed_at]
        best = int(scored.max())
        g = self.eps / (2 * self.sensitivity)  # γ_i = g·(u* − u_i), all over g's denominator
        if scored.dtype == np.int64 and best - int(scored.min()) < 2**62:
            gaps = best - scored  # int64, >= 0, no overflow
        else:
            gaps = best - scored.astype(object)  # Python ints
        if g.numerator * int(gaps.max()) < 2**62:  # γ's numerators fit in int64
            numerators = np.tile(g.numerator * gaps, n)
        else:
            numerators = np.tile(gaps.astype(object) * g.numerator, n)  # Python ints
        heads = np.zeros((n, u.size), bool)
        coins = bernoulli_exp_ratio(numerators, g.denominator, bits)
        heads[:, allowed_at] = coins.reshape(n, allowed_at.size)
        return _uniform_head(heads, bits)


def _uniform_head(heads: npt.NDArray[np.bool_], bits: BitSource) -> IndexArray:
    """Per row, an exactly uniform choice among the columns that are True (each row has one)."""
    count = heads.sum(axis=1)
    rank = np.empty(count.shape, np.int64)
    for c in np.unique(count):
        rows = count == c
        rank[rows] = bits.below(int(c), int(rows.sum()))
    position = np.cumsum(heads, axis=1) - 1
    chosen: IndexArray = np.argmax(heads & (position == rank[:, None]), axis=1)
    return chosen
