"""Gaussian loss tails at deployment deltas, importance-sampled by loss tilting (issue 13).

The Gaussian mechanism N(f(x), σ²I) at neighbour distance 1 has loss N(r, 2r), r = 1/(2σ²)
(THEORY §2). Under the proposal tilted by θ (`expost.audit.tilting`: mean shifted by
θ·(f(x) − f(x'))) the weight on {L > eps} is at most ``B = exp(−θ·eps + θ(θ+1)·r)``; θ is
`chernoff_tilt`'s, which moves the loss's mean to eps, so ``B = exp(−(eps − r)²/(4r))``.

- ``gaussian-pdp-exact`` (APC Def 2.2): eps solves ``P(N(r, 2r) > eps) = delta`` (holds with
  equality); B = exp(−z²/2) with z = Φ⁻¹(1 − delta), about z·sqrt(2π)·delta. Twin: the eps of
  10·delta, whose true probability is 10·delta.
- ``gaussian-loss-tail`` (APC Lemma 2.1): eps = r + 2·sqrt(r·log(1/delta)); B = delta exactly,
  so the claim fails only if a weight leaves [0, B] (a wrong loss or weight). Twin: Lemma 2.1
  with sqrt in place of 2·sqrt, true probability Φ̄(sqrt(log(1/delta)/2)) ≫ delta.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import numpy.typing as npt

from expost.audit._shared import gaussian_loss, neighbours
from expost.audit.core import Audit
from expost.audit.registry import DEPLOY, DEPLOY_QUICK, register_at_deltas
from expost.audit.tilting import (
    ImportanceCase,
    bound,
    chernoff_tilt,
    gaussian_log_weight,
    in_suite,
    shift,
)
from expost.mechanisms.additive import GaussianMechanism

__all__ = ["cases", "deploy_gaussian_tails", "lemma21_eps", "pdp_eps", "tilted_gaussian_tail"]

FloatArray = npt.NDArray[np.float64]


def pdp_eps(rho: float, delta: float) -> float:
    """The eps with P(N(rho, 2rho) > eps) = delta: rho + sqrt(2rho)·Φ⁻¹(1 − delta)."""
    from scipy import special  # lazy: keeps `import expost` fast

    return rho - math.sqrt(2.0 * rho) * float(special.ndtri(delta))


def lemma21_eps(rho: float, delta: float, factor: float = 2.0) -> float:
    """APC Lemma 2.1's ``rho + factor·sqrt(rho·log(1/delta))`` (factor 2 as printed)."""
    return rho + factor * math.sqrt(rho * math.log(1.0 / delta))


def tilted_gaussian_tail(
    sigma: float, eps: float, d: int, n: int, rng: np.random.Generator
) -> FloatArray:
    """``w·1{L > eps}`` for n releases N(f(x), σ²I) in R^d (ℓ2 distance 1) drawn under the tilt.

    θ = `chernoff_tilt`(eps, r) with r = 1/(2σ²); w = dP/dQ of the release (`gaussian_log_weight`);
    the loss is computed from the release and the neighbouring values (`gaussian_loss`).
    """
    fx, fxp = neighbours(1.0, d)
    mech = GaussianMechanism.from_sigma(1.0, sigma)
    moved = shift(fx, fxp, chernoff_tilt(eps, 0.5 / sigma**2))
    y = mech.run_batch(fx + moved, n, rng)
    loss = gaussian_loss(y, sigma**2, fx, fxp)
    weight = np.exp(gaussian_log_weight(y, sigma**2, fx, moved))
    out: FloatArray = np.where(loss > eps, weight, 0.0)
    return out


_RHO = 0.5  # sigma = 1 at l2 sensitivity 1


def cases(delta: float) -> list[ImportanceCase]:
    """gaussian-pdp-exact and gaussian-loss-tail at ``delta``, with their twins (module doc)."""
    sigma = GaussianMechanism(1.0, _RHO).sigma
    rho = 0.5 / sigma**2
    out = []
    for name, source, d, eps, wrong, twin, what in (
        (
            "gaussian-pdp-exact",
            "APC Def 2.2, THEORY §2 (Gaussian)",
            3,
            pdp_eps(rho, delta),
            pdp_eps(rho, 10.0 * delta),
            "eps-for-10-delta",
            "eps from the loss law N(rho, 2rho); holds with equality",
        ),
        (
            "gaussian-loss-tail",
            "APC Lemma 2.1",
            1,
            lemma21_eps(rho, delta),
            lemma21_eps(rho, delta, factor=1.0),
            "sqrt-for-2-sqrt",
            "eps = rho + 2 sqrt(rho log(1/d))",
        ),
    ):
        out.append(
            ImportanceCase(
                delta=delta,
                name=name,
                source=source,
                statement=(
                    f"Gaussian on R^{d}, l2 sensitivity 1, rho={rho:g}: P(L > eps={eps:.4g}) <= "
                    f"{delta:g} ({what})"
                ),
                proposal=_PROPOSAL,
                weight_bound=bound(eps, rho, chernoff_tilt(eps, rho)),
                simulate=partial(tilted_gaussian_tail, sigma, eps, d),
                twin_name=f"{name}/{twin}",
                twin_proposal=_PROPOSAL,
                twin_bound=bound(wrong, rho, chernoff_tilt(wrong, rho)),
                twin_simulate=partial(tilted_gaussian_tail, sigma, wrong, d),
            )
        )
    return out


_PROPOSAL = (
    "loss tilted to the threshold: mean shifted by theta*(f(x) - f(x')), theta = (eps - rho)/(2 rho);"
    " weight <= exp(-(eps - rho)^2/(4 rho)) on the event"
)


_QUICK = ("gaussian-pdp-exact",)


@register_at_deltas(DEPLOY, DEPLOY_QUICK)
def deploy_gaussian_tails(suite: str, delta: float) -> list[Audit]:
    """The cases at ``delta`` (deploy-quick: "gaussian-pdp-exact")."""
    return [c.audit(20_000, 20_000) for c in in_suite(cases(delta), suite, _QUICK)]
