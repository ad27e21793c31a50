"""ε so far: the (ε, δ) of the rounds a filter has recorded, as a fixed composition (issue 42).

`privacy_spent(filter, delta)` (what `PrivateSession.privacy_spent` returns) reads the rounds
recorded so far and composes them as if their number and mechanisms had been fixed before the
first round — Opacus's ``get_epsilon(delta)``. That is a valid (ε, δ)-DP statement only for a
stop decided independently of the outputs (a step count fixed in advance, a wall-clock limit):
a stop chosen by looking at the outputs (an accuracy check, "stop when ε so far reaches 1")
needs the filter's own guarantee (`PrivateSession.guarantee`, valid at any stop) or counting
filters on a grid fixed in advance (`expost.realised_privacy`, THEORY §12). The queries may be
adaptive in both cases.

As tight as each filter's own accounting:

- `PLDFilter`: every round is dominated by the fixed mechanism's pair, so k rounds by its k-fold
  composition: the PLD's ε at δ on the filter's loss grid (safe-sided, THEORY §12), or for a
  Gaussian without subsampling the exact GDP ε of sqrt(k)·mu (Dong, Roth & Su Cor. 2.13).
- `GaussianDPFilter`: the rounds compose to sqrt(Σ mu²)-GDP; its exact ε at δ.
- `RenyiFilter` and `RDPFilter`: Σ ε_α (per order) converted by Canonne, Kamath & Steinke 2020
  Prop. 12, ε = Σε_α + log((α−1)/α) − (log δ + log α)/(α−1), the best of the filter's orders
  (the curve is fixed by the recorded costs, so the best order is not a data-dependent choice).
- `ZCDPFilter`, `UnifiedFilter`, `ApproxDPFilter`: Σ rho (and the rounds' deltas) converted by
  Canonne, Kamath & Steinke (`cks_zcdp_to_dp`); the δ reported includes the rounds' deltas.

Rounds whose cost is realised from their output (a Brownian round stopped at a data-dependent
time, an ex-post round at its realised bound) have no fixed-composition reading: refused, as
are filters not listed (their `guarantee()` is the report).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

from attrs import frozen

from expost._validation import open_probability
from expost.costs.pairs import ClosedPair, Pair
from expost.errors import InvalidParameter
from expost.filters import (
    ApproxDPFilter,
    BrownianCost,
    ExPostCost,
    GaussianDPFilter,
    PLDFilter,
    RDPFilter,
    RenyiFilter,
    UnifiedFilter,
    ZCDPFilter,
)
from expost.guarantees import ZCDP, GaussianDP, cks_zcdp_to_dp
from expost.rounding import sqrt_up_exact, sum_up, up_iv
from expost.rounds import Number

__all__ = ["FIXED_STOP", "PrivacySpent", "privacy_spent"]

FIXED_STOP = (
    "valid as (eps, delta)-DP for a stop decided independently of the outputs (a fixed "
    "composition); for a stop chosen from the outputs report the filter's guarantee() or a "
    "grid of counting filters fixed in advance (expost.realised_privacy)"
)
"""When a `PrivacySpent` is a valid guarantee (the ``valid_for`` of every one)."""

_FILTERS = (
    PLDFilter,
    GaussianDPFilter,
    RenyiFilter,
    RDPFilter,
    ZCDPFilter,
    UnifiedFilter,
    ApproxDPFilter,
)
_KNOWN = (
    "PLDFilter, GaussianDPFilter, RenyiFilter, RDPFilter, ZCDPFilter, UnifiedFilter and "
    "ApproxDPFilter"
)


@frozen
class PrivacySpent:
    """(``eps``, ``delta``)-DP of the ``rounds`` recorded so far as a fixed composition, by
    ``accounting``. Valid only as ``valid_for`` says: for a stop decided independently of the
    outputs (module docstring)."""

    eps: float
    delta: float
    rounds: int
    accounting: str
    valid_for: str = FIXED_STOP


@lru_cache(maxsize=128)
def _pld_eps(pair: Pair, rounds: int, delta: float, grid: float) -> float:
    return float(pair.pld(grid).self_compose(rounds).eps(delta))


def _cks_eps(total: float, alpha: float, delta: float) -> float:
    """CKS 2020 Prop. 12 at one order, in interval arithmetic, rounded up; 0 at least."""

    def compute(iv: Any) -> Any:
        t, a, d = iv.mpf(total), iv.mpf(alpha), iv.mpf(delta)
        return t + iv.log((a - 1) / a) - (iv.log(d) + iv.log(a)) / (a - 1)

    return max(0.0, up_iv(compute))


def _output_dependent(f: Any, cost: object) -> bool:
    if isinstance(cost, BrownianCost) or type(cost).__name__ == "RDPCost":
        return True
    plain = isinstance(f, ZCDPFilter | UnifiedFilter | ApproxDPFilter | GaussianDPFilter)
    return isinstance(cost, ExPostCost) and not (plain and cost.eps_max is not None)


def privacy_spent(f: object, delta: Number) -> PrivacySpent:
    """The (ε, δ) of ``f``'s recorded rounds as a fixed composition (module docstring)."""
    d = open_probability("delta", delta)
    name = type(f).__name__
    if not isinstance(f, _FILTERS):
        why = f"privacy_spent knows {_KNOWN}; for {name} report its guarantee() (any stop)"
        raise InvalidParameter("filter", name, why)
    k = f.rounds
    if any(_output_dependent(f, c) for c in f.realised):
        why = (
            "holds a round whose cost was realised from its output (Brownian or ex-post): no "
            "fixed composition describes it; report the filter's guarantee() (any stop)"
        )
        raise InvalidParameter("filter", name, why)
    if k == 0:
        return PrivacySpent(0.0, d, 0, "no rounds recorded")
    if isinstance(f, PLDFilter):
        pair = f.pair
        assert pair is not None  # a filter with rounds has its mechanism fixed
        if isinstance(pair, ClosedPair) and pair.family == "gaussian" and pair.rate == 1.0:
            mu = sqrt_up_exact(Fraction(k) / Fraction(pair.level) ** 2)  # level: σ/Δ
            return PrivacySpent(GaussianDP(mu).eps_for(d), d, k, f"GDP of {k} Gaussian rounds")
        what = f"PLD of {k} rounds of the fixed mechanism (loss grid {f.grid:g})"
        return PrivacySpent(_pld_eps(pair, k, d, f.grid), d, k, what)
    if isinstance(f, GaussianDPFilter):
        mu = sqrt_up_exact(Fraction(f.spent))
        return PrivacySpent(GaussianDP(mu).eps_for(d), d, k, "GDP: sqrt(Σ mu²)")
    if isinstance(f, RenyiFilter):
        eps = _cks_eps(f.spent, f.alpha, d)
        return PrivacySpent(eps, d, k, f"RDP at order {f.alpha:g}, CKS conversion")
    if isinstance(f, RDPFilter):
        pairs = zip(f.spent_by_order, f.orders, strict=True)
        eps, alpha = min((_cks_eps(t, a, d), a) for t, a in pairs)
        return PrivacySpent(eps, d, k, f"RDP, best of its orders (α={alpha:g}), CKS conversion")
    rho = f.spent
    rounds_delta = sum_up([f.price(c)[1] for c in f.realised])
    dp = cks_zcdp_to_dp(ZCDP(rho, rounds_delta), d)
    return PrivacySpent(dp.eps, dp.delta, k, "zCDP: Σ rho, CKS conversion")
