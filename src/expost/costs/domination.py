"""Domination decided by computation (THEORY §13; proofs/computed_domination.py).

A pair B is dominated by A (a post-processing of A, so A may stand in for B in any
composition) when δ_B(ε) <= δ_A(ε) for every ε >= 0 in *both* neighbour directions (the
hockey-stick identity δ_{P,Q}(ε) = 1 − e^ε + e^ε·δ_{Q,P}(−ε) covers ε < 0). `dominated` decides
it on a grid 0 = ε_0 < … < ε_m from certified bounds, U_B >= δ_B and L_A <= δ_A:

- U_B(ε_i) <= L_A(ε_{i+1}) for i < m gives δ_B <= δ_A on [0, ε_m] (δ is non-increasing:
  δ_B(ε) <= δ_B(ε_i) <= U_B(ε_i) <= L_A(ε_{i+1}) <= δ_A(ε_{i+1}) <= δ_A(ε) for ε in
  [ε_i, ε_{i+1}]);
- beyond ε_m: every finite loss of B is at most ε_m, so δ_B(ε) = P_B(L = ∞) there, and
  P_B(L = ∞) <= P_A(L = ∞) <= δ_A(ε).

Up to τ (fixed in advance): δ_B <= τ + (1 − τ)·δ_A in both directions, i.e. B is dominated by
A ⊗ T_τ with T_τ the *symmetric* (0, τ) pair ((1−τ)·point₀ + τ·point₁ against (1−τ)·point₀ +
τ·point₂); K such rounds cost δ_{A^K}(ε) + K·τ. The grid conditions become U_B(ε_i) <= τ + (1 −
τ)·L_A(ε_{i+1}) and P_B(L = ∞) <= τ + (1 − τ)·P_A(L = ∞).

Certified bounds here: finite pairs (`PmfPair`) exactly (a float sum with its rounding error
bounded), the unsampled closed families in closed form (Gaussian: Balle & Wang 2018; Laplace:
(1 − e^{(ε−ε0)/2})_+; randomised response), each with a stated margin. A B whose loss is
unbounded (a Gaussian) has no finite ε_m: it is dominated only by a closed-form order
(`expost.costs.pairs.closed_order`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from expost.costs.pairs import ClosedPair, Pair, PmfPair, closed_order, rr_pmfs

__all__ = ["GRID_POINTS", "dominated", "profile_bounds"]

GRID_POINTS = 2000
"""The most grid points ε_i `dominated` checks (spaced evenly up to B's largest loss)."""

_U = 2.0**-53


def _laws(pair: Pair) -> tuple[list[Fraction], list[Fraction]] | None:
    """(P, Q) of a finite pair (the remove direction; the add direction is (Q, P))."""
    if isinstance(pair, PmfPair):
        _, q, m = pair.laws()
        return m, q
    if isinstance(pair, ClosedPair) and pair.family == "rr" and pair.rate == 1.0:
        up_p, up_q = rr_pmfs(pair.level)  # RR at ε' >= ε0: an upper pair, not a lower one
        return [Fraction(x) for x in up_p], [Fraction(x) for x in up_q]
    return None


def _finite_bounds(p: list[Fraction], q: list[Fraction], eps: float) -> tuple[float, float]:
    """Lower and upper bounds on H_{e^ε}(P‖Q) = Σ (p_i − e^ε q_i)_+ + P(q = 0): the float sum
    widened by its rounding error (each term within 4u of p_i + e^ε q_i; n terms summed)."""
    pf = np.array([float(x) for x in p])
    qf = np.array([float(x) for x in q])
    g = math.exp(eps)
    terms = np.maximum(pf - g * qf, 0.0)
    value = float(np.sum(terms))
    err = 8.0 * (pf.size + 2) * _U * float(np.sum(pf + g * qf)) + 1e-300
    return max(0.0, value - err), min(1.0, value + err)


def _closed_bounds(pair: ClosedPair, eps: float) -> tuple[float, float] | None:
    """(lower, upper) bounds on δ(ε) of an unsampled closed family (closed forms, each widened
    by far more than its few-ulp float error), or None."""
    if pair.rate != 1.0:
        return None
    if pair.family == "laplace":
        value, err = -math.expm1((eps - pair.level) / 2.0), 1e-15
    elif pair.family == "rr":
        a = 1.0 / (1.0 + math.exp(-pair.level))
        value, err = a - math.exp(eps) * (1.0 - a), 1e-15
    else:
        from scipy.special import log_ndtr

        mu = 1.0 / pair.level  # σ in units of Δ: μ = 1/σ
        first = math.exp(float(log_ndtr(-eps / mu + mu / 2)))
        second = math.exp(eps + float(log_ndtr(-eps / mu - mu / 2)))
        value, err = first - second, 1e-12 * max(first, 1e-300)
    return max(0.0, value - err), min(1.0, max(0.0, value) + err)


def profile_bounds(pair: Pair, eps: float, direction: str) -> tuple[float, float | None]:
    """(lower, upper) bounds on the pair's δ(ε) in ``direction`` ("remove" or "add"); the lower
    bound is 0 and the upper None where this module has none."""
    laws = _laws(pair)
    if laws is not None:
        p, q = laws if direction == "remove" else laws[::-1]
        return _finite_bounds(p, q, eps)
    if isinstance(pair, ClosedPair):
        bounds = _closed_bounds(pair, eps)
        if bounds is not None:
            return bounds
    return 0.0, None


def _largest_loss(pair: Pair, direction: str) -> tuple[float, Fraction] | None:
    """(an upper bound on every finite loss, P(L = ∞)) in ``direction``; None if unbounded."""
    laws = _laws(pair)
    if laws is not None:
        p, q = laws if direction == "remove" else laws[::-1]
        finite = [math.log(a / b) for a, b in zip(p, q, strict=True) if a > 0 and b > 0]
        inf = sum((a for a, b in zip(p, q, strict=True) if a > 0 and b == 0), Fraction(0))
        return (max([0.0, *finite]) * (1 + 1e-12) + 1e-300, inf)
    if isinstance(pair, ClosedPair) and pair.family == "laplace":
        return pair.level * (1 + 1e-12), Fraction(0)
    return None


def _inf_mass_lower(pair: Pair, direction: str) -> Fraction:
    laws = _laws(pair)
    if laws is None:
        return Fraction(0)
    p, q = laws if direction == "remove" else laws[::-1]
    return sum((a for a, b in zip(p, q, strict=True) if a > 0 and b == 0), Fraction(0))


def dominated(fixed: Pair, new: Pair, tau: float = 0.0) -> bool:
    """Whether ``new`` is dominated by ``fixed`` ⊗ T_τ (module docstring): by a closed-form
    order, else by the certified grid test in both directions. False where it cannot be shown."""
    if closed_order(fixed, new):
        return True
    t = Fraction(tau)
    for direction in ("remove", "add"):
        top = _largest_loss(new, direction)
        if top is None:
            return False
        largest, inf_new = top
        if inf_new > t + (1 - t) * _inf_mass_lower(fixed, direction):
            return False
        points = np.linspace(0.0, largest, num=min(GRID_POINTS, 2 + int(largest / 1e-3)))
        points[-1] = largest
        lower = [profile_bounds(fixed, float(e), direction)[0] for e in points[1:]]
        for e, low in zip(points[:-1], lower, strict=True):
            upper = profile_bounds(new, float(e), direction)[1]
            if upper is None or Fraction(upper) > t + (1 - t) * Fraction(low):
                return False
    return True
