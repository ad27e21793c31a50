"""Privacy odometers: running bounds on the accumulated privacy loss (THEORY.md §5).

With probability at least 1 − delta the loss of every prefix of the interaction stays below
the odometer's value for that prefix, simultaneously for all prefixes.

FAC Thm 3: rounds are (eps_n, delta_n)-pDP conditional on the past, delta = delta' + delta'',
ℓ = log(1/delta''), V_n = Σ_(m<=n) eps_m²; u_n = ∞ once Σ_(m<=n) delta_m exceeds delta'.
(FAC writes the cut-off with the next round's delta because a filter must decide before the
round; for a bound on prefixes already run, the rounds' own deltas suffice.) The bounds are
line-crossing, normal-mixture and stitching boundaries for the loss martingale, whose
increments are eps_m²-sub-Gaussian, plus the drift V_n/2.

APC Lemma 6.1 / eq. 1: for Brownian mechanisms stopped at times t_i, with V = Σ Δ_i²/t_i,
the loss stays below Σ Δ_i²/(2t_i) + ψ(V; γ, delta) with ψ(v) = sqrt((v + γ)·log((v + γ)/(delta²·γ))).

Prefix sums are rounded up (by n·2⁻⁵² relative for n terms, the worst case of a float
cumulative sum of nonnegative terms), so rounding never makes a bound smaller.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    finite_array,
    open_probability,
    positive,
    probability,
    validator,
)
from expost.boundaries import FACStitched, NormalMixture, apc_psi
from expost.errors import InvalidParameter
from expost.guarantees import rho_for_dp
from expost.rounding import neg_log_up, up_array

__all__ = [
    "BrownianOdometer",
    "FilterOdometer",
    "MixtureOdometer",
    "StitchedOdometer",
]

FloatArray = npt.NDArray[np.float64]


def _nonnegative_array(name: str, value: npt.ArrayLike) -> FloatArray:
    arr = finite_array(name, value)
    if np.any(arr < 0.0):
        raise InvalidParameter(name, value, "must be >= 0 everywhere")
    return arr


def _prefix_sums(terms: FloatArray) -> FloatArray:
    """Cumulative sums along the last axis, rounded up to cover float error.

    The n-th sum of terms each within 2 roundings (relative 2u, u = 2^-53) has relative error
    below (n + 1)·u + O(u²); the factor 1 + 2(n + 2)·u, itself rounded once, covers it.
    """
    if terms.ndim == 0:
        raise InvalidParameter("history", terms, "must have at least one axis (the rounds)")
    count = np.arange(1, terms.shape[-1] + 1, dtype=np.float64)
    return np.cumsum(terms, axis=-1) * (1.0 + (count + 2.0) * 2.0**-52)


def _check_deltas(delta_prime: float, delta_second: float) -> None:
    if delta_prime + delta_second >= 1.0:
        raise InvalidParameter(
            "delta_second", delta_second, "delta_prime + delta_second must be < 1"
        )


class _PDPOdometer(ABC):
    """FAC Thm 3: the prefix bounds from ``bound_at`` and the delta' cut-off."""

    delta_prime: float
    delta_second: float

    def __attrs_post_init__(self) -> None:
        _check_deltas(self.delta_prime, self.delta_second)

    @abstractmethod
    def bound_at(self, V: npt.ArrayLike) -> FloatArray:
        """u as a function of V = Σ eps_m² (vectorised)."""

    def bound(
        self, eps_history: npt.ArrayLike, delta_history: npt.ArrayLike | None = None
    ) -> FloatArray:
        """u_n for every prefix n of the rounds along the last axis (∞ once Σ delta_m > delta').

        ``eps_history`` may hold many interactions (trials × rounds); ``delta_history``
        (default 0) broadcasts to it.
        """
        eps = _nonnegative_array("eps_history", eps_history)
        deltas = _nonnegative_array(
            "delta_history", 0.0 if delta_history is None else delta_history
        )
        if np.any(deltas >= 1.0):
            raise InvalidParameter("delta_history", delta_history, "must lie in [0, 1)")
        try:
            deltas = np.broadcast_to(deltas, eps.shape)
        except ValueError as exc:
            raise InvalidParameter(
                "delta_history", delta_history, f"must broadcast to shape {eps.shape}"
            ) from exc
        u = self.bound_at(_prefix_sums(eps * eps))
        return np.where(_prefix_sums(deltas) > self.delta_prime, np.inf, u)


