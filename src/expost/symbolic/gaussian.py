"""Gaussian densities and the Gaussian integral, shared by the proofs and the tests.

`integrate_exp_quadratic` uses ∫ exp(−A·x² + B·x + C) dx = sqrt(π/A)·exp(B²/(4A) + C) for A > 0,
which ``proofs/gaussian_integral.py`` proves (complete the square, then one sympy integral).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

__all__ = [
    "gaussian_integral",
    "integrate_exp_quadratic",
    "log_likelihood_ratio",
    "log_normal_pdf",
    "normal_expectation_exp",
    "normal_pdf",
]


def normal_pdf(x: Any, mean: Any, var: Any) -> Any:
    """The N(mean, var) density at x."""
    return sp.exp(-((x - mean) ** 2) / (2 * var)) / sp.sqrt(2 * sp.pi * var)


def log_normal_pdf(x: Any, mean: Any, var: Any) -> Any:
    """log of `normal_pdf`, expanded (var must be a positive expression)."""
    return sp.expand_log(sp.log(normal_pdf(x, mean, var)), force=True)


def log_likelihood_ratio(p: Any, q: Any) -> Any:
    """log(p/q) for two positive densities, expanded: the privacy loss (APC Def 2.2)."""
    return sp.expand(sp.expand_log(sp.log(p) - sp.log(q), force=True))


def gaussian_integral(a: Any, b: Any, c: Any) -> Any:
    """sqrt(π/a)·exp(b²/(4a) + c): the value of ∫ exp(−a·x² + b·x + c) dx over ℝ, a > 0."""
    return sp.sqrt(sp.pi / a) * sp.exp(b**2 / (4 * a) + c)


def integrate_exp_quadratic(exponent: Any, x: Any) -> Any:
    """∫ exp(exponent) dx over ℝ for an exponent quadratic in x with negative leading coefficient.

    Raises ValueError if the exponent is not quadratic in x or sympy cannot show that the
    leading coefficient is negative (the integral would diverge).
    """
    poly = sp.Poly(sp.expand(exponent), x)
    if poly.degree() != 2:
        raise ValueError(f"exponent {exponent} is not quadratic in {x}")
    a2, a1, a0 = poly.all_coeffs()
    a = sp.simplify(-a2)
    if a.is_positive is not True:
        raise ValueError(f"cannot show that the x² coefficient {-a} is negative")
    return gaussian_integral(a, a1, a0)


def normal_expectation_exp(exponent: Any, x: Any, mean: Any, var: Any) -> Any:
    """E[exp(g(X))] for X ~ N(mean, var) and g = ``exponent`` (in x) at most quadratic."""
    return integrate_exp_quadratic(exponent + log_normal_pdf(x, mean, var), x)
