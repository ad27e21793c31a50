"""Gaussian integral: ∫ exp(−a·x² + b·x + c) dx over ℝ equals sqrt(π/a)·exp(b²/(4a) + c).

Assumptions: a > 0; b, c real.
Source: standard calculus. Every Gaussian proof uses it through
`expost.symbolic.gaussian.integrate_exp_quadratic` (THEORY §2–3).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import gaussian_integral, integrate_exp_quadratic
from expost.symbolic.steps import identity

__all__ = ["PROOF"]

a = sp.Symbol("a", positive=True)
b, c, x, z = sp.symbols("b c x z", real=True)


def check(value: Any) -> tuple[Step, ...]:
    """Complete the square, shift x = z + b/(2a), integrate exp(−a·z²)."""
    exponent = -a * x**2 + b * x + c
    completed = -a * (x - b / (2 * a)) ** 2 + b**2 / (4 * a) + c
    base = sp.integrate(sp.exp(-a * z**2), (z, -sp.oo, sp.oo))
    return (
        identity("−a·x² + b·x + c = −a·(x − b/(2a))² + b²/(4a) + c", exponent, completed),
        identity("∫ exp(−a·z²) dz = sqrt(π/a) (sympy integrate)", base, sp.sqrt(sp.pi / a)),
        identity(
            "shifting z = x − b/(2a): the integral is exp(b²/(4a) + c)·sqrt(π/a) = claim",
            sp.exp(b**2 / (4 * a) + c) * base,
            value,
        ),
        identity(
            "the helper integrate_exp_quadratic returns the claim",
            integrate_exp_quadratic(exponent, x),
            value,
        ),
    )


PROOF = Proof(
    name="gaussian-integral",
    source="Gaussian integral (helper for THEORY §2–3)",
    statement="∫ exp(−a·x² + b·x + c) dx over ℝ equals sqrt(π/a)·exp(b²/(4a) + c).",
    assumptions=("a > 0", "b, c real"),
    claim=gaussian_integral(a, b, c),
    wrong_claim=sp.sqrt(sp.pi / a) * sp.exp(b**2 / (2 * a) + c),
    check=check,
)
