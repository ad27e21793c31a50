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

Certified bounds here: finite pairs (`PmfPair`, the laws the filter counts with) exactly (a
float sum with its rounding error bounded), the unsampled closed families with a closed form
(Gaussian: Balle & Wang 2018; Laplace: (1 − e^{(ε−ε0)/2})_+; randomised response; bounded
range: (1 − e^{(ε−ε0)/2})²/(1 − e^{−ε0})), each with a
stated margin (tests/costs/test_computed_domination.py checks them against mpmath); any other pair by
the two certified sides of its PLD (`expost.pld`: the optimistic law minus its convolution
error below, the pessimistic law above). A B whose loss is
unbounded (a Gaussian) has no finite ε_m: it is dominated only by a closed-form order
(`expost.costs.pairs.closed_order`).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from expost.costs.pairs import ClosedPair, Pair, PmfPair, closed_order

__all__ = ["GRID_POINTS", "dominated", "profile_bounds"]

GRID_POINTS = 2000
"""The most grid points ε_i `dominated` checks (spaced evenly up to B's largest loss)."""
FALLBACK_GRID = 1e-3
"""The loss grid of the PLD whose certified sides bound a pair without finite or closed-form
bounds (a subsampled Gaussian, a discrete Laplace, a product)."""

_U = 2.0**-53


FloatArray = npt.NDArray[np.float64]


def _laws(pair: Pair) -> tuple[list[Fraction], list[Fraction]] | None:
    """(P, Q) of a finite pair, exactly (the remove direction; the add direction is (Q, P))."""
    if isinstance(pair, PmfPair):
        _, q, m = pair.laws()
        return m, q
    return None


