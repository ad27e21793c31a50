"""The counting filter: rounds of one mechanism fixed in advance, counted (THEORY §12).

`PLDFilter(eps, delta, mechanism)` admits rounds that ``mechanism`` dominates, at most
K = max{k : δ_k(eps) <= delta} of them, δ_k the profile of the k-fold composition of the
mechanism's dominating pair, the larger of the two neighbour directions, each composed
separately (`expost.pld.max_rounds`). Under any adaptive choice of queries and any adaptive
stopping the interaction is (eps, delta)-DP: pad a stopped run with dummy rounds up to K and
discard their outputs; the result is a post-processing of a K-round adaptive composition,
which the K-fold product pair dominates (Zhu, Dong & Wang 2022 Thm 10; THEORY §12). The
mechanism is fixed before the first round: given when the filter is made, or taken from the
first round's reservation when none is given (`PLDFilter.fixed_by`: a session, and the replay of
its ledger, fix it by the first round reserved, whatever the rounds then settle at).

The literature's *natural filter* (admit a round while the composed PLD of the rounds so far
fits) is this filter when every round is the one mechanism. A mix of mechanisms is refused:
natural filters are free exactly for totally ordered families (Regehr et al., arXiv
2602.15815), and for adaptively chosen mixes they can fail; RDPFilter, RenyiFilter,
UnifiedFilter or GaussianDPFilter (Gaussian rounds of any σ) price mixes; a refusal names those
that would admit the round (`expost.filters.advice.mix_advice`).

Pairs are the costs' own (`expost.costs.model`: ``cost.pair()``; `expost.costs.pairs`): the
Gaussian pair at σ/Δ (σ carried, not rounded through rho), Laplace, randomised response for any
pure-DP round, a user's pmfs (`PairCost`), Poisson subsamples of any of them (`PoissonSampled`,
both directions) and products (`Composed`). A round is admitted when the fixed mechanism's pair
dominates its pair in both directions: by a closed-form order (larger σ, smaller ε0 or smaller
rate: each a post-processing, `expost.costs.pairs.closed_order`; tests/pld/test_pld_dominance.py
checks each numerically against a planted wrong order), else by computation from certified
profile bounds (`expost.costs.domination`, THEORY §13). With ``tau`` > 0 (fixed in advance) a
round dominated only up to τ — δ_new <= τ + (1 − τ)·δ_fixed in both directions — is admitted
too: every round is then dominated by the fixed pair composed with the symmetric (0, τ) pair,
and K counts δ_K(eps) + K·τ <= delta (THEORY §13).

Units: ``spent`` and ``remaining`` are rounds; ``budget`` is K (``inf`` until the mechanism
is fixed). K is computed once per (pair, eps, delta) and cached, so a round costs O(1).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import ClassVar, Self

import attrs
from attrs import field, frozen

from expost._validation import as_float, open_probability, positive, probability, validator
from expost.costs.domination import dominated
from expost.costs.model import Mechanism
from expost.costs.pairs import ClosedPair, Pair, closed_order
from expost.errors import InvalidParameter
from expost.filters.advice import mix_advice
from expost.filters.base import Filter, Price
from expost.filters.costs import Cost
from expost.guarantees import ApproxDP, gdp_mu_for_dp
from expost.pld.distribution import DEFAULT_VALUE_DISCRETIZATION

__all__ = ["MAX_COUNT", "PLDFilter", "Pair", "dominates", "pair_of", "round_count"]

MAX_COUNT = 1 << 30
"""The most rounds a `PLDFilter` counts to (the search for K stops there; its grids stay small,
`expost.pld.max_rounds`)."""
GRID = DEFAULT_VALUE_DISCRETIZATION
"""The loss grid h of the pair K starts from (`expost.pld`'s, 5e-4); `expost.pld.max_rounds`
refines it against one round's loss spread and coarsens it as the powers grow (docs/pld.md,
"Counting many rounds"): within 1% of the exact count at q from 1e-4 to 1 (DP-SGD σ = 1 at
(2, 1e-5): 14,606,933 at q = 1e-4, 143,818 at q = 1e-3, 1,202 at q = 0.01), seconds each."""

MIX = (
    "a counting filter is (eps, delta)-DP only for rounds of one mechanism fixed before the "
    "first round, and a mix chosen on the fly is not free (Regehr et al., arXiv 2602.15815; "
    "THEORY §12)"
)


def pair_of(cost: object) -> Pair | None:
    """The pair that dominates ``cost`` (its own ``pair()``), None if it carries none."""
    if not isinstance(cost, Mechanism):
        return None
    try:
        return cost.pair()
    except InvalidParameter:  # e.g. a product that cannot be subsampled part by part
        return None


def dominates(fixed: Pair, other: Pair, tau: float = 0.0) -> bool:
    """Whether ``fixed`` (composed with the symmetric (0, τ) pair) dominates ``other`` in both
    directions: a closed-form order, else computed (module docstring)."""
    return bool(closed_order(fixed, other)) or dominated(fixed, other, tau)


@lru_cache(maxsize=256)
def round_count(pair: Pair, eps: float, delta: float, grid: float = GRID, tau: float = 0.0) -> int:
    """K: the most rounds k of ``pair`` with δ_k(eps) + k·τ <= delta in both directions (at most
    `MAX_COUNT`). An unsampled Gaussian with τ = 0: exact, k·mu² <= mu*² in rationals
    (mu = Δ/σ, Dong–Roth–Su Cor. 2.13); otherwise the safe-sided PLD on a loss grid of spacing
    ``grid`` (`expost.pld.max_rounds`). Cached: once per (pair, eps, delta, grid, tau)."""
    if (
        isinstance(pair, ClosedPair)
        and pair.family == "gaussian"
        and pair.rate == 1.0
        and tau == 0.0
    ):
        mu_star = Fraction(gdp_mu_for_dp(eps, delta))
        return min(MAX_COUNT, math.floor(mu_star**2 * Fraction(pair.level) ** 2))
    from expost.pld import compose_rounds, max_rounds  # lazy: numpy FFT work

    pld = pair.pld(grid)
    if tau == 0.0:
        return max_rounds(pld, eps, delta, limit=MAX_COUNT)
    count, low = 0, 1  # δ_k + k·τ is nondecreasing in k: bisect for the largest k that fits
    high = min(MAX_COUNT, math.floor(Fraction(delta) / Fraction(tau)))
    while low <= high:
        k = (low + high) // 2
        if Fraction(compose_rounds(pld, k).delta(eps)) + k * Fraction(tau) <= Fraction(delta):
            count, low = k, k + 1
        else:
            high = k - 1
    return count


def _grid(_instance: object, _attribute: object, value: object) -> None:
    h = positive("grid", value)
    if h > 0.1:
        raise InvalidParameter("grid", value, "must be at most 0.1 (the PLD's loss spacing)")


def _mechanism(_instance: object, _attribute: object, value: Cost | None) -> None:
    if value is not None and pair_of(value) is None:
        from expost.filters.kinds import refusal

        raise InvalidParameter(
            "mechanism", value, "must be None or " + refusal("PLDFilter", value, "pair")
        )


@frozen
class PLDFilter(Filter):
    """The counting filter: (eps, delta)-DP by counting rounds of one mechanism (module
    docstring; THEORY §12, §13). The literature's natural filter on rounds of one mechanism.

    ``mechanism``: a cost value (``SubsampledGaussianCost.from_sigma(1.0, 0.01)``,
    ``LaplaceCost(0.1)``, ``PairCost.from_pmfs(p, q)``, ...) or None, then the first round fixes
    it; ``grid``: the loss spacing of the PLD K is counted by (`GRID`; finer counts a little more,
    slower); ``tau``: the δ charged per round dominated only up to τ (0: exact domination only).
    Admits rounds that mechanism dominates while at most `budget` = K rounds are recorded;
    refuses any other round with `InvalidParameter` naming the reason, an admitted kind past K
    with `BudgetExceeded` (in rounds).
    """

    _UNIT: ClassVar[str] = "rounds"
    _PRICES_BY: ClassVar[tuple[str, ...]] = ("pair",)

    eps: float = field(converter=as_float, validator=validator(positive))
    delta: float = field(converter=as_float, validator=validator(open_probability))
    mechanism: Cost | None = field(default=None, validator=_mechanism)
    grid: float = field(default=GRID, kw_only=True, converter=as_float, validator=_grid)
    tau: float = field(
        default=0.0, kw_only=True, converter=as_float, validator=validator(probability)
    )

    def __attrs_post_init__(self) -> None:
        if self.mechanism is None and self._realised.size:  # replayed: the first round fixes it
            object.__setattr__(self, "mechanism", self.realised[0])
        super().__attrs_post_init__()

    @property
    def pair(self) -> Pair | None:
        """The fixed mechanism's dominating pair (None until it is fixed)."""
        return None if self.mechanism is None else pair_of(self.mechanism)

    @property
    def budget(self) -> float:
        """K in rounds (`round_count`); ``inf`` until the mechanism is fixed."""
        pair = self.pair
        if pair is None:
            return math.inf
        return float(round_count(pair, self.eps, self.delta, self.grid, self.tau))

    @property
    def delta_budget(self) -> float:
        """No per-round delta: the rounds' deltas (and K·τ) are inside the count."""
        return 0.0

    @property
    def remaining(self) -> float:
        """Rounds left (K − rounds); ``inf`` until the first round fixes the mechanism."""
        return math.inf if self.mechanism is None else super().remaining

    def _rate(self, cost: Cost) -> Price | None:
        pair, fixed = pair_of(cost), self.pair
        if pair is None or (fixed is not None and not dominates(fixed, pair, self.tau)):
            return None
        return (1.0, 0.0)

    def price(self, cost: Cost) -> Price:
        """(1 round, delta 0) for a round the mechanism dominates; `InvalidParameter` naming
        the reason otherwise."""
        rate = self._rate(cost)
        if rate is not None:
            return rate
        if pair_of(cost) is None:
            return Filter.price(self, cost)
        rule = (
            f"cannot charge {cost!r}: accepts only rounds its mechanism {self.mechanism!r} "
            f"dominates in both neighbour directions (the same, larger σ, smaller q or smaller "
            f"eps, or shown by computation{'' if self.tau == 0.0 else f' up to τ = {self.tau!r}'}"
            f"); {MIX}; " + mix_advice(self.eps, self.delta, self.realised, cost)
        )
        raise InvalidParameter("filter", type(self).__name__, rule)

    def _fixed(self, cost: Cost) -> Self:
        """This filter with its mechanism fixed by ``cost`` when none is fixed yet."""
        if self.mechanism is not None or pair_of(cost) is None:
            return self
        return attrs.evolve(self, mechanism=cost)

    def fixed_by(self, request: Cost) -> Self:
        """This filter with its mechanism fixed by the first round's reservation ``request``
        when none is fixed yet (so a settle at a smaller cost never moves it)."""
        return self._fixed(request)

    def admits(self, request: Cost) -> bool:
        """Whether a round costing ``request`` is dominated and fits in the count."""
        return Filter.admits(self._fixed(request), request)

    def check(self, request: Cost) -> None:
        """`BudgetExceeded` (rounds spent, asked, remaining) past K; `InvalidParameter` for a
        round the mechanism does not dominate."""
        Filter.check(self._fixed(request), request)

    def spend(self, realised: Cost) -> Self:
        """A new filter with the round recorded (the first round fixes the mechanism)."""
        return Filter.spend(self._fixed(realised), realised)

    def guarantee(self) -> ApproxDP:
        """(eps, delta)-DP for the whole interaction, whenever it stops (module docstring)."""
        return ApproxDP(self.eps, self.delta)
