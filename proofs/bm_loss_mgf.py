"""BM loss moment generating function: at a fixed time t, E[exp(λL)] = exp(λ(λ+1)·rho), rho = Δ²/(2t).

L = Δ²/(2t) + (Δ/t)·W(t) with W(t) ~ N(0, t) (APC Thm 3), integrated against the normal density.
Assumptions: t > 0; Δ > 0; λ real.
Source: APC Thm 5 (step of its proof); THEORY §3.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.loss import BrownianLoss
from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import normal_expectation_exp
from expost.symbolic.steps import exact_point, identity, library_matches

__all__ = ["PROOF"]

delta, t, rho = sp.symbols("Delta t rho", positive=True)
lam, w = sp.symbols("lambda w", real=True)

_LIBRARY_POINTS = ((0.5, 1.0, 0.7), (2.0, 3.0, -0.3), (0.01, 1.0, 2.0))  # (t, Δ, λ)


def check(mgf_form: Any) -> tuple[Step, ...]:
    """Integrate exp(λL(w)) against N(w; 0, t), then write Δ = sqrt(2·rho·t)."""
    loss = delta**2 / (2 * t) + delta / t * w
    mgf = normal_expectation_exp(lam * loss, w, 0, t)
    return (
        identity(
            "E[exp(λL)] over W(t) ~ N(0, t), with Δ = sqrt(2·rho·t), equals the claim",
            mgf.subs(delta, sp.sqrt(2 * rho * t)),
            mgf_form,
        ),
        identity(
            "so D_(λ+1) = log E[exp(λL)]/λ = (λ + 1)·rho: a BM stopped at t is rho-zCDP",
            sp.expand_log(sp.log(mgf_form), force=True) / lam,
            (lam + 1) * rho,
        ),
        *(
            library_matches(
                f"BrownianLoss({time}, {d}).cgf({lm}) vs log of the claim",
                BrownianLoss(time, d).cgf(lm),
                sp.log(
                    mgf_form.subs(
                        exact_point(
                            {rho: sp.Rational(str(d)) ** 2 / (2 * sp.Rational(str(time))), lam: lm}
                        )
                    )
                ),
            )
            for time, d, lm in _LIBRARY_POINTS
        ),
    )


PROOF = Proof(
    name="bm-loss-mgf",
    source="APC Thm 5 (proof), THEORY §3",
    statement=(
        "The Brownian mechanism's loss at a fixed time t satisfies E[exp(λL)] = exp(λ(λ+1)·rho) "
        "with rho = Δ²/(2t)."
    ),
    assumptions=("t > 0", "Δ > 0", "λ real", "W(t) ~ N(0, t)"),
    claim=sp.exp(lam * (lam + 1) * rho),
    wrong_claim=sp.exp(lam**2 * rho),
    check=check,
)
