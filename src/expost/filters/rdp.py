"""An RDP filter at chosen orders that prices ex-post RDP rounds at their realised ε_α(y).

THEORY §11 (Feldman & Zrnic 2021's RDP filter with realised costs). If every round i satisfies
E[exp((α−1)(L_i − ε_(α,i)(Y_i))) | past] <= 1 (ex-post RDP; an ordinary RDP round has a constant
ε_α), the product of these factors is a nonnegative supermartingale at each order α, and Ville
gives P(∃n: Σ L_i >= Σ ε_(α,i) + log(k/delta)/(α−1)) <= delta/k. With a budget
B_α = eps − log(k/delta)/(α−1) at each of k orders, a filter that admits a round only while its
largest possible charge fits B_α at *some* order keeps, at the stop, an order α* with
Σ ε_(α*,i) <= B_α*, so P(Σ L_i > eps) <= delta: the interaction is (eps, delta)-DP (the union
over the k orders is paid by the split of delta).

Prices per order (`rdp_price`, every number rounded up): `RDPCost` (an `ExPostRDP`, realised)
its ε_α; a Brownian round α·Δ²/(2t) (the `UnifiedFilter` price Δ²/(2t) times α, APC Thm 5;
THEORY §11: that zCDP price is the release's ex-post zCDP); a zCDP or Gaussian round with delta 0
α·rho; a Poisson-subsampled Gaussian round (a DP-SGD step) its exact RDP (Mironov–Talwar–Zhang
2019, `expost.rdp_curves.subsampled_gaussian_renyi`); a pure eps-DP round randomised response's exact
RDP (`expost.rdp_curves.pure_dp_renyi`, at most min(eps, α·eps²/2) of Bun–Steinke 2016 Prop 3.3), a
scalar Laplace round the Laplace mechanism's (Mironov 2017 Prop 6), a bounded-range round the
smaller of the pure-DP RDP and α·eps²/8 (Cesar–Rogers 2021): constants, so the smaller is a
valid bound; a pure ex-post round (Laplace noise reduction, ``ExPostCost`` with delta 0) its
realised bound. Rounds with a delta > 0 are refused (their loss can be unbounded with
probability delta).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from fractions import Fraction

import attrs
from attrs import field, frozen

from expost._validation import as_float, open_probability, positive, validator
from expost.costs.model import Mechanism
from expost.costs.wrappers import PoissonSampled
from expost.errors import BudgetExceeded, InvalidParameter
from expost.ex_post_rdp import DEFAULT_ORDERS, ExPostRDP, markov_bound, renyi_orders
from expost.filters._exact import Chain, history, rho_of_brownian
from expost.filters.base import bm_extreme
from expost.filters.costs import (
    BoundedRangeCost,
    BrownianCost,
    Cost,
    DPCost,
    ExPostCost,
    GaussianCost,
    ZCDPCost,
)
from expost.filters.kinds import refusal
from expost.guarantees import ApproxDP
from expost.rounding import SMALLEST, down_exact, sum_down, up_exact

__all__ = ["RDPCost", "RDPFilter", "ex_post_rdp_of", "rdp_price", "refused"]


def _guarantee(name: str, value: object) -> None:
    if not isinstance(value, ExPostRDP):
        raise InvalidParameter(name, value, "must be an ExPostRDP")


@frozen
class RDPCost:
    """A round priced by its (ex-post) RDP guarantee: realised ε_α(y) after the release, or
    the largest possible charge when asked for admission (THEORY §11)."""

    guarantee: ExPostRDP = field(validator=validator(_guarantee))


RoundCost = Cost | RDPCost


@functools.lru_cache(maxsize=64)
def _tails(delta: float, orders: tuple[float, ...]) -> tuple[float, ...]:
    """log(k/delta)/(α−1) per order, rounded up: `markov_bound` (0, α, delta/k rounded down)."""
    share = down_exact(Fraction(delta) / len(orders))
    return tuple(markov_bound(0.0, a, share) for a in orders)


def _rounds(value: tuple[RoundCost, ...] | Chain[RoundCost]) -> Chain[RoundCost]:
    return history(value)


def _times(alpha: float, x: float | Fraction) -> float:
    if isinstance(x, float) and math.isinf(x):
        return math.inf
    return up_exact(Fraction(alpha) * Fraction(x))


_BEYOND = Fraction(2**1024)
"""An infinite price in the exact sums: above every float budget, so never admitted."""


def _exact(price: float) -> Fraction:
    return _BEYOND if math.isinf(price) else Fraction(price)


def rdp_price(cost: RoundCost, alpha: float) -> float | None:
    """ε_α charged for ``cost`` at order ``alpha`` (module docstring), None if not accepted: an
    `RDPCost`'s realised ε_α, else the cost's fixed curve ``rdp(α)`` or its realised ex-post
    charge ``ex_post_rdp(α)`` (`expost.costs.model`)."""
    if isinstance(cost, RDPCost):
        return cost.guarantee.eps(alpha)
    if not isinstance(cost, Mechanism):
        return None
    fixed = cost.rdp(alpha)
    return fixed if fixed is not None else cost.ex_post_rdp(alpha)


@frozen
class RDPFilter:
    """(eps, delta)-DP for an interaction of ex-post RDP, RDP and zCDP rounds, budgeted at
    **many** orders with delta split over them (THEORY §11; `RenyiFilter`: one order, no split).

    Budgets B_α = eps − log(k/delta)/(α−1) at the k ``orders`` (rounded down: `budgets`). A
    round is admitted iff, with its price added, the exact sum stays within B_α at some order;
    the record ``realised`` holds the rounds' realised costs. A `PrivacyFilter`, so
    `PrivateSession` runs on it (``PrivateSession(RDPFilter.from_dp(3.0, 1e-6), rng)``).

    Per order: `prices`, `spent_by_order`, `remaining_by_order`. As one number in eps (what a
    session reports): ``spent`` = min over α of Σ ε_α + log(k/delta)/(α−1), rounded up: were
    the interaction stopped now, its loss would exceed ``spent`` with probability at most
    delta (Ville at each order, delta split over them); non-decreasing, and a fresh filter's
    is the smallest tail, the price of the split. ``remaining`` = max over the admitting
    orders of B_α − Σ ε_α, rounded down (so spent + remaining <= eps but for spent's rounding
    up: one ulp), at `best_order`;
    ``price`` a round's ε_α at `best_order` with delta 0: a round costs at most that of
    ``remaining``.
    """

    eps: float = field(converter=as_float, validator=validator(positive))
    delta: float = field(converter=as_float, validator=validator(open_probability))
    orders: tuple[float, ...] = field(default=DEFAULT_ORDERS, converter=renyi_orders)
    _realised: Chain[RoundCost] = field(default=Chain(), converter=_rounds, alias="realised")
    _carried: tuple[Chain[RoundCost], tuple[Fraction, ...]] | None = field(
        default=None, kw_only=True, eq=False, repr=False, alias="_carried"
    )  # (the chain the sums are of, the exact sums per order): `spend` passes them along
    _tails: tuple[float, ...] = field(init=False, eq=False, repr=False)
    _budgets: tuple[float, ...] = field(init=False, eq=False, repr=False)
    _sums: tuple[Fraction, ...] = field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        tails = _tails(self.delta, self.orders)
        object.__setattr__(self, "_tails", tails)
        object.__setattr__(self, "_budgets", tuple(sum_down([self.eps, -t]) for t in tails))
        if self._carried is not None and self._carried[0] is self._realised:
            totals = list(self._carried[1])
        else:
            totals = [Fraction(0)] * len(self.orders)
            for cost in self.realised:
                totals = [t + _exact(p) for t, p in zip(totals, self.prices(cost), strict=True)]
        object.__setattr__(self, "_sums", tuple(totals))
        object.__setattr__(self, "_carried", None)
        if self.rounds and not self._fitting(list(self._sums)):
            raise InvalidParameter("realised", self.realised, "its costs exceed every budget")

    @classmethod
    def from_dp(
        cls, eps: float, delta: float, orders: Iterable[float] = DEFAULT_ORDERS
    ) -> RDPFilter:
        """The filter whose whole interaction is (eps, delta)-DP (the constructor, named as
        `UnifiedFilter.from_dp` is: both take the target (eps, delta))."""
        return cls(eps, delta, tuple(orders))

    @property
    def budgets(self) -> tuple[float, ...]:
        """B_α = eps − log(k/delta)/(α−1) per order, rounded down (<= 0: that order admits nothing)."""
        return self._budgets

    def prices(self, cost: RoundCost) -> tuple[float, ...]:
        """ε_α of ``cost`` at each order; `InvalidParameter` if the filter cannot charge it."""
        prices = [rdp_price(cost, a) for a in self.orders]
        if any(p is None for p in prices):
            rule = refusal(type(self).__name__, cost, "rdp", "ex_post_rdp")
            raise InvalidParameter("filter", type(self).__name__, rule)
        return tuple(float(p) for p in prices if p is not None)

    def accepts(self, cost: RoundCost) -> bool:
        """Whether this filter can charge ``cost`` at all (every order prices it)."""
        return all(rdp_price(cost, a) is not None for a in self.orders)

    def _totals(self, extra: RoundCost) -> list[Fraction]:
        """The exact sums per order, with ``extra``'s price added (a non-cost is refused)."""
        return [t + _exact(p) for t, p in zip(self._sums, self.prices(extra), strict=True)]

    def _fitting(self, totals: list[Fraction]) -> list[int]:
        """The orders (indices) whose exact sum is within their budget."""
        return [
            i
            for i, (t, b) in enumerate(zip(totals, self.budgets, strict=True))
            if b > 0.0 and t <= Fraction(b)
        ]

    def _best(self) -> int:
        """The index of the order with the most left (exactly): B_α − Σ ε_α largest."""
        left = [Fraction(b) - t for b, t in zip(self.budgets, self._sums, strict=True)]
        return max(range(len(left)), key=lambda i: (self.budgets[i] > 0.0, left[i]))

    @property
    def best_order(self) -> float:
        """The order α at which the most budget is left: ``remaining`` and ``price`` use it."""
        return self.orders[self._best()]

    @property
    def realised(self) -> tuple[RoundCost, ...]:
        """The recorded realised costs, oldest first (built on each call: O(rounds))."""
        return self._realised.items()

    @property
    def rounds(self) -> int:
        """How many rounds have been recorded."""
        return self._realised.size

    @property
    def spent_by_order(self) -> tuple[float, ...]:
        """Σ ε_α over the recorded rounds, per order (exact sums rounded up)."""
        return tuple(up_exact(t) for t in self._sums)

    @property
    def remaining_by_order(self) -> tuple[float, ...]:
        """B_α − Σ ε_α per order, rounded down (0 where nothing is left)."""
        return tuple(
            max(0.0, down_exact(Fraction(b) - t))
            for b, t in zip(self.budgets, self._sums, strict=True)
        )

    @property
    def spent(self) -> float:
        """min over α of Σ ε_α + log(k/delta)/(α−1), rounded up (class docstring)."""
        return up_exact(min(t + Fraction(c) for t, c in zip(self._sums, self._tails, strict=True)))

    @property
    def remaining(self) -> float:
        """max over the admitting orders of B_α − Σ ε_α, rounded down (0 when none admits)."""
        return self.remaining_by_order[self._best()]

    def price(self, cost: RoundCost) -> tuple[float, float]:
        """(ε_α at `best_order`, 0.0): the protocol's one-number price (`prices`: every order).
        A price that is infinite or beyond the floats there (ZCDPCost(1e308): α·rho overflows)
        is refused, never returned as inf: no budget admits such a round."""
        best = self._best()
        price = self.prices(cost)[best]
        if math.isinf(price):
            why = f"its ε_α at the best order α={self.orders[best]:g} is beyond the floats"
            raise InvalidParameter("cost", cost, f"{why}: no budget admits it")
        return price, 0.0

    def admits(self, request: RoundCost) -> bool:
        """Whether a round charging at most ``request`` keeps some order within its budget."""
        return bool(self._fitting(self._totals(request)))

    def check(self, request: RoundCost) -> None:
        """Raise `BudgetExceeded` unless ``request`` is admitted (`refused`): the rounds' Σ ε_α,
        the round's ε_α and B_α − Σ ε_α, all at `best_order` (a refused round asks more than
        is left there, and fits no other order)."""
        if not self.admits(request):
            raise refused(self, request)

    def spend(self, realised: RoundCost) -> RDPFilter:
        """A new filter with ``realised`` recorded; `BudgetExceeded` if no order can take it.

        Constant time in the number of recorded rounds: the new filter shares the history
        chain and carries the exact sums along."""
        totals = self._totals(realised)
        if not self._fitting(totals):
            self.check(realised)  # raises BudgetExceeded, naming the best order
        chain = self._realised.append(realised)
        return attrs.evolve(self, realised=chain, _carried=(chain, tuple(totals)))

    def guarantee(self) -> ApproxDP:
        """(eps, delta)-DP for the whole interaction (module docstring)."""
        return ApproxDP(self.eps, self.delta)

    def reported_guarantee(self) -> ApproxDP:
        """What a session reports: `guarantee`, the (eps, delta)-DP the filter was built for."""
        return self.guarantee()

    def max_bm_eps(self, sensitivity: float = 1.0) -> float:
        """The largest eps = Δ/sqrt(t) whose Brownian round is admitted (its price α·eps²/2 fits
        some order; bounded search, `expost.rounding.largest_where`); 0.0 when none is."""
        d = positive("sensitivity", sensitivity)
        left = self.remaining_by_order
        start = max(math.sqrt(2.0 * r / a) for r, a in zip(left, self.orders, strict=True))
        if start <= 0.0:
            return 0.0
        return bm_extreme(start, lambda e: BrownianCost.from_eps(e, d), self.admits, upward=True)

    def min_bm_time(self, sensitivity: float = 1.0) -> float:
        """The smallest time t whose Brownian price α·Δ²/(2t) fits some order (bounded search,
        `expost.rounding.smallest_where`); ``inf`` when no Brownian round is admitted."""
        d = positive("sensitivity", sensitivity)
        left = self.remaining_by_order
        starts = [a * d * d / (2.0 * r) for r, a in zip(left, self.orders, strict=True) if r > 0.0]
        if not starts or not math.isfinite(min(starts)):
            return math.inf
        start = max(min(starts), SMALLEST)
        return bm_extreme(start, lambda t: BrownianCost(t, d), self.admits, upward=False)


