"""What a DP-SGD run spent: counting filters on a grid of budgets, ex-post RDP, calibration.

A run is a schedule of *units* fixed before it starts: unit j is m_j DP-SGD steps (Poisson rate
q, noise multiplier σ_j, sensitivity C) followed by at most one Gaussian count check (noise σ_c,
sensitivity 1). Every round is dominated by a fixed pair (THEORY §12: the Poisson-subsampled
Gaussian pair of a step, the Gaussian pair of a check), so the composition of units 1..j is
dominated by the product of their pairs, whose PLD is the convolution (Zhu, Dong & Wang 2022
Thm 10; `expost.pld`). Steps and checks share one composition (a record may sit in the
training and the validation rows: nothing is assumed about which).

The run stops after a data-dependent number τ of units. Two valid routes (THEORY §12, last
item "Realised privacy at a data-dependent stop"); the report uses (i) only, fixed before the run
(taking the smaller of the two after the run would be valid only at δ_i + δ_ii, THEORY §13):

(i) counting filters on a grid of budgets: δ = Σ_j δ_j and ε_j = the ε at δ_j of the PLD of
    units 1..j (rounded up by `PrivacyLossDistribution.eps`), made nondecreasing. The counting
    filter (ε_j, δ_j) then admits K_j >= j units, so the first j with τ <= K_j is some J <= τ and
    ε_J <= ε_τ: reporting ε_τ is valid. On {J = j} the transcript is a post-processing of the
    K_j-unit composition, hence P_x(S) <= E_x'[e^(ε_J)·1_S] + δ for every event S (Lécuyer
    2021's filters-to-odometer argument). Tight at every unit up to the split of δ.
(ii) ex-post RDP (THEORY §11): unit j has RDP ε_α,j = m_j·ε_α(step) + α/(2σ_c²) (the step's
    exact subsampled-Gaussian RDP at integer orders, Mironov, Talwar & Zhang 2019, via
    `expost.rdp_curves`); exp((α−1)(L_k − Σ_(j<=k) ε_α,j)) is a supermartingale, so the stopped run
    has ex-post RDP Σ_(j<=τ) ε_α,j, converted by Markov with δ split over the orders fixed in
    advance (`ExPostRDP.probabilistic`). Immune to post-processing, but looser.

Accuracy-first's checks are Brownian (`expost.apps.learning.sgd.BrownianCheck`): their price is
the privacy time reached, realised. `CheckedGrid` is the grid of counting filters for that case:
filter (j, m) admits the steps of units 1..j and checks whose privacy times sum to at most S_m,
is (ε_jm, δ_jm)-DP with ε_jm the ε at δ_jm of the steps' PLD composed with the Gaussian pair
of μ² = S_m, and the report is ε_jm of the cheapest filter that admits the run (the composition
argument, its proof and its audit: docs/apps/dp-sgd.md, "Why the report is valid").
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

from attrs import field, frozen

from expost import realised_privacy
from expost._validation import (
    as_float,
    open_probability,
    positive,
    positive_int,
    sampling_probability,
    validator,
)
from expost.errors import InvalidParameter
from expost.ex_post_rdp import ExPostRDP
from expost.pld import PrivacyLossDistribution
from expost.rdp_curves import subsampled_gaussian_renyi
from expost.realised_privacy import CountingGrid
from expost.rounding import sum_up, up_exact

__all__ = [
    "COARSE_DISCRETIZATION",
    "DELTA",
    "DISCRETIZATION",
    "RDP_ORDERS",
    "CheckedGrid",
    "CountingGrid",
    "Unit",
    "calibrate_sigma",
    "checked_grid",
    "counting_grid",
    "ex_post_rdp_eps",
    "steps_eps",
]

DELTA = 1e-5
"""The δ every reported ε is at."""
DISCRETIZATION = 1e-3
"""The DP-SGD accounts' loss grid h, twice the library's default
(`expost.pld.distribution.DEFAULT_VALUE_DISCRETIZATION`, 5e-4) on purpose: every ε is a safe upper
bound at any h; at 1e-3 a 300-step DP-SGD ε is within 1e-4 of its value at h = 1e-4 and about 30
times faster to compute."""
RDP_ORDERS = (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64)
"""Integer orders the ex-post RDP route splits δ over (fixed in advance)."""


def _optional_sigma(value: object) -> float | None:
    return None if value is None else positive("check_sigma", value)


@frozen
class Unit:
    """``steps`` DP-SGD steps at noise multiplier ``sigma`` and Poisson rate ``sampling_prob``,
    then one count check with noise ``check_sigma`` (None: no check)."""

    steps: int = field(validator=validator(positive_int))
    sigma: float = field(converter=as_float, validator=validator(positive))
    sampling_prob: float = field(converter=as_float, validator=validator(sampling_probability))
    check_sigma: float | None = field(default=None, converter=_optional_sigma)

    def pld(self) -> PrivacyLossDistribution:
        """The PLD of the unit's dominating pair (steps, then the check)."""
        out = _steps_pld(self.sigma, self.sampling_prob, self.steps)
        if self.check_sigma is not None:
            check = PrivacyLossDistribution.gaussian(
                self.check_sigma, value_discretization=DISCRETIZATION
            )
            out = out.compose(check)
        return out

    def rdp(self, alpha: int) -> float:
        """RDP of order α of the unit, rounded up: m·ε_α(step) + α/(2σ_c²)."""
        step = subsampled_gaussian_renyi(
            up_exact(1 / (2 * Fraction(self.sigma) ** 2)), self.sampling_prob, alpha
        )
        parts = [up_exact(Fraction(step) * self.steps)]
        if self.check_sigma is not None:
            parts.append(up_exact(alpha / (2 * Fraction(self.check_sigma) ** 2)))
        return sum_up(parts)


