"""The GDP prices of Gaussian and Brownian rounds: mu² = Δ²/σ² and mu² = Δ²/T (= Δ²·s).

A pair whose privacy loss under P_x is N(mu²/2, mu²) is exactly the Gaussian shift experiment
N(0, 1) vs N(mu, 1) (the loss determines the trade-off), i.e. it is mu-GDP and no better.
The Gaussian mechanism's loss is N(Δ²/(2σ²), Δ²/σ²); in privacy time s = 1/t the BM's loss is
L(s) = Δ²·s/2 + Δ·X(s) (proofs/levy_time_inversion.py), i.e. τ/2 + W(τ) in intrinsic time
τ = Δ²·s: the shift experiment observed for time τ, so a BM walked to s = 1/T costs
mu² = Δ²/T (stopped earlier by a stopping function it reveals less: THEORY §9).
Assumptions: σ, Δ, s > 0; X a standard Brownian motion.
Source: THEORY §9 (Dong–Roth–Su; Smith–Thakurta 2022); APC Thm 3 for the BM's loss.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.filters import BrownianCost, GaussianCost, GaussianDPFilter
from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import log_likelihood_ratio, normal_expectation_exp, normal_pdf
from expost.symbolic.steps import exact_point, identity, library_matches

__all__ = ["PROOF"]

delta, sigma, s, mu = sp.symbols("Delta sigma s mu", positive=True)
y, lam = sp.symbols("y lambda", real=True)


def _cgf(loss: Any, var: Any) -> Any:
    """log E[e^(λL)] for a loss affine in y ~ N(0, var)."""
    return sp.expand_log(sp.log(normal_expectation_exp(lam * loss, y, 0, var)), force=True)


def check(prices: Any) -> tuple[Step, ...]:
    """Both losses have the shift experiment's law N(mu²/2, mu²) exactly at mu² = the claim."""
    gauss, brownian = prices
    shift = log_likelihood_ratio(normal_pdf(y, 0, 1), normal_pdf(y, mu, 1))
    gauss_loss = log_likelihood_ratio(normal_pdf(y, 0, sigma**2), normal_pdf(y, delta, sigma**2))
    bm_loss = delta**2 * s / 2 + delta * y  # y = X(s) ~ N(0, s)
    f = GaussianDPFilter(4.0)
    return (
        identity(
            "the shift experiment's loss has cgf λ·mu²/2 + λ²·mu²/2: N(mu²/2, mu²)",
            _cgf(shift, 1),
            lam * mu**2 / 2 + lam**2 * mu**2 / 2,
        ),
        identity(
            "the Gaussian mechanism's loss has that cgf at mu² = the claimed price",
            _cgf(gauss_loss, sigma**2),
            _cgf(shift, 1).subs(mu, sp.sqrt(gauss)),
        ),
        identity(
            "the BM's loss Δ²s/2 + Δ·X(s), X(s) ~ N(0, s), has that cgf at mu² = the claimed price",
            _cgf(bm_loss, s),
            _cgf(shift, 1).subs(mu, sp.sqrt(brownian)),
        ),
        identity(
            "in intrinsic time τ = Δ²s the BM's loss drifts at 1/2 per unit of its variance",
            sp.Tuple(sp.diff(delta**2 * s / 2, s) / delta**2, delta**2 * s),
            sp.Tuple(sp.Rational(1, 2), brownian),
        ),
        library_matches(
            "GaussianDPFilter price of GaussianCost(0.3) = mu² at Δ/σ = sqrt(0.6)",
            f.price(GaussianCost(0.3))[0],
            gauss.subs(exact_point({delta: 1, sigma: 1 / sp.sqrt(sp.Rational("0.6"))})),
            rel_tol=1e-15,
        ),
        library_matches(
            "GaussianDPFilter price of BrownianCost(7, 3) (s = 1/7)",
            f.price(BrownianCost(7.0, 3.0))[0],
            brownian.subs({delta: 3, s: sp.Rational(1, 7)}),
            rel_tol=1e-15,
        ),
    )


PROOF = Proof(
    name="gdp-gaussian-brownian-prices",
    source="THEORY §9, APC Thm 3",
    statement=(
        "A Gaussian mechanism with ℓ2 sensitivity Δ and noise σ is exactly (Δ/σ)-GDP, and a Brownian "
        "mechanism walked to privacy time s = 1/T is (Δ·sqrt(s))-GDP: GDP prices mu² = Δ²/σ², Δ²/T."
    ),
    assumptions=("σ, Δ, s > 0", "X(s) ~ N(0, s) (privacy time)"),
    claim=sp.Tuple(delta**2 / sigma**2, delta**2 * s),
    wrong_claim=sp.Tuple(delta**2 / (2 * sigma**2), delta**2 * s / 2),  # rho taken for mu²
    check=check,
)
