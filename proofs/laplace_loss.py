"""Laplace mechanism loss: with ε = Δ/b, E[L] = ε + e^(−ε) − 1 and
D_α = log(α/(2α−1)·e^((α−1)ε) + (α−1)/(2α−1)·e^(−αε))/(α − 1).

Derived from the densities Lap(0, b) and Lap(Δ, b), integrating piecewise over y < 0, 0 <= y <= Δ, y > Δ.
Assumptions: b > 0; Δ = |f(x) − f(x')| > 0; α > 1.
Source: THEORY §2 (Laplace mechanism), APC Def 2.2.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import log_likelihood_ratio
from expost.symbolic.laplace import integrate_real_line, laplace_pdf
from expost.symbolic.steps import identity

__all__ = ["PROOF"]

b, delta, alpha, eps = sp.symbols("b Delta alpha epsilon", positive=True)
y = sp.Symbol("y", real=True)


def check(form: Any) -> tuple[Step, ...]:
    """Piecewise integrals of L·p and p^α·q^(1−α); ε = Δ/b."""
    mean, renyi = (part.subs(eps, delta / b) for part in form)
    p, q = laplace_pdf(y, 0, b), laplace_pdf(y, delta, b)
    loss = log_likelihood_ratio(p, q)
    power = sp.exp(alpha * sp.log(p) + (1 - alpha) * sp.log(q))
    return (
        identity(
            "L(y) = log p_x(y)/p_x'(y) = (|y − Δ| − |y|)/b",
            loss,
            (sp.Abs(y - delta) - sp.Abs(y)) / b,
        ),
        identity(
            "E[L] = ∫ L·p_x dy (three pieces) equals the claimed mean",
            integrate_real_line(loss * p, y),
            mean,
        ),
        identity(
            "∫ p^α q^(1−α) dy (three pieces) equals exp((α − 1)·claimed D_α)",
            integrate_real_line(sp.expand_log(power, force=True), y),
            sp.exp((alpha - 1) * renyi),
        ),
    )


PROOF = Proof(
    name="laplace-loss",
    source="THEORY §2 (Laplace mechanism)",
    statement=(
        "The Laplace mechanism with scale b and sensitivity Δ (ε = Δ/b) has mean privacy loss "
        "ε + e^(−ε) − 1 and Rényi divergence log(α/(2α−1)·e^((α−1)ε) + (α−1)/(2α−1)·e^(−αε))/(α − 1)."
    ),
    assumptions=("b > 0", "Δ > 0", "α > 1"),
    claim=sp.Tuple(
        eps + sp.exp(-eps) - 1,
        sp.log(
            alpha / (2 * alpha - 1) * sp.exp((alpha - 1) * eps)
            + (alpha - 1) / (2 * alpha - 1) * sp.exp(-alpha * eps)
        )
        / (alpha - 1),
    ),
    wrong_claim=sp.Tuple(
        eps**2 / 2,
        sp.log(
            alpha / (2 * alpha - 1) * sp.exp(alpha * eps)
            + (alpha - 1) / (2 * alpha - 1) * sp.exp(-alpha * eps)
        )
        / (alpha - 1),
    ),
    check=check,
)
