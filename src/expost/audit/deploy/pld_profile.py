"""A composed PLD's δ(ε) at deployment deltas, by importance sampling (THEORY §12; the paper-suite
audits of PLD profiles are in `expost.audit.paper.pld_profile`).

k = 10 Gaussian rounds of σ = 2 at ε = pld.eps(δ) for the deploy deltas, by
importance sampling: every round's loss N(m, 2m), m = μ²/2, is tilted by θ to N(m + 2θm, 2m)
(`expost.audit.tilting`), weight ``exp(−θ·L + k·θ(θ+1)·m)``; the samples ``w·X`` are at most
`hockey_stick_bound` (ε, k·m, θ). Twin: the same runs priced as 9 rounds.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import numpy.typing as npt

from expost.audit.core import Audit, Twin
from expost.audit.rare_event import ImportanceClaim
from expost.audit.registry import DEPLOY, DEPLOY_QUICK, delta_tag, register_at_deltas
from expost.audit.tilting import ROUNDING_MARGIN, hockey_stick_bound, hockey_stick_tilt
from expost.pld import PrivacyLossDistribution

__all__ = ["pld_profile_deploy_audits", "tilted_gaussian_excess"]

FloatArray = npt.NDArray[np.float64]

_SIGMA, _ROUNDS = 2.0, 10


def tilted_gaussian_excess(
    mu: float, rounds: int, eps: float, theta: float, n: int, rng: np.random.Generator
) -> FloatArray:
    """``w·(1 − e^(ε − L))⁺`` for ``rounds`` Gaussian losses N(m, 2m), each tilted by θ."""
    m = mu * mu / 2.0
    loss = (m + 2.0 * theta * m) * rounds + math.sqrt(2.0 * m) * rng.standard_normal(
        (n, rounds)
    ).sum(axis=1)
    with np.errstate(over="ignore"):  # masked where L <= eps
        value = np.exp(-theta * loss + rounds * theta * (theta + 1.0) * m) * -np.expm1(eps - loss)
    out: FloatArray = np.where(loss > eps, value, 0.0)
    return out


@register_at_deltas(DEPLOY, DEPLOY_QUICK)
def pld_profile_deploy_audits(suite: str, delta: float) -> Audit:
    """10 Gaussian rounds of σ = 2 at ε = pld.eps(δ), by importance sampling."""
    one = PrivacyLossDistribution.gaussian(_SIGMA)
    pld = one.self_compose(_ROUNDS)
    eps = pld.eps(delta)
    mu = 1.0 / _SIGMA
    rho = _ROUNDS * mu * mu / 2.0
    theta = hockey_stick_tilt(eps, rho)
    weight = hockey_stick_bound(eps, rho, theta) * ROUNDING_MARGIN
    proposal = f"every round's loss tilted by theta={theta:.4g}; w(1 - e^(eps-L))+ <= {weight:.4g}"
    quantity = "E[(1 - e^(eps - L))+]"
    wrong = one.self_compose(_ROUNDS - 1).delta(eps)
    tag = delta_tag(delta)
    return Audit(
        name=f"pld-profile-deploy/gaussian/{tag}",
        source="THEORY §12; Balle–Wang 2018 (Gaussian profile)",
        statement=(
            f"10 Gaussian rounds (σ = {_SIGMA:g}): E[(1 − e^(eps − L))+] <= pld.delta({eps:.6g}) "
            f"= {pld.delta(eps):.4g}"
        ),
        claim=ImportanceClaim(pld.delta(eps), weight, proposal, quantity),
        simulate=partial(tilted_gaussian_excess, mu, _ROUNDS, eps, theta),
        n=20_000 if suite == DEPLOY else 5_000,
        twin=Twin(
            f"pld-profile-deploy/gaussian/one-round-short/{tag}",
            ImportanceClaim(wrong, weight, proposal, quantity),
        ),
        chunk_size=5_000,
    )