def _finite_bounds(
    p: list[Fraction], q: list[Fraction], eps: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Lower and upper bounds on H_{e^ε}(P‖Q) = Σ (p_i − e^ε q_i)_+ at each ε: the float sum
    widened by its rounding error (the floats of p_i, e^ε and each product and difference
    within 4u of p_i + e^ε q_i; n terms summed: 8(n + 2)u in all)."""
    pf = np.array([float(x) for x in p])[None, :]
    qf = np.array([float(x) for x in q])[None, :]
    g = np.exp(eps)[:, None]
    value = np.sum(np.maximum(pf - g * qf, 0.0), axis=1)
    err = 8.0 * (pf.size + 2) * _U * np.sum(pf + g * qf, axis=1) + 1e-300
    return np.maximum(0.0, value - err), np.minimum(1.0, value + err)


def _closed_bounds(pair: ClosedPair, eps: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """(lower, upper) bounds on δ(ε) of an unsampled closed family (closed forms, each widened
    by far more than its few-ulp float error), or None."""
    if pair.rate != 1.0:
        return None
    g = np.exp(eps)
    if pair.family == "laplace":  # (1 − e^{(ε − ε0)/2})_+ (Lap(ε0, 1) against Lap(0, 1))
        value, err = -np.expm1((eps - pair.level) / 2.0), 1e-15 * np.ones_like(eps)
    elif pair.family == "rr":  # a − e^ε (1 − a), a = e^ε0/(1 + e^ε0)
        a = 1.0 / (1.0 + math.exp(-pair.level))
        value, err = a - g * (1.0 - a), 1e-15 * (1.0 + g)
    elif pair.family == "bounded_range":  # (1 − e^{(ε − ε0)/2})²/(1 − e^{−ε0}) on [0, ε0]
        half = np.expm1(np.minimum(eps - pair.level, 0.0) / 2.0)
        value = half * half / -math.expm1(-pair.level)
        err = 1e-13 * value + 1e-300
    elif pair.family != "gaussian":  # the discrete families, (ε, δ): their PLD's sides
        return None
    else:  # Balle & Wang 2018, μ = 1/σ
        from scipy.special import log_ndtr

        mu = 1.0 / pair.level
        first = np.exp(log_ndtr(-eps / mu + mu / 2))
        value = first - np.exp(eps + log_ndtr(-eps / mu - mu / 2))
        err = 1e-12 * np.maximum(first, 1e-300)
    return np.maximum(0.0, value - err), np.minimum(1.0, np.maximum(0.0, value) + err)


def profile_bounds(pair: Pair, eps: npt.ArrayLike, direction: str) -> tuple[FloatArray, FloatArray]:
    """(lower, upper) bounds on the pair's δ(ε) in ``direction`` ("remove" or "add") at each
    ε >= 0; where this module has none, the trivial ones (0, 1)."""
    e = np.atleast_1d(np.asarray(eps, dtype=np.float64))
    with np.errstate(all="ignore"):  # overflow at extreme levels: NaN goes to the safe side
        low, high = _bounds(pair, e, direction)
    return np.nan_to_num(low, nan=0.0, posinf=0.0), np.nan_to_num(high, nan=1.0, neginf=1.0)


def _bounds(pair: Pair, e: FloatArray, direction: str) -> tuple[FloatArray, FloatArray]:
    laws = _laws(pair)
    if laws is not None:
        p, q = laws if direction == "remove" else laws[::-1]
        return _finite_bounds(p, q, e)
    if isinstance(pair, ClosedPair):
        bounds = _closed_bounds(pair, e)  # symmetric families: one law for both directions
        if bounds is not None:
            return bounds
    return _pld_bounds(pair, e, direction)


def _pld_bounds(pair: Pair, e: FloatArray, direction: str) -> tuple[FloatArray, FloatArray]:
    """Any other pair: the certified sides of its PLD on a grid of `FALLBACK_GRID`, in the one
    direction — the optimistic law's δ minus its error below, the pessimistic law's above
    (`expost.pld`, the per-direction laws behind ``delta_bracket``)."""
    pld = pair.pld(FALLBACK_GRID)
    index = 0 if direction == "remove" else 1
    upper_law = (pld.remove, pld.add)[index]
    lower_laws = pld.optimistic()
    lower = (
        [0.0] * e.size
        if lower_laws is None
        else [lower_laws[index].delta_lower(float(x)) for x in e]
    )
    upper = [upper_law.delta(float(x)) for x in e]
    return np.array(lower, dtype=np.float64), np.array(upper, dtype=np.float64)


def _largest_loss(pair: Pair, direction: str) -> tuple[float, Fraction] | None:
    """(an upper bound on every finite loss, P(L = ∞)) in ``direction``; None if unbounded."""
    laws = _laws(pair)
    if laws is not None:
        p, q = laws if direction == "remove" else laws[::-1]
        finite = [math.log(a / b) for a, b in zip(p, q, strict=True) if a > 0 and b > 0]
        inf = sum((a for a, b in zip(p, q, strict=True) if a > 0 and b == 0), Fraction(0))
        return (max([0.0, *finite]) * (1 + 1e-12) + 1e-300, inf)
    closed = ("laplace", "rr", "bounded_range")  # loss within [−ε0, ε0]
    if isinstance(pair, ClosedPair) and pair.family in closed and pair.rate == 1.0:
        return pair.level * (1 + 1e-12), Fraction(0)
    if isinstance(pair, ClosedPair) and pair.family == "discrete_laplace" and pair.rate == 1.0:
        return pair.extra[0] / pair.level * (1 + 1e-12), Fraction(0)  # within [−Δ/t, Δ/t]
    return None


def _inf_mass_lower(pair: Pair, direction: str) -> Fraction:
    laws = _laws(pair)
    if laws is None:
        return Fraction(0)
    p, q = laws if direction == "remove" else laws[::-1]
    return sum((a for a, b in zip(p, q, strict=True) if a > 0 and b == 0), Fraction(0))


@functools.lru_cache(maxsize=256)
def dominated(fixed: Pair, new: Pair, tau: float = 0.0) -> bool:
    """Whether ``new`` is dominated by ``fixed`` ⊗ T_τ (module docstring): by a closed-form
    order, else by the certified grid test in both directions. False where it cannot be shown.
    Cached: a filter asks once per (fixed, new, τ)."""
    if closed_order(fixed, new):
        return True
    t = Fraction(tau)
    for direction in ("remove", "add"):
        top = _largest_loss(new, direction)
        if top is None or not math.isfinite(top[0]):  # unbounded loss: no tail argument here
            return False
        largest, inf_new = top
        if inf_new > t + (1 - t) * _inf_mass_lower(fixed, direction):
            return False
        points = np.linspace(0.0, largest, num=2 + int(min(largest / 1e-3, GRID_POINTS - 2)))
        points[-1] = largest
        lower = profile_bounds(fixed, points[1:], direction)[0]
        upper = profile_bounds(new, points[:-1], direction)[1]
        rhs = tau + (1.0 - tau) * lower
        close = upper > rhs * (1.0 - 4 * _U)  # decided exactly where floats cannot tell
        if any(
            Fraction(u) > t + (1 - t) * Fraction(v)
            for u, v in zip(upper[close], lower[close], strict=True)
        ):
            return False
    return True
