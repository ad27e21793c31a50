"""The scalar Laplace pair dominates Laplace noise on a vector of ℓ1 sensitivity (docs/pld.md).

For Laplace pairs at a and b (unit scale), δ_{a⊗b}(ε) = E_{P_b}[δ_a(ε − L_b)] with
δ_a(x) = 1 − m_a(x), m_a(x) = e^{(x − max(|x|, a))/2}; splitting the integral over the output
y gives E_{P_b}[m_a(ε − L_b)] = ½e^{(ε−b)/2}·J with J = φ(ε−b) + φ(ε+b) + ½∫_{ε−b}^{ε+b} φ,
φ(s) = e^{−max(|s|, a)/2}, and J >= 2e^{−a/2} because ∂J/∂v >= 0 and ∂J/∂u <= 0 (u = ε − b,
v = ε + b; equal to 0 beyond ±a). So δ_{a⊗b} <= δ_{a+b} on ε >= 0: the claim is the scalar
pair's ε0 = a + b; the wrong variant, max(a, b), is exceeded by the product.
Assumptions: a, b > 0; both pairs symmetric (so ε >= 0 suffices, THEORY §13).
"""

from __future__ import annotations

from typing import Any

import mpmath as mp
import sympy as sp

from expost.symbolic import Proof, Step
from expost.symbolic.steps import identity

__all__ = ["PROOF"]

a, b = sp.symbols("a b", positive=True)
s, v = sp.symbols("s v", real=True)
_GRID = ((0.3, 0.7), (1.0, 1.0), (0.2, 2.5), (2.0, 0.4))  # (a, b)
_DIGITS = 50


def _m(x: Any, level: Any) -> Any:
    return mp.exp((x - max(abs(x), level)) / 2)


def _direct(av: Any, bv: Any, eps: Any) -> Any:
    """E_{P_b}[m_a(ε − L_b)] by integrating over the output y ~ Lap(b, 1)."""

    def f(y: Any) -> Any:
        loss = abs(y) - abs(y - bv)
        return mp.exp(-abs(y - bv)) / 2 * _m(eps - loss, av)

    kinks = sorted({mp.mpf(0), bv, (eps + bv - av) / 2, (eps + bv + av) / 2})
    points = [-mp.inf] + [k for k in kinks] + [mp.inf]
    return mp.quad(f, points)


def _split(av: Any, bv: Any, eps: Any) -> Any:
    """½e^{(ε−b)/2}·J (module doc)."""

    def phi(x: Any) -> Any:
        return mp.exp(-max(abs(x), av) / 2)

    lo, hi = eps - bv, eps + bv
    inner = mp.quad(phi, sorted({lo, hi, *(k for k in (-av, av) if lo < k < hi)}))
    return mp.exp((eps - bv) / 2) / 2 * (phi(lo) + phi(hi) + inner / 2)


def check(form: Any) -> tuple[Step, ...]:
    """The split of the integral, the domination at the claimed ε0 on a grid, the signs."""
    split_ok = dominated = True
    with mp.workdps(_DIGITS):
        for av, bv in _grid():
            for k in range(11):
                eps = (av + bv) * k / 10
                direct = _direct(av, bv, eps)
                split_ok &= bool(abs(direct - _split(av, bv, eps)) < mp.mpf(10) ** -30)
                level = mp.mpf(str(sp.N(form.subs({a: av, b: bv}), _DIGITS)))
                # δ_{a⊗b}(ε) = 1 − direct <= δ_level(ε) = 1 − m_level(ε)
                dominated &= bool(1 - direct <= 1 - _m(eps, level) + mp.mpf(10) ** -40)
    return (
        Step("E_{P_b}[m_a(ε − L_b)] = ½e^{(ε−b)/2}·J at 44 points [mpmath 50 digits]", split_ok),
        Step(
            "δ_{a⊗b}(ε) <= δ of the scalar pair at the claimed ε0, 44 points [mpmath]",
            dominated,
        ),
        identity(
            "∂K/∂v = φ'(v) + φ(v)/2 = 0 for v > a (φ = e^{−v/2})",
            sp.diff(sp.exp(-v / 2), v) + sp.exp(-v / 2) / 2,
            0,
        ),
        identity(
            "∂K/∂v = φ'(v) + φ(v)/2 = φ(v) >= 0 for v < −a (φ = e^{v/2})",
            sp.diff(sp.exp(v / 2), v) + sp.exp(v / 2) / 2,
            sp.exp(v / 2),
        ),
        identity(
            "∂K/∂u = φ'(u) − φ(u)/2 = 0 for u < −a (φ = e^{u/2})",
            sp.diff(sp.exp(s / 2), s) - sp.exp(s / 2) / 2,
            0,
        ),
        identity(
            "J = 2e^{−a/2} + ½(min(v, a) − max(u, −a))e^{−a/2} on [−a, a] (φ constant)",
            2 * sp.exp(-a / 2) + sp.integrate(sp.exp(-a / 2), (s, -a, a)) / 2,
            2 * sp.exp(-a / 2) + a * sp.exp(-a / 2),
        ),
    )


def _grid() -> list[tuple[Any, Any]]:
    return [(mp.mpf(x), mp.mpf(y)) for x, y in _GRID]


PROOF = Proof(
    name="vector-laplace",
    source="docs/pld.md (Vector Laplace)",
    statement=(
        "Laplace noise on two coordinates with shifts a, b (unit scale) is dominated by the "
        "scalar Laplace pair at a + b; by induction, a vector of ℓ1 sensitivity Δ by the scalar "
        "pair at Δ."
    ),
    assumptions=("a, b > 0", "both pairs symmetric: ε >= 0 suffices (THEORY §13)"),
    claim=a + b,
    wrong_claim=sp.Max(a, b),
    check=check,
)
