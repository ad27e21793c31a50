"""rho* = (sqrt(ℓ + ε) − sqrt(ℓ))², ℓ = log(1/δ''), is the largest rho with rho + 2·sqrt(rho·ℓ) <= ε.

For (ε, δ'') = (10, 1e-6) it is 1.35301469016887…, the budget of APC Sec. 7.
Assumptions: ε > 0; 0 < δ'' < 1.
Source: APC Lemma 2.1 inverted (APC Sec. 7, FAC Thm 2); `expost.rho_for_dp`.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.guarantees import rho_for_dp
from expost.symbolic import Proof, Step
from expost.symbolic.steps import (
    exact_point,
    identity,
    library_matches,
    numeric_identity,
    positive,
)

__all__ = ["PROOF"]

eps, ell, rho, s = sp.symbols("epsilon ell rho s", positive=True)

_LIBRARY_POINTS = ((10.0, "1e-6"), (1.0, "1e-6"), (0.1, "0.01"), (50.0, "1e-12"))


def _at(form: Any, e: float, d: str) -> Any:
    return form.subs(exact_point({eps: e, ell: sp.log(1 / sp.Rational(d))}))


def check(rho_form: Any) -> tuple[Step, ...]:
    """g(rho) = rho + 2·sqrt(rho·ℓ) is increasing; solve g = ε as a quadratic in s = sqrt(rho)."""
    g = rho + 2 * sp.sqrt(rho * ell)
    roots = sp.solve(s**2 + 2 * sp.sqrt(ell) * s - eps, s)
    steps = [
        positive(
            "g'(rho) = 1 + sqrt(ℓ/rho) > 0: the largest rho with g(rho) <= ε solves g(rho) = ε",
            sp.diff(g, rho),
        ),
        identity(
            "with s = sqrt(rho), g = ε is s² + 2·sqrt(ℓ)·s − ε = 0; its only positive root, squared, "
            "is the claim",
            sp.Tuple(*(r**2 for r in roots)),
            sp.Tuple(rho_form),
        ),
        numeric_identity(
            "g(claim) = ε directly (sympy cannot decide the sign of sqrt(ℓ + ε) − sqrt(ℓ))",
            g.subs(rho, rho_form),
            eps,
            {eps: (0.01, 50.0), ell: (0.01, 30.0)},
        ),
        library_matches(
            "APC Sec. 7's value at (10, 1e-6)",
            1.35301469016887,
            _at(rho_form, 10.0, "1e-6"),
            rel_tol=1e-14,
        ),
    ]
    for e, d in _LIBRARY_POINTS:
        steps.append(
            library_matches(f"rho_for_dp({e}, {d})", rho_for_dp(e, float(d)), _at(rho_form, e, d))
        )
    return tuple(steps)


PROOF = Proof(
    name="rho-star",
    source="APC Lemma 2.1 inverted (APC Sec. 7, FAC Thm 2)",
    statement=(
        "The largest rho with rho + 2·sqrt(rho·log(1/δ'')) <= ε is (sqrt(ℓ + ε) − sqrt(ℓ))², "
        "ℓ = log(1/δ''); 1.35301469016887… at (10, 1e-6)."
    ),
    assumptions=("ε > 0", "0 < δ'' < 1"),
    claim=(sp.sqrt(ell + eps) - sp.sqrt(ell)) ** 2,
    wrong_claim=2 * (sp.sqrt(ell + eps) - sp.sqrt(ell)) ** 2,
    check=check,
)
