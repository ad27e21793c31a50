"""How many rounds of one PLD a budget admits (THEORY §12, "Filters that count").

The exact δ of k rounds is nondecreasing in k (data processing), so the count is found by
doubling then bisection, reusing the squarings: P^(2^j) is cached, and a candidate count
k + 2^i is tested as the PLD of k rounds composed with P^(2^i). Every count returned has its own
δ upper bound within the target, so it is never above the exact count.

The grid is chosen from the pair: connect-the-dots adds about h²/4 of variance to the loss per
round, so a grid coarse against the per-round loss spread s undercounts (at q = 1e-4 and
σ = 1, s ≈ 1.3e-4: 130,613 rounds on h = 5e-4 against 143,691). A PLD built by a constructor
is rebuilt on h·2^-j <= s/`SPREAD_STEPS` (not below `FINEST`) before counting.
"""

from __future__ import annotations

import math

import numpy as np

from expost._validation import nonnegative, positive_int, probability
from expost.pld.distribution import PrivacyLossDistribution

__all__ = ["DEFAULT_LIMIT", "max_rounds"]

DEFAULT_LIMIT = 1 << 20  # at most this many rounds are counted (about 40 compositions)
SPREAD_STEPS = 16.0  # grid points per standard deviation of one round's loss, at least
FINEST = 2.0**-20  # the finest grid a count refines to


def _spread(pld: PrivacyLossDistribution) -> float:
    """The larger standard deviation of one round's (finite) loss over both directions."""
    out = 0.0
    for d in (pld.remove, pld.add):
        m, lv = d.masses, d.losses
        total = float(np.sum(m))
        if total <= 0:
            continue
        mean = float(np.dot(m, lv)) / total
        out = max(out, math.sqrt(max(0.0, float(np.dot(m, (lv - mean) ** 2)) / total)))
    return out


def refined(pld: PrivacyLossDistribution) -> PrivacyLossDistribution:
    """``pld`` rebuilt on a grid fine against its loss spread (module doc), where it can be."""
    regrid = pld.origin.regrid
    h, s = pld.remove.h, _spread(pld)
    if regrid is None or s <= 0 or h <= s / SPREAD_STEPS:
        return pld
    step = h
    while step > s / SPREAD_STEPS and step / 2 >= FINEST:
        step /= 2
    return regrid(step)


def max_rounds(
    pld: PrivacyLossDistribution, eps: float, delta: float, *, limit: int = DEFAULT_LIMIT
) -> int:
    """The largest k <= ``limit`` with ``pld.self_compose(k).delta(eps) <= delta`` found by
    doubling and bisection (0 if one round does not fit) on the grid chosen from the pair
    (`refined`); at most about 2·log2(limit) compositions."""
    e = nonnegative("eps", eps)
    d = probability("delta", delta)
    cap = positive_int("limit", limit)
    pld = refined(pld)
    powers = [pld]
    if pld.delta(e) > d:
        return 0
    while (1 << len(powers)) <= cap:
        nxt = powers[-1].compose(powers[-1])
        if nxt.delta(e) > d:
            break
        powers.append(nxt)
    count, current = 1 << (len(powers) - 1), powers[-1]
    for i in range(len(powers) - 2, -1, -1):
        if count + (1 << i) > cap:
            continue
        candidate = current.compose(powers[i])
        if candidate.delta(e) <= d:
            count, current = count + (1 << i), candidate
    return count
