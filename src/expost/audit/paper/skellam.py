"""Audits of the Skellam noise-reduction boundary (THEORY §10, beyond the papers).

The mechanism releases Y_n = f(x) + X(T_n) on a grid around the boundary's tuned time, with
X(t) ~ Skellam(λt, λt); f(x') = f(x) + Δ (the worst pair for ψ). The loss of the run so far is
ℓ_(T_n)(Y_n − f(x)) (sufficiency); the event is "loss at the stop > ψ(t_stop)". Here the
paper deltas, by plain Monte Carlo (the deploy deltas: `expost.audit.deploy.skellam`): the
uniform adversary (stops the first time the loss exceeds ψ, so its event is the crossing of ψ
anywhere on the grid), a z-score rule on the released values (|Y_n − f(x)|/σ_n >= 2) and a fixed-time rule (the grid's middle time).

Twins: the boundary built for 10·delta, and one that believes the rate is 2λ.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

import numpy as np
import numpy.typing as npt

from expost.audit._shared import runs
from expost.audit.claims import ProbabilityClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, QUICK, register
from expost.processes import sample_skellam_grid
from expost.skellam.boundary import SkellamPrivacyBoundary
from expost.skellam.pmf import SkellamLogPmf

__all__ = [
    "LEVEL",
    "RATE",
    "STATEMENT",
    "boundary_grid",
    "losses",
    "skellam_paper_audits",
    "stops",
]

FloatArray = npt.NDArray[np.float64]
Rule = Literal["uniform", "z-score", "fixed"]

LEVEL = 1.0  # the boundaries are tuned for ex-post level 1
RATE = 1.0


def boundary_grid(psi: SkellamPrivacyBoundary) -> FloatArray:
    t = psi.time_for(LEVEL)
    return np.geomspace(8.0 * t, t / 2.0, 10)


def losses(times: FloatArray, z: npt.NDArray[np.int64], d: int) -> FloatArray:
    """ℓ_t(z) = log p_t(z) − log p_t(z − d) for each grid column."""
    out = np.empty(z.shape)
    for k, t in enumerate(times):
        logp = SkellamLogPmf(RATE * float(t))
        out[:, k] = logp.at(z[:, k]) - logp.at(z[:, k] - d)
    return out


def stops(
    rule: Rule, times: FloatArray, z: npt.NDArray[np.int64], over: npt.NDArray[np.bool_]
) -> FloatArray:
    """Per run, the index of the stop (−1: the event did not happen at the stop)."""
    n, k = z.shape
    if rule == "uniform":
        first = np.argmax(over, axis=1)
        return np.where(over.any(axis=1), first, -1).astype(np.float64)
    if rule == "z-score":
        fired = np.abs(z) >= 2.0 * np.sqrt(2.0 * RATE * times)[None, :]
        stop = np.where(fired.any(axis=1), np.argmax(fired, axis=1), k - 1)
    else:
        stop = np.full(n, k // 2)
    hit = over[np.arange(n), stop]
    return np.where(hit, stop, -1).astype(np.float64)


def _paper_runs(
    psi: SkellamPrivacyBoundary, times: FloatArray, rule: Rule, n: int, rng: np.random.Generator
) -> npt.NDArray[np.bool_]:
    z = sample_skellam_grid(times, n, 1, rng, rate1=RATE, rate2=RATE)[:, :, 0]
    over = losses(times, z, psi.sensitivity) > psi.boundary(times)[None, :]
    return np.asarray(stops(rule, times, z, over) >= 0)


def _twins(psi: SkellamPrivacyBoundary) -> dict[str, SkellamPrivacyBoundary]:
    return {
        "built-for-10-delta": SkellamPrivacyBoundary(
            psi.scale, min(10.0 * psi.delta, 0.5), psi.sensitivity, RATE
        ),
        "rate-misstated-2x": SkellamPrivacyBoundary(
            psi.scale, psi.delta, psi.sensitivity, 2.0 * RATE
        ),
    }


STATEMENT = (
    "Skellam noise reduction (rate {rate:g}, sensitivity {s}) on 10 geometric times from 8·t* to "
    "t*/2 (t* = time_for(1)), boundary tuned for level 1 at delta={delta:g}, rule {rule}: "
    "P(loss at the stop > ψ(t_stop)) <= {delta:g}"
)


@register(QUICK, PAPER)
def skellam_paper_audits(suite: str) -> list[Audit]:
    """The Skellam boundary at paper delta 0.05, three rules, sensitivities 1 and 3."""
    delta = 0.05
    configs: list[tuple[Rule, int, str]] = [("uniform", 1, "built-for-10-delta")]
    if suite != QUICK:
        configs += [
            ("uniform", 3, "rate-misstated-2x"),
            ("z-score", 1, "rate-misstated-2x"),
            ("fixed", 1, "built-for-10-delta"),
        ]
    audits = []
    for rule, s, twin in configs:
        psi = SkellamPrivacyBoundary.tuned_for(LEVEL, delta, s, RATE)
        wrong = _twins(psi)[twin]
        times = boundary_grid(psi)  # the twin runs the same mechanism on the same grid
        name = f"skellam-boundary/{rule}/sensitivity-{s}"
        audits.append(
            Audit(
                name=name,
                source="THEORY §10 (Skellam boundary, beyond BNR App. E)",
                statement=STATEMENT.format(rate=RATE, s=s, delta=delta, rule=rule),
                claim=ProbabilityClaim(delta),
                simulate=partial(_paper_runs, psi, times, rule),
                n=runs(suite, 4_000, 40_000),
                twin=Twin(
                    f"{name}/{twin}",
                    ProbabilityClaim(delta),
                    partial(_paper_runs, wrong, times, rule),
                ),
                chunk_size=4_000,
            )
        )
    return audits
