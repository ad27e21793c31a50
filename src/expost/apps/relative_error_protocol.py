"""APC Sec. 7's protocol, shared by every engine: its settings, one trial in a session, results.

`Settings` holds the protocol's parameters (APC Sec. 7's defaults) and builds its budget, grids
and schedules; `walk` runs one trial in a `PrivateSession` (pick the top count left with the
exponential mechanism, release it, until the budget cannot pay another round), whatever the
release (float Brownian or doubling: `expost.apps.relative_error_engines`; exact samplers:
`expost.apps.relative_error_exact`); `TrialResults` and `within_alpha` score it (APC Sec. 7.2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from attrs import converters, field, frozen, validators

from expost._validation import (
    as_float,
    open_probability,
    positive,
    positive_int,
    validator,
)
from expost.errors import InvalidParameter
from expost.filters import Conversion, Cost, GaussianDPFilter, UnifiedFilter
from expost.grids import OpenEpsilonGrid
from expost.mechanisms import DoublingMethod, ExponentialMechanism
from expost.session import PrivateSession
from expost.stopping import RelativeError

__all__ = [
    "ALL_METHODS",
    "DOUBLING_RATIO",
    "EXACT_METHODS",
    "METHODS",
    "Method",
    "Settings",
    "TrialResults",
    "histograms",
    "walk",
    "within_alpha",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
Method = Literal["bm", "doubling", "doubling-exact", "skellam"]
METHODS: tuple[Method, ...] = ("bm", "doubling")
"""The paper's methods, float samplers, batch engine."""
EXACT_METHODS: tuple[Method, ...] = ("doubling-exact", "skellam")
"""Exact samplers, one secure session per trial (`expost.apps.relative_error_exact`)."""
ALL_METHODS: tuple[Method, ...] = METHODS + EXACT_METHODS
DOUBLING_RATIO = 2.0
"""eps² doubles each try (APC Sec. 7.1)."""


def _grid_shape(_name: str, value: object) -> None:
    if value not in ("linear", "geometric"):
        raise InvalidParameter("grid", value, "must be 'linear' or 'geometric'")


def _conversion(_name: str, value: object) -> None:
    if value not in ("bun-steinke", "cks"):
        raise InvalidParameter("conversion", value, "must be 'bun-steinke' or 'cks'")


def _accounting(_name: str, value: object) -> None:
    if value not in ("zcdp", "gdp"):
        raise InvalidParameter("accounting", value, "must be 'zcdp' or 'gdp'")


def _grid_size(name: str, value: object) -> None:
    if positive_int(name, value) < 2:
        raise InvalidParameter(name, value, "must be >= 2")


