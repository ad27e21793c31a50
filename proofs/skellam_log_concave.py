"""The Skellam(μ, μ) pmf p(k) = e^(−2μ)·I_k(2μ) is log-concave, so its loss is monotone.

p is the law of N1 − N2 for independent Poisson(μ) counts: p(k) = Σ_j π(j + k)·π(j), which sympy
sums to e^(−2μ)·I_k(2μ) (k >= 0; p(−k) = p(k)). The Poisson pmf π is log-concave (its ratio
π(j + 1)/π(j) = μ/(j + 1) decreases), and a convolution of log-concave sequences without internal
zeros is log-concave (Hoggar 1974), so p(k)² >= p(k − 1)·p(k + 1): for k >= 1 this is the Turán
inequality I_k(x)² >= I_(k−1)(x)·I_(k+1)(x) (Thiruvenkatachar & Nanjundiah 1951), and at k = 0 it
reads I_0² >= I_1². Hence for D >= 1 the loss ℓ(z) = log p(z) − log p(z − D) is non-increasing in
z: ℓ(z) − ℓ(z + 1) is a sum of D second differences −Δ² log p >= 0 (telescoping), the monotone
likelihood ratio that THEORY §10's boundary needs (mirror for D <= −1).

Checked: the Poisson ratio symbolically; Hoggar's theorem exactly (rational arithmetic) on the
convolution of truncated Poisson weights (truncation keeps log-concavity); the sum to I_k; the
Turán inequality of the claimed pmf at 50 digits on a grid; the telescoping identity.
Assumptions: μ > 0, k an integer. Source: THEORY §10; BNR App. E (the mechanism).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import mpmath
import sympy as sp

from expost.symbolic import Proof, Step
from expost.symbolic.steps import identity, positive

__all__ = ["PROOF"]

mu = sp.Symbol("mu", positive=True)
k = sp.Symbol("k", integer=True)
j = sp.Symbol("j", integer=True, nonnegative=True)
n = sp.Symbol("n", integer=True, nonnegative=True)

_RATES = (Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(7))
_GRID_MU = ("0.1", "1", "5", "40")
_GRID_K = range(-8, 9)
_TERMS = 40  # Poisson weights μ^j/j! for j < 40 in the exact convolution


def _truncated_difference(rate: Fraction) -> list[Fraction]:
    """Σ_j w(j + k)·w(j) for k = −39..39 with w(j) = rate^j/j!, j < 40: exact rationals."""
    w = [Fraction(1)]
    for i in range(1, _TERMS):
        w.append(w[-1] * rate / i)
    return [
        sum((w[i + d] * w[i] for i in range(max(0, -d), _TERMS - max(0, d))), Fraction(0))
        for d in range(-_TERMS + 1, _TERMS)
    ]


def _hoggar_instances() -> Step:
    ok = all(
        c[i] ** 2 >= c[i - 1] * c[i + 1]
        for rate in _RATES
        for c in [_truncated_difference(rate)]
        for i in range(1, len(c) - 1)
    )
    rates = ", ".join(str(r) for r in _RATES)
    return Step(
        f"exact: the convolution of truncated Poisson weights (μ = {rates}, 40 terms) is log-concave "
        "at every k (Hoggar's theorem on instances) [rational arithmetic]",
        ok,
    )


def _turan(pmf: Any) -> Step:
    """p(k)² − p(k − 1)·p(k + 1) > 0 at 50 digits for μ, k on the grid."""
    f = sp.lambdify((mu, k), pmf, modules="mpmath")
    worst = None
    with mpmath.workdps(50):
        for m in _GRID_MU:
            for kk in _GRID_K:
                gap = f(mpmath.mpf(m), kk) ** 2 - f(mpmath.mpf(m), kk - 1) * f(
                    mpmath.mpf(m), kk + 1
                )
                if not gap > 0 and worst is None:
                    worst = (m, kk)
    where = "holds" if worst is None else f"fails at μ = {worst[0]}, k = {worst[1]}"
    return Step(
        f"Turán: p(k)² > p(k − 1)·p(k + 1) for μ in {_GRID_MU}, k = −8..8: {where} [mpmath 50 digits]",
        worst is None,
    )


def check(pmf: Any) -> tuple[Step, ...]:
    """Poisson log-concave; Hoggar on instances; the convolution is the claim; Turán; telescoping."""
    poisson_ratio = mu / (j + 1)
    convolution = sp.exp(-2 * mu) * sp.summation(
        mu ** (2 * j + n) / (sp.factorial(j) * sp.factorial(j + n)), (j, 0, sp.oo)
    )
    log_p = sp.Function("log_p")
    z = sp.Symbol("z", integer=True)
    telescoping = []
    for d in (1, 2, 3):
        loss = log_p(z) - log_p(z - d)
        second = sum(2 * log_p(z - i) - log_p(z - i - 1) - log_p(z - i + 1) for i in range(d))
        telescoping.append(
            identity(
                f"D = {d}: ℓ(z) − ℓ(z + 1) = Σ of {d} second differences −Δ² log p",
                loss - loss.subs(z, z + 1),
                second,
            )
        )
    return (
        positive(
            "Poisson: π(j + 1)/π(j) = μ/(j + 1) and its decrease μ/(j + 1) − μ/(j + 2) > 0 (log-concave)",
            poisson_ratio - poisson_ratio.subs(j, j + 1),
        ),
        _hoggar_instances(),
        identity(
            "Σ_j π_μ(j + n)·π_μ(j) (the law of N1 − N2 at n >= 0) equals the claimed pmf, and p(−n) = p(n)",
            sp.Tuple(convolution, pmf.subs(k, -n)),
            sp.Tuple(pmf.subs(k, n), pmf.subs(k, n)),
        ),
        _turan(pmf),
        *telescoping,
    )


PROOF = Proof(
    name="skellam-log-concave",
    source="THEORY §10; Hoggar 1974; Turán-type inequality for I_k",
    statement=(
        "The Skellam(μ, μ) pmf e^(−2μ)·I_k(2μ) is the Poisson difference law and is log-concave, so "
        "ℓ(z) = log p(z) − log p(z − D) is non-increasing in z for D >= 1."
    ),
    assumptions=("μ > 0", "k an integer"),
    claim=sp.exp(-2 * mu) * sp.besseli(k, 2 * mu),
    wrong_claim=(sp.exp(-2 * mu) * (sp.besseli(k - 3, 2 * mu) + sp.besseli(k + 3, 2 * mu)) / 2),
    check=check,
)
