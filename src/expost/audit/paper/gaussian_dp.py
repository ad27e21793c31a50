"""Audit of the Gaussian-DP filter (THEORY §9; Smith–Thakurta 2022, beyond the papers).

Exact-loss simulation of whole adaptive interactions, as for the rho filters
(`expost.audit.paper.composition`): each round's kind — a Gaussian release, a Brownian mechanism
on a grid, or the exponential mechanism on two candidates with monotone scores — and its size
come from the previous released value; a round runs only if the library's `GaussianDPFilter`
admits it, and its realised cost is recorded with ``spend``. The analyst knows x and x' and
stops a Brownian mechanism as soon as the total loss exceeds eps + 1: that loss is banked and
the budget left for later rounds.

Claim: the filter's (eps, delta)-DP statement (`GaussianDPFilter.from_dp`). For a pair of
output laws the smallest delta at eps is the hockey-stick divergence
``E_x[(1 − e^(eps − L))⁺]`` of the total loss L, so the audit tests ``E[X] <= delta`` for
``X = (1 − e^(eps − L))⁺`` (`EValueClaim`); ``P(L > eps)`` would be the wrong quantity (a
Gaussian exceeds it: mu-GDP is not (eps, delta)-pDP). Twins: Brownian rounds charged
Δ²/(2T) — the zCDP rho — instead of mu² = Δ²/T (its analyst plays Brownian rounds only); and a filter whose budget is mu instead of mu²
(for mu < 1 an overspend).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Literal

import numpy as np
import numpy.typing as npt

from expost.audit._shared import (
    admitted,
    brownian_round,
    gaussian_loss,
    neighbours,
    preferred,
    runs,
)
from expost.audit.claims import EValueClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, QUICK, register
from expost.filters import BoundedRangeCost, Cost, GaussianCost, GaussianDPFilter
from expost.mechanisms.additive import GaussianMechanism
from expost.mechanisms.exponential import ExponentialMechanism

__all__ = ["gdp_filter_audits", "gdp_interaction_excess"]

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]
Bug = Literal["none", "bm-charged-rho", "budget-mu"]

_EPS, _DELTA, _ROUNDS = 0.5, 0.1, 8
_SHARES = (0.5, 0.25, 0.125, 0.0625)  # round sizes as shares of the mu² budget, largest first
_EM_EPS = (0.8, 0.4, 0.2)  # ranges of the exponential-mechanism rounds
_GRID_POINTS, _GRID_SPAN = 24, 16.0
_BANK = 1.0  # a BM stops once L > eps + _BANK: the loss is banked, the rest of the budget saved
_HIGH, _LOW = np.array([1.0, 0.0]), np.array([0.0, 0.0])  # monotone scores under x and x'


def _gaussian_round(
    filters: list[GaussianDPFilter], rows: IndexArray, state: tuple[FloatArray, FloatArray],
    budget: float, rng: np.random.Generator,
) -> None:  # fmt: skip
    loss, last = state
    fx, fxp = neighbours(1.0, 1)
    rhos = [share * budget / 2.0 for share in _SHARES]
    costs: list[Cost] = [GaussianCost(r) for r in rhos]
    choice = admitted(filters, rows, costs, preferred(last[rows], len(costs)))
    for g, cost in enumerate(costs):
        mine = rows[choice == g]
        if mine.size:
            gauss = GaussianMechanism(1.0, rhos[g])
            y = gauss.run_batch(fx, mine.size, rng)
            loss[mine] += gaussian_loss(y, gauss.sigma**2, fx, fxp)
            last[mine] = y[:, 0] - fx[0]
            for i in mine:
                filters[i] = filters[i].spend(cost)


def _em_round(
    filters: list[GaussianDPFilter], rows: IndexArray, state: tuple[FloatArray, FloatArray],
    rng: np.random.Generator,
) -> None:  # fmt: skip
    loss, last = state
    costs: list[Cost] = [BoundedRangeCost(e) for e in _EM_EPS]
    choice = admitted(filters, rows, costs, preferred(last[rows], len(costs)))
    for g, e in enumerate(_EM_EPS):
        mine = rows[choice == g]
        if mine.size:
            em = ExponentialMechanism(e, monotone=True)
            picked = em.run_batch(_HIGH, mine.size, rng)
            law = np.log(em.selection_probabilities(np.stack([_HIGH, _LOW])))
            loss[mine] += law[0, picked] - law[1, picked]
            last[mine] = picked - 0.5
            for i in mine:
                filters[i] = filters[i].spend(costs[g])


def _brownian_round(
    filters: list[GaussianDPFilter], rows: IndexArray, state: tuple[FloatArray, FloatArray],
    budget: float, bug: Bug, rng: np.random.Generator,
) -> None:  # fmt: skip
    """A BM on a grid whose smallest time costs share·budget, stopped once L > eps + _BANK."""
    charged = 2.0 if bug == "bm-charged-rho" else 1.0  # the bug records T as 2T: Δ²/(2T)
    grids = [
        np.geomspace(_GRID_SPAN, 1.0, _GRID_POINTS) / (charged * share * budget)
        for share in _SHARES
    ]
    brownian_round(filters, rows, grids, state, _EPS + _BANK, rng, charged)


def gdp_interaction_excess(bug: Bug, n: int, rng: np.random.Generator) -> FloatArray:
    """``n`` adaptive interactions: (1 − e^(eps − L))⁺ of each total loss L."""
    honest = GaussianDPFilter.from_dp(_EPS, _DELTA)
    filt = GaussianDPFilter(math.sqrt(honest.mu)) if bug == "budget-mu" else honest
    filters = [filt] * n
    budget = filt.budget
    loss, last = np.zeros(n), np.zeros(n)
    for _ in range(_ROUNDS):
        # the analyst of the BM twin plays Brownian rounds only, where the bug is
        kind = np.ones(n, dtype=np.intp) if bug == "bm-charged-rho" else preferred(last + loss, 3)
        _gaussian_round(filters, np.flatnonzero(kind == 0), (loss, last), budget, rng)
        _brownian_round(filters, np.flatnonzero(kind == 1), (loss, last), budget, bug, rng)
        _em_round(filters, np.flatnonzero(kind == 2), (loss, last), rng)
    excess: FloatArray = np.maximum(0.0, -np.expm1(_EPS - loss))
    return excess


@register(QUICK, PAPER)
def gdp_filter_audits(suite: str) -> list[Audit]:
    """E[(1 − e^(eps − L))⁺] <= delta for the GDP filter's (eps, delta) (Dong–Roth–Su Cor 2.13)."""
    mu = GaussianDPFilter.from_dp(_EPS, _DELTA).mu
    twin_bug: Bug = "bm-charged-rho" if suite == QUICK else "budget-mu"
    return [
        Audit(
            name=f"gdp-filter/twin-{bug}",
            source="Smith–Thakurta 2022 (THEORY §9)",
            statement=(
                f"GaussianDPFilter mu={mu:.4g} (from (eps, delta) = ({_EPS:g}, {_DELTA:g})), "
                f"{_ROUNDS} Gaussian / Brownian / exponential-mechanism rounds chosen from past "
                f"outputs, adversarial stop: hockey-stick E[(1 − e^(eps − L))+] <= {_DELTA:g}"
            ),
            claim=EValueClaim(_DELTA),
            simulate=partial(gdp_interaction_excess, "none"),
            n=runs(suite, 3_000, 40_000),
            twin=Twin(
                f"gdp-filter/{bug}", EValueClaim(_DELTA), partial(gdp_interaction_excess, bug)
            ),
            chunk_size=4_000,
        )
        for bug in ((twin_bug,) if suite == QUICK else ("bm-charged-rho", "budget-mu"))
    ]
