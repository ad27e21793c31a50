"""FAC filter odometer: y* = (sqrt(2ℓ + 2ε) − sqrt(2ℓ))² makes u^F(y*) = ε, where
u^F(V) = sqrt(y*·ℓ/2) + sqrt(ℓ/(2y*))·V + V/2 and ℓ = log(1/δ'').

u^F is the line tangent to sqrt(2ℓV) + V/2 at V = y*, and y* = 2·rho* (proofs/rho_star.py).
Assumptions: ε > 0; 0 < δ'' < 1; V >= 0.
Source: FAC Thm 3; THEORY §5.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.odometers import FilterOdometer
from expost.symbolic import Proof, Step
from expost.symbolic.steps import exact_point, identity, library_matches, numeric_identity

__all__ = ["PROOF"]

eps, ell, y, s, big_v = sp.symbols("epsilon ell y s V", positive=True)

_LIBRARY_POINTS = ((10.0, "1e-6", 1.0), (1.0, "1e-3", 0.2), (0.3, "0.05", 3.0))  # (ε, δ'', V)


def u_filter(y_star: Any, v: Any) -> Any:
    """u^F at variance sum v, tuned at y_star."""
    return sp.sqrt(y_star * ell / 2) + sp.sqrt(ell / (2 * y_star)) * v + v / 2


def check(y_form: Any) -> tuple[Step, ...]:
    """With s = sqrt(y*) > 0, u^F(y*) = ε is the quadratic sqrt(2ℓ)·s + s²/2 = ε."""
    roots = sp.solve(sp.sqrt(2 * ell) * s + s**2 / 2 - eps, s)
    rho_star = (sp.sqrt(ell + eps) - sp.sqrt(ell)) ** 2
    return (
        identity(
            "with s = sqrt(y), u^F(y) at V = y is sqrt(2ℓ)·s + s²/2",
            u_filter(s**2, s**2),
            sp.sqrt(2 * ell) * s + s**2 / 2,
        ),
        identity(
            "sqrt(2ℓ)·s + s²/2 = ε has one positive root; its square is the claim",
            sp.Tuple(*(r**2 for r in roots)),
            sp.Tuple(y_form),
        ),
        identity(
            "u^F(V) − (sqrt(2ℓV) + V/2) = sqrt(ℓ/(2y))·(sqrt(V) − sqrt(y))² >= 0: tangent at V = y",
            u_filter(y, big_v) - sp.sqrt(2 * ell * big_v) - big_v / 2,
            sp.sqrt(ell / (2 * y)) * (sp.sqrt(big_v) - sp.sqrt(y)) ** 2,
        ),
        numeric_identity(
            "u^F(y*) = ε directly (sympy cannot decide the sign of sqrt(2ℓ + 2ε) − sqrt(2ℓ))",
            u_filter(y_form, y_form),
            eps,
            {eps: (0.01, 50.0), ell: (0.01, 30.0)},
        ),
        identity("y* = 2·rho*: the Σ eps_m² budget is twice APC's rho*", y_form, 2 * rho_star),
        *_library(y_form),
    )


def _library(y_form: Any) -> list[Step]:
    steps = []
    for e, d, v in _LIBRARY_POINTS:
        odometer = FilterOdometer(e, 0.0, float(d))
        y_star = y_form.subs(exact_point({eps: e, ell: sp.log(1 / sp.Rational(d))}))
        name = f"FilterOdometer({e}, 0, {d})"
        steps.append(library_matches(f"{name}.y_star", odometer.y_star, y_star))
        steps.append(
            library_matches(
                f"{name}.bound_at({v})",
                float(odometer.bound_at([v])[0]),
                u_filter(y_star, sp.Rational(str(v))).subs(ell, sp.log(1 / sp.Rational(d))),
            )
        )
    return steps


PROOF = Proof(
    name="fac-thm-3-filter-odometer",
    source="FAC Thm 3",
    statement=(
        "The filter odometer tuned at ε, u^F(V) = sqrt(y*·ℓ/2) + sqrt(ℓ/(2y*))·V + V/2, equals ε at "
        "V = y* = (sqrt(2ℓ + 2ε) − sqrt(2ℓ))², ℓ = log(1/δ'')."
    ),
    assumptions=("ε > 0", "0 < δ'' < 1", "V = Σ eps_m² >= 0"),
    claim=(sp.sqrt(2 * ell + 2 * eps) - sp.sqrt(2 * ell)) ** 2,
    wrong_claim=(sp.sqrt(ell + eps) - sp.sqrt(ell)) ** 2,
    check=check,
)
