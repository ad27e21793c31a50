"""Laplace densities, their characteristic function and piecewise integration over ℝ."""

from __future__ import annotations

from typing import Any

import sympy as sp

__all__ = ["integrate_real_line", "laplace_cf", "laplace_pdf"]


def laplace_pdf(x: Any, mean: Any, scale: Any) -> Any:
    """The Lap(mean, scale) density exp(−|x − mean|/scale)/(2·scale)."""
    return sp.exp(-sp.Abs(x - mean) / scale) / (2 * scale)


def laplace_cf(scale: Any, omega: Any) -> Any:
    """φ_b(ω) = 1/(1 + b²ω²), the characteristic function of Lap(0, b) (proved in BNR Thm D.1's proof)."""
    return 1 / (1 + scale**2 * omega**2)


def integrate_real_line(integrand: Any, x: Any) -> Any:
    """∫ integrand dx over ℝ, splitting |·| into pieces (convergence is the caller's assumption)."""
    return sp.integrate(integrand.rewrite(sp.Piecewise), (x, -sp.oo, sp.oo), conds="none")