@frozen
class Settings:
    """The protocol's parameters; the defaults are APC Sec. 7's.

    ``grid`` "linear": ``grid_size`` equally spaced eps² from ``start_eps2`` to the budget's
    largest level, every round. "geometric": eps² = start·r^k with r fixed so that the whole
    budget spans ``grid_size`` points (later rounds, with less budget, walk fewer points).
    ``stop_alpha`` (default alpha): the relative error the stopping rule checks; below alpha it
    leaves a margin for the many looks of a noise reduction (its first passage favours noise
    that inflates ŷ), precision being still measured at alpha.
    ``conversion`` sets the budget rho from (eps, delta'') by Bun–Steinke (APC Lemma 2.1, the
    paper's) or Canonne–Kamath–Steinke.
    ``accounting`` "zcdp": the paper's `UnifiedFilter`; "gdp": a `GaussianDPFilter` for the same
    (eps, delta) (THEORY §9; Gaussian tries and BM rounds cost mu² = eps², the exponential
    mechanism its bounded-range price mu(eps_EM/2)²). Both methods run under the one chosen.
    Budgets and spends are in rho units either way (mu²/2 under gdp: a BM stopped at eps² costs
    eps²/2 in both).
    ``skellam_level``: the ex-post level the Skellam boundary is tuned for (the exact table's
    ``skellam`` method, `expost.apps.relative_error_exact`).
    """

    alpha: float = field(default=0.1, converter=as_float, validator=validator(positive))
    eps_em: float = field(default=0.1, converter=as_float, validator=validator(positive))
    eps: float = field(default=10.0, converter=as_float, validator=validator(positive))
    delta: float = field(default=1e-6, converter=as_float, validator=validator(open_probability))
    start_eps2: float = field(default=1e-4, converter=as_float, validator=validator(positive))
    grid_size: int = field(default=1_000, validator=validator(_grid_size))
    grid: Literal["linear", "geometric"] = field(default="linear", validator=validator(_grid_shape))
    conversion: Conversion = field(default="bun-steinke", validator=validator(_conversion))
    stop_alpha: float | None = field(
        default=None,
        converter=converters.optional(as_float),
        validator=validators.optional(validator(positive)),
    )
    accounting: Literal["zcdp", "gdp"] = field(default="zcdp", validator=validator(_accounting))
    skellam_level: float = field(default=1.0, converter=as_float, validator=validator(positive))
    _filter: UnifiedFilter | GaussianDPFilter = field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.accounting == "gdp" and self.conversion != "bun-steinke":
            raise InvalidParameter("conversion", self.conversion, "applies to zcdp accounting only")
        budget = (
            GaussianDPFilter.from_dp(self.eps, self.delta)
            if self.accounting == "gdp"
            else UnifiedFilter.from_dp(self.eps, self.delta, self.conversion)
        )
        object.__setattr__(self, "_filter", budget)  # solved once: from_dp is a root search
        if self.rho < self.start_eps2 / 2.0:
            raise InvalidParameter(
                "start_eps2", self.start_eps2, "costs more than the whole budget"
            )

    def filter(self) -> UnifiedFilter | GaussianDPFilter:
        """The budget: `UnifiedFilter.from_dp(eps, delta, conversion)` (APC Thm 5), or
        `GaussianDPFilter.from_dp(eps, delta)` under gdp (fresh: nothing spent)."""
        return self._filter

    @property
    def unit(self) -> float:
        """The filter's unit per rho unit: 1 (rho), 2 (mu² = 2·rho for Gaussian and BM rounds)."""
        return 2.0 if self.accounting == "gdp" else 1.0

    @property
    def rho(self) -> float:
        """The budget in rho units: rho, or mu²/2 (exact halving)."""
        return self.filter().budget / self.unit

    @property
    def em_rho(self) -> float:
        """The exponential mechanism's price in rho units (the filter's price / ``unit``)."""
        return self.filter().price(self.mechanism.cost())[0] / self.unit

    @property
    def mechanism(self) -> ExponentialMechanism:
        """The selection: Gumbel-max with eps_EM on monotone counts (eps_EM²/8 zCDP)."""
        return ExponentialMechanism(self.eps_em, monotone=True)

    @property
    def stop(self) -> RelativeError:
        """The APC stopping condition, checked at ``stop_alpha`` (default alpha)."""
        return RelativeError(self.alpha if self.stop_alpha is None else self.stop_alpha)

    @property
    def ratio(self) -> float:
        """The geometric grid's ratio: start·r^(grid_size − 1) = 2·rho (the whole budget)."""
        return float((2.0 * self.rho / self.start_eps2) ** (1.0 / (self.grid_size - 1)))

    def open_grid(self) -> OpenEpsilonGrid:
        """The BM grid before the budget closes it (`PrivateSession.brownian` clips it)."""
        if self.grid == "linear":
            return OpenEpsilonGrid.linear_in_eps2(self.start_eps2, self.grid_size)
        return OpenEpsilonGrid.geometric_in_eps2(self.start_eps2, self.ratio)

    def doubling(self, max_tries: int) -> DoublingMethod:
        """The doubling schedule with at most ``max_tries`` tries."""
        return DoublingMethod(
            1.0, self.start_eps2, DOUBLING_RATIO, stop=self.stop, max_tries=max_tries
        )


@frozen(eq=False)
class TrialResults:
    """Per trial: counts returned, how many of them are within alpha, realised rho spent."""

    returned: IntArray
    precise: IntArray
    spent: FloatArray

    @property
    def precision(self) -> FloatArray:
        """precise / returned, and 1 where nothing was returned (APC Sec. 7.2)."""
        r = self.returned
        out: FloatArray = np.where(r > 0, self.precise / np.maximum(r, 1), 1.0)
        return out


def within_alpha(released: FloatArray, truth: FloatArray, alpha: float) -> npt.NDArray[np.bool_]:
    """|ŷ/y − 1| < alpha (APC Sec. 7.2's precision), written so that a true count of 0 is never
    precise."""
    result: npt.NDArray[np.bool_] = np.abs(released - truth) < alpha * truth
    return result


def walk(
    session: PrivateSession,
    counts: npt.NDArray[Any],
    alpha: float,
    selection: tuple[float, Cost],
    cheapest: Cost,
    release: Callable[[float], tuple[bool, float]],
) -> tuple[int, int]:
    """One trial of the protocol in ``session``: while the budget pays a selection (eps, cost)
    plus the ``cheapest`` release, pick the top count left and ``release`` it (stopped?, value).
    Returns (counts returned, how many of them within ``alpha``)."""
    eps, cost = selection
    left = np.ones(counts.size, dtype=np.bool_)
    returned = precise = 0
    while left.any():
        f = session.filter
        if not (f.admits(cost) and f.spend(cost).admits(cheapest)):
            break
        i = session.exponential_mechanism(counts, eps, monotone=True, candidates=left)
        left[i] = False
        y = float(counts[i])
        ok, value = release(y)
        if ok:
            returned += 1
            precise += bool(within_alpha(np.array(value), np.array(y), alpha))
    return returned, precise


def histograms(counts: npt.ArrayLike) -> FloatArray:
    """``counts`` as float (trials, m) histograms, m >= 2 (else InvalidParameter)."""
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] < 2 or not np.all(np.isfinite(c)) or np.any(c < 0.0):
        raise InvalidParameter("counts", c.shape, "must be (trials, m) finite counts >= 0, m >= 2")
    return c
