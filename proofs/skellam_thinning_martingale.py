"""Reverse-time thinning kernel of the Skellam process and the martingale identity of THEORY §10.

For a Poisson process N of rate λ and s = π·t < t, N(s) | N(t) = n is Binomial(n, π) with
π = s/t: p_s(a)·p_(t−s)(n − a)/p_t(n) = C(n, a)·π^a·(1 − π)^(n − a). For X = N1 − N2 the reverse
kernel is q(i | j) = p_s(i)·p_(t−s)(j − i)/p_t(j) (p_u the Skellam(λu, λu) pmf), which thinning
each Poisson part with probability π reproduces. The shift likelihood ratio R^k_u(x) =
p_u(x − k)/p_u(x) then satisfies E[R^k_s(X_s) | X_t = j] = Σ_i q(i | j)·R^k_s(i)
= (p_s ∗ p_(t−s))(j − k)/p_t(j) = R^k_t(j) by Chapman–Kolmogorov (pgfs multiply), so R^k is a
martingale in reverse time for the releases, whatever the (past-measurable) times.

Checked: the Poisson kernel exactly with symbolic λ, s, t (n <= 4); the Poisson martingale
identity exactly (n <= 4, shifts −2..2); Chapman–Kolmogorov on the Skellam pgf; for the Skellam
process at 30 digits on small cases, the kernel of the thinning sampler equals q and gives the
martingale identity. Assumptions: λ > 0, 0 < s < t. Source: THEORY §10; BNR App. E.
"""

from __future__ import annotations

from typing import Any

import mpmath
import sympy as sp

from expost.symbolic import Proof, Step
from expost.symbolic.steps import identity

__all__ = ["PROOF"]

lam, s, h, x = sp.symbols("lambda s h x", positive=True)
t = s + h

_CASES = (("2", "1/3", 0), ("1.5", "3/4", 2), ("0.8", "1/2", -3))  # (λt, s/t, j)
_SHIFTS = (-2, 1, 3)
_PARTS = 40  # Poisson parts summed below 40: the terms left out are below 1e-40 at λt <= 2
_WIDTH = 26  # |i − j| <= 26: the martingale sum leaves out less than 1e-16 of R^k_t(j)


def _poisson(mean: Any, a: int) -> Any:
    return sp.exp(-mean) * mean**a / sp.factorial(a) if a >= 0 else sp.Integer(0)


def _poisson_steps(p: Any) -> list[Step]:
    kernel = [
        _poisson(lam * s, a) * _poisson(lam * h, n - a) / _poisson(lam * t, n)
        - sp.binomial(n, a) * p**a * (1 - p) ** (n - a)
        for n in range(5)
        for a in range(n + 1)
    ]
    martingale = [
        sum(
            sp.binomial(n, a)
            * p**a
            * (1 - p) ** (n - a)
            * _poisson(lam * s, a - k)
            / _poisson(lam * s, a)
            for a in range(n + 1)
        )
        - _poisson(lam * t, n - k) / _poisson(lam * t, n)
        for n in range(5)
        for k in range(4)
    ]
    return [
        identity(
            "Poisson: p_s(a)·p_(t−s)(n − a)/p_t(n) = Bin(a; n, π) for n <= 4 (symbolic λ, s, t)",
            sp.Tuple(*kernel),
            sp.Tuple(*[0] * len(kernel)),
        ),
        identity(
            "Poisson: Σ_a Bin(a; n, π)·p_s(a − k)/p_s(a) = p_t(n − k)/p_t(n), n <= 4, k = 0..3 (for k < 0 "
            "the alternative leaves the Poisson support: a supermartingale only)",
            sp.Tuple(*martingale),
            sp.Tuple(*[0] * len(martingale)),
        ),
    ]


def _skellam(mean: Any, i: int) -> Any:
    return mpmath.exp(-2 * mean) * mpmath.besseli(abs(i), 2 * mean)


