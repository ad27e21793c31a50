"""An RDP filter at one order fixed in advance, converted by Canonne–Kamath–Steinke (THEORY §12).

If every round's RDP curve is fixed before it runs (its parameters may be chosen adaptively
from past outputs) and the filter admits a round only while Σ ε_α,i <= B at one order α chosen
before the first round, the stopped interaction is (α, B)-RDP (Feldman & Zrnic 2021, the RDP
filter), so any RDP→DP conversion applies. Canonne, Kamath & Steinke 2020 Prop. 12: (α, τ)-RDP
gives (ε, δ)-DP with ε = τ + log((α−1)/α) − (log δ + log α)/(α−1); the filter's budget is that
solved for τ at the target (eps, delta):

    B = eps − log((α−1)/α) + (log delta + log α)/(α−1),    rounded down.

One order and no split of delta over orders: DP-SGD steps (q = 0.01, σ = 1) at (2, 1e-5) fit
879 times at α = 8, against 0 for `RDPFilter` with its 12 default orders (docs/filters.md).

Prices are `expost.filters.rdp.rdp_price` at α (exact RDP of the subsampled Gaussian, the Laplace
mechanism and pure DP; α·rho for zCDP rounds; `expost.rdp_curves`). Realised ex-post costs
(`BrownianCost`, `ExPostCost`) are refused: `RDPFilter` prices them (Markov at each order, THEORY
§11), as it does rounds whose order must be chosen after they run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Any, ClassVar

from attrs import field, frozen

from expost._validation import as_float, open_probability, positive, renyi_order, validator
from expost.costs.model import Mechanism
from expost.ex_post_rdp import renyi_orders
from expost.filters.base import Filter, Price
from expost.filters.costs import Cost
from expost.guarantees import ApproxDP
from expost.rounding import down_mp, iv_eval

__all__ = ["CANDIDATE_ORDERS", "RenyiFilter"]

CANDIDATE_ORDERS = (
    *(1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 12.0),
    *(14.0, 16.0, 20.0, 24.0, 28.0, 32.0, 40.0, 48.0, 64.0, 96.0, 128.0, 256.0),
)
"""The orders `RenyiFilter.for_rounds` chooses from."""


@functools.lru_cache(maxsize=256)
def _budget(eps: float, delta: float, alpha: float) -> float:
    """B = eps − log((α−1)/α) + (log delta + log α)/(α−1) in 128-bit interval arithmetic, its
    lower end rounded down (CKS 2020 Prop. 12 solved for the RDP level); 0 where B <= 0."""

    def compute(iv: Any) -> Any:
        e, d, a = iv.mpf(eps), iv.mpf(delta), iv.mpf(alpha)
        return e - iv.log((a - 1) / a) + (iv.log(d) + iv.log(a)) / (a - 1)

    return max(0.0, down_mp(iv_eval(compute)))


@frozen
class RenyiFilter(Filter):
    """(eps, delta)-DP for rounds with fixed RDP curves, budgeted at **one** order ``alpha``
    (`RDPFilter`: many orders, delta split over them, realised ex-post RDP costs).

    Admits a round iff the exact sum of the rounds' ε_α, its price included, is at most
    `budget` B (module docstring); unit ε_α (``spent``, ``remaining``, `BudgetExceeded`). A
    `PrivacyFilter`, so `PrivateSession` runs on it. Choose ``alpha`` before the first round —
    `for_rounds` picks the order at which the most rounds of a planned cost fit.
    """

    _UNIT: ClassVar[str] = "eps_alpha"
    _PRICES_BY: ClassVar[tuple[str, ...]] = ("rdp",)
    _NOTE: ClassVar[str] = (
        ": rounds whose RDP curve is fixed before they run; a realised ex-post cost, "
        "BrownianCost or ExPostCost, is priced by RDPFilter: Markov at its realised ε_α, "
        "THEORY §11"
    )

    eps: float = field(converter=as_float, validator=validator(positive))
    delta: float = field(converter=as_float, validator=validator(open_probability))
    alpha: float = field(converter=as_float, validator=validator(lambda _, a: renyi_order(a)))

    @classmethod
    def from_dp(cls, eps: float, delta: float, alpha: float) -> RenyiFilter:
        """The filter whose whole interaction is (eps, delta)-DP (as `RDPFilter.from_dp`)."""
        return cls(eps, delta, alpha)

    @classmethod
    def for_rounds(
        cls, eps: float, delta: float, cost: Cost, orders: Iterable[float] = CANDIDATE_ORDERS
    ) -> RenyiFilter:
        """The (eps, delta) filter at the order of ``orders`` that admits the most rounds of
        ``cost`` (the smallest such order on a tie). The order depends only on the planned
        cost, not on data, so it is fixed in advance as the theorem asks."""
        filters = [cls(eps, delta, a) for a in renyi_orders(orders)]
        return max(filters, key=lambda f: (f.capacity(cost), -f.alpha))

    @property
    def budget(self) -> float:
        """B at ``alpha`` (module docstring), rounded down; 0 (nothing admitted) where B <= 0."""
        return _budget(self.eps, self.delta, self.alpha)

    @property
    def delta_budget(self) -> float:
        return 0.0

    def _rate(self, cost: Cost) -> Price | None:
        price = cost.rdp(self.alpha) if isinstance(cost, Mechanism) else None  # a fixed curve
        return None if price is None else (price, 0.0)

    def capacity(self, cost: Cost) -> int:
        """How many more rounds of ``cost`` this filter admits: ⌊(B − Σ ε_α)/price⌋, exactly."""
        price, _ = self.price(cost)
        if not math.isfinite(price):
            return 0
        left = Fraction(self.budget) - sum(map(Fraction, self._sums.amounts), Fraction(0))
        return max(0, int(left // Fraction(price)))

    def guarantee(self) -> ApproxDP:
        """(eps, delta)-DP for the whole interaction (CKS 2020 Prop. 12 at ``alpha``)."""
        return ApproxDP(self.eps, self.delta)
