"""How many rounds of one PLD a budget admits (THEORY §12, "Filters that count").

The exact δ of k rounds is nondecreasing in k (data processing), so the count is found by
doubling then bisection, reusing the squarings: P^(2^j) is cached, and a candidate count
k + 2^i is tested as the PLD of k rounds composed with P^(2^i). Every count returned has its own
δ upper bound within the target, so it is never above the exact count.
"""

from __future__ import annotations

from expost._validation import nonnegative, positive_int, probability
from expost.pld.distribution import PrivacyLossDistribution

__all__ = ["DEFAULT_LIMIT", "max_rounds"]

DEFAULT_LIMIT = 1 << 20  # at most this many rounds are counted (about 40 compositions)


def max_rounds(
    pld: PrivacyLossDistribution, eps: float, delta: float, *, limit: int = DEFAULT_LIMIT
) -> int:
    """The largest k <= ``limit`` with ``pld.self_compose(k).delta(eps) <= delta`` found by
    doubling and bisection (0 if one round does not fit); at most about 2·log2(limit)
    compositions."""
    e = nonnegative("eps", eps)
    d = probability("delta", delta)
    cap = positive_int("limit", limit)
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