def refused(f: RDPFilter, request: RoundCost) -> BudgetExceeded:
    """The refusal of ``request`` in the filter's own terms, one quantity at the best order α
    (where the most is left; `best_order`): ``spent`` = the rounds' Σ ε_α (rounded up),
    ``requested`` = the round's ε_α, ``remaining`` = B_α − ``spent`` (rounded down), unit
    ``eps_alpha``; the round is refused at every order, so spent + requested > B_α here. The
    detail names B_α, what it is, and the session's one-number ``spent`` in eps (which also
    counts the split of delta over the orders)."""
    i = f._best()
    alpha, budget = f.orders[i], f.budgets[i]
    spent = f.spent_by_order[i]
    remaining = max(0.0, down_exact(Fraction(budget) - Fraction(spent)))
    return BudgetExceeded(
        spent,
        f.prices(request)[i],
        remaining,
        "eps_alpha",
        detail=(
            f"Rényi accounting at α={alpha:g}, the order where the most is left, of budget "
            f"B_α={budget!r} = eps − log(k/delta)/(α−1) with k = {len(f.orders)} orders: the "
            "rounds' Σ ε_α, the round's ε_α and what is left of B_α there; no order admits the "
            f"round. As one number in eps (a session's `spent`, split of delta included): "
            f"{f.spent!r}. RenyiFilter.for_rounds(eps, delta, cost), at one order fixed in "
            "advance, pays no split; spent_by_order and remaining_by_order give every order"
        ),
    )