@frozen
class FilterOdometer(_PDPOdometer):
    """The filter odometer tuned at eps (FAC Thm 3): a line in V_n.

    y* = (sqrt(2ℓ + 2eps) − sqrt(2ℓ))², u = sqrt(y*·ℓ/2) + sqrt(ℓ/(2y*))·V + V/2; u = eps at V = y*.
    """

    eps: float = field(converter=as_float, validator=validator(positive))
    delta_prime: float = field(converter=as_float, validator=validator(probability))
    delta_second: float = field(converter=as_float, validator=validator(open_probability))

    @property
    def y_star(self) -> float:
        """y* = 2·rho* with rho* from `rho_for_dp`(eps, delta'') (same closed form)."""
        return 2.0 * rho_for_dp(self.eps, self.delta_second)

    def bound_at(self, V: npt.ArrayLike) -> FloatArray:
        """u as a function of V = Σ eps_m² (vectorised)."""
        v = _nonnegative_array("V", V)
        ell, y = neg_log_up(self.delta_second), self.y_star  # u increases in ℓ
        # six positive-term operations of relative error <= u each: at most 6 ulps below
        return up_array(math.sqrt(y * ell / 2.0) + (math.sqrt(ell / (2.0 * y)) + 0.5) * v, 6)


@frozen
class MixtureOdometer(_PDPOdometer):
    """The normal-mixture odometer (FAC Thm 3).

    u = sqrt(2(V + γ)·log((1/delta'')·sqrt((V + γ)/γ))) + V/2.
    """

    gamma: float = field(converter=as_float, validator=validator(positive))
    delta_prime: float = field(converter=as_float, validator=validator(probability))
    delta_second: float = field(converter=as_float, validator=validator(open_probability))

    def bound_at(self, V: npt.ArrayLike) -> FloatArray:
        """u as a function of V = Σ eps_m² (vectorised)."""
        v = _nonnegative_array("V", V)
        return up_array(NormalMixture(self.gamma, self.delta_second, sides=2)(v) + v / 2.0)


@frozen
class StitchedOdometer(_PDPOdometer):
    """The stitched odometer (FAC Thm 3); ∞ while V < v0.

    u = 1.7·sqrt(V·(log log(2V/v0) + 0.72·log(5.2/delta''))) + V/2.
    """

    v0: float = field(converter=as_float, validator=validator(positive))
    delta_prime: float = field(converter=as_float, validator=validator(probability))
    delta_second: float = field(converter=as_float, validator=validator(open_probability))

    def bound_at(self, V: npt.ArrayLike) -> FloatArray:
        """u as a function of V = Σ eps_m² (vectorised)."""
        v = _nonnegative_array("V", V)
        return up_array(FACStitched(self.v0, self.delta_second)(v) + v / 2.0)


@frozen
class BrownianOdometer:
    """The ex-post odometer for a sequence of Brownian mechanisms (APC Lemma 6.1, eq. 1).

    For BMs stopped at times t_i with sensitivities Δ_i, V = Σ Δ_i²/t_i and, with probability
    at least 1 − delta, for every m: Σ_(i<=m) L_i < Σ_(i<=m) Δ_i²/(2t_i) + ψ(V_m; γ, delta),
    ψ(v; γ, delta) = sqrt((v + γ)·log((v + γ)/(delta²·γ))). The drift Σ Δ_i²/(2t_i) = V/2.

    ``printed_apc_thm4=True`` gives APC Thm 4 as printed, ψ(V) without the drift. That form
    is WRONG once V is large: one BM at t = 0.01 has loss N(50, 100), which exceeds
    ψ(100; 1, 0.05) ≈ 32.7 with probability ≈ 0.96 (THEORY.md §5). It exists for audits.
    """

    gamma: float = field(converter=as_float, validator=validator(positive))
    delta: float = field(converter=as_float, validator=validator(open_probability))
    printed_apc_thm4: bool = field(default=False, kw_only=True)

    def psi(self, V: npt.ArrayLike) -> FloatArray:
        """ψ(V; γ, delta) = sqrt((V + γ)·log((V + γ)/(delta²·γ))) (vectorised)."""
        return apc_psi(_nonnegative_array("V", V), self.gamma, self.delta)

    def bound_at(self, V: npt.ArrayLike) -> FloatArray:
        """V/2 + ψ(V) (or ψ(V) alone for the printed, wrong, APC Thm 4)."""
        drift = 0.0 if self.printed_apc_thm4 else _nonnegative_array("V", V) / 2.0
        return up_array(self.psi(V) + drift)  # ψ is an upper bound; the sum one rounding

    def bound_from_times(
        self, times: npt.ArrayLike, sensitivities: npt.ArrayLike = 1.0
    ) -> FloatArray:
        """The bound after each BM, for stopped times along the last axis (vectorised)."""
        t = finite_array("times", times)
        if np.any(t <= 0.0):
            raise InvalidParameter("times", times, "must be > 0")
        d = finite_array("sensitivities", sensitivities)
        if np.any(d <= 0.0):
            raise InvalidParameter("sensitivities", sensitivities, "must be > 0")
        try:
            d = np.broadcast_to(d, t.shape)
        except ValueError as exc:
            raise InvalidParameter(
                "sensitivities", sensitivities, f"must broadcast to shape {t.shape}"
            ) from exc
        return self.bound_at(_prefix_sums(d * d / t))
