"""Privacy time: X(s) = s·B(1/s) has Cov(X(s1), X(s2)) = min(s1, s2), and the BM loss is
L(s) = Δ²·s/2 + Δ·X(s), APC Thm 3's decomposition at t = 1/s.

Walking X forward in s reproduces the Brownian bridge law of B (proofs/brownian_bridge.py).
Assumptions: s1, s2 > 0 (both orders checked, s2 = s1 + h, h > 0); Δ > 0; B a standard BM.
Source: THEORY §3 (privacy time, Lévy's time inversion); APC Thm 3.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.symbolic import Proof, Step
from expost.symbolic.steps import identity, positive

__all__ = ["PROOF"]

u, v, s1, h, s, delta = sp.symbols("u v s1 h s Delta", positive=True)
x, x1 = sp.symbols("X x1", real=True)
s2 = s1 + h


def check(form: Any) -> tuple[Step, ...]:
    """Covariance from Cov(B(1/s1), B(1/s2)) = min(1/s1, 1/s2) = 1/s2; loss by substituting t = 1/s."""
    cov, loss = form

    def cov_at(a: Any, c: Any) -> Any:
        return cov.subs({u: a, v: c}, simultaneous=True)

    increment_var = cov_at(s2, s2) - 2 * cov_at(s1, s2) + cov_at(s1, s1)
    t1, t2 = 1 / s1, 1 / s2
    t = 1 / s
    w_at_t = t * x  # W(t) = t·X(1/t): time inversion is an involution
    return (
        positive("1/s1 − 1/s2 > 0 for s2 = s1 + h, so min(1/s1, 1/s2) = 1/s2", 1 / s1 - 1 / s2),
        identity(
            "Cov(X(s1), X(s2)) = s1·s2·(1/s2) equals the claimed covariance at (s1, s2) and (s2, s1)",
            sp.Tuple(s1 * s2 / s2, s2 * s1 / s2),
            sp.Tuple(cov_at(s1, s2), cov_at(s2, s1)),
        ),
        identity("Var(X(s2) − X(s1)) = s2 − s1: independent increments", increment_var, s2 - s1),
        identity(
            "B(t2) = X(s2)/s2 given B(t1) = x1/s1 has the bridge law ((t2/t1)·B(t1), t2(t1 − t2)/t1)",
            sp.Tuple(x1 / s2, increment_var / s2**2),
            sp.Tuple(t2 / t1 * (x1 / s1), t2 * (t1 - t2) / t1),
        ),
        identity(
            "APC Thm 3's Δ²/(2t) + (Δ/t)·W(t) at t = 1/s, W(t) = t·X(1/t), equals the claimed L(s)",
            delta**2 / (2 * t) + delta / t * w_at_t,
            loss,
        ),
    )


PROOF = Proof(
    name="levy-time-inversion",
    source="THEORY §3 (privacy time), APC Thm 3",
    statement=(
        "X(s) = s·B(1/s) has covariance min(s1, s2) (a standard Brownian motion), and the Brownian "
        "mechanism's loss in privacy time s = 1/t is Δ²·s/2 + Δ·X(s)."
    ),
    assumptions=("s1, s2 > 0", "Δ > 0", "B a standard Brownian motion"),
    claim=sp.Tuple(sp.Min(u, v), delta**2 * s / 2 + delta * x),
    wrong_claim=sp.Tuple(sp.Max(u, v), delta**2 * s / 2 + delta * x / s),
    check=check,
)
