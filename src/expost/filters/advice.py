"""What a refusal suggests: the filters that would admit a round, and what they charge (issue 42).

`PLDFilter` refuses a round its fixed mechanism does not dominate (a changed q or σ, a mix of
kinds). Which filter to use instead depends on the budget and the rounds so far: a filter that
prices the Gaussian without subsampling (`UnifiedFilter`, `GaussianDPFilter`) charges a DP-SGD
step as if every row were in its batch, and one that splits δ over many orders (`RDPFilter`)
pays log(k/δ)/(α − 1) at each order before any round — at (2, 1e-5) with q = 0.01, σ = 1 both
admit no step at all. `mix_advice` therefore names only the filters that, built for the same
(eps, delta) and charged the rounds recorded so far, would admit the round, with how many more
such rounds each admits, and says what the filters that ignore sampling charge for it.
Advice only: nothing here is part of any guarantee.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from expost.errors import BudgetExceeded, InvalidParameter
from expost.filters.costs import Cost, SubsampledGaussianCost

__all__ = ["mix_advice"]


def _candidates(eps: float, delta: float, cost: Cost) -> list[tuple[str, Any]]:
    from expost.filters.gaussian_dp import GaussianDPFilter
    from expost.filters.rdp import RDPFilter
    from expost.filters.renyi import RenyiFilter
    from expost.filters.zcdp import UnifiedFilter

    out: list[tuple[str, Any]] = []
    if RenyiFilter(eps, delta, 2.0).accepts(cost):
        renyi = RenyiFilter.for_rounds(eps, delta, cost)
        out.append((f"RenyiFilter.for_rounds({eps:g}, {delta:g}, cost) (α={renyi.alpha:g})", renyi))
    return [
        *out,
        (f"RDPFilter.from_dp({eps:g}, {delta:g})", RDPFilter.from_dp(eps, delta)),
        (f"GaussianDPFilter.from_dp({eps:g}, {delta:g})", GaussianDPFilter.from_dp(eps, delta)),
        (f"UnifiedFilter.from_dp({eps:g}, {delta:g})", UnifiedFilter.from_dp(eps, delta)),
    ]


_MANY = 10**9


def _count(left: float, price: float) -> int:
    """⌊left/price⌋ exactly, at most `_MANY` (a subnormal price would give a 300-digit count)."""
    if price <= 0.0 or left <= 0.0:
        return 0
    return min(_MANY, int(Fraction(left) / Fraction(price)))


def _more(f: Any, cost: Cost) -> str:
    """How many more rounds of ``cost`` ``f`` admits (0 if it cannot charge it)."""
    if not f.accepts(cost):
        return "0"
    if hasattr(f, "remaining_by_order"):  # RDPFilter: the best order's count
        pairs = zip(f.remaining_by_order, f.prices(cost), strict=True)
        count = max(_count(r, p) for r, p in pairs)
    else:
        count = _count(f.remaining, f.price(cost)[0])
    return f"over {_MANY:,}" if count >= _MANY else f"{count:,}"


def _after(f: Any, realised: Sequence[Cost]) -> Any:
    """``f`` charged the rounds so far, or None if it cannot take them all."""
    try:
        for c in realised:
            f = f.spend(c)
    except (BudgetExceeded, InvalidParameter):
        return None
    return f


def mix_advice(eps: float, delta: float, realised: Sequence[Cost], cost: Cost) -> str:
    """The filters built for (``eps``, ``delta``) that, charged ``realised``, admit ``cost``
    (and how many more such rounds), and what sampling-blind filters charge for it."""
    admitting = []
    for name, f in _candidates(eps, delta, cost):
        after = _after(f, realised)
        if after is not None and after.accepts(cost) and after.admits(cost):
            admitting.append(f"{name}: {_more(after, cost)} more such rounds")
    if admitting:
        advice = (
            "filters that price mixes and would admit it had the run started on them (the "
            "same budget, the rounds so far charged): " + "; ".join(admitting)
        )
    else:
        advice = (
            f"no filter that prices mixes admits it at ({eps:g}, {delta:g}) after these "
            f"{len(realised)} rounds: give it a budget of its own"
        )
    if isinstance(cost, SubsampledGaussianCost) and cost.sampling_prob < 1.0:
        advice += (
            f". UnifiedFilter and GaussianDPFilter ignore the sampling: they charge the step as "
            f"the Gaussian of σ = {cost.sigma:.4g} on every row (rho = {cost.rho:.4g}, "
            f"mu² = {2 * cost.rho:.4g}), not the Poisson-subsampled step at q = "
            f"{cost.sampling_prob:g}"
        )
    return advice
