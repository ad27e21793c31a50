"""The counting (natural) filter: rounds of one mechanism fixed in advance, counted (THEORY §12).

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

A mix of mechanisms is refused: natural filters are free exactly for totally ordered families
(Regehr et al., arXiv 2602.15815), and for adaptively chosen mixes they can fail; RDPFilter,
RenyiFilter, UnifiedFilter or GaussianDPFilter (Gaussian rounds of any σ) price mixes.

Pairs and the dominance orders used (each a post-processing or a monotone closed form, for
every γ = e^ε' >= 0, so for both neighbour directions; tests/test_pld_dominance.py checks each
numerically against a planted wrong order):

- `GaussianCost` (rho, q = 1), `SubsampledGaussianCost` (rho, q): the Gaussian pair
  (N(1, σ²), N(0, σ²)) with σ = 1/sqrt(2·rho) (`SubsampledGaussianCost.sigma`, rounded down),
  Poisson-subsampled at rate q (remove: ((1−q)Q + qP, Q); add: (Q, (1−q)Q + qP)).
  *Larger σ* (smaller rho): adding independent N(0, σ² − σ0²) to both laws of the σ0 pair
  (and of its mixtures: the kernel commutes with mixing) gives the σ pair, a post-processing.
  *Smaller q*: with t = q/q0 <= 1 the kernel "keep the output with probability t, else
  replace it by a fresh draw from Q" maps (M0, Q) to ((1−t)Q + t·M0, Q) = (M_q, Q) and
  (Q, M0) to (Q, M_q) — a post-processing in both directions; equivalently joint convexity
  of H_γ with H_γ(Q‖Q) = (1−γ)_+ <= H_γ(M0‖Q). For q = 1 the count is exact in closed form:
  k rounds of mu = sqrt(2·rho) compose to sqrt(k)·mu-GDP, so K = max{k : k·mu² <= mu*²} with
  mu* = `gdp_mu_for_dp(eps, delta)` (rounded down; Dong–Roth–Su Cor. 2.13).
- `LaplaceCost` (eps0): the Laplace pair (Lap(eps0, 1), Lap(0, 1)). *Smaller eps0*: its
  profile δ(ε') = (1 − e^{(ε'−eps0)/2})_+ for ε' >= 0 and 1 − e^{ε'} + e^{ε'}·δ(−ε') for
  ε' < 0 (the pair is symmetric) is nondecreasing in eps0 for every ε'.
- `DPCost` with delta 0 (eps0) and `BoundedRangeCost` (range eps0, an eps0-DP mechanism):
  randomised response at eps0, which dominates every eps0-DP mechanism (Kairouz, Oh &
  Viswanath 2015). This gives up the bounded-range gain of the exponential mechanism (its
  own pair is tighter; not derived here). *Smaller eps*: RR(eps) is RR(eps0) followed by
  flipping the answer with probability r = (p0 − p)/(2p0 − 1), p = e^eps/(1 + e^eps) — a
  garbling. A `LaplaceCost` round is eps-DP, so RR(eps0) dominates it too.

Units: ``spent`` and ``remaining`` are rounds; ``budget`` is K (``inf`` until the mechanism
is fixed). K is computed once per (pair, eps, delta) and cached, so a round costs O(1).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import ClassVar, Literal, Self

import attrs
from attrs import field, frozen

from expost._validation import as_float, open_probability, positive, validator
from expost.errors import InvalidParameter
from expost.filters.base import Filter, Price
from expost.filters.costs import (
    BoundedRangeCost,
    Cost,
    DPCost,
    GaussianCost,
    LaplaceCost,
    SubsampledGaussianCost,
)
from expost.guarantees import ApproxDP, gdp_mu_for_dp

__all__ = ["MAX_COUNT", "PLDFilter", "Pair", "dominates", "pair_of", "round_count"]

MAX_COUNT = 1 << 20
"""The most rounds a `PLDFilter` counts to (the search for K stops there)."""
GRID = 5e-4  # = expost.pld.distribution.DEFAULT_VALUE_DISCRETIZATION (imported lazily: scipy)
"""The default loss grid h of the PLD K is counted by (`expost.pld`'s, 5e-4): the exact counts
357, 10 and 1,202 in the issue's cases, about 1.5 s each; a finer grid counts more rounds where
one round's loss is far below h (DP-SGD at q = 0.001: 130,613 at h = 1e-3, 143,691 at 1e-4), at
a one-off time growing as 1/h."""

MIX = (
    "a counting filter is (eps, delta)-DP only for rounds of one mechanism fixed before the "
    "first round, and a mix chosen on the fly is not free (Regehr et al., arXiv 2602.15815; "
    "THEORY §12): price a mix with RDPFilter, RenyiFilter, UnifiedFilter or GaussianDPFilter "
    "(Gaussian rounds of any σ)"
)
_KINDS = (
    "GaussianCost, SubsampledGaussianCost, LaplaceCost, DPCost with delta 0 and "
    "BoundedRangeCost rounds"
)


@frozen
class Pair:
    """A dominating pair: ``kind`` "gaussian" (``level`` = rho, Poisson rate ``q``), "laplace"
    or "rr" (randomised response; ``level`` = eps)."""

    kind: Literal["gaussian", "laplace", "rr"]
    level: float
    q: float = 1.0


def pair_of(cost: object) -> Pair | None:
    """The pair that dominates ``cost`` (module docstring), None if this filter cannot price it."""
    if isinstance(cost, SubsampledGaussianCost):
        return Pair("gaussian", cost.rho, cost.sampling_prob)
    if isinstance(cost, GaussianCost):
        return Pair("gaussian", cost.rho)
    if isinstance(cost, LaplaceCost):
        return Pair("laplace", cost.eps)
    if (isinstance(cost, DPCost) and cost.delta == 0.0) or isinstance(cost, BoundedRangeCost):
        return Pair("rr", cost.eps)
    return None


def dominates(fixed: Pair, other: Pair) -> bool:
    """Whether ``fixed`` dominates ``other`` by the orders of the module docstring: Gaussian by
    larger σ (smaller rho) and smaller q; Laplace by smaller eps; RR by smaller eps (and any
    pure-DP round, Laplace included, at most its eps)."""
    if fixed.kind == "gaussian":
        return other.kind == "gaussian" and other.level <= fixed.level and other.q <= fixed.q
    if fixed.kind == "laplace":
        return other.kind == "laplace" and other.level <= fixed.level
    return other.kind in ("laplace", "rr") and other.level <= fixed.level


@lru_cache(maxsize=256)
def round_count(pair: Pair, eps: float, delta: float, grid: float = GRID) -> int:
    """K: the most rounds of ``pair`` whose composition is (eps, delta)-DP in both directions
    (at most `MAX_COUNT`). Gaussian without subsampling: exact, k·mu² <= mu*² in rationals;
    otherwise the safe-sided PLD on a loss grid of spacing ``grid`` (`expost.pld.max_rounds`).
    Cached: once per (pair, eps, delta, grid)."""
    if pair.kind == "gaussian" and pair.q == 1.0:
        mu_star = Fraction(gdp_mu_for_dp(eps, delta))
        return min(MAX_COUNT, math.floor(mu_star**2 / (2 * Fraction(pair.level))))
    from expost.pld import PrivacyLossDistribution, max_rounds  # lazy: numpy FFT work

    if pair.kind == "gaussian":
        sigma = SubsampledGaussianCost(pair.level, sampling_prob=pair.q).sigma
        pld = PrivacyLossDistribution.gaussian(sigma, 1.0, pair.q, value_discretization=grid)
    elif pair.kind == "laplace":  # Lap(eps0, 1) against Lap(0, 1): eps0 exactly
        pld = PrivacyLossDistribution.laplace(1.0, pair.level, value_discretization=grid)
    else:
        pld = PrivacyLossDistribution.pure_dp(pair.level, value_discretization=grid)
    return max_rounds(pld, eps, delta, limit=MAX_COUNT)


def _grid(_instance: object, _attribute: object, value: object) -> None:
    h = positive("grid", value)
    if h > 0.1:
        raise InvalidParameter("grid", value, "must be at most 0.1 (the PLD's loss spacing)")


def _mechanism(_instance: object, _attribute: object, value: Cost | None) -> None:
    if value is not None and pair_of(value) is None:
        raise InvalidParameter("mechanism", value, f"must be None or one of {_KINDS}")


@frozen
class PLDFilter(Filter):
    """(eps, delta)-DP by counting rounds of one mechanism (module docstring; THEORY §12).

    ``mechanism``: a cost value (``SubsampledGaussianCost.from_sigma(1.0, 0.01)``,
    ``LaplaceCost(0.1)``, ...) or None, then the first round fixes it; ``grid``: the loss
    spacing of the PLD K is counted by (`GRID`; finer counts a little more, slower). Admits rounds that
    mechanism dominates while at most `budget` = K rounds are recorded; refuses any other
    round with `InvalidParameter` naming the reason, an admitted kind past K with
    `BudgetExceeded` (in rounds).
    """

    _UNIT: ClassVar[str] = "rounds"
    _ACCEPTS: ClassVar[str] = _KINDS

    eps: float = field(converter=as_float, validator=validator(positive))
    delta: float = field(converter=as_float, validator=validator(open_probability))
    mechanism: Cost | None = field(default=None, validator=_mechanism)
    grid: float = field(default=GRID, kw_only=True, converter=as_float, validator=_grid)

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
        return float(round_count(pair, self.eps, self.delta, self.grid))

    @property
    def delta_budget(self) -> float:
        """No per-round delta: the rounds' deltas are inside the composed profile."""
        return 0.0

    @property
    def remaining(self) -> float:
        """Rounds left (K − rounds); ``inf`` until the first round fixes the mechanism."""
        return math.inf if self.mechanism is None else super().remaining

    def _rate(self, cost: Cost) -> Price | None:
        pair, fixed = pair_of(cost), self.pair
        if pair is None or (fixed is not None and not dominates(fixed, pair)):
            return None
        return (1.0, 0.0)

    def price(self, cost: Cost) -> Price:
        """(1 round, delta 0) for a round the mechanism dominates; `InvalidParameter` naming
        the reason otherwise."""
        rate = self._rate(cost)
        if rate is not None:
            return rate
        if pair_of(cost) is None:
            rule = f"cannot charge {cost!r}: accepts only {_KINDS}"
        else:
            rule = (
                f"cannot charge {cost!r}: accepts only rounds its mechanism {self.mechanism!r} "
                f"dominates (the same, larger σ, smaller q or smaller eps); {MIX}"
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
