"""Audits of fully adaptive composition: privacy filters (THEORY §4) and odometers (§5).

Filters, by exact-loss simulation of whole interactions: every round's size (and, for the
unified filter, its kind) is chosen from the previous released value; a round runs only if the
library's filter admits it and its realised cost is recorded with ``spend``. The analyst is
adversarial: it knows x and x', stops a Brownian mechanism as soon as the total loss exceeds the
claimed eps and then ends the interaction. Claim: ``P(total loss > eps) <= delta''`` for the DP
statement of the filter (a zCDP filter's by APC Lemma 2.1). Twin: the same interaction audited
against the smaller eps ``rho + sqrt(rho·log(1/delta''))/2``. (APC Thm 5 prints
``rho + 2·sqrt(2·rho·log(1/delta''))``, which is LOOSER than Lemma 2.1's value: not a planted bug.)

- ``fac-thm1-zcdp-filter``: `ZCDPFilter`, Gaussian rounds.
- ``fac-thm2-dp-filter``: `ApproxDPFilter`, Laplace rounds.
- ``apc-lemma6.2-brownian-filter``: `BrownianFilter`, Brownian mechanisms on adaptive grids.
- ``apc-thm5-unified-filter``: `UnifiedFilter`, Gaussian and Brownian rounds mixed.

Odometers (FAC Thm 3): ``fac-thm3-odometer/{filter,mixture,stitched}``: Laplace and
randomized-response rounds with eps_n chosen from past outputs; the running loss reaches the
odometer at some prefix with probability <= delta''. Twin: the odometer at half its value.

The filters are the library's immutable objects, one per simulated interaction; the mechanisms'
releases are drawn in one vectorised call per round and menu entry.
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
    laplace_loss,
    neighbours,
    preferred,
    runs,
)
from expost.audit.claims import ProbabilityClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, QUICK, register
from expost.filters import (
    ApproxDPFilter,
    BrownianFilter,
    Cost,
    DPCost,
    UnifiedFilter,
    ZCDPCost,
    ZCDPFilter,
)
from expost.guarantees import ZCDP, zcdp_to_dp
from expost.mechanisms.additive import GaussianMechanism, LaplaceMechanism
from expost.mechanisms.exponential import ExponentialMechanism
from expost.odometers import FilterOdometer, MixtureOdometer, StitchedOdometer

__all__ = [
    "filter_audits",
    "filter_interaction_exceeds",
    "odometer_audits",
    "odometer_crossed",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]
Kind = Literal["gaussian", "laplace", "brownian", "mixed"]
RhoFilter = ZCDPFilter | UnifiedFilter | BrownianFilter | ApproxDPFilter

_RHO, _DELTA2, _ROUNDS = 0.5, 0.1, 8
_SHARES = (0.5, 0.25, 0.125, 0.0625)  # round sizes as shares of the rho budget, largest first
_GRID_POINTS, _GRID_SPAN = 24, 16.0


def _budget_rho(filt: RhoFilter) -> float:
    return filt.rho_budget if isinstance(filt, ApproxDPFilter) else filt.rho


def _round_kind(kind: Kind, r: int, last: FloatArray) -> BoolArray:
    """Which runs play a Brownian round now (the unified analyst alternates on the output's sign)."""
    if kind == "brownian":
        return np.ones(last.size, dtype=np.bool_)
    if kind == "mixed":
        flag: BoolArray = (r + (last > 0)) % 2 == 1
        return flag
    return np.zeros(last.size, dtype=np.bool_)


def _one_shot_round(
    filters: list[RhoFilter],
    rows: IndexArray,
    state: tuple[FloatArray, FloatArray],
    kind: Kind,
    rng: np.random.Generator,
) -> None:
    """A Gaussian (zCDP) or Laplace (DP) round of an admitted size; updates loss and last output."""
    loss, last = state
    budget = _budget_rho(filters[0])
    fx, fxp = neighbours(1.0, 1)
    if kind == "laplace":
        eps_menu = [math.sqrt(2.0 * share * budget) for share in _SHARES]
        costs: list[Cost] = [DPCost(e) for e in eps_menu]
    else:
        costs = [ZCDPCost(share * budget) for share in _SHARES]
    choice = admitted(filters, rows, costs, preferred(last[rows], len(costs)))
    for g, cost in enumerate(costs):
        mine = rows[choice == g]
        if mine.size == 0:
            continue
        if kind == "laplace":
            lap = LaplaceMechanism(1.0, eps_menu[g])
            y = lap.run_batch(fx, mine.size, rng)
            round_loss = laplace_loss(y, float(lap.scale), fx, fxp)
        else:
            gauss = GaussianMechanism(1.0, _SHARES[g] * budget)
            y = gauss.run_batch(fx, mine.size, rng)
            round_loss = gaussian_loss(y, gauss.sigma**2, fx, fxp)
        loss[mine] += round_loss
        last[mine] = y[:, 0] - fx[0]
        for i in mine:
            filters[i] = filters[i].spend(cost)


def _brownian_round(
    filters: list[RhoFilter],
    rows: IndexArray,
    state: tuple[FloatArray, FloatArray],
    target: float,
    rng: np.random.Generator,
) -> None:
    """A Brownian mechanism on an admitted grid, stopped once the total loss exceeds ``target``."""
    budget = _budget_rho(filters[0])
    grids = [
        np.geomspace(_GRID_SPAN, 1.0, _GRID_POINTS) / (2.0 * share * budget) for share in _SHARES
    ]
    brownian_round(filters, rows, grids, state, target, rng)


def filter_interaction_exceeds(
    filt: RhoFilter, kind: Kind, target: float, n: int, rng: np.random.Generator
) -> BoolArray:
    """``n`` adaptive interactions under copies of ``filt``: is the total loss above ``target``?"""
    filters: list[RhoFilter] = [filt] * n
    loss, last = np.zeros(n), np.zeros(n)
    for r in range(_ROUNDS):
        active = loss <= target
        brownian = _round_kind(kind, r, last)
        one_shot: Kind = "laplace" if kind == "laplace" else "gaussian"
        _one_shot_round(filters, np.flatnonzero(active & ~brownian), (loss, last), one_shot, rng)
        _brownian_round(filters, np.flatnonzero(active & brownian), (loss, last), target, rng)
    return np.asarray(loss > target)


def _claimed_eps(filt: RhoFilter) -> float:
    if isinstance(filt, ApproxDPFilter | BrownianFilter):
        return filt.guarantee().eps
    return zcdp_to_dp(ZCDP(filt.rho), _DELTA2).eps


def _smaller_eps(rho: float) -> float:
    """The planted bug: a quarter of Lemma 2.1's deviation term, rho + sqrt(rho·log(1/delta''))/2."""
    return rho + math.sqrt(rho * math.log(1.0 / _DELTA2)) / 2.0


_FILTERS: list[tuple[str, str, RhoFilter, Kind]] = [
    ("fac-thm1-zcdp-filter", "FAC Thm 1 (+ APC Lemma 2.1)", ZCDPFilter(_RHO), "gaussian"),
    (
        "fac-thm2-dp-filter",
        "FAC Thm 2",
        ApproxDPFilter(_RHO + 2.0 * math.sqrt(_RHO * math.log(1.0 / _DELTA2)), 0.0, _DELTA2),
        "laplace",
    ),
    ("apc-lemma6.2-brownian-filter", "APC Lemma 6.2", BrownianFilter(_RHO, _DELTA2), "brownian"),
    (
        "apc-thm5-unified-filter",
        "APC Thm 5 (+ Lemma 2.1)",
        UnifiedFilter(_RHO, 0.0, _DELTA2),
        "mixed",
    ),
]

_ROUND_WORDS = {
    "gaussian": "Gaussian rounds",
    "laplace": "Laplace rounds",
    "brownian": "Brownian mechanisms on adaptive grids",
    "mixed": "Gaussian and Brownian rounds mixed",
}


@register(QUICK, PAPER)
def filter_audits(suite: str) -> list[Audit]:
    """P(total loss > eps) <= delta'' for each filter's DP statement (quick: the unified one)."""
    chosen = _FILTERS if suite == PAPER else [f for f in _FILTERS if f[3] == "mixed"]
    audits = []
    for name, source, filt, kind in chosen:
        eps = _claimed_eps(filt)
        wrong = _smaller_eps(_budget_rho(filt))
        audits.append(
            Audit(
                name=name,
                source=source,
                statement=(
                    f"{type(filt).__name__} at rho={_budget_rho(filt):.4g}, {_ROUNDS} rounds of "
                    f"{_ROUND_WORDS[kind]} sized from past outputs, adversarial stop: "
                    f"P(total loss > eps={eps:.4g}) <= {_DELTA2:g}"
                ),
                claim=ProbabilityClaim(_DELTA2),
                simulate=partial(filter_interaction_exceeds, filt, kind, eps),
                n=runs(suite, 3_000, 40_000),
                twin=Twin(
                    f"{name}/claims-eps-{wrong:.3g}",
                    ProbabilityClaim(_DELTA2),
                    partial(filter_interaction_exceeds, filt, kind, wrong),
                ),
                chunk_size=5_000,
            )
        )
    return audits


# --- odometers ---------------------------------------------------------------------------------

Odometer = FilterOdometer | MixtureOdometer | StitchedOdometer
_ODOMETER_ROUNDS = 40
_EPS_MENU = (0.1, 0.2, 0.35, 0.5)
_HIGH, _LOW = np.array([1.0, 0.0]), np.array([0.0, 0.0])  # monotone scores under x and x'


def odometer_crossed(
    odometer: Odometer, scale: float, n: int, rng: np.random.Generator
) -> BoolArray:
    """Does the running loss reach ``scale`` × the odometer at some prefix?

    Round n is a Laplace release (even outputs so far) or randomized response, the exponential
    mechanism on two candidates with monotone scores (odd), at eps_n from the previous output.
    """
    fx, fxp = neighbours(1.0, 1)
    loss = np.zeros((n, _ODOMETER_ROUNDS))
    eps = np.zeros((n, _ODOMETER_ROUNDS))
    last = np.zeros(n)
    total = np.zeros(n)
    rr = np.zeros(n, dtype=np.bool_)
    for r in range(_ODOMETER_ROUNDS):
        choice = preferred(last + total, len(_EPS_MENU))
        for g, e in enumerate(_EPS_MENU):
            for use_rr in (False, True):
                rows = np.flatnonzero((choice == g) & (rr == use_rr))
                if rows.size == 0:
                    continue
                if use_rr:
                    em = ExponentialMechanism(e, monotone=True)
                    picked = em.run_batch(_HIGH, rows.size, rng)
                    law = np.log(em.selection_probabilities(np.stack([_HIGH, _LOW])))
                    loss[rows, r] = law[0, picked] - law[1, picked]
                    last[rows] = picked
                else:
                    lap = LaplaceMechanism(1.0, e)
                    y = lap.run_batch(fx, rows.size, rng)
                    loss[rows, r] = laplace_loss(y, float(lap.scale), fx, fxp)
                    last[rows] = y[:, 0] - fx[0]
                eps[rows, r] = e
        total += loss[:, r]
        rr = (np.floor(np.abs(last) * 4.0) % 2).astype(np.bool_)
    running = np.cumsum(loss, axis=1)
    return np.asarray(np.any(running >= scale * odometer.bound(eps), axis=1))


_ODOMETERS: list[tuple[str, Odometer]] = [
    ("filter", FilterOdometer(3.0, 0.0, _DELTA2)),
    ("mixture", MixtureOdometer(1.0, 0.0, _DELTA2)),
    ("stitched", StitchedOdometer(0.5, 0.0, _DELTA2)),
]


@register(QUICK, PAPER)
def odometer_audits(suite: str) -> list[Audit]:
    """FAC Thm 3: the running loss stays below the odometer at every prefix (quick: mixture)."""
    chosen = _ODOMETERS if suite == PAPER else [o for o in _ODOMETERS if o[0] == "mixture"]
    audits = []
    for label, odometer in chosen:
        name = f"fac-thm3-odometer/{label}"
        audits.append(
            Audit(
                name=name,
                source="FAC Thm 3",
                statement=(
                    f"{type(odometer).__name__}, {_ODOMETER_ROUNDS} Laplace / randomized-response "
                    f"rounds with eps_n in {_EPS_MENU} from past outputs: P(exists n: L_(1:n) >= "
                    f"u_n) <= {_DELTA2:g}"
                ),
                claim=ProbabilityClaim(_DELTA2),
                simulate=partial(odometer_crossed, odometer, 1.0),
                n=runs(suite, 20_000, 400_000),
                twin=Twin(
                    f"{name}/half-the-odometer",
                    ProbabilityClaim(_DELTA2),
                    partial(odometer_crossed, odometer, 0.5),
                ),
                chunk_size=20_000,
            )
        )
    return audits
