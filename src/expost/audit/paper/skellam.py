"""Audits of the Skellam noise-reduction boundary (THEORY §10, beyond the papers).

The mechanism releases Y_n = f(x) + X(T_n) on a grid around the boundary's tuned time, with
X(t) ~ Skellam(λt, λt); f(x') = f(x) + Δ (the worst pair for ψ). The loss of the run so far is
ℓ_(T_n)(Y_n − f(x)) (sufficiency); the event is "loss at the stop > ψ(t_stop)".

- Paper deltas (plain Monte Carlo): the uniform adversary (stops the first time the loss exceeds
  ψ, so its event is the crossing of ψ anywhere on the grid), a z-score rule on the released
  values (|Y_n − f(x)|/σ_n >= 2) and a fixed-time rule (the grid's middle time).
- Deploy deltas (importance sampling): under the mixture Q = Σ_j w_j P_(f(x)−j)/W (W = Σ w_j) the
  likelihood ratio of the releases up to the stop is dP/dQ = W/M(Z_N), and on the event
  M(Z_N) >= 1/delta (the proof), so every sample is <= delta·W <= delta: a sample above it is a
  sure refutation.

Twins: the boundary built for 10·delta, and one that believes the rate is 2λ (paper deltas). At
deploy deltas the boundary built for 10·delta still holds (measured: crossing 0.74·delta at 1e-9,
the true one 0.07·delta: Ville's inequality has that much slack there), so the deploy twin is the
boundary built for 100·delta, whose samples are bounded by 100·delta.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

import numpy as np
import numpy.typing as npt

from expost.audit._paper import runs
from expost.audit.claims import ProbabilityClaim
from expost.audit.core import Audit, Twin
from expost.audit.rare_event import ImportanceClaim
from expost.audit.registry import (
    DEPLOY_QUICK,
    PAPER,
    QUICK,
    delta_tag,
    register,
    register_at_deltas,
)
from expost.processes import sample_skellam_grid
from expost.skellam.boundary import SkellamPrivacyBoundary
from expost.skellam.pmf import SkellamLogPmf

__all__ = ["skellam_deploy_audits", "skellam_paper_audits"]

FloatArray = npt.NDArray[np.float64]
Rule = Literal["uniform", "z-score", "fixed"]

_LEVEL = 1.0  # the boundaries are tuned for ex-post level 1
_RATE = 1.0
_WEIGHT_SLACK = 1e-8  # the float M is within 1e-9 relative of the exact one (module of ψ)


def _grid(psi: SkellamPrivacyBoundary) -> FloatArray:
    t = psi.time_for(_LEVEL)
    return np.geomspace(8.0 * t, t / 2.0, 10)


def _losses(times: FloatArray, z: npt.NDArray[np.int64], d: int) -> FloatArray:
    """ℓ_t(z) = log p_t(z) − log p_t(z − d) for each grid column."""
    out = np.empty(z.shape)
    for k, t in enumerate(times):
        logp = SkellamLogPmf(_RATE * float(t))
        out[:, k] = logp.at(z[:, k]) - logp.at(z[:, k] - d)
    return out


def _stops(
    rule: Rule, times: FloatArray, z: npt.NDArray[np.int64], over: npt.NDArray[np.bool_]
) -> FloatArray:
    """Per run, the index of the stop (−1: the event did not happen at the stop)."""
    n, k = z.shape
    if rule == "uniform":
        first = np.argmax(over, axis=1)
        return np.where(over.any(axis=1), first, -1).astype(np.float64)
    if rule == "z-score":
        fired = np.abs(z) >= 2.0 * np.sqrt(2.0 * _RATE * times)[None, :]
        stop = np.where(fired.any(axis=1), np.argmax(fired, axis=1), k - 1)
    else:
        stop = np.full(n, k // 2)
    hit = over[np.arange(n), stop]
    return np.where(hit, stop, -1).astype(np.float64)


def _paper_runs(
    psi: SkellamPrivacyBoundary, times: FloatArray, rule: Rule, n: int, rng: np.random.Generator
) -> npt.NDArray[np.bool_]:
    z = sample_skellam_grid(times, n, 1, rng, rate1=_RATE, rate2=_RATE)[:, :, 0]
    over = _losses(times, z, psi.sensitivity) > psi.boundary(times)[None, :]
    return np.asarray(_stops(rule, times, z, over) >= 0)


def _mixture_runs(
    psi: SkellamPrivacyBoundary,
    proposal: SkellamPrivacyBoundary,
    times: FloatArray,
    n: int,
    rng: np.random.Generator,
) -> FloatArray:
    """w·1{event}, runs drawn under the mixture Q of ``proposal`` (true rate), uniform adversary."""
    w = proposal.weights()
    total = float(w.sum())
    shift = 1 + rng.choice(w.size, size=n, p=w / total)
    x = sample_skellam_grid(times, n, 1, rng, rate1=_RATE, rate2=_RATE)[:, :, 0]
    z = x - shift[:, None]  # Y − f(x) under Q
    over = _losses(times, z, psi.sensitivity) > psi.boundary(times)[None, :]
    stop = _stops("uniform", times, z, over)
    out = np.zeros(n)
    hit = np.flatnonzero(stop >= 0)
    j = np.arange(1, w.size + 1)
    for k in np.unique(stop[hit]).astype(int):
        rows = hit[stop[hit] == k]
        logp = SkellamLogPmf(_RATE * float(times[k]))
        zk = z[rows, k]
        ratio = np.exp(logp.at(zk[:, None] + j[None, :]) - logp.at(zk)[:, None])
        out[rows] = total / (ratio @ w)
    return out


def _twins(psi: SkellamPrivacyBoundary) -> dict[str, SkellamPrivacyBoundary]:
    return {
        "built-for-10-delta": SkellamPrivacyBoundary(
            psi.scale, min(10.0 * psi.delta, 0.5), psi.sensitivity, _RATE
        ),
        "rate-misstated-2x": SkellamPrivacyBoundary(
            psi.scale, psi.delta, psi.sensitivity, 2.0 * _RATE
        ),
    }


_STATEMENT = (
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
        psi = SkellamPrivacyBoundary.tuned_for(_LEVEL, delta, s, _RATE)
        wrong = _twins(psi)[twin]
        times = _grid(psi)  # the twin runs the same mechanism on the same grid
        name = f"skellam-boundary/{rule}/sensitivity-{s}"
        audits.append(
            Audit(
                name=name,
                source="THEORY §10 (Skellam boundary, beyond BNR App. E)",
                statement=_STATEMENT.format(rate=_RATE, s=s, delta=delta, rule=rule),
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


_DEPLOY_FACTOR = 100.0  # built for 10·delta the boundary still holds at deploy deltas (module doc)


@register_at_deltas("deploy", "deploy-quick")
def skellam_deploy_audits(suite: str, delta: float) -> list[Audit]:
    """The Skellam boundary at deploy deltas, uniform adversary, by mixture importance sampling."""
    sensitivities = (1,) if suite == DEPLOY_QUICK else (1, 3)
    audits = []
    for s in sensitivities:
        psi = SkellamPrivacyBoundary.tuned_for(_LEVEL, delta, s, _RATE)
        wrong = SkellamPrivacyBoundary(psi.scale, _DEPLOY_FACTOR * delta, s, _RATE)
        times = _grid(psi)
        proposal = "the boundary's mixture Q (dP/dQ = W/M <= delta on the event)"
        claim = ImportanceClaim(delta, delta * (1.0 + _WEIGHT_SLACK), proposal)
        twin_bound = _DEPLOY_FACTOR * delta * (1.0 + _WEIGHT_SLACK)  # its event has M >= 1/(100δ)
        twin_claim = ImportanceClaim(delta, twin_bound, proposal)
        name = f"skellam-boundary/deploy/sensitivity-{s}/{delta_tag(delta)}"
        audits.append(
            Audit(
                name=name,
                source="THEORY §10 (Skellam boundary, beyond BNR App. E)",
                statement=_STATEMENT.format(rate=_RATE, s=s, delta=delta, rule="uniform"),
                claim=claim,
                simulate=partial(_mixture_runs, psi, psi, times),
                n=2_000 if suite == DEPLOY_QUICK else 20_000,
                twin=Twin(
                    f"{name}/built-for-100-delta",
                    twin_claim,
                    partial(_mixture_runs, wrong, psi, times),
                ),
                chunk_size=2_000,
            )
        )
    return audits
