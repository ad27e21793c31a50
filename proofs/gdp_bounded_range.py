"""GDP price of an eps-bounded-range round (the exponential mechanism): mu(eps/2).

The loss lies in [t − eps, t], t in [0, eps] (Durfee–Rogers), so the pair is dominated by the
two-point pair with likelihood ratios e^t and e^(t−eps): P(1) = p, Q(1) = q. Domination is a
post-processing (Blackwell): an outcome with P = r·Q, r in [e^(t−eps), e^t], is drawn from
K(·|1) = (P(1 − q) − Q(1 − p))/(p − q) and K(·|0) = (p·Q − q·P)/(p − q), which are nonnegative
exactly on that range of r, sum to 1 over the outcomes, and map (p, q) to (P, Q). The two-point
pair's kink gives mu_t = Φ⁻¹(p) + Φ⁻¹(1 − q), symmetric in t ↔ eps − t and largest at
t = eps/2 (checked on a grid), where the pair is randomized response at eps/2. The wrong
variant, eps/2 (the zCDP price eps²/8 read as mu²/2), fails at t = eps/2.
Assumptions: eps > 0. Source: THEORY §9 (Dong–Roth–Su; Durfee–Rogers 2019).
"""

from __future__ import annotations

from typing import Any

import mpmath as mp
import sympy as sp

from expost.filters import BoundedRangeCost, GaussianDPFilter
from expost.symbolic import Proof, Step
from expost.symbolic.steps import identity, library_matches, numeric_identity
from expost.symbolic.tradeoff import Phi_inv, below_on_grid, randomized_response

__all__ = ["PROOF"]

eps, t = sp.symbols("epsilon t", positive=True)
r, mass = sp.symbols("r Q", positive=True)  # an outcome's likelihood ratio P/Q and its Q
_EPS = (0.05, 0.3, 1.0, 2.5, 6.0)


def _binary(t_: Any, e: Any) -> tuple[Any, Any]:
    """(p, q) with p/q = e^t, (1 − p)/(1 − q) = e^(t − eps)."""
    q = (1 - sp.exp(t_ - e)) / (sp.exp(t_) - sp.exp(t_ - e))
    return sp.exp(t_) * q, q


def _mu_t(e: float, frac: Any) -> Any:
    """mu_t = Φ⁻¹(p) + Φ⁻¹(1 − q) of the two-point pair at t = frac·eps (50-digit mpmath)."""
    mp.mp.dps = 50
    tt = mp.mpf(e) * frac
    q = (1 - mp.exp(tt - e)) / (mp.exp(tt) - mp.exp(tt - e))
    p = mp.exp(tt) * q
    return mp.sqrt(2) * (mp.erfinv(2 * p - 1) + mp.erfinv(1 - 2 * q))


def _middle(e: Any, a: Any) -> Any:
    """The trade-off of the t = eps/2 pair: randomized response at eps/2."""
    return randomized_response(e / 2, a)


def check(mu_br: Any) -> tuple[Step, ...]:
    """Domination by the two-point pairs, the worst at t = eps/2, sufficiency, the library."""
    p, q = _binary(t, eps)
    k1 = (r * mass * (1 - q) - mass * (1 - p)) / (p - q)
    k0 = (p * mass - q * r * mass) / (p - q)
    p_mid, q_mid = _binary(eps / 2, eps)
    mid_ok = all(
        _mu_t(e, mp.mpf(k) / 50) <= _mu_t(e, mp.mpf("0.5")) + mp.mpf("1e-40")
        for e in _EPS
        for k in range(1, 50)
    )
    return (
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
            {eps: (0.01, 8.0)},
        ),
        Step(
            "G_mu <= f of the t = eps/2 pair on a 100-point α grid at 5 eps [mpmath 50 digits]",
            below_on_grid(mu_br, _middle, eps, _EPS),
        ),
        library_matches(
            "GaussianDPFilter price of BoundedRangeCost(0.2) = mu_br(0.2)², rounded up",
            GaussianDPFilter(1.0).price(BoundedRangeCost(0.2))[0],
            mu_br.subs(eps, sp.Rational(1, 5)) ** 2,
            rel_tol=1e-11,
        ),
    )


PROOF = Proof(
    name="gdp-bounded-range",
    source="THEORY §9 (Dong–Roth–Su; Durfee–Rogers)",
    statement="An eps-bounded-range round is mu(eps/2)-GDP, mu(e) = 2·Φ⁻¹(e^e/(1 + e^e)).",
    assumptions=("eps > 0", "bounded-range losses lie in [t − eps, t], 0 <= t <= eps"),
    claim=2 * Phi_inv(1 / (1 + sp.exp(-eps / 2))),
    wrong_claim=eps / 2,
    check=check,
)
