"""The rho filters: approx-zCDP (FAC Thm 1), unified (APC Thm 5) and Brownian (APC Lemma 6.2)."""

from __future__ import annotations

from typing import ClassVar, Literal

from attrs import field, frozen

from expost._validation import as_float, open_probability, positive, probability, validator
from expost.costs.model import Mechanism
from expost.errors import InvalidParameter
from expost.filters._exact import rho_of_brownian
from expost.filters.base import Price, RhoFilter
from expost.filters.costs import Cost
from expost.guarantees import (
    ZCDP,
    ApproxDP,
    cks_rho_for_dp,
    cks_zcdp_to_dp,
    rho_for_dp,
    zcdp_to_dp,
)

__all__ = ["BrownianFilter", "Conversion", "UnifiedFilter", "ZCDPFilter", "zcdp_price"]

Conversion = Literal["bun-steinke", "cks"]


def zcdp_price(cost: Cost) -> Price | None:
    """(rho, delta) of a round in a zCDP filter, every conversion rounded up; None if none:
    the cost's own ``zcdp()`` (`expost.costs.model`). ZCDPCost: (rho, delta) (FAC Thm 1);
    BrownianCost: Δ²/(2t) (APC Thm 5); an (eps, delta)-DP round: eps²/2 with its delta (APC
    Lemma 2.1); BoundedRangeCost: eps²/8 (Cesar–Rogers 2021); ExPostCost with eps_max: an
    eps_max-DP round, eps_max²/2.
    """
    return cost.zcdp() if isinstance(cost, Mechanism) else None


_DELTA = field(default=0.0, converter=as_float, validator=validator(probability))


@frozen
class _ZCDPBudget(RhoFilter):
    """A budget (rho, delta) for rounds priced by `zcdp_price`; the stopped interaction is
    delta-approximate rho-zCDP (FAC Thm 1; APC Thm 5, as its proof shows)."""

    _PRICES_BY: ClassVar[tuple[str, ...]] = ("zcdp",)

    rho: float = field(converter=as_float, validator=validator(positive))
    delta: float = _DELTA

    @property
    def budget(self) -> float:
        return self.rho

    @property
    def delta_budget(self) -> float:
        return self.delta

    def _rate(self, cost: Cost) -> Price | None:
        return zcdp_price(cost)

    def guarantee(self) -> ZCDP:
        """delta-approximate rho-zCDP (FAC Thm 1; APC Thm 5 for the unified filter)."""
        return ZCDP(self.rho, self.delta)


@frozen
class ZCDPFilter(_ZCDPBudget):
    """The approx-zCDP filter (FAC Thm 1).

    Admits round n+1 iff Σ rho_m <= rho and Σ delta_m <= delta including it; the stopped
    interaction is delta-approximate rho-zCDP. Prices rounds by `zcdp_price`.
    """


@frozen
class UnifiedFilter(_ZCDPBudget):
    """The unified filter for zCDP rounds and Brownian mechanisms (APC Thm 5).

    zCDP rounds and BM rounds share one budget rho (prices: `zcdp_price`); condition (3): a
    round is admitted iff rho_n + Δ²/(2·t_min) <= rho − Σ realised, and the rounds' deltas
    stay within delta. The proof shows the stopped interaction is delta-approximate
    rho-zCDP (`guarantee`); `dp_guarantee` converts it by APC Lemma 2.1.

    ``delta_second`` (delta'' of that conversion) and ``conversion`` are remembered by
    `from_dp`, so that `dp_guarantee()` (and `reported_guarantee()`) return the target (eps, delta).
    """

    delta_second: float | None = field(default=None)
    conversion: Conversion = field(default="bun-steinke")

    @delta_second.validator
    def _check_delta_second(self, _attribute: object, value: object) -> None:
        if value is not None:
            open_probability("delta_second", value)

    @conversion.validator
    def _check_conversion(self, _attribute: object, value: object) -> None:
        if value not in ("bun-steinke", "cks"):
            raise InvalidParameter("conversion", value, "must be 'bun-steinke' or 'cks'")

    @classmethod
    def from_dp(
        cls, eps: float, delta: float, conversion: Conversion = "bun-steinke"
    ) -> UnifiedFilter:
        """The filter whose `dp_guarantee()` is (eps, delta)-DP (APC Thm 5 + Lemma 2.1).

        rho = `rho_for_dp`(eps, delta) for "bun-steinke" — (10, 1e-6) gives rho ≈ 1.35301,
        i.e. Σ eps_m² <= 2.706 (APC Sec. 7) — or `cks_rho_for_dp` (larger) for "cks".
        """
        if conversion == "bun-steinke":
            rho = rho_for_dp(eps, delta)
        elif conversion == "cks":
            rho = cks_rho_for_dp(eps, delta)
        else:
            raise InvalidParameter("conversion", conversion, "must be 'bun-steinke' or 'cks'")
        return cls(rho, 0.0, delta, conversion)

    def reported_guarantee(self) -> ZCDP | ApproxDP:
        """`dp_guarantee()` when the filter knows its delta'' (e.g. from `from_dp`), else `guarantee()`."""
        return self.guarantee() if self.delta_second is None else self.dp_guarantee()

    def dp_guarantee(self, delta_second: float | None = None) -> ApproxDP:
        """(rho + 2·sqrt(rho·log(1/delta'')), delta + (1 − delta)·delta'')-DP (APC Lemma 2.1).

        APC Thm 5 prints eps = rho + 2·sqrt(2·rho·log(1/delta'')), which does not follow from
        its proof: the proof gives delta-approximate rho-zCDP, and Lemma 2.1 converts that
        with 2·sqrt(rho·log(1/delta'')); APC's own experiments use this value (THEORY.md §4).
        With ``conversion="cks"`` the Canonne–Kamath–Steinke conversion is used instead.
        ``delta_second`` defaults to the one remembered by the filter.
        """
        d2 = self.delta_second if delta_second is None else delta_second
        if d2 is None:
            raise InvalidParameter(
                "delta_second", None, "is needed: pass it here or construct the filter with it"
            )
        convert = cks_zcdp_to_dp if self.conversion == "cks" else zcdp_to_dp
        return convert(self.guarantee(), d2)


@frozen
class BrownianFilter(RhoFilter):
    """The Brownian filter (APC Lemma 6.2): Brownian mechanisms only.

    Condition (2): a BM whose grid's smallest time is t_min is admitted iff
    Δ²/(2·t_min) <= rho − Σ_i Δ_i²/(2·t_i) over the realised stopped times (APC states it
    for Δ = 1). Result: (rho + 2·sqrt(rho·log(1/delta)), delta)-DP.
    """

    _PRICES_BY: ClassVar[tuple[str, ...]] = ("brownian",)

    rho: float = field(converter=as_float, validator=validator(positive))
    delta: float = field(converter=as_float, validator=validator(open_probability))

    @property
    def budget(self) -> float:
        return self.rho

    @property
    def delta_budget(self) -> float:
        return 0.0

    def _rate(self, cost: Cost) -> Price | None:
        b = cost.brownian() if isinstance(cost, Mechanism) else None
        return None if b is None else (rho_of_brownian(*b), 0.0)

    def guarantee(self) -> ApproxDP:
        """(rho + 2·sqrt(rho·log(1/delta)), delta)-DP (APC Lemma 6.2)."""
        return zcdp_to_dp(ZCDP(self.rho), self.delta)