def _binomials(p: Any) -> list[list[Any]]:
    """Bin(a; n, π) for n < _PARTS + 3 and 0 <= a <= n."""
    return [
        [mpmath.binomial(n, a) * p**a * (1 - p) ** (n - a) for a in range(n + 1)]
        for n in range(_PARTS + 3)
    ]


def _sampler_kernel(mean_t: Any, binomials: list[list[Any]], j: int, i: int) -> Any:
    """P(Bin(N1, π) − Bin(N2, π) = i | N1 − N2 = j), (N1, N2) independent Poisson(mean_t)."""
    total = weight_sum = mpmath.mpf(0)
    for b in range(max(0, -j), _PARTS):
        a = j + b
        weight = mean_t ** (a + b) / (mpmath.factorial(a) * mpmath.factorial(b))
        law = sum(
            binomials[a][c] * binomials[b][c - i] for c in range(max(i, 0), min(a, b + i) + 1)
        )
        total += weight * law
        weight_sum += weight
    return total / weight_sum


def _skellam_steps(p_form: Any) -> list[Step]:
    kernel_ok = martingale_ok = True
    with mpmath.workdps(30):
        for mean_text, fraction, j in _CASES:
            mean_t = mpmath.mpf(mean_text)
            p = mpmath.mpf(
                sp.N(p_form.subs({s: sp.Rational(fraction), h: 1 - sp.Rational(fraction)}), 40)
            )
            mean_s = mean_t * mpmath.mpf(sp.Rational(fraction).p) / sp.Rational(fraction).q
            binomials = _binomials(p)
            sampled = {
                i: _sampler_kernel(mean_t, binomials, j, i)
                for i in range(j - _WIDTH, j + _WIDTH + 1)
            }
            for i, value in sampled.items():
                q = _skellam(mean_s, i) * _skellam(mean_t - mean_s, j - i) / _skellam(mean_t, j)
                kernel_ok &= bool(abs(value - q) <= mpmath.mpf("1e-15") * (q + mpmath.mpf("1e-30")))
            for k in _SHIFTS:
                lhs = sum(
                    v * _skellam(mean_s, i - k) / _skellam(mean_s, i) for i, v in sampled.items()
                )
                rhs = _skellam(mean_t, j - k) / _skellam(mean_t, j)
                martingale_ok &= bool(abs(lhs - rhs) <= mpmath.mpf("1e-15") * rhs)
    cases = ", ".join(f"(λt={m}, s/t={f}, j={j})" for m, f, j in _CASES)
    return [
        Step(
            f"Skellam: thinning both parts with π gives q(i | j) at {cases} [mpmath 30 digits]",
            kernel_ok,
        ),
        Step(
            f"Skellam: Σ_i (thinning kernel)·R^k_s(i) = R^k_t(j) for k in {_SHIFTS} at the same cases [mpmath 30 digits]",
            martingale_ok,
        ),
    ]


def check(p: Any) -> tuple[Step, ...]:
    """Poisson kernel and martingale exactly; Chapman–Kolmogorov by pgfs; Skellam at 30 digits."""

    def pgf(u: Any) -> Any:
        return sp.exp(lam * u * (x + 1 / x - 2))

    return (
        *_poisson_steps(p),
        identity(
            "Chapman–Kolmogorov: G_s·G_(t−s) = G_t for the Skellam pgf exp(λu(x + 1/x − 2)), so "
            "Σ_i p_s(i − k)·p_(t−s)(j − i) = p_t(j − k)",
            sp.expand(pgf(s) * pgf(h)),
            sp.expand(pgf(t)),
        ),
        *_skellam_steps(p),
    )


PROOF = Proof(
    name="skellam-thinning-martingale",
    source="THEORY §10; BNR App. E",
    statement=(
        "Thinning each Poisson part with probability π = s/t draws X_s given X_t from the reverse kernel "
        "q(i | j) = p_s(i)·p_(t−s)(j − i)/p_t(j), and E[R^k_s(X_s) | X_t] = R^k_t(X_t): the shift "
        "likelihood ratios are reverse-time martingales."
    ),
    assumptions=("λ > 0", "0 < s < t"),
    claim=s / t,
    wrong_claim=h / t,
    check=check,
)
