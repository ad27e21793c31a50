"""The Gaussian-DP filter (Smith & Thakurta 2022; Koskela et al. 2022; THEORY.md §9).

Beyond the papers (FAC Sec. 5 names GDP filters as open ground). Rounds are each
mu_n-GDP conditional on the past, mu_n chosen from past outputs; a round is admitted only if
Σ mu_m² including it stays <= mu², and the stopped interaction is then mu-GDP, hence
(eps, delta_mu(eps))-DP for every eps (Dong–Roth–Su Cor. 2.13, `GaussianDP.to_dp`). The unit
is mu², summed exactly by the base `Filter`.

Prices, each rounded up:

- `GaussianCost` (a Gaussian mechanism or Gaussian tries composed, rho = Δ²/(2σ²)): exactly
  (Δ/σ)-GDP, mu² = 2·rho. A general `ZCDPCost` is refused: a zCDP round need not be GDP at
  any mu near sqrt(2·rho). This is why the Gaussian mechanism reports `GaussianCost`, a
  `ZCDPCost` subclass, so every other filter prices it exactly as before.
- `BrownianCost` (a BM with sensitivity Δ stopped at t): mu² = Δ²/t. In privacy time
  s = 1/t its loss is Δ²s/2 + Δ·X(s), a Gaussian shift experiment observed up to a
  stopping time (THEORY §3, §9). As for APC Thm 5's condition (3), the round's worst case
  (its grid's smallest time) must fit before it starts: `min_bm_time` / `max_bm_eps`.
- `DPCost` with delta = 0 and `ExPostCost` with eps_max: an eps-DP round is dominated by
  randomized response, whose trade-off has one kink at α = 1/(1 + e^eps); G_mu passes
  through it for mu(eps) = 2·Φ⁻¹(e^eps/(1 + e^eps)), the smallest mu with G_mu <= f_(eps,0).
  `DPCost` with delta > 0 is refused: f_(eps,delta)(0) = 1 − delta < 1 = G_mu(0) for every mu.
- `BoundedRangeCost` (the exponential mechanism with range eps): its loss lies in
  [t − eps, t] for some t in [0, eps] (Durfee–Rogers), so the pair is a post-processing of
  the two-point pair with those likelihood ratios, whose single kink gives
  mu_t = Φ⁻¹(p) + Φ⁻¹(1 − q), largest at t = eps/2, i.e. randomized response at eps/2:
  mu = mu(eps/2). For small eps that is mu²/2 ≈ (π/16)·eps² ≈ 0.196·eps² in rho units,
  1.57× the zCDP bounded-range price eps²/8 (Cesar–Rogers) but a quarter of the pure-DP
  price mu(eps)²; running EM rounds in a separate zCDP filter beside this one (concurrent
  composition) costs a share of eps and delta, which is far dearer for budgets like
  APC Sec. 7's (docs/filters.md).

The transcendental prices (mu(eps)²) are computed with scipy (imported lazily): mu(eps) rounded
up by a relative 2⁻⁴⁴, its square by a further 2⁻⁴⁰, far above the few-ulp error of ``erfinv`` /
``ndtri`` (`tests/rounding/test_rounding_gdp.py` audits both against 50 digits).
"""

from __future__ import annotations

from typing import ClassVar

import attrs
from attrs import field, frozen

from expost._validation import as_float, positive, validator
from expost.costs.model import Mechanism
from expost.errors import InvalidParameter
from expost.filters.base import BrownianPricedFilter, Price
from expost.filters.costs import Cost
from expost.gdp_conversions import pure_dp_mu, pure_dp_mu_squared
from expost.guarantees import ApproxDP, GaussianDP, gdp_delta, gdp_mu_for_dp
from expost.rounding import down_ratio

__all__ = ["GaussianDPFilter", "gdp_price", "pure_dp_mu", "pure_dp_mu_squared"]


def gdp_price(cost: Cost) -> Price | None:
    """(mu², delta) of a round in the GDP filter, rounded up; None if it cannot be priced:
    the cost's own ``gdp()`` (`expost.costs.model`). GaussianCost 2·rho (exact); BrownianCost
    Δ²/t; an (eps, 0)-DP round (DPCost, ExPostCost with eps_max) mu(eps)²; BoundedRangeCost
    mu(eps/2)² (module docstring).
    """
    mu2 = cost.gdp() if isinstance(cost, Mechanism) else None
    return None if mu2 is None else (mu2, 0.0)


@frozen
class GaussianDPFilter(BrownianPricedFilter):
    """The fully adaptive Gaussian-DP filter (Smith–Thakurta 2022; THEORY §9).

    Admits round n+1 iff Σ mu_m² <= mu² including it (prices: `gdp_price`, unit mu²); the
    stopped interaction is mu-GDP (`guarantee`). Rounds carry no delta. ``target``, set by
    `from_dp`, is the (eps, delta)-DP statement the filter was built for, which
    `reported_guarantee` returns.
    """

    _UNIT: ClassVar[str] = "mu²"
    _PRICES_BY: ClassVar[tuple[str, ...]] = ("gdp",)
    _BM_DIVISOR: ClassVar[float] = 1.0

    mu: float = field(converter=as_float, validator=validator(positive))
    target: ApproxDP | None = field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.instance_of(ApproxDP)),
    )

    def __attrs_post_init__(self) -> None:
        t = self.target
        if t is not None and gdp_delta(self.mu, t.eps) > t.delta:
            raise InvalidParameter(
                "target", t, f"is not implied by mu-GDP with mu = {self.mu!r} (Cor. 2.13)"
            )
        super().__attrs_post_init__()

    @classmethod
    def from_dp(cls, eps: float, delta: float) -> GaussianDPFilter:
        """The filter whose mu-GDP gives (eps, delta)-DP: the largest mu with delta_mu(eps) <= delta.

        (10, 1e-6) gives mu ≈ 1.848, i.e. Σ mu_m² <= 3.416 (the zCDP filter of APC Sec. 7
        allows Σ eps_m² <= 2.706).
        """
        mu = gdp_mu_for_dp(eps, delta)
        return cls(mu, ApproxDP(eps, delta))

    @property
    def budget(self) -> float:
        """mu², rounded down (exactly the largest float <= mu²)."""
        a, b = self.mu.as_integer_ratio()
        return down_ratio(self.mu * self.mu, a * a, b * b)

    @property
    def delta_budget(self) -> float:
        return 0.0

    def _rate(self, cost: Cost) -> Price | None:
        return gdp_price(cost)

    def guarantee(self) -> GaussianDP:
        """mu-GDP (Smith–Thakurta 2022, fully adaptive composition)."""
        return GaussianDP(self.mu)

    def reported_guarantee(self) -> GaussianDP | ApproxDP:
        """``target`` (the (eps, delta)-DP of `from_dp`) when set, else `guarantee()`."""
        return self.guarantee() if self.target is None else self.target
