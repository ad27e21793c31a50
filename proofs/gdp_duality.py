"""GDP to DP: mu-GDP gives (eps, delta_mu(eps))-DP for every eps >= 0, with
delta_mu(eps) = Φ(−eps/mu + mu/2) − e^eps·Φ(−eps/mu − mu/2).

delta(eps) = sup_α [1 − G_mu(α) − e^eps·α], the hockey-stick divergence of N(mu, 1) from
N(0, 1). The likelihood ratio e^(mu·y − mu²/2) increases in y (Neyman–Pearson), so the
supremum runs over half-lines {y > c}: α = Φ(−c), 1 − G_mu(α) = Φ(mu − c), and the objective
D(c) = Φ(mu − c) − e^eps·Φ(−c) is maximal where the likelihood ratio equals e^eps.
Assumptions: mu > 0, eps >= 0 (checked at eps > 0; eps = 0 by continuity).
Source: Dong, Roth & Su (2022) Cor. 2.13; THEORY §9.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.guarantees import gdp_delta, gdp_mu_for_dp
from expost.symbolic import Proof, Step
from expost.symbolic.steps import exact_point, identity, library_matches, positive
from expost.symbolic.tradeoff import Phi

__all__ = ["PROOF"]

mu, eps = sp.symbols("mu epsilon", positive=True)
c, y = sp.symbols("c y", real=True)


def phi(x: Any) -> Any:
    return sp.exp(-(x**2) / 2) / sp.sqrt(2 * sp.pi)


_LIBRARY_POINTS = ((1.848, 10.0), (0.5, 1.0), (3.0, 2.0))  # (mu, eps)


def check(delta_form: Any) -> tuple[Step, ...]:
    """Maximise D(c) over the threshold c, then the monotonicity identities and the library."""
    log_lr = sp.expand(sp.log(phi(y - mu) / phi(y)), force=True)
    objective = Phi(mu - c) - sp.exp(eps) * Phi(-c)
    c_star = eps / mu + mu / 2
    slope = sp.diff(objective, c)
    steps = [
        identity("log LR of N(mu,1) vs N(0,1) is mu·y − mu²/2", log_lr, mu * y - mu**2 / 2),
        positive("it increases in y: half-lines {y > c} are the optimal tests", sp.diff(log_lr, y)),
        identity("the LR equals e^eps at c* = eps/mu + mu/2", log_lr.subs(y, c_star), eps),
        identity(
            "D'(c) = e^eps·φ(c) − φ(mu − c) = φ(c)·(e^eps − e^(mu·c − mu²/2)), zero at c*",
            slope,
            phi(c) * (sp.exp(eps) - sp.exp(mu * c - mu**2 / 2)),
        ),
        positive(
            "D''(c*) = −mu·φ(c*)·e^eps < 0: c* is the maximum",
            -sp.diff(phi(c) * (sp.exp(eps) - sp.exp(mu * c - mu**2 / 2)), c).subs(c, c_star),
        ),
        identity("D(c*) equals the claimed delta_mu(eps)", objective.subs(c, c_star), delta_form),
        identity(
            "d delta/d eps = −e^eps·Φ(−eps/mu − mu/2): delta decreases in eps (eps_for's root)",
            sp.diff(delta_form, eps),
            -sp.exp(eps) * Phi(-eps / mu - mu / 2),
        ),
        identity(
            "d delta/d mu = φ(−eps/mu + mu/2) > 0: delta increases in mu (gdp_mu_for_dp's root)",
            sp.diff(delta_form, mu),
            phi(-eps / mu + mu / 2),
        ),
    ]
    for m, e in _LIBRARY_POINTS:
        exact = delta_form.subs(exact_point({mu: m, eps: e}))
        steps.append(  # the library returns an upper bound within 1e-6 relative
            library_matches(f"gdp_delta({m}, {e})", gdp_delta(m, e), exact, rel_tol=2e-6)
        )
    m10 = gdp_mu_for_dp(10.0, 1e-6)
    steps.append(
        library_matches(
            "gdp_mu_for_dp(10, 1e-6) solves delta_mu(10) = 1e-6",
            1e-6,
            delta_form.subs({mu: sp.Float(m10, 30), eps: 10}),
            rel_tol=2e-6,
        )
    )
    return tuple(steps)


PROOF = Proof(
    name="gdp-duality",
    source="Dong–Roth–Su Cor. 2.13, THEORY §9",
    statement=(
        "mu-GDP implies (eps, delta_mu(eps))-DP for every eps >= 0 with delta_mu(eps) = "
        "Φ(−eps/mu + mu/2) − e^eps·Φ(−eps/mu − mu/2), decreasing in eps and increasing in mu."
    ),
    assumptions=("mu > 0", "eps > 0", "G_mu is the trade-off of N(0, 1) vs N(mu, 1)"),
    claim=Phi(-eps / mu + mu / 2) - sp.exp(eps) * Phi(-eps / mu - mu / 2),
    wrong_claim=Phi(-eps / mu + mu / 2) - sp.exp(-eps) * Phi(-eps / mu - mu / 2),
    check=check,
)