COARSE_DISCRETIZATION = 2e-3
"""The loss grid `calibrate_sigma` searches on: its ε are safe upper bounds too (at any h), about
up to three times cheaper at large ε; the ε reported is always recomputed at `DISCRETIZATION`."""


@lru_cache(maxsize=256)
def _steps_pld(
    sigma: float, q: float, steps: int, h: float = DISCRETIZATION
) -> PrivacyLossDistribution:
    step = PrivacyLossDistribution.gaussian(sigma, sampling_prob=q, value_discretization=h)
    return step.self_compose(steps)


def steps_eps(
    sigma: float,
    sampling_prob: float,
    steps: int,
    delta: float = DELTA,
    discretization: float = DISCRETIZATION,
) -> float:
    """ε at ``delta`` of ``steps`` DP-SGD steps (σ, q) and nothing else, rounded up (a safe upper
    bound at every ``discretization``)."""
    return float(_steps_pld(sigma, sampling_prob, steps, discretization).eps(delta))


def counting_grid(
    units: Sequence[Unit], delta: float = DELTA, weights: Sequence[float] | None = None
) -> CountingGrid:
    """The grid (ε_j, δ_j) for a schedule of units (module docstring, (i)): the library's
    `expost.realised_privacy.counting_grid` of the units' PLDs."""
    if not units:
        raise InvalidParameter("units", units, "must hold at least one unit")
    return realised_privacy.counting_grid([u.pld() for u in units], delta, weights)


def _split(delta: float, count: int) -> float:
    """δ/count rounded down (a smaller δ_j only raises ε_j): count·δ_j <= δ."""
    return math.nextafter(open_probability("delta", delta) / count, 0.0)


def _check_pld(budget: float) -> PrivacyLossDistribution:
    """The Gaussian pair of μ² = ``budget`` (sensitivity 1, σ = 1/μ rounded down)."""
    sigma = math.nextafter(1.0 / math.sqrt(positive("check_budget", budget)), 0.0)
    return PrivacyLossDistribution.gaussian(sigma, value_discretization=DISCRETIZATION)


