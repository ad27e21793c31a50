"""zCDP to DP: rho-zCDP gives (rho + 2·sqrt(rho·log(1/δ'')), δ'')-DP, by optimising the Rényi order.

Markov's inequality on exp(λL), with E[exp(λL)] <= exp(λ(λ+1)·rho) (α = λ + 1), gives
ε(λ) = rho·(λ + 1) + ℓ/λ, ℓ = log(1/δ''); its minimum over λ > 0 is at λ* = sqrt(ℓ/rho).
Assumptions: rho > 0; 0 < δ'' < 1.
Source: APC Lemma 2.1, FAC Lemma 1 (Bun–Steinke).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.guarantees import ZCDP, zcdp_to_dp
from expost.symbolic import Proof, Step
from expost.symbolic.steps import exact_point, identity, library_matches, positive

__all__ = ["PROOF"]

rho, ell, lam, eps = sp.symbols("rho ell lambda epsilon", positive=True)

_LIBRARY_POINTS = ((0.5, "1e-6"), (1.35, "1e-6"), (0.01, "0.05"), (3.0, "1e-10"))


def check(eps_form: Any) -> tuple[Step, ...]:
    """Solve the Markov tail bound for ε, minimise over λ, compare the value and the library."""
    (eps_of_lam,) = sp.solve(sp.Eq(lam * (lam + 1) * rho - lam * eps, -ell), eps)
    roots = sp.solve(sp.diff(eps_of_lam, lam), lam)
    lam_star = sp.sqrt(ell / rho)
    steps = [
        identity(
            "log P(L >= ε) <= λ(λ+1)·rho − λ·ε = log δ'' solves to ε(λ) = rho·(λ+1) + ℓ/λ",
            eps_of_lam,
            rho * (lam + 1) + ell / lam,
        ),
        identity(
            "ε'(λ) = 0 has the single positive root λ* = sqrt(ℓ/rho)",
            sp.Tuple(*roots),
            sp.Tuple(lam_star),
        ),
        positive("ε''(λ) = 2ℓ/λ³ > 0: λ* is the minimum", sp.diff(eps_of_lam, lam, 2)),
        identity("ε(λ*) equals the claim", eps_of_lam.subs(lam, lam_star), eps_form),
    ]
    for r, d in _LIBRARY_POINTS:
        exact = eps_form.subs(exact_point({rho: r, ell: sp.log(1 / sp.Rational(d))}))
        value = zcdp_to_dp(ZCDP(r), float(d)).eps
        steps.append(library_matches(f"zcdp_to_dp(ZCDP({r}), {d}).eps", value, exact))
    return tuple(steps)


PROOF = Proof(
    name="apc-lemma-2.1",
    source="APC Lemma 2.1, FAC Lemma 1",
    statement=(
        "rho-zCDP implies (rho + 2·sqrt(rho·log(1/δ'')), δ'')-DP: the Markov bound on exp(λL) is "
        "optimised at λ = sqrt(log(1/δ'')/rho)."
    ),
    assumptions=("rho > 0", "0 < δ'' < 1", "E[exp(λL)] <= exp(λ(λ+1)·rho) for λ > 0 (zCDP)"),
    claim=rho + 2 * sp.sqrt(rho * ell),
    wrong_claim=rho + 2 * sp.sqrt(2 * rho * ell),
    check=check,
)