def ex_post_rdp_of(cost: Cost | None) -> ExPostRDP | None:
    """The ex-post RDP guarantee of a round from its realised cost, None where none is known.

    `BrownianCost` (BM stopped at t, sensitivity Δ): rho = Δ²/(2t) rounded up (THEORY §11);
    `ZCDPCost`/`GaussianCost` with delta 0: its rho (ordinary zCDP); `ExPostCost` with delta 0
    (Laplace noise reduction, BNR Prop 4.2): pure ex-post at its bound; `DPCost` with delta 0 and
    `BoundedRangeCost`: pure at eps. Probabilistic ex-post costs (delta > 0: a boundary, Skellam
    §10) and approximate ones: None (not immune; THEORY §11). Each shape is at least the round's
    `rdp_price` at every order (a `SubsampledGaussianCost` is the zCDP of the Gaussian it
    samples for, a `LaplaceCost` pure at eps): what a transcript carries never undercuts what a
    filter charged, and the pure and zCDP shapes keep their stronger forms.
    """
    if isinstance(cost, PoissonSampled):  # the unsampled round's shape bounds the sampled one
        return ex_post_rdp_of(cost.of)
    if isinstance(cost, BrownianCost):
        return ExPostRDP.of_rho(rho_of_brownian(cost.time, cost.sensitivity))
    if isinstance(cost, GaussianCost | ZCDPCost) and cost.delta == 0.0:
        return ExPostRDP.of_rho(cost.rho)
    if isinstance(cost, ExPostCost | DPCost) and cost.delta == 0.0:
        return ExPostRDP.of_pure(cost.bound if isinstance(cost, ExPostCost) else cost.eps)
    if isinstance(cost, BoundedRangeCost):
        return ExPostRDP.of_pure(cost.eps)
    return None
