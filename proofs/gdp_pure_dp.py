"""GDP price of a pure eps-DP round: mu(eps) = 2·Φ⁻¹(e^eps/(1 + e^eps)), the smallest mu.

An eps-DP pair is dominated by randomized response, whose trade-off
f(α) = max(0, 1 − e^eps·α, e^(−eps)·(1 − α)) has one kink, at α* = 1/(1 + e^eps) with
f(α*) = α*. G_mu is convex with G_mu(0) = 1, G_mu(1) = 0, so G_mu <= f iff G_mu(α*) <= α*
(on each side of the kink f is the chord through (α*, α*) and an end point); G_mu(α*) = α*
exactly at the claimed mu (the tangency at the kink), and G_mu decreases in mu, so a smaller
mu fails (0.99·mu(eps) is rejected).
Assumptions: eps > 0. Source: THEORY §9 (Dong–Roth–Su).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.filters.gaussian_dp import pure_dp_mu
from expost.symbolic import Proof, Step
from expost.symbolic.steps import identity, library_matches, numeric_identity
from expost.symbolic.tradeoff import Phi_inv, below_on_grid, gaussian_tradeoff, randomized_response

__all__ = ["PROOF"]

eps = sp.symbols("epsilon", positive=True)
_EPS = (0.05, 0.3, 1.0, 2.5, 6.0)


def check(mu_dp: Any) -> tuple[Step, ...]:
    """Kink, tangency, sufficiency on a grid, the library."""
    a_star = 1 / (1 + sp.exp(eps))
    return (
        identity(
            "randomized response's two lines meet at α* = 1/(1 + e^eps) with f(α*) = α*",
            sp.Tuple(1 - sp.exp(eps) * a_star, sp.exp(-eps) * (1 - a_star)),
            sp.Tuple(a_star, a_star),
        ),
        numeric_identity(
            "G_mu(α*) = α* at the claimed mu (tangency at the kink)",
            gaussian_tradeoff(mu_dp, a_star),
            a_star,
            {eps: (0.01, 8.0)},
        ),
        Step(
            "G_mu <= f_(eps,0) on a 100-point α grid at 5 eps [mpmath 50 digits]",
            below_on_grid(mu_dp, randomized_response, eps, _EPS),
        ),
        library_matches("pure_dp_mu(0.7)", pure_dp_mu(0.7), mu_dp.subs(eps, sp.Rational(7, 10))),
    )


PROOF = Proof(
    name="gdp-pure-dp",
    source="THEORY §9 (Dong–Roth–Su)",
    statement=(
        "An eps-DP round is mu(eps)-GDP with mu(eps) = 2·Φ⁻¹(e^eps/(1 + e^eps)), the smallest "
        "such mu."
    ),
    assumptions=("eps > 0", "eps-DP pairs are dominated by randomized response"),
    claim=2 * Phi_inv(1 / (1 + sp.exp(-eps))),
    wrong_claim=sp.Rational(99, 100) * 2 * Phi_inv(1 / (1 + sp.exp(-eps))),
    check=check,
)
