"""Gaussian Rényi divergence: D_α(N(m, σ²) ‖ N(m + Δ, σ²)) = α·Δ²/(2σ²), so the mechanism is rho-zCDP.

Assumptions: α > 1; σ > 0; Δ > 0; m real.
Source: THEORY §2 (Gaussian mechanism is Δ²/(2σ²)-zCDP; Bun–Steinke).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.loss import GaussianLoss
from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import integrate_exp_quadratic, log_normal_pdf
from expost.symbolic.steps import exact_point, identity, library_matches

__all__ = ["PROOF"]

alpha, delta, sigma = sp.symbols("alpha Delta sigma", positive=True)
m, y = sp.symbols("m y", real=True)

_LIBRARY_POINTS = ((1.5, 2.0, 1.0), (30.0, 0.5, 3.0), (1.01, 1.3, 0.7))  # (α, σ, Δ)


def check(divergence: Any) -> tuple[Step, ...]:
    """D_α = log(∫ p^α q^(1−α) dy)/(α − 1), the integrand being exp of a quadratic in y."""
    exponent = alpha * log_normal_pdf(y, m, sigma**2) + (1 - alpha) * log_normal_pdf(
        y, m + delta, sigma**2
    )
    renyi = sp.expand_log(sp.log(integrate_exp_quadratic(exponent, y)), force=True) / (alpha - 1)
    library = (
        library_matches(
            f"GaussianLoss.from_mechanism({sig}, {d}).renyi({a})",
            GaussianLoss.from_mechanism(sig, d).renyi(a),
            divergence.subs(exact_point({alpha: a, sigma: sig, delta: d})),
        )
        for a, sig, d in _LIBRARY_POINTS
    )
    return (
        identity(
            "log(∫ p^α q^(1−α) dy)/(α − 1) (Gaussian integral) equals the claim", renyi, divergence
        ),
        identity(
            "D_α/α = Δ²/(2σ²) for every α > 1: exactly rho-zCDP with rho = Δ²/(2σ²)",
            divergence / alpha,
            delta**2 / (2 * sigma**2),
        ),
        *library,
    )


PROOF = Proof(
    name="gaussian-renyi",
    source="THEORY §2 (Gaussian mechanism, zCDP)",
    statement=(
        "The Rényi divergence of order α between N(m, σ²) and N(m + Δ, σ²) is α·Δ²/(2σ²); "
        "hence the Gaussian mechanism is Δ²/(2σ²)-zCDP."
    ),
    assumptions=("α > 1", "σ > 0", "Δ > 0"),
    claim=alpha * delta**2 / (2 * sigma**2),
    wrong_claim=(alpha - 1) * delta**2 / (2 * sigma**2),
    check=check,
)
