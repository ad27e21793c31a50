"""Skellam privacy boundary, Gaussian limit: the construction of THEORY §10 with the Gaussian
density of the same variance and a normal mixing distribution over real shifts gives BNR's
mixture boundary.

X_t ~ Skellam(λt, λt) has mean 0 and variance v = 2λt (cumulants of the Poisson difference), and
its standardised fourth cumulant vanishes as λt grows. With the N(0, v) density φ_v in place of
the pmf: the loss is ℓ_v(z) = (D² − 2Dz)/(2v), decreasing in z for D > 0; the shift likelihood
ratios R^k(z) = φ_v(z − k)/φ_v(z) mixed over k ~ N(0, 1/ρ) give
M(z) = sqrt(ρ/(ρ + s))·exp((sz)²/(2(s + ρ))) with s = 1/v, which is BNR Lemma A.3's mixture
martingale of the privacy-time Brownian motion X(s) = s·z; M is symmetric and increasing in |z|,
so {ℓ > ψ} = {z < −g} ⊆ {M >= 1/δ} with M(−g) = 1/δ, and
ψ_ρ(t) = Δ²/(2v) + Δ·sqrt(2(s + ρ)·log((1/δ)·sqrt((s + ρ)/ρ))).
At each time this is BNR's ψ^M_r(v) (Thm 3.6, `MixturePrivacyBoundary`) with r = ρ·v²: the two
families coincide pointwise, so they reach a target level at the same earliest time. With
THEORY §10's one-sided weights (half-normal on the shifts k < 0 only) the mixture is
sqrt(ρ/(ρ + s))·exp(X²/(2(s + ρ)))·2Φ(X/sqrt(s + ρ)) at X = −sz, the equation that
`NormalMixture(sides=1)` solves (checked on the library at three points).

Assumptions: λ, t, Δ, ρ > 0, 0 < δ < 1; the two-sided normal mixture (the library's sides=2).
Source: THEORY §10 (construction), BNR Thm 3.6 and Lemma A.3 (mixture boundary).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.boundaries import MixturePrivacyBoundary, NormalMixture
from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import integrate_exp_quadratic, log_likelihood_ratio, normal_pdf
from expost.symbolic.steps import exact_point, identity, library_matches, positive

__all__ = ["PROOF"]

lam, t, sens, rho, delta, r, theta = sp.symbols("lambda t Delta rho delta r theta", positive=True)
z, k = sp.symbols("z k", real=True)
below = sp.Symbol("z_minus", negative=True)

_LIBRARY_POINTS = ((1.0, "1e-6", 1.0, 3.0), (25.0, "0.05", 2.0, 0.7), (400.0, "1e-9", 3.0, 120.0))


def boundary(v: Any) -> Any:
    """ψ_ρ at noise variance v: Δ²/(2v) + Δ·sqrt(2(1/v + ρ)·log((1/δ)·sqrt((1/v + ρ)/ρ)))."""
    s = 1 / v
    return sens**2 / (2 * v) + sens * sp.sqrt(
        2 * (s + rho) * sp.log(sp.sqrt((s + rho) / rho) / delta)
    )


def bnr_mixture(v: Any) -> Any:
    """BNR Thm 3.6: ψ^M_r(v) = Δ²/(2v) + (Δ/v)·sqrt(2(v + r)·log((1/δ)·sqrt((v + r)/r)))."""
    return sens**2 / (2 * v) + (sens / v) * sp.sqrt(
        2 * (v + r) * sp.log(sp.sqrt((v + r) / r) / delta)
    )


def check(psi: Any) -> tuple[Step, ...]:
    """Cumulants → Gaussian limit; loss; mixture integral; crossing level; ψ; BNR's form; library."""
    cgf = lam * t * (sp.exp(theta) + sp.exp(-theta) - 2)  # Skellam(λt, λt): two Poisson cgfs
    v = sp.diff(cgf, theta, 2).subs(theta, 0)
    s = 1 / v
    loss = log_likelihood_ratio(normal_pdf(z, 0, v), normal_pdf(z - sens, 0, v))
    exponent = sp.expand(
        sp.expand_log(sp.log(normal_pdf(z - k, 0, v) / normal_pdf(z, 0, v)), force=True)
    )
    mixture = integrate_exp_quadratic(exponent + sp.log(normal_pdf(k, 0, 1 / rho)), k)
    closed = sp.sqrt(rho / (rho + s)) * sp.exp((s * z) ** 2 / (2 * (s + rho)))
    g = v * sp.sqrt(2 * (s + rho) * sp.log(sp.sqrt((s + rho) / rho) / delta))
    return (
        identity(
            "Skellam(λt, λt) cumulants: κ1 = 0, κ2 = 2λt, κ4/κ2² = 1/(2λt) → 0 (the Gaussian limit N(0, 2λt))",
            sp.Tuple(
                sp.diff(cgf, theta).subs(theta, 0),
                v,
                sp.limit(sp.diff(cgf, theta, 4).subs(theta, 0) / v**2, t, sp.oo),
            ),
            sp.Tuple(0, 2 * lam * t, 0),
        ),
        identity(
            "ℓ_v(z) = log φ_v(z) − log φ_v(z − Δ) = (Δ² − 2Δz)/(2v)",
            loss,
            (sens**2 - 2 * sens * z) / (2 * v),
        ),
        positive("−∂ℓ/∂z = Δ/v > 0: the loss decreases in z", -sp.diff(loss, z)),
        identity(
            "∫ R^k(z)·N(k; 0, 1/ρ) dk = sqrt(ρ/(ρ + s))·exp((sz)²/(2(s + ρ))), BNR Lemma A.3's mixture at X = sz",
            sp.simplify(mixture - closed),
            0,
        ),
        identity(
            "log M(−g) = log(1/δ) at g = v·sqrt(2(s + ρ)·log((1/δ)·sqrt((s + ρ)/ρ)))",
            sp.expand_log(sp.log(closed.subs(z, -g)), force=True),
            sp.log(1 / delta),
        ),
        identity("ψ = ℓ_v(−g) equals the claimed boundary", loss.subs(z, -g), psi),
        identity(
            "with r = ρ·v², the claim is BNR's ψ^M_r(v) (Thm 3.6) at v = 2λt",
            psi.subs(rho, r / (2 * lam * t) ** 2),
            bnr_mixture(2 * lam * t),
        ),
        _one_sided(v),
        *_library(psi),
        *_library_one_sided(),
    )


