"""Gaussian mechanism loss: for y ~ N(m, σ²) against N(m + Δ, σ²), L ~ N(rho, 2·rho), rho = Δ²/(2σ²).

Assumptions: σ > 0; Δ = |f(x) − f(x')| > 0; m real.
Source: THEORY §2 (Gaussian mechanism; Bun–Steinke), APC Def 2.2 for the loss.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.loss import GaussianLoss
from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import log_likelihood_ratio, normal_expectation_exp, normal_pdf
from expost.symbolic.steps import exact_point, identity, library_matches

__all__ = ["PROOF"]

delta, sigma = sp.symbols("Delta sigma", positive=True)
m, y, lam = sp.symbols("m y lambda", real=True)
rho = delta**2 / (2 * sigma**2)

_LIBRARY_POINTS = ((2.0, 1.0), (0.5, 3.0), (1.3, 0.7))  # (σ, Δ)


def _library(mean: Any, var: Any) -> list[Step]:
    steps = []
    for sig, d in _LIBRARY_POINTS:
        law, point = GaussianLoss.from_mechanism(sig, d), exact_point({sigma: sig, delta: d})
        name = f"GaussianLoss.from_mechanism({sig}, {d})"
        steps.append(library_matches(f"{name}.mean", law.mean, mean.subs(point)))
        steps.append(library_matches(f"{name}.variance", law.variance, var.subs(point)))
    return steps


def check(moments: Any) -> tuple[Step, ...]:
    """Loss from the two densities, then its cumulant generating function K(λ) = log E[e^(λL)]."""
    mean, var = moments
    loss = log_likelihood_ratio(normal_pdf(y, m, sigma**2), normal_pdf(y, m + delta, sigma**2))
    cgf = sp.expand_log(sp.log(normal_expectation_exp(lam * loss, y, m, sigma**2)), force=True)
    return (
        identity(
            "L(y) = log p_x(y)/p_x'(y) = Δ²/(2σ²) − Δ·(y − m)/σ², affine in y",
            loss,
            delta**2 / (2 * sigma**2) - delta * (y - m) / sigma**2,
        ),
        identity("E[L] = K'(0) equals the claimed mean", sp.diff(cgf, lam).subs(lam, 0), mean),
        identity("Var L = K''(0) equals the claimed variance", sp.diff(cgf, lam, 2), var),
        identity(
            "K(λ) = λ·mean + λ²·var/2 exactly, so L is normal with these moments",
            cgf,
            lam * mean + lam**2 * var / 2,
        ),
        *_library(mean, var),
    )


PROOF = Proof(
    name="gaussian-loss-moments",
    source="THEORY §2 (Gaussian mechanism)",
    statement=(
        "The privacy loss of the Gaussian mechanism N(f(x), σ²) at neighbours with |f(x) − f(x')| = Δ "
        "is exactly N(rho, 2·rho) with rho = Δ²/(2σ²)."
    ),
    assumptions=("σ > 0", "Δ = |f(x) − f(x')| > 0", "y ~ N(f(x), σ²)"),
    claim=sp.Tuple(rho, 2 * rho),
    wrong_claim=sp.Tuple(2 * rho, rho),
    check=check,
)
