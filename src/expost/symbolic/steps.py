"""Ways a `Step` can hold: a sympy identity, a sympy sign fact, a 50-digit mpmath check at random
points (only where sympy cannot simplify), or a library value against a proved closed form."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy as sp

from expost.symbolic.proof import Step

__all__ = [
    "exact_point",
    "identity",
    "library_matches",
    "log_identity",
    "numeric_identity",
    "positive",
    "vanishes",
]

DIGITS = 50


def _clearly_nonzero(expr: Any) -> bool:
    """Is expr far from 0 at one point respecting the symbols' sign assumptions? (Skips simplify.)"""
    point = {
        sym: sp.Rational(13 + 2 * i, 11) * (1 if sym.is_nonnegative else -1)
        for i, sym in enumerate(sorted(expr.free_symbols, key=str))
    }
    value = sp.N(expr.subs(point), DIGITS)
    return bool(value.is_real and value.is_finite and abs(value) > sp.Float("1e-30"))


def vanishes(expr: Any) -> bool:
    """Does sympy prove ``expr == 0`` (expand, then simplify)?

    A value clearly away from 0 at one point allowed by the symbols' assumptions skips the
    simplify: it can refute an identity quickly, never prove one.
    """
    expanded = sp.expand(expr)
    if expanded == 0:
        return True
    if _clearly_nonzero(expanded):
        return False
    return bool(sp.simplify(expr) == 0)


def _parts(expr: Any) -> tuple[Any, ...]:
    return tuple(expr) if isinstance(expr, sp.Tuple | tuple) else (expr,)


def identity(description: str, lhs: Any, rhs: Any) -> Step:
    """Holds iff sympy proves lhs == rhs (componentwise for tuples)."""
    left, right = _parts(lhs), _parts(rhs)
    holds = len(left) == len(right) and all(
        vanishes(a - b) for a, b in zip(left, right, strict=True)
    )
    return Step(f"{description} [sympy]", holds)


def log_identity(description: str, lhs: Any, rhs: Any) -> Step:
    """Holds iff sympy proves both sides positive and log(lhs) == log(rhs) (for exp-type forms)."""
    both_positive = sp.sympify(lhs).is_positive is True and sp.sympify(rhs).is_positive is True
    holds = both_positive and vanishes(
        sp.expand_log(sp.log(lhs), force=True) - sp.expand_log(sp.log(rhs), force=True)
    )
    return Step(f"{description} [sympy, on logs of positive sides]", holds)


def positive(description: str, expr: Any) -> Step:
    """Holds iff sympy proves ``expr > 0`` from the symbols' assumptions."""
    return Step(f"{description} [sympy sign]", sp.simplify(expr).is_positive is True)


def numeric_identity(
    description: str,
    lhs: Any,
    rhs: Any,
    domain: Mapping[Any, tuple[float, float]],
    *,
    points: int = 5,
    seed: int = 2024,
) -> Step:
    """Holds iff lhs == rhs to 40 of 50 digits (mpmath) at ``points`` random rational points.

    Only where sympy cannot simplify (special functions, signs of nested radicals it cannot
    decide); the step's description says so. ``domain`` gives each free
    symbol's sampling interval; the points come from ``numpy.random.default_rng(seed)``.
    """
    rng = np.random.default_rng(seed)
    free = sp.sympify(lhs).free_symbols | sp.sympify(rhs).free_symbols
    if not free <= set(domain):
        return Step(f"{description} [mpmath: no range for {sorted(map(str, free))}]", False)
    for _ in range(points):
        subs = {s: sp.Rational(f"{rng.uniform(*domain[s]):.6f}") for s in domain}
        left = sp.N(sp.sympify(lhs).subs(subs), DIGITS)
        right = sp.N(sp.sympify(rhs).subs(subs), DIGITS)
        if not abs(left - right) <= sp.Float(10) ** (10 - DIGITS) * max(1, abs(right)):
            where = ", ".join(f"{k}={float(v)}" for k, v in subs.items())
            return Step(f"{description} [mpmath {DIGITS} digits: differs at {where}]", False)
    return Step(f"{description} [mpmath {DIGITS} digits at {points} random points]", True)


def exact_point(values: Mapping[Any, Any]) -> dict[Any, Any]:
    """Symbols mapped to exact values: floats and decimal strings become rationals (0.1 is 1/10)."""
    return {s: v if isinstance(v, sp.Basic) else sp.Rational(str(v)) for s, v in values.items()}


def library_matches(description: str, value: float, exact: Any, *, rel_tol: float = 1e-12) -> Step:
    """Holds iff a library float agrees with a proved closed form (evaluated to 50 digits)."""
    target = sp.N(exact, DIGITS)
    holds = bool(target.is_finite) and abs(sp.Float(value, DIGITS) - target) <= rel_tol * abs(
        target
    )
    return Step(
        f"{description}: library {value!r} vs {sp.N(target, 17)} [rel. tol {rel_tol:g}]", holds
    )
