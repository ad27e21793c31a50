"""Audits of the backward martingale and of sequences of adaptively chosen BMs (APC Lemma 6.1, eq. 1).

- ``backward-martingale-stopped`` (APC Lemma 6.1): ``E[M(τ)] <= 1`` for
  ``M(t) = exp(λB(t)/t − λ²/(2t))`` at stopping times τ of the reversed filtration (the grid
  walked from large t to small), with rules drawn from the run's generator; twin: drift λ²/(4t).
- ``apc-eq1-ville``: the product of stopped e-values of adaptively chosen BMs crosses 1/delta
  with probability <= delta (Ville); twin: the e-values with drift λ²/(4t).
- ``apc-eq1-odometer``: the corrected BM odometer (APC Thm 4 with its drift, THEORY §5) for a
  sequence of adaptively chosen BMs, at every prefix; twin: the printed odometer.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import numpy.typing as npt

from expost.audit._shared import (
    MENU,
    ROUNDS,
    THM4_GAMMA,
    VILLE_LAMBDAS,
    choice,
    first_or_last,
    log_e_values,
    odometer_step,
    round_paths,
    runs,
    ville_step,
)
from expost.audit.claims import EValueClaim, ProbabilityClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, QUICK, register
from expost.odometers import BrownianOdometer
from expost.processes import sample_brownian_grid

__all__ = [
    "apc_eq1_odometer",
    "apc_eq1_ville",
    "backward_martingale_stopped",
    "odometer_sequence_exceeds",
    "stopped_backward_martingale",
    "ville_product_crosses",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_DELTA = 0.05


# --- backward martingale at reverse stopping times -------------------------------------------

_REVERSE_TIMES = tuple(np.geomspace(8.0, 0.25, 40))
_LAMBDA = 1.0


def stopped_backward_martingale(drift: float, n: int, rng: np.random.Generator) -> FloatArray:
    """``M(τ)`` for τ a stopping time of the reversed filtration, one rule per run.

    The grid is walked from large t to small; each run draws its rule from ``rng``: stop once
    M(t) >= c (c in [1.5, 6]), once M(t) <= c (c in [0.2, 0.8]), once |B(t)| >= z·sqrt(t)
    (z in [1, 2.5]), or at a fixed index. Each looks only at the path at times >= t.
    """
    times = np.asarray(_REVERSE_TIMES)
    b = sample_brownian_grid(times, n, 1, rng)[..., 0]
    log_m = log_e_values(b, times, _LAMBDA, drift)
    kind = rng.integers(0, 4, size=n)
    up = math.log(1.5) + rng.random(n) * math.log(4.0)
    down = math.log(0.2) + rng.random(n) * math.log(4.0)
    z = 1.0 + 1.5 * rng.random(n)
    fixed = rng.integers(0, times.size, size=n)
    fired = np.select(
        [kind[:, None] == 0, kind[:, None] == 1, kind[:, None] == 2],
        [
            log_m >= up[:, None],
            log_m <= down[:, None],
            np.abs(b) >= z[:, None] * np.sqrt(times),
        ],
        np.arange(times.size) == fixed[:, None],
    )
    stop = first_or_last(fired)
    result: FloatArray = np.exp(log_m[np.arange(n), stop])
    return result


@register(QUICK, PAPER)
def backward_martingale_stopped(suite: str) -> Audit:
    """E[M(τ)] <= 1 at reverse stopping times (APC Lemma 6.1)."""
    return Audit(
        name="backward-martingale-stopped",
        source="APC Lemma 6.1",
        statement=(
            f"E[exp(lam B(tau)/tau - lam^2/(2 tau))] <= 1, lam={_LAMBDA:g}, tau a stopping time "
            f"of the reversed filtration on {len(_REVERSE_TIMES)} times in [0.25, 8] "
            "(4 rule families drawn per run)"
        ),
        claim=EValueClaim(),
        simulate=partial(stopped_backward_martingale, 0.5),
        n=runs(suite, 20_000, 1_000_000),
        twin=Twin(
            "backward-martingale-stopped/drift-lam2-over-4t",
            EValueClaim(),
            partial(stopped_backward_martingale, 0.25),
        ),
    )


# --- sequences of adaptively chosen BMs: Ville and the BM odometer ---------------------------


def ville_product_crosses(
    drift: float, delta: float, n: int, rng: np.random.Generator
) -> BoolArray:
    """Does ``∏_(i<=m) M_i(τ_i)`` reach 1/delta for some m (APC eq. 1, Ville)?

    BM i has a grid and a λ_i chosen from the previous released value; it is walked from large
    t to small and stopped as soon as the running product reaches 1/delta (else at its end).
    """
    log_product = np.zeros(n)
    last = np.zeros(n)
    crossed = np.zeros(n, dtype=np.bool_)
    target = math.log(1.0 / delta)
    for _ in range(ROUNDS):
        lam = np.asarray(VILLE_LAMBDAS)[choice(last, len(VILLE_LAMBDAS))]
        for path in round_paths(choice(-last, len(MENU)), rng):
            ville_step((log_product, last), path, lam, drift, target)
        crossed |= log_product >= target
    return crossed


def odometer_sequence_exceeds(
    odometer: BrownianOdometer, n: int, rng: np.random.Generator
) -> BoolArray:
    """Does the running loss of a sequence of adaptive BMs reach the odometer at some prefix?

    Sensitivity 1, loss of BM i stopped at t: L_i = 1/(2t) + W_i(t)/t (APC Thm 3). BM i's grid
    is chosen from the previous released value; the adversary stops it as soon as the running
    loss reaches the bound for the running V = Σ 1/t_i (else at its end).
    """
    loss = np.zeros(n)
    volume = np.zeros(n)
    last = np.zeros(n)
    crossed = np.zeros(n, dtype=np.bool_)
    for _ in range(ROUNDS):
        for path in round_paths(choice(last, len(MENU)), rng):
            odometer_step(odometer, (loss, volume, last), path)
        crossed |= loss >= odometer.bound_at(volume)
    return crossed


@register(QUICK, PAPER)
def apc_eq1_ville(suite: str) -> Audit:
    """Ville's inequality for the product of stopped e-values of adaptive BMs (APC eq. 1)."""
    return Audit(
        name="apc-eq1-ville",
        source="APC eq. 1, Lemma 6.1",
        statement=(
            f"{ROUNDS} BMs, grids and lam_i in {{0.5, 1, 2}} chosen from past outputs, each "
            f"stopped at a reverse stopping time: P(exists m: prod M_i >= 1/delta) <= {_DELTA:g}"
        ),
        claim=ProbabilityClaim(_DELTA),
        simulate=partial(ville_product_crosses, 0.5, _DELTA),
        n=runs(suite, 20_000, 400_000),
        twin=Twin(
            "apc-eq1-ville/drift-lam2-over-4t",
            ProbabilityClaim(_DELTA),
            partial(ville_product_crosses, 0.25, _DELTA),
        ),
    )


@register(PAPER)
def apc_eq1_odometer(suite: str) -> Audit:
    """The corrected BM odometer over a sequence of adaptive BMs (APC Lemma 6.1, eq. 1)."""
    return Audit(
        name="apc-eq1-odometer",
        source="APC Lemma 6.1, eq. 1 (Thm 4 with drift)",
        statement=(
            f"{ROUNDS} BMs with adaptive grids, adversarial stops: P(exists m: sum L_i >= "
            f"V_m/2 + psi(V_m; {THM4_GAMMA:g}, {_DELTA:g})) <= {_DELTA:g}"
        ),
        claim=ProbabilityClaim(_DELTA),
        simulate=partial(odometer_sequence_exceeds, BrownianOdometer(THM4_GAMMA, _DELTA)),
        n=runs(suite, 20_000, 400_000),
        twin=Twin(
            "apc-eq1-odometer/printed-without-drift",
            ProbabilityClaim(_DELTA),
            partial(
                odometer_sequence_exceeds,
                BrownianOdometer(THM4_GAMMA, _DELTA, printed_apc_thm4=True),
            ),
        ),
    )