def _one_sided_mixture(v: Any, noise: Any) -> Any:
    """∫_(k<0) R^k(z)·2·N(k; 0, 1/ρ) dk: the half-normal weights on the shifts k < 0 only."""
    ratio = sp.exp(noise * k / v - k**2 / (2 * v))
    density = 2 * sp.sqrt(rho / (2 * sp.pi)) * sp.exp(-rho * k**2 / 2)
    return sp.integrate(ratio * density, (k, -sp.oo, 0))


def _one_sided(v: Any) -> Step:
    """THEORY §10 keeps only the shifts k < 0 (weights summing to 1 there): the one-sided mixture."""
    s = 1 / v
    x = -s * below
    closed = (
        sp.sqrt(rho / (rho + s))
        * sp.exp(x**2 / (2 * (s + rho)))
        * (1 + sp.erf(x / sp.sqrt(2 * (s + rho))))
    )
    return identity(
        "half-normal weights on k < 0 (THEORY §10's one-sided mixture), z < 0: "
        "sqrt(ρ/(ρ + s))·exp(X²/(2(s + ρ)))·2Φ(X/sqrt(s + ρ)) at X = −sz, NormalMixture(sides=1)'s equation",
        sp.simplify(_one_sided_mixture(v, below).rewrite(sp.erf) - closed),
        0,
    )


def _library_one_sided() -> list[Step]:
    """NormalMixture(ρ, δ, sides=1) at v = s solves that equation: log M(X = g) = log(1/δ)."""
    steps = []
    x, precision, time_s = sp.symbols("X rho_ s_", positive=True)
    log_m = (
        sp.log(precision / (precision + time_s)) / 2
        + x**2 / (2 * (time_s + precision))
        + sp.log(1 + sp.erf(x / sp.sqrt(2 * (time_s + precision))))
    )
    for r_value, d, s_value in ((0.5, "1e-6", 0.02), (3.0, "0.05", 1.0), (40.0, "1e-9", 7.0)):
        g = NormalMixture(r_value, float(d), sides=1)(s_value)
        point = exact_point({precision: r_value, time_s: s_value, x: g})
        steps.append(
            library_matches(
                f"NormalMixture({r_value}, {d}, sides=1)({s_value}): log M(g) = log(1/δ)",
                float(sp.N(log_m.subs(point), 30)),
                sp.log(1 / sp.Rational(d)),
                rel_tol=1e-12,
            )
        )
    return steps


def _library(psi: Any) -> list[Step]:
    steps = []
    for time, d, delta_sens, r_value in _LIBRARY_POINTS:
        point = exact_point({lam: 1, t: time, delta: d, sens: delta_sens})
        variance = 2 * time
        value = MixturePrivacyBoundary(r_value, float(d), delta_sens)(variance)
        exact = psi.subs(point).subs(rho, sp.Rational(str(r_value)) / (2 * point[t]) ** 2)
        steps.append(
            library_matches(
                f"MixturePrivacyBoundary({r_value}, {d}, {delta_sens})({variance}) = ψ_ρ at ρ = r/v²",
                value,
                exact,
            )
        )
    return steps


PROOF = Proof(
    name="skellam-gaussian-limit",
    source="THEORY §10; BNR Thm 3.6, Lemma A.3",
    statement=(
        "In the Gaussian limit (variance 2λt) the Skellam boundary construction with a normal mixing "
        "distribution gives ψ_ρ(t) = Δ²/(2v) + Δ·sqrt(2(1/v + ρ)·log((1/δ)·sqrt((1/v + ρ)/ρ))), v = 2λt: "
        "BNR's mixture boundary in privacy time, equal to ψ^M_r(v) with r = ρv² at each time."
    ),
    assumptions=("λ, t, Δ, ρ > 0", "0 < δ < 1", "two-sided normal mixing distribution"),
    claim=boundary(2 * lam * t),
    wrong_claim=boundary(lam * t),
    check=check,
)
