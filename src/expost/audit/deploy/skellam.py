"""The Skellam noise-reduction boundary at deployment deltas (THEORY §10, beyond the papers; the
mechanism, grid and event are those of `expost.audit.paper.skellam`).

Importance sampling: under the mixture Q = Σ_j w_j P_(f(x)−j)/W (W = Σ w_j) the likelihood
ratio of the releases up to the stop is dP/dQ = W/M(Z_N), and on the event M(Z_N) >= 1/delta
(the proof), so every sample is <= delta·W <= delta: a sample above it is a sure refutation.

Twin: at deploy deltas the boundary built for 10·delta still holds (measured: crossing
0.74·delta at 1e-9, the true one 0.07·delta: Ville's inequality has that much slack there), so
the deploy twin is the boundary built for 100·delta, whose samples are bounded by 100·delta.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import numpy.typing as npt

from expost.audit.core import Audit, Twin
from expost.audit.paper.skellam import LEVEL, RATE, STATEMENT, boundary_grid, losses, stops
from expost.audit.rare_event import ImportanceClaim
from expost.audit.registry import DEPLOY_QUICK, delta_tag, register_at_deltas
from expost.processes import sample_skellam_grid
from expost.skellam.boundary import SkellamPrivacyBoundary
from expost.skellam.pmf import SkellamLogPmf

__all__ = ["skellam_deploy_audits"]

FloatArray = npt.NDArray[np.float64]

_WEIGHT_SLACK = 1e-8  # the float M is within 1e-9 relative of the exact one (module of ψ)


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
    x = sample_skellam_grid(times, n, 1, rng, rate1=RATE, rate2=RATE)[:, :, 0]
    z = x - shift[:, None]  # Y − f(x) under Q
    over = losses(times, z, psi.sensitivity) > psi.boundary(times)[None, :]
    stop = stops("uniform", times, z, over)
    out = np.zeros(n)
    hit = np.flatnonzero(stop >= 0)
    j = np.arange(1, w.size + 1)
    for k in np.unique(stop[hit]).astype(int):
        rows = hit[stop[hit] == k]
        logp = SkellamLogPmf(RATE * float(times[k]))
        zk = z[rows, k]
        ratio = np.exp(logp.at(zk[:, None] + j[None, :]) - logp.at(zk)[:, None])
        out[rows] = total / (ratio @ w)
    return out


_DEPLOY_FACTOR = 100.0  # built for 10·delta the boundary still holds at deploy deltas (module doc)


@register_at_deltas("deploy", "deploy-quick")
def skellam_deploy_audits(suite: str, delta: float) -> list[Audit]:
    """The Skellam boundary at deploy deltas, uniform adversary, by mixture importance sampling."""
    sensitivities = (1,) if suite == DEPLOY_QUICK else (1, 3)
    audits = []
    for s in sensitivities:
        psi = SkellamPrivacyBoundary.tuned_for(LEVEL, delta, s, RATE)
        wrong = SkellamPrivacyBoundary(psi.scale, _DEPLOY_FACTOR * delta, s, RATE)
        times = boundary_grid(psi)
        proposal = "the boundary's mixture Q (dP/dQ = W/M <= delta on the event)"
        claim = ImportanceClaim(delta, delta * (1.0 + _WEIGHT_SLACK), proposal)
        twin_bound = _DEPLOY_FACTOR * delta * (1.0 + _WEIGHT_SLACK)  # its event has M >= 1/(100δ)
        twin_claim = ImportanceClaim(delta, twin_bound, proposal)
        name = f"skellam-boundary/deploy/sensitivity-{s}/{delta_tag(delta)}"
        audits.append(
            Audit(
                name=name,
                source="THEORY §10 (Skellam boundary, beyond BNR App. E)",
                statement=STATEMENT.format(rate=RATE, s=s, delta=delta, rule="uniform"),
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
