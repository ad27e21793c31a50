"""Ex-post RDP of the Brownian mechanism: ε_α = α·Δ²/(2τ) at a stopping time τ (THEORY §11).

In privacy time s = 1/t the loss is L_s = D·W_s + D²s/2 with W a standard BM (Lévy time
inversion, proof ``levy-time-inversion``) and |D| <= Δ. With ε_α = α·D²s/2,
exp((α−1)(L_s − ε_α)) = exp(λW_s − λ²s/2), λ = (α−1)·D: the exponential martingale (mean 1,
increments of conditional mean 1). A stopping time of the released iterates is a stopping time
in s, bounded by 1/t_min, so optional stopping gives E[exp((α−1)(L_τ − ε_α(τ)))] = 1; and
α·D²s/2 <= α·Δ²s/2. Wrong variant: rho halved (α·D²s/4), whose expectation is above 1.
Assumptions: α > 1; s, h > 0; D > 0 (the sign of D is a reflection of W); t_min > 0.
Source: THEORY §11; Räisä, Koskela & Honkela (arXiv 2509.22213) for the definition.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.ex_post_rdp import ExPostRDP
from expost.filters._exact import rho_of_brownian
from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import normal_expectation_exp
from expost.symbolic.steps import exact_point, identity, library_matches, positive

__all__ = ["PROOF"]

alpha, d, s, h, g = sp.symbols("alpha D s h g", positive=True)
w, inc = sp.symbols("w increment", real=True)

_LIBRARY_POINTS = ((0.5, 1.0, 2.0), (3.0, 2.0, 1.5), (0.01, 0.3, 8.0))  # (t, Δ, α)


def _loss(at: Any, path: Any) -> Any:
    """L_s = D·W_s + D²s/2: APC Thm 3 in privacy time (proof ``levy-time-inversion``)."""
    return d * path + d**2 * at / 2


def check(form: Any) -> tuple[Step, ...]:
    """Exponent identity, mean 1 at a fixed s, mean-1 increments, monotonicity in D, library."""
    lam = (alpha - 1) * d
    exponent = (alpha - 1) * (_loss(s, w) - form)
    later = (alpha - 1) * (_loss(s + h, w + inc) - form.subs(s, s + h))
    step_exponent = later - exponent
    bigger = form.subs(d, d + g) - form
    return (
        identity(
            "(α−1)(L_s − ε_α) equals λ·W_s − λ²s/2 with λ = (α−1)D: the exponential martingale",
            exponent,
            lam * w - lam**2 * s / 2,
        ),
        identity(
            "E[exp((α−1)(L_s − ε_α))] over W_s ~ N(0, s) is 1",
            normal_expectation_exp(exponent, w, 0, s),
            1,
        ),
        identity(
            "its increment from s to s + h has conditional mean 1 (W_(s+h) − W_s ~ N(0, h), "
            "independent of the past): a martingale, so optional stopping at τ <= 1/t_min gives 1",
            normal_expectation_exp(step_exponent, inc, 0, h),
            1,
        ),
        positive("ε_α grows with |D|: the bound at Δ = D + g covers every |D| <= Δ", bigger),
        *(
            library_matches(
                f"ExPostRDP.of_rho(rho_of_brownian({t}, {delta})).eps({a}) vs ε_α at s = 1/t",
                ExPostRDP.of_rho(rho_of_brownian(t, delta)).eps(a),
                form.subs(exact_point({alpha: a, d: delta, s: 1 / sp.Rational(str(t))})),
            )
            for t, delta, a in _LIBRARY_POINTS
        ),
    )


PROOF = Proof(
    name="ex-post-rdp-brownian",
    source="THEORY §11 (ex-post RDP; Lévy time inversion, optional stopping)",
    statement=(
        "The Brownian mechanism stopped at a stopping time τ of its released iterates has ex-post "
        "RDP ε_α = α·Δ²/(2τ) at every order α > 1: exp((α−1)(L − ε_α)) is the exponential "
        "martingale exp((α−1)D·W_s − (α−1)²D²s/2) in privacy time s = 1/t, with mean 1."
    ),
    assumptions=(
        "α > 1",
        "s, h > 0 (privacy time, s = 1/t)",
        "0 < D <= Δ (D < 0 is W reflected)",
        "τ a stopping time of the released iterates with τ >= t_min > 0 (bounded in s)",
    ),
    claim=alpha * d**2 * s / 2,
    wrong_claim=alpha * d**2 * s / 4,
    check=check,
)
