"""Laplace mechanism loss: with ε = Δ/b, E[L] = ε + e^(−ε) − 1 and
D_α = log(α/(2α−1)·e^((α−1)ε) + (α−1)/(2α−1)·e^(−αε))/(α − 1).

Derived from the densities Lap(0, b) and Lap(Δ, b), integrating piecewise over y < 0, 0 <= y <= Δ, y > Δ.
Assumptions: b > 0; Δ = |f(x) − f(x')| > 0; α > 1.
Source: THEORY §2 (Laplace mechanism), APC Def 2.2.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import sympy as sp

from expost.loss import LaplaceLoss
from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import log_likelihood_ratio
from expost.symbolic.laplace import integrate_real_line, laplace_pdf
from expost.symbolic.steps import exact_point, identity, library_matches

__all__ = ["PROOF"]

b, delta, alpha, eps = sp.symbols("b Delta alpha epsilon", positive=True)
y = sp.Symbol("y", real=True)

_LIBRARY_POINTS = (
    (1.0, 0.5, 2.0),
    (2.0, 3.0, 1.5),
    (0.5, 0.1, 10.0),
    (1.0, 4.0, 1.01),
)  # (b, Δ, α)


def _library(mean: Any, renyi: Any) -> list[Step]:
    steps = []
    for scale, d, a in _LIBRARY_POINTS:
        law, point = LaplaceLoss(scale, d), exact_point({b: scale, delta: d, alpha: a})
        steps.append(library_matches(f"LaplaceLoss({scale}, {d}).mean", law.mean, mean.subs(point)))
        steps.append(
            library_matches(
                f"LaplaceLoss({scale}, {d}).renyi({a})", law.renyi(a), renyi.subs(point)
            )
        )
    return steps


@cache
def _derivation() -> tuple[Any, Any, Any]:
    """The loss, ∫ L·p dy and ∫ p^α q^(1−α) dy, each integral in three pieces."""
    p, q = laplace_pdf(y, 0, b), laplace_pdf(y, delta, b)
    loss = log_likelihood_ratio(p, q)
    power = sp.expand_log(sp.exp(alpha * sp.log(p) + (1 - alpha) * sp.log(q)), force=True)
    return loss, integrate_real_line(loss * p, y), integrate_real_line(power, y)


def check(form: Any) -> tuple[Step, ...]:
    """Compare the claim, at ε = Δ/b, with the piecewise integrals."""
    mean, renyi = (part.subs(eps, delta / b) for part in form)
    loss, mean_integral, power_integral = _derivation()
    return (
        identity(
            "L(y) = log p_x(y)/p_x'(y) = (|y − Δ| − |y|)/b",
            loss,
            (sp.Abs(y - delta) - sp.Abs(y)) / b,
        ),
        identity(
            "E[L] = ∫ L·p_x dy (three pieces) equals the claimed mean",
            mean_integral,
            mean,
        ),
        identity(
            "∫ p^α q^(1−α) dy (three pieces) equals exp((α − 1)·claimed D_α)",
            power_integral,
            sp.exp((alpha - 1) * renyi),
        ),
        *_library(mean, renyi),
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
