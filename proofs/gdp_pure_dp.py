"""GDP prices of pure-DP and bounded-range rounds: mu(eps) = 2·Φ⁻¹(e^eps/(1 + e^eps)) and,
for an eps-bounded-range round (the exponential mechanism), mu(eps/2).

Pure DP: an eps-DP pair is dominated by randomized response, whose trade-off
f(α) = max(0, 1 − e^eps·α, e^(−eps)·(1 − α)) has one kink, at α* = 1/(1 + e^eps) with
f(α*) = α*. G_mu is convex with G_mu(0) = 1, G_mu(1) = 0, so G_mu <= f iff G_mu(α*) <= α*
(on each side of the kink f is the chord through (α*, α*) and an end point); G_mu(α*) = α*
exactly at the claimed mu (the tangency at the kink), and G_mu decreases in mu, so a smaller
mu fails (0.99·mu(eps) is rejected).
Bounded range: the loss lies in [t − eps, t], t in [0, eps] (Durfee–Rogers), so the pair is
dominated by the two-point pair with likelihood ratios e^t and e^(t−eps): P(1) = p,
Q(1) = q. Domination is a post-processing (Blackwell): an outcome with P = r·Q, r in
[e^(t−eps), e^t], is drawn from K(·|1) = (P(1 − q) − Q(1 − p))/(p − q) and
K(·|0) = (p·Q − q·P)/(p − q), which are nonnegative exactly on that range of r, sum to 1
over the outcomes, and map (p, q) to (P, Q). The two-point pair's kink gives mu_t = Φ⁻¹(p) + Φ⁻¹(1 − q), symmetric in t ↔ eps − t and largest
at t = eps/2 (checked on a grid), where the pair is randomized response at eps/2.
Assumptions: eps > 0. Source: THEORY §9 (Dong–Roth–Su; Durfee–Rogers 2019).
"""

from __future__ import annotations

from typing import Any

import mpmath as mp
import sympy as sp

from expost.filters import BoundedRangeCost, GaussianDPFilter
from expost.filters.gaussian_dp import pure_dp_mu
from expost.symbolic import Proof, Step
from expost.symbolic.steps import identity, library_matches, numeric_identity

__all__ = ["PROOF"]

eps, t = sp.symbols("epsilon t", positive=True)
r, mass = sp.symbols("r Q", positive=True)  # an outcome's likelihood ratio P/Q and its Q
_EPS = (0.05, 0.3, 1.0, 2.5, 6.0)
_DOMAIN = {eps: (0.01, 8.0)}


def Phi(x: Any) -> Any:
    return (1 + sp.erf(x / sp.sqrt(2))) / 2


def Phi_inv(p: Any) -> Any:
    return sp.sqrt(2) * sp.erfinv(2 * p - 1)


def _g(mu: Any, alpha: Any) -> Any:
    """G_mu(α) = Φ(Φ⁻¹(1 − α) − mu)."""
    return Phi(Phi_inv(1 - alpha) - mu)


def _binary(t_: Any, e: Any) -> tuple[Any, Any]:
    """(p, q) with p/q = e^t, (1 − p)/(1 − q) = e^(t − eps)."""
    q = (1 - sp.exp(t_ - e)) / (sp.exp(t_) - sp.exp(t_ - e))
    return sp.exp(t_) * q, q


def _below_on_grid(mu_of: Any, f_of: Any, n: int = 100) -> bool:
    """G_mu(α) <= f(α) + 1e-40 at n interior α, for each eps of _EPS (50-digit mpmath)."""
    mp.mp.dps = 50
    for e in _EPS:
        m = mp.mpf(sp.N(mu_of.subs(eps, sp.Rational(str(e))), 50))
        for k in range(1, n):
            a = mp.mpf(k) / n
            g = mp.ncdf(-mp.sqrt(2) * mp.erfinv(2 * a - 1) - m)  # Φ(Φ⁻¹(1 − α) − mu)
            if g > f_of(mp.mpf(e), a) + mp.mpf("1e-40"):
                return False
    return True


def _rr(e: Any, a: Any) -> Any:
    return max(mp.mpf(0), 1 - mp.exp(e) * a, mp.exp(-e) * (1 - a))


def _mu_t(e: float, frac: Any) -> Any:
    mp.mp.dps = 50
    tt = mp.mpf(e) * frac
    q = (1 - mp.exp(tt - e)) / (mp.exp(tt) - mp.exp(tt - e))
    p = mp.exp(tt) * q
    return mp.sqrt(2) * (mp.erfinv(2 * p - 1) + mp.erfinv(1 - 2 * q))


