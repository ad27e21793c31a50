"""Laplace noise reduction: the increment from scale s to t > s is 0 with probability (s/t)², else
Lap(t); with φ_b(ω) = 1/(1 + b²ω²), φ_s·((s/t)² + (1 − (s/t)²)·φ_t) = φ_t, so Z_t ~ Lap(t).

The continuous process (Poisson arrivals of intensity 2/u, a Lap(u) jump at each) has no arrival
in (s, t] with probability (s/t)², and its increment has the same characteristic function.
Assumptions: 0 < s < t (t = s + h, h > 0); ω real; b > 0.
Source: BNR Thm D.1, BNR eq. 3 (Koufogiannis); THEORY §3.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import sympy as sp

from expost.symbolic import Proof, Step
from expost.symbolic.laplace import integrate_real_line, laplace_cf, laplace_pdf
from expost.symbolic.steps import identity

__all__ = ["PROOF"]

b, s, h, u = sp.symbols("b s h u", positive=True)
omega, x = sp.symbols("omega x", real=True)
t = s + h


@cache
def _derivation() -> tuple[Any, Any, Any]:
    """The Laplace characteristic function from its density; the Poisson integrals over (s, t]."""
    cf = integrate_real_line(sp.exp(sp.I * omega * x) * laplace_pdf(x, 0, b), x)
    no_arrival = sp.exp(-sp.integrate(2 / u, (u, s, t)))
    compound = sp.exp(sp.integrate(2 / u * (laplace_cf(u, omega) - 1), (u, s, t)))
    return cf, no_arrival, compound


def check(p_zero: Any) -> tuple[Step, ...]:
    """Compare the claimed zero probability with the characteristic functions."""
    cf, no_arrival, compound = _derivation()
    increment = p_zero + (1 - p_zero) * laplace_cf(t, omega)
    return (
        identity("∫ exp(iωx)·Lap(x; 0, b) dx = 1/(1 + b²ω²)", cf, laplace_cf(b, omega)),
        identity(
            "φ_s·(p0 + (1 − p0)·φ_t) = φ_t: ζ_s plus the increment is Lap(t) (induction step)",
            laplace_cf(s, omega) * increment,
            laplace_cf(t, omega),
        ),
        identity(
            "P(no arrival in (s, t]) = exp(−∫ 2/u du) = p0",
            no_arrival,
            p_zero,
        ),
        identity(
            "compound-Poisson increment: exp(∫ (2/u)(φ_u − 1) du) = p0 + (1 − p0)·φ_t",
            compound,
            increment,
        ),
    )


PROOF = Proof(
    name="bnr-thm-d.1",
    source="BNR Thm D.1, BNR eq. 3",
    statement=(
        "In Laplace noise reduction the increment from scale s to t > s is zero with probability "
        "(s/t)², else Lap(t); adding it to Lap(s) noise gives exactly Lap(t) noise."
    ),
    assumptions=("0 < s < t", "ω real", "independent increments"),
    claim=(s / t) ** 2,
    wrong_claim=s / t,
    check=check,
)
