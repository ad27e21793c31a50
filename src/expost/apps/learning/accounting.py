"""What a DP-SGD run spent: counting filters on a grid of budgets, ex-post RDP, calibration.

A run is a schedule of *units* fixed before it starts: unit j is m_j DP-SGD steps (Poisson rate
q, noise multiplier σ_j, sensitivity C) followed by at most one Gaussian count check (noise σ_c,
sensitivity 1). Every round is dominated by a fixed pair (THEORY §12: the Poisson-subsampled
Gaussian pair of a step, the Gaussian pair of a check), so the composition of units 1..j is
dominated by the product of their pairs, whose PLD is the convolution (Zhu, Dong & Wang 2022
Thm 10; `expost.pld`). Steps and checks share one composition (a record may sit in the
training and the validation rows: nothing is assumed about which).

The run stops after a data-dependent number τ of units. Two valid reports (THEORY §12, last
item "Realised privacy at a data-dependent stop"):

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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

from attrs import field, frozen

from expost import realised_privacy
from expost._validation import (
    as_float,
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
    "DELTA",
    "DISCRETIZATION",
    "RDP_ORDERS",
    "CountingGrid",
    "Unit",
    "calibrate_sigma",
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


@lru_cache(maxsize=256)
def _steps_pld(sigma: float, q: float, steps: int) -> PrivacyLossDistribution:
    step = PrivacyLossDistribution.gaussian(
        sigma, sampling_prob=q, value_discretization=DISCRETIZATION
    )
    return step.self_compose(steps)


def steps_eps(sigma: float, sampling_prob: float, steps: int, delta: float = DELTA) -> float:
    """ε at ``delta`` of ``steps`` DP-SGD steps (σ, q) and nothing else, rounded up."""
    return float(_steps_pld(sigma, sampling_prob, steps).eps(delta))


def counting_grid(
    units: Sequence[Unit], delta: float = DELTA, weights: Sequence[float] | None = None
) -> CountingGrid:
    """The grid (ε_j, δ_j) for a schedule of units (module docstring, (i)): the library's
    `expost.realised_privacy.counting_grid` of the units' PLDs."""
    if not units:
        raise InvalidParameter("units", units, "must hold at least one unit")
    return realised_privacy.counting_grid([u.pld() for u in units], delta, weights)


def ex_post_rdp_eps(
    units: Sequence[Unit], delta: float = DELTA, orders: Sequence[int] = RDP_ORDERS
) -> float:
    """The ex-post RDP report at the stop after ``units`` (module docstring, (ii)): Markov at
    the best of ``orders``, δ split over them, rounded up."""
    table = {float(a): sum_up([u.rdp(a) for u in units]) for a in orders}
    return float(ExPostRDP.of_orders(table).probabilistic(delta, [float(a) for a in orders]).bound)


@lru_cache(maxsize=1024)
def calibrate_sigma(
    eps: float, steps: int, sampling_prob: float, delta: float = DELTA, iterations: int = 10
) -> float:
    """A noise multiplier σ whose ``steps`` DP-SGD steps spend at most ``eps`` at ``delta``
    (bisection on log σ over [0.3, 50]; the returned σ always satisfies the bound, the
    smallest such σ to within a factor (50/0.3) ** 2**-iterations ≈ 1.005 at 10 iterations)."""
    target = positive("eps", eps)
    low, high = 0.3, 50.0
    if steps_eps(high, sampling_prob, steps, delta) > target:
        raise InvalidParameter("eps", eps, f"is below what σ = {high} spends in {steps} steps")
    for _ in range(positive_int("iterations", iterations)):
        mid = math.sqrt(low * high)
        if steps_eps(mid, sampling_prob, steps, delta) <= target:
            high = mid
        else:
            low = mid
    return high
