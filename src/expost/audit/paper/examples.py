"""Example audits, one per claim kind, each with its planted-bug twin.

- ``gaussian-loss-tail``: the Gaussian mechanism's loss N(rho, 2rho) exceeds
  rho + 2·sqrt(rho·log(1/delta)) with probability <= delta (APC Lemma 2.1, THEORY §1–2);
  twin: the same runs against delta/100.
- ``backward-martingale-e-value``: ``M(t) = exp(λB(t)/t − λ²/(2t))`` has E[M(t)] <= 1 at a fixed
  t (APC Lemma 6.1); twin: M with drift λ²/(4t).
- ``laplace-eps-dp``: the Laplace mechanism with scale Δ/eps is eps-DP (THEORY §2); twin: half
  the noise, still claimed eps-DP.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import numpy.typing as npt

from expost.audit.claims import DPClaim, EValueClaim, ProbabilityClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, QUICK, register
from expost.mechanisms.additive import GaussianMechanism, LaplaceMechanism
from expost.processes import sample_brownian_grid

__all__ = ["backward_martingale_e_value", "gaussian_loss_tail", "laplace_eps_dp"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_RHO, _DELTA = 0.5, 0.1
_TIMES, _AT, _LAM = (4.0, 2.0, 1.0, 0.5), 2, 1.0
_EPS = 1.0


def _n(suite: str, quick: int) -> int:
    return quick if suite == QUICK else 1_000_000


def gaussian_loss_exceeds(rho: float, delta: float, n: int, rng: np.random.Generator) -> BoolArray:
    """Runs of N(f(x), σ²) with f(x) = 0, f(x') = 1: is L = log p_x(y)/p_x'(y) over the bound?"""
    mech = GaussianMechanism(1.0, rho)
    y = mech.run_batch(0.0, n, rng)
    loss = ((y - 1.0) ** 2 - y**2) / (2.0 * mech.sigma**2)
    return np.asarray(loss > rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)))


@register(QUICK, PAPER)
def gaussian_loss_tail(suite: str) -> Audit:
    """P(L > rho + 2 sqrt(rho log(1/delta))) <= delta for the Gaussian mechanism's loss."""
    return Audit(
        name="gaussian-loss-tail",
        source="APC Lemma 2.1",
        statement=f"Gaussian rho={_RHO:g}: P(L > rho + 2 sqrt(rho log(1/d))) <= d = {_DELTA:g}",
        claim=ProbabilityClaim(_DELTA),
        simulate=partial(gaussian_loss_exceeds, _RHO, _DELTA),
        n=_n(suite, 20_000),
        twin=Twin("gaussian-loss-tail/claim-delta-over-100", ProbabilityClaim(_DELTA / 100)),
    )


def backward_martingale(drift: float, n: int, rng: np.random.Generator) -> FloatArray:
    """``exp(λB(t)/t − drift·λ²/t)`` at a fixed grid time t; drift 1/2 is APC Lemma 6.1's M(t)."""
    b = sample_brownian_grid(_TIMES, n, 1, rng)[:, _AT, 0]
    t = _TIMES[_AT]
    return np.exp(_LAM * b / t - drift * _LAM**2 / t)


@register(QUICK, PAPER)
def backward_martingale_e_value(suite: str) -> Audit:
    """E[M(t)] <= 1 for the backward martingale at a fixed t."""
    return Audit(
        name="backward-martingale-e-value",
        source="APC Lemma 6.1",
        statement=f"E[exp(lam B(t)/t - lam^2/(2t))] <= 1 at t={_TIMES[_AT]:g}, lam={_LAM:g}",
        claim=EValueClaim(),
        simulate=partial(backward_martingale, 0.5),
        n=_n(suite, 20_000),
        twin=Twin(
            "backward-martingale-e-value/drift-lam2-over-4t",
            EValueClaim(),
            partial(backward_martingale, 0.25),
        ),
    )


def laplace_pairs(eps: float, n: int, rng: np.random.Generator) -> FloatArray:
    """Outputs of Lap(Δ/eps) at f(x) = 0 (column 0) and f(x') = Δ = 1 (column 1)."""
    mech = LaplaceMechanism(1.0, eps)
    return np.column_stack([mech.run_batch(0.0, n, rng), mech.run_batch(1.0, n, rng)])


@register(QUICK, PAPER)
def laplace_eps_dp(suite: str) -> Audit:
    """The Laplace mechanism with scale Δ/eps is eps-DP."""
    return Audit(
        name="laplace-eps-dp",
        source="THEORY §2 (Laplace)",
        statement=f"Laplace scale 1/eps is eps-DP, eps={_EPS:g}",
        claim=DPClaim(_EPS),
        simulate=partial(laplace_pairs, _EPS),
        n=_n(suite, 40_000),
        twin=Twin("laplace-eps-dp/half-the-noise", DPClaim(_EPS), partial(laplace_pairs, 2 * _EPS)),
    )
