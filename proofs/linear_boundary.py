"""Linear privacy boundary: with 2ab = ℓ = log(1/δ), ψ^L_{a,b}(t) = (Δ/t)(Δ/2 + b) + Δ·a is crossed by the
BM loss exactly when X(s) = s·W(1/s) crosses the line a + b·s (probability e^(−2ab) = δ); the slope
minimising the time reached at level E is a* = (sqrt(ℓ² + ℓ·E) − ℓ)/Δ.

Assumptions: Δ > 0; a, b > 0 with 2ab = ℓ; E > 0; privacy time s = 1/t.
Source: BNR Thm 3.6 (linear boundary), BNR appendix (tuning), BNR App. A (line crossing).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.boundaries import LinearPrivacyBoundary
from expost.symbolic import Proof, Step
from expost.symbolic.steps import exact_point, identity, library_matches, positive

__all__ = ["PROOF"]

delta, a, b, s, ell, level = sp.symbols("Delta a b s ell E", positive=True)
x = sp.Symbol("X", real=True)

_LIBRARY_POINTS = ((0.3, "1e-6", 1.0), (1.0, "0.05", 2.0), (5.0, "1e-10", 0.5))  # (E, δ, Δ)


def psi(slope: Any, intercept: Any) -> Any:
    """ψ^L at privacy time s = 1/t: Δ·s·(Δ/2 + intercept) + Δ·slope."""
    return delta * s * (delta / 2 + intercept) + delta * slope


def check(a_form: Any) -> tuple[Step, ...]:
    """Rewrite the crossing event in privacy time, solve ψ = E for s, maximise s over a."""
    loss = delta**2 * s / 2 + delta * x  # proofs/levy_time_inversion.py
    (reach,) = sp.solve(psi(a, ell / (2 * a)) - level, s)
    roots = sp.solve(sp.diff(reach, a), a)
    return (
        identity(
            "L(s) − ψ^L(1/s) = Δ·(X(s) − (a + b·s)): the boundary is the line a + b·s for X",
            loss - psi(a, b),
            delta * (x - (a + b * s)),
        ),
        positive(
            "∂ψ/∂s = Δ(Δ/2 + b) > 0: the smallest t with ψ(t) <= E is 1/s where ψ = E",
            sp.diff(psi(a, b), s),
        ),
        identity(
            "s(a) = 2a(E − Δa)/(Δ(Δa + ℓ)) vanishes at a = 0 and a = E/Δ",
            sp.Tuple(reach.subs(a, 0), reach.subs(a, level / delta)),
            sp.Tuple(0, 0),
        ),
        positive(
            "(E + ℓ)² − (ℓ² + ℓE) = E² + ℓE > 0, so the root a* = (sqrt(ℓ² + ℓE) − ℓ)/Δ lies in (0, E/Δ)",
            (level + ell) ** 2 - (ell**2 + ell * level),
        ),
        identity(
            "∂s/∂a = 0 has one positive root, the claimed a* (the maximum of s on (0, E/Δ))",
            sp.Tuple(*roots),
            sp.Tuple(a_form),
        ),
        *_library(a_form, reach),
    )


def _library(a_form: Any, reach: Any) -> list[Step]:
    steps = []
    for e, d, sens in _LIBRARY_POINTS:
        boundary = LinearPrivacyBoundary.tuned_for(e, float(d), sens)
        point = exact_point({level: e, delta: sens, ell: sp.log(1 / sp.Rational(d))})
        a_star = a_form.subs(point)
        name = f"LinearPrivacyBoundary.tuned_for({e}, {d}, {sens})"
        steps.append(library_matches(f"{name}.a", boundary.a, a_star))
        steps.append(
            library_matches(
                f"{name}.time_for({e}) = 1/s(a*)",
                boundary.time_for(e),
                1 / reach.subs(point).subs(a, a_star),
            )
        )
    return steps


PROOF = Proof(
    name="bnr-linear-boundary",
    source="BNR Thm 3.6, BNR appendix (tuning)",
    statement=(
        "The linear boundary ψ^L_{a,b} with 2ab = log(1/δ) is a straight line a + b·s for the privacy-time "
        "Brownian motion, and a* = (sqrt(ℓ² + ℓE) − ℓ)/Δ gives the earliest time at level E."
    ),
    assumptions=("Δ > 0", "a, b > 0 with 2ab = log(1/δ)", "E > 0"),
    claim=(sp.sqrt(ell**2 + ell * level) - ell) / delta,
    wrong_claim=(sp.sqrt(ell**2 + 2 * ell * level) - ell) / delta,
    check=check,
)
