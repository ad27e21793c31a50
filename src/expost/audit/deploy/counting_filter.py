"""The counting filter (`PLDFilter`) under adaptive stopping at deployment deltas (THEORY §12).

As `counting-filter/laplace-stopping` (`expost.audit.paper.counting_filter`) at (eps, delta) =
(10, delta) for the deploy deltas: Laplace rounds of eps0 = 0.1 on a scalar of sensitivity 1, as
many as `PLDFilter(10, delta, LaplaceCost(0.1))` admits (K = 357 at 1e-6), an analyst stopping
once the loss falls to −2·eps0 or rises past eps + 1. Claim: ``E[(1 − e^(eps − L))⁺] <= delta``.

The rule is simulated as stated: a round's loss |y| − |y − eps0| is +eps0 for y >= eps0, −eps0
for y <= 0 and 2y − eps0 between, so the loss is kept as eps0·j + 2·s with j an integer (each
round adds ±1) and s the sum of the outputs that fell strictly between 0 and eps0. A path of
atoms only (s = 0) is compared in integers (`expost.audit.paper.counting_filter.stops`): it
stops exactly at −2·eps0 (summing ±eps0 in floats read −0.19999999999999996 there and went on).
With s > 0 the loss is a continuous variable, compared in floats; only a tie, of probability 0,
could be misread.

Proposal and weight bound: every round's output tilted by θ towards high loss
(`expost.audit.tilting.tilted_laplace`), its exact ``log M(θ) = log E[e^(θL)]``
(`laplace_log_mgf`) added to the log-weight, so the stopped run's weight is
``exp(−θ·L + τ·log M(θ))`` after τ <= K rounds (the stopping time is a function of the outputs:
the likelihood ratio of the stopped path). As log M(θ) >= 0, ``w·(1 − e^(eps − L))⁺ <=
exp(K·log M(θ) − θ·eps)·θ^θ/(1 + θ)^(1+θ)`` (the maximum over L, as `hockey_stick_bound`),
times `ROUNDING_MARGIN`; θ minimises it (the log-bound is convex in θ).
Twin ``twice-the-rounds``: a filter admitting 2K rounds, with its own θ and bound.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize_scalar

from expost.audit.core import Audit
from expost.audit.paper.counting_filter import filter_rounds, stops
from expost.audit.registry import DEPLOY, DEPLOY_QUICK, register_at_deltas
from expost.audit.tilting import (
    ROUNDING_MARGIN,
    ImportanceCase,
    in_suite,
    laplace_log_mgf,
    tilted_laplace,
)
from expost.filters import LaplaceCost, PLDFilter

__all__ = ["deploy_counting_filter_audits", "tilted_laplace_stopping", "tilting"]

FloatArray = npt.NDArray[np.float64]

EPS, EPS0 = 10.0, 0.1
_FX, _FXP = np.array([EPS0]), np.array([0.0])  # f(x), f(x') over the scale b = 1


def _log_bound(rounds: int, theta: float) -> float:
    shape = theta * math.log(theta) - (1.0 + theta) * math.log1p(theta)
    return rounds * float(laplace_log_mgf(EPS0, theta)) - theta * EPS + shape


def tilting(rounds: int) -> tuple[float, float]:
    """θ minimising the weight bound of ``rounds`` rounds, and that bound times the margin."""
    best = minimize_scalar(lambda t: _log_bound(rounds, t), bounds=(1e-6, 100.0), method="bounded")
    theta = float(best.x)
    return theta, math.exp(_log_bound(rounds, theta)) * ROUNDING_MARGIN


def tilted_laplace_stopping(
    rounds: int, theta: float, n: int, rng: np.random.Generator
) -> FloatArray:
    """``w·(1 − e^(eps − L))⁺`` for n tilted interactions of up to ``rounds`` Laplace rounds,
    the loss L = eps0·j + 2·s kept exactly in its atoms (module docstring); the weight of a
    path of τ rounds is exp(−θ·L + τ·log M(θ))."""
    j, s = np.zeros(n, dtype=np.int64), np.zeros(n)
    taken = np.zeros(n, dtype=np.int64)  # τ: rounds run
    running = np.ones(n, dtype=bool)
    for _ in range(rounds):
        y = tilted_laplace(_FX, _FXP, 1.0, theta, n, rng)[:, 0]
        j += np.where(running, np.where(y >= EPS0, 1, -1), 0)
        s += np.where(running & (y > 0.0) & (y < EPS0), y, 0.0)
        taken += running
        running &= ~stops(j, s, EPS0, EPS + 1.0)
    loss = EPS0 * j + 2.0 * s
    log_weight = -theta * loss + taken * float(laplace_log_mgf(EPS0, theta))
    with np.errstate(over="ignore"):  # masked where L <= eps
        value = np.exp(log_weight) * -np.expm1(EPS - loss)
    out: FloatArray = np.where(loss > EPS, value, 0.0)
    return out


def _proposal(theta: float, rounds: int) -> str:
    return (
        f"every Laplace round tilted by theta={theta:.4g}; w(1 - e^(eps-L))+ <= "
        f"exp({rounds}·log M(theta) - theta eps) theta^theta/(1+theta)^(1+theta)"
    )


def cases(delta: float) -> list[ImportanceCase]:
    """The counting filter at ``delta`` with the twice-the-rounds twin."""
    rounds = filter_rounds(PLDFilter(EPS, delta, LaplaceCost(EPS0)), LaplaceCost(EPS0))
    theta, bound = tilting(rounds)
    twin_theta, twin_bound = tilting(2 * rounds)
    name = "counting-filter-deploy/laplace-stopping"
    return [
        ImportanceCase(
            delta=delta,
            name=name,
            source="THEORY §12 (counting filters)",
            statement=(
                f"PLDFilter({EPS:g}, {delta:g}) on Laplace rounds of eps0 = {EPS0:g} ({rounds} "
                f"rounds), analyst stopping on released values: E[(1 − e^(eps − L))+] <= "
                f"{delta:g}"
            ),
            proposal=_proposal(theta, rounds),
            weight_bound=bound,
            simulate=partial(tilted_laplace_stopping, rounds, theta),
            twin_name=f"{name}/twice-the-rounds",
            twin_proposal=_proposal(twin_theta, 2 * rounds),
            twin_bound=twin_bound,
            twin_simulate=partial(tilted_laplace_stopping, 2 * rounds, twin_theta),
            quantity="E[(1 - e^(eps - L))+]",
        )
    ]


@register_at_deltas(DEPLOY, DEPLOY_QUICK)
def deploy_counting_filter_audits(suite: str, delta: float) -> list[Audit]:
    """The counting filter at ``delta``."""
    chosen = in_suite(cases(delta), suite, ("counting-filter-deploy/laplace-stopping",))
    return [c.audit(20_000 if suite == DEPLOY else 5_000, 5_000) for c in chosen]
