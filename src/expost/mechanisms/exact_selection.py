"""The exponential mechanism's law sampled exactly: uniform proposals, exact acceptance.

Among m allowed candidates with integer scores u_i, sensitivity Δ and rational eps, let
w_i = exp(eps·u_i/Δ) and w* = max w_i (the best allowed score u*). Repeat: propose i uniformly
among the allowed (`BitSource.below`, exact) and accept it with probability
w_i/w* = exp(−eps·(u* − u_i)/Δ), an exact Bernoulli (CKS 2020 Alg. 1,
`expost.exact.samplers.bernoulli_exp_ratio`); output the first accepted proposal.

Law (proof). One proposal is i and accepted with probability (1/m)·(w_i/w*) ∝ w_i; proposals
are i.i.d., so the first accepted one is i with probability w_i/Σ_j w_j: the exponential
mechanism's law, exactly (no float touches the choice).

Work. A proposal is accepted with probability a = Σ_j w_j/(m·w*) >= 1/m (the best candidate
always is), so the proposals a trial needs are geometric: mean 1/a <= m and
P(more than N proposals) = (1 − a)^N <= (1 − 1/m)^N <= exp(−N/m). There is no cap (a cap that
raises after spending would be a failure path unrelated to the input); the loop ends with
probability 1 and the tail above is its bound. Each round is vectorised over the undecided
trials: a block of k proposals per trial, k = 1, 2, 4, … up to m (and at most `CHUNK` proposals
per round in all), of which the first accepted one counts (the same i.i.d. sequence, so the same
law). A round leaves a trial undecided with probability (1 − a)^k <= e^{−k/m}: once the blocks
reach m (after ceil(log2 m) rounds), R more rounds leave it undecided with probability <= e^{−R}.

Timing. The number of proposals depends on the private scores (through a), and each Bernoulli's
work on its exponent eps·(u* − u_i)/Δ: the running time reveals something about the scores.
Permute-and-flip has the same kind of dependence (its coins' work depends on the same
exponents). The release path is otherwise data-independent (docs/mechanisms/exponential.md).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from expost.exact.bits import SMALL, BitSource
from expost.exact.samplers import bernoulli_exp_ratio

__all__ = ["CHUNK", "exact_gaps", "exact_select"]

IndexArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]

#: Most proposals drawn in one vectorised round (all undecided trials together).
CHUNK = 2**20
_WHOLE = SMALL - 1  # integer parts above this are tested in a second, Python-int step


def exact_gaps(
    u: npt.NDArray[Any], allowed: npt.ArrayLike | None
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """(u* − u_i per entry, 0 where not allowed; u* per row) for integer scores (rows, m), in
    exact integers: int64 when every gap fits, else Python ints."""
    mask = np.ones(u.shape, bool) if allowed is None else np.broadcast_to(allowed, u.shape)
    floor = u.min(axis=-1, keepdims=True)
    best = np.where(mask, u, floor).max(axis=-1, keepdims=True)
    fits = u.dtype == np.int64 and int(u.max()) - int(u.min()) < SMALL
    top = best if fits else best.astype(object)
    gaps = np.where(mask, top - (u if fits else u.astype(object)), 0)
    return (gaps.astype(np.int64) if fits else gaps), best


def _exponents(
    gaps: npt.NDArray[Any], ratio: Fraction
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64], npt.NDArray[Any] | None, int]:
    """γ = ratio·gap = whole + frac/den per entry: (frac, min(whole, _WHOLE), the rest of whole
    or None, den). frac < den, so it stays int64 whenever den does."""
    p, den = ratio.numerator, ratio.denominator
    top = int(gaps.max()) if gaps.size else 0
    if gaps.dtype == np.int64 and p < SMALL and p * top < SMALL and den < SMALL:
        n = gaps * p
        whole = n // den
        return n - whole * den, whole, None, den
    n = gaps.astype(object) * p
    whole = n // den
    frac = n - whole * den
    excess = np.asarray(whole - _WHOLE, dtype=object)
    big = bool(np.any(excess > 0))
    clipped = np.where(excess > 0, _WHOLE, whole).astype(np.int64)
    rest = np.where(excess > 0, excess, 0) if big else None
    return frac.astype(np.int64 if den <= SMALL else object), clipped, rest, den


def _accept(
    frac: npt.NDArray[Any],
    whole: npt.NDArray[np.int64],
    rest: npt.NDArray[Any] | None,
    den: int,
    bits: BitSource,
) -> BoolArray:
    """Bernoulli(exp(−(whole + rest + frac/den))) per entry, as the product of independent
    exact Bernoullis exp(−frac/den)·exp(−whole)·exp(−rest) (CKS Alg. 1), each drawn only
    where the previous ones accepted."""
    ok = bernoulli_exp_ratio(frac, den, bits)
    for part in (whole, rest):
        if part is None:
            continue
        later = np.flatnonzero(ok & np.asarray(part > 0, dtype=bool))
        if later.size:
            ok[later] = bernoulli_exp_ratio(part[later], 1, bits)
    return ok


def _ranks(count: npt.NDArray[np.int64], k: int, bits: BitSource) -> npt.NDArray[np.int64]:
    """(len(count), k) integers, row r uniform below count[r] (exact, `BitSource.below`)."""
    out = np.empty((count.size, k), np.int64)
    for c in np.unique(count):
        rows = count == c
        out[rows] = bits.below(int(c), int(rows.sum()) * k).reshape(-1, k)
    return out


def exact_select(
    u: npt.NDArray[Any],
    allowed: npt.ArrayLike | None,
    trials: int,
    eps: Fraction,
    sensitivity: int,
    bits: BitSource,
) -> IndexArray:
    """``trials`` exact draws of the exponential mechanism (module docstring) for integer scores
    ``u`` of shape (trials, m), or (1, m) shared by every trial; ``allowed`` broadcasts to u."""
    mask = np.ones(u.shape, bool) if allowed is None else np.broadcast_to(allowed, u.shape)
    gaps, _ = exact_gaps(u, mask)
    frac, whole, rest, den = _exponents(gaps, eps / sensitivity)
    count = mask.sum(axis=-1)
    order = np.argsort(~mask, axis=-1, kind="stable")  # allowed columns first, in order
    chosen = np.empty(trials, np.intp)
    pending = np.arange(trials)
    block, most = 1, int(count.max())
    while pending.size:
        row = pending if u.shape[0] > 1 else np.zeros(pending.size, np.intp)
        k = max(1, min(block, CHUNK // pending.size))
        cols = order[row[:, None], _ranks(count[row], k, bits)]
        at = (np.broadcast_to(row[:, None], cols.shape), cols)
        extra = None if rest is None else rest[at].ravel()
        ok = _accept(frac[at].ravel(), whole[at].ravel(), extra, den, bits).reshape(cols.shape)
        hit = ok.any(axis=1)
        chosen[pending[hit]] = cols[hit, ok[hit].argmax(axis=1)]
        pending = pending[~hit]
        block = min(2 * block, most)
    return chosen
