"""Brownian bridge: given B(s) = b, B(t) for t < s is N((t/s)·b, t(s − t)/s).

Derived from the joint density of (B(t), B(s)), covariance [[t, t], [t, s]] (Cov = min(s, t)),
divided by the density of B(s).
Assumptions: 0 < t < s (s = t + h, h > 0); B a standard Brownian motion.
Source: BNR appendix ("Simulating noise reduction"); THEORY §3.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import log_normal_pdf
from expost.symbolic.steps import identity

__all__ = ["PROOF"]

t, h = sp.symbols("t h", positive=True)
x, b = sp.symbols("x b", real=True)
s = t + h


def check(law: Any) -> tuple[Step, ...]:
    """Conditional density = joint bivariate normal density / marginal density of B(s)."""
    mean, var = law
    cov = sp.Matrix([[t, t], [t, t + (s - t)]])
    v = sp.Matrix([x, b])
    log_joint = -(v.T * cov.inv() * v)[0, 0] / 2 - sp.log(2 * sp.pi) - sp.log(cov.det()) / 2
    log_conditional = log_joint - log_normal_pdf(b, 0, s)
    return (
        identity(
            "independent increments: Var B(s) = t + (s − t) = s, Cov(B(t), B(s)) = Var B(t) = t = min(s, t)",
            sp.Tuple(cov[1, 1], cov[0, 1]),
            sp.Tuple(s, sp.Min(s, t)),
        ),
        identity(
            "log p(B(t) = x | B(s) = b) = log p(x, b) − log p(b) equals log N(x; mean, var)",
            log_conditional,
            log_normal_pdf(x, mean, var),
        ),
        identity(
            "the conditional-Gaussian formula (Σ12/Σ22·b, Σ11 − Σ12²/Σ22) agrees",
            sp.Tuple(cov[0, 1] / cov[1, 1] * b, cov[0, 0] - cov[0, 1] ** 2 / cov[1, 1]),
            law,
        ),
    )


PROOF = Proof(
    name="brownian-bridge",
    source="BNR appendix (Simulating noise reduction)",
    statement="Given B(s) = b, B(t) for 0 < t < s is normal with mean (t/s)·b and variance t(s − t)/s.",
    assumptions=("0 < t < s", "B a standard Brownian motion"),
    claim=sp.Tuple(t * b / s, t * (s - t) / s),
    wrong_claim=sp.Tuple(b, s - t),
    check=check,
)