@frozen
class CheckedGrid:
    """Counting filters (j, m) for steps and Brownian checks (module docstring): ``eps[j][m]``
    for units 1..j+1 and check budget ``budgets[m]``, each filter at δ ``delta_each``."""

    eps: tuple[tuple[float, ...], ...]
    budgets: tuple[float, ...]
    delta_each: float

    def reported(self, units: int, spent: float) -> float:
        """ε of the cheapest filter admitting a run of ``units`` units whose checks' privacy
        times sum to ``spent`` (made monotone, so it is filter (units, first S_m >= spent))."""
        if isinstance(units, bool) or not 1 <= units <= len(self.eps):
            raise InvalidParameter("units", units, f"must be in [1, {len(self.eps)}]")
        fits = [m for m, b in enumerate(self.budgets) if spent <= b]
        if not fits:
            raise InvalidParameter("spent", spent, f"must be at most {self.budgets[-1]}")
        return self.eps[units - 1][fits[0]]


def checked_grid(
    units: Sequence[Unit], budgets: Sequence[float], delta: float = DELTA
) -> CheckedGrid:
    """The grid of `CheckedGrid` for ``units`` (steps only) and increasing check ``budgets``
    S_1 < … < S_M: δ split equally over the J·M filters; ε made nondecreasing in j and m."""
    if not units or any(u.check_sigma is not None for u in units):
        raise InvalidParameter("units", units, "must be a non-empty schedule of steps only")
    levels = tuple(positive("budgets", b) for b in budgets)
    if not levels or any(b <= a for a, b in itertools.pairwise(levels)):
        raise InvalidParameter("budgets", budgets, "must be positive and increasing")
    each = _split(delta, len(units) * len(levels))
    checks = [_check_pld(b) for b in levels]
    rows: list[tuple[float, ...]] = []
    steps: PrivacyLossDistribution | None = None
    for unit in units:
        steps = unit.pld() if steps is None else steps.compose(unit.pld())
        row: list[float] = []
        for m, check in enumerate(checks):
            e = float(steps.compose(check).eps(each))
            floor = max(row[-1] if row else 0.0, rows[-1][m] if rows else 0.0)
            row.append(max(e, floor))
        rows.append(tuple(row))
    return CheckedGrid(tuple(rows), levels, each)


def ex_post_rdp_eps(
    units: Sequence[Unit],
    delta: float = DELTA,
    orders: Sequence[int] = RDP_ORDERS,
    check_time: float = 0.0,
) -> float:
    """The ex-post RDP route at the stop after ``units`` (module docstring, (ii)), plus Brownian
    checks of total privacy time ``check_time`` (ex-post RDP α·s/2, THEORY §11): Markov at the
    best of ``orders``, δ split over them, rounded up."""
    table = {
        float(a): sum_up([*(u.rdp(a) for u in units), up_exact(a * Fraction(check_time) / 2)])
        for a in orders
    }
    return float(ExPostRDP.of_orders(table).probabilistic(delta, [float(a) for a in orders]).bound)


@lru_cache(maxsize=1024)
def calibrate_sigma(
    eps: float, steps: int, sampling_prob: float, delta: float = DELTA, iterations: int = 10
) -> float:
    """A noise multiplier σ whose ``steps`` DP-SGD steps spend at most ``eps`` at ``delta``
    (bisection on log σ over [0.3, 50] with ε on the `COARSE_DISCRETIZATION` grid, itself a safe
    upper bound; the returned σ always satisfies the bound, the smallest such σ on that grid to
    within a factor (50/0.3) ** 2**-iterations ≈ 1.005 at 10 iterations)."""
    target = positive("eps", eps)
    low, high = 0.3, 50.0

    def spends(sigma: float) -> float:
        return steps_eps(sigma, sampling_prob, steps, delta, COARSE_DISCRETIZATION)

    if spends(high) > target:
        raise InvalidParameter("eps", eps, f"is below what σ = {high} spends in {steps} steps")
    for _ in range(positive_int("iterations", iterations)):
        mid = math.sqrt(low * high)
        if spends(mid) <= target:
            high = mid
        else:
            low = mid
    return high