def check(form: Any) -> tuple[Step, ...]:
    """Kink, tangency, sufficiency on a grid; the two-point pairs of bounded range; library."""
    mu_dp, mu_br = form
    a_star = 1 / (1 + sp.exp(eps))
    p, q = _binary(t, eps)
    k1 = (r * mass * (1 - q) - mass * (1 - p)) / (p - q)
    k0 = (p * mass - q * r * mass) / (p - q)
    p_mid, q_mid = _binary(eps / 2, eps)
    mid_ok = all(
        _mu_t(e, mp.mpf(k) / 50) <= _mu_t(e, mp.mpf("0.5")) + mp.mpf("1e-40")
        for e in _EPS
        for k in range(1, 50)
    )

    def br_kink(e: Any, a: Any) -> Any:  # the t = eps/2 pair: randomized response at eps/2
        return _rr(e / 2, a)

    return (
        identity(
            "randomized response's two lines meet at α* = 1/(1 + e^eps) with f(α*) = α*",
            sp.Tuple(1 - sp.exp(eps) * a_star, sp.exp(-eps) * (1 - a_star)),
            sp.Tuple(a_star, a_star),
        ),
        numeric_identity(
            "G_mu(α*) = α* at the claimed mu (tangency at the kink)",
            _g(mu_dp, a_star),
            a_star,
            _DOMAIN,
        ),
        Step(
            "G_mu <= f_(eps,0) on a 100-point α grid at 5 eps [mpmath 50 digits]",
            _below_on_grid(mu_dp, _rr),
        ),
        identity(
            "the two-point pair has likelihood ratios e^t and e^(t − eps)",
            sp.Tuple(p / q, (1 - p) / (1 - q)),
            sp.Tuple(sp.exp(t), sp.exp(t - eps)),
        ),
        identity(
            "the kernel maps the two-point pair to any bounded-range pair: an outcome with "
            "P = r·Q gets p·K(·|1) + (1 − p)·K(·|0) = P and q·K(·|1) + (1 − q)·K(·|0) = Q",
            sp.Tuple(p * k1 + (1 - p) * k0, q * k1 + (1 - q) * k0),
            sp.Tuple(r * mass, mass),
        ),
        identity(
            "K(·|1) ∝ r − e^(t − eps) and K(·|0) ∝ e^t − r with positive factors Q(1 − q)/(p − q), "
            "Q·q/(p − q): nonnegative exactly for r in [e^(t − eps), e^t]",
            sp.Tuple(k1 * (p - q) / (mass * (1 - q)), k0 * (p - q) / (mass * q)),
            sp.Tuple(r - sp.exp(t - eps), sp.exp(t) - r),
        ),
        identity(
            "each kernel sums to 1 over the outcomes (ΣP = ΣQ = 1)",
            sp.Tuple(((1 - q) - (1 - p)) / (p - q), (p - q) / (p - q)),
            sp.Tuple(1, 1),
        ),
        identity(
            "at t = eps/2 it is randomized response at eps/2: p = 1 − q = e^(eps/2)/(1 + e^(eps/2))",
            sp.Tuple(p_mid, 1 - q_mid),
            sp.Tuple(1 / (1 + sp.exp(-eps / 2)), 1 / (1 + sp.exp(-eps / 2))),
        ),
        identity(
            "the pair at eps − t is the pair at t swapped: p(eps − t) = 1 − q(t)",
            _binary(eps - t, eps)[0],
            1 - q,
        ),
        Step(
            "mu_t = Φ⁻¹(p) + Φ⁻¹(1 − q) is largest at t = eps/2 on a 49-point t grid at 5 eps "
            "[mpmath 50 digits]",
            mid_ok,
        ),
        numeric_identity(
            "mu_(eps/2) = Φ⁻¹(p) + Φ⁻¹(1 − q) at t = eps/2 equals the claim",
            Phi_inv(p_mid) + Phi_inv(1 - q_mid),
            mu_br,
            _DOMAIN,
        ),
        Step(
            "G_mu <= f of the t = eps/2 pair on a 100-point α grid at 5 eps [mpmath 50 digits]",
            _below_on_grid(mu_br, br_kink),
        ),
        library_matches("pure_dp_mu(0.7)", pure_dp_mu(0.7), mu_dp.subs(eps, sp.Rational(7, 10))),
        library_matches(
            "GaussianDPFilter price of BoundedRangeCost(0.2) = mu_br(0.2)², rounded up",
            GaussianDPFilter(1.0).price(BoundedRangeCost(0.2))[0],
            mu_br.subs(eps, sp.Rational(1, 5)) ** 2,
            rel_tol=1e-11,
        ),
    )


PROOF = Proof(
    name="gdp-pure-dp-and-bounded-range",
    source="THEORY §9 (Dong–Roth–Su; Durfee–Rogers)",
    statement=(
        "An eps-DP round is mu(eps)-GDP with mu(eps) = 2·Φ⁻¹(e^eps/(1 + e^eps)), the smallest such mu; "
        "an eps-bounded-range round is mu(eps/2)-GDP."
    ),
    assumptions=("eps > 0", "eps-DP pairs are dominated by randomized response",
                 "bounded-range losses lie in [t − eps, t], 0 <= t <= eps"),
    claim=sp.Tuple(2 * Phi_inv(1 / (1 + sp.exp(-eps))), 2 * Phi_inv(1 / (1 + sp.exp(-eps / 2)))),
    wrong_claim=sp.Tuple(sp.Rational(99, 100) * 2 * Phi_inv(1 / (1 + sp.exp(-eps))), eps / 2),
    check=check,
)  # fmt: skip
