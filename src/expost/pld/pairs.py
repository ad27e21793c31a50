"""Dominating pairs as laws of the privacy loss (THEORY §12, "Pairs").

A `LossLaw` is the law of L = log dP/dQ under P for one neighbour direction: atoms (loss, mass)
and continuous parts. A `Part` is a density on an interval of a noise variable x (scaled to unit
noise: x = noise/σ or noise/b) with the loss an increasing function of x,
L(x) = sign·link_q(a·x + c), link_q(g) = log(1 − q + q e^g) (the identity for q = 1). The law of
x is a mixture of unit normals (Gaussian noise) or of exponentials on a bounded interval (the
middle piece of Laplace noise). Pairs, P the law with the record, Q without, μ = Δ/σ, ε0 = Δ/b:

- Gaussian N(μ, 1) vs N(0, 1): L = μx − μ²/2 under x ~ N(μ, 1) (Balle & Wang 2018); symmetric.
- Laplace Lap(ε0, 1) vs Lap(0, 1): atoms −ε0 (mass e^{−ε0}/2) and ε0 (mass 1/2), L = 2x − ε0 on
  0 < x < ε0 with density e^{x−ε0}/2; symmetric.
- Randomised response (e^{ε0}, 1)/(1 + e^{ε0}) vs reversed: atoms ±ε0; symmetric.
- Poisson subsampling at rate q (Zhu, Dong & Wang 2022, Thm 11): remove ((1−q)Q + qP, Q): the loss
  link_q(L_PQ(x)) under x ~ (1−q)Q + qP; add (Q, (1−q)Q + qP): −link_q(L_PQ(x)) under x ~ Q
  (written in y = −x so that it increases).

Parameters are rounded up first (μ and ε0 up: the profiles of these pairs grow with them, so the
rounded pair dominates the exact one). Tail masses of unbounded parts are upper bounds.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from attrs import frozen
from scipy.special import ndtr, ndtri

from expost.rounding import up, up_exact

__all__ = ["LossLaw", "Part", "gaussian_laws", "laplace_laws", "randomised_response_law"]

FloatArray = npt.NDArray[np.float64]
MASS_MARGIN = 2.0**-30  # relative margin on every mass computed from library special functions
ROUND_TAIL = 2.0**-30  # the share of tail_mass a single round may cut
_SQRT_2PI = math.sqrt(2.0 * math.pi)


@frozen
class Part:
    """A density on lo < x < hi with an increasing loss (module doc); ``below`` / ``above``:
    upper bounds on the mass left of lo and right of hi (0 for a bounded support)."""

    lo: float
    hi: float
    below: float
    above: float
    weights: tuple[float, ...]
    centres: tuple[float, ...]  # normal means, or exponential rates when ``normal`` is false
    normal: bool
    a: float
    c: float
    q: float
    sign: int

    def density(self, x: FloatArray) -> FloatArray:
        """The (unnormalised mixture) density at x."""
        out = np.zeros_like(x)
        for w, m in zip(self.weights, self.centres, strict=True):
            if self.normal:
                out += w * np.exp(-0.5 * (x - m) ** 2) / _SQRT_2PI
            else:
                out += w * np.exp(m * x)
        return out

    def loss(self, x: FloatArray) -> FloatArray:
        """L(x) = sign·link_q(a·x + c)."""
        g = self.a * x + self.c
        if self.q == 1.0:
            return self.sign * g
        with np.errstate(over="ignore"):
            small = np.log1p(self.q * np.expm1(np.minimum(g, 30.0)))
            large = np.logaddexp(math.log1p(-self.q), math.log(self.q) + g)
        return self.sign * np.where(g < 30.0, small, large)

    def inverse(self, losses: FloatArray) -> FloatArray:
        """x with L(x) = l, clipped to [lo, hi] (ends of the loss range map to the ends)."""
        v = self.sign * losses
        if self.q == 1.0:
            g = v
        else:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                g = np.where(v > math.log1p(-self.q), np.log1p(np.expm1(v) / self.q), -np.inf)
        with np.errstate(invalid="ignore"):
            x = (g - self.c) / self.a
        x = np.where(np.isnan(x), self.lo if self.sign * self.a > 0 else self.hi, x)
        return np.clip(x, self.lo, self.hi)


@frozen
class LossLaw:
    """Atoms (loss, mass) and continuous parts of one direction's PLD."""

    atoms: tuple[tuple[float, float], ...]
    parts: tuple[Part, ...]


def _cut_normal(
    weights: tuple[float, ...],
    means: tuple[float, ...],
    a: float,
    c: float,
    q: float,
    sign: int,
    tail: float,
) -> Part:
    """A normal mixture cut where each tail holds at most tail·2^-30 (the upper one goes to +∞
    in every round: k rounds put k times its mass there)."""
    z = float(ndtri(tail * ROUND_TAIL))  # Φ(z) = tail·2^-30, z < 0
    lo, hi = min(means) + z, max(means) - z
    below = sum(w * float(ndtr(lo - m)) for w, m in zip(weights, means, strict=True))
    above = sum(w * float(ndtr(m - hi)) for w, m in zip(weights, means, strict=True))
    margin = 1.0 + MASS_MARGIN
    return Part(lo, hi, below * margin, above * margin, weights, means, True, a, c, q, sign)


def gaussian_laws(mu: float, q: float, tail: float) -> tuple[LossLaw, LossLaw]:
    """(remove, add) laws of the Gaussian pair with μ = Δ/σ (rounded up), subsampled at q."""
    if q == 1.0:
        law = LossLaw((), (_cut_normal((1.0,), (mu,), mu, -mu * mu / 2, 1.0, 1, tail),))
        return law, law
    remove = _cut_normal((1.0 - q, q), (0.0, mu), mu, -mu * mu / 2, q, 1, tail)
    add = _cut_normal((1.0,), (0.0,), -mu, -mu * mu / 2, q, -1, tail)
    return LossLaw((), (remove,)), LossLaw((), (add,))


def _link_up(g: float, q: float, sign: int) -> float:
    """sign·link_q(g) rounded up (libm log1p/expm1: a few ulps, moved up 8)."""
    v = g if q == 1.0 else math.log1p(q * math.expm1(g))
    return up(sign * v, 8)


def laplace_laws(eps0: float, q: float) -> tuple[LossLaw, LossLaw]:
    """(remove, add) laws of the Laplace pair with ε0 = Δ/b (rounded up), subsampled at q."""
    low, high = 0.5 * math.exp(-eps0), 0.5  # P(x <= 0), P(x >= ε0) under P = Lap(ε0, 1)
    if q == 1.0:
        part = Part(0.0, eps0, 0.0, 0.0, (low,), (1.0,), False, 2.0, -eps0, 1.0, 1)
        law = LossLaw(((up(-eps0, 1), low), (eps0, high)), (part,))
        return law, law
    remove = LossLaw(
        (
            (_link_up(-eps0, q, 1), (1 - q) * 0.5 + q * low),
            (_link_up(eps0, q, 1), (1 - q) * low + q * high),
        ),
        (
            Part(
                0.0, eps0, 0.0, 0.0, ((1 - q) * 0.5, q * low), (-1.0, 1.0), False, 2.0, -eps0, q, 1
            ),
        ),
    )
    add = LossLaw(
        ((_link_up(-eps0, q, -1), 0.5), (_link_up(eps0, q, -1), low)),
        (Part(-eps0, 0.0, 0.0, 0.0, (0.5,), (1.0,), False, -2.0, -eps0, q, -1),),
    )
    return remove, add


def randomised_response_law(eps0: float) -> LossLaw:
    """Randomised response: loss ε0 with mass e^{ε0}/(1 + e^{ε0}), −ε0 with 1/(1 + e^{ε0})."""
    lower = 1.0 / (1.0 + math.exp(eps0))
    return LossLaw(((up(-eps0, 1), lower), (eps0, 1.0 - lower)), ())


def ratio_up(numerator: float, denominator: float) -> float:
    """numerator/denominator rounded up (exact rational rounding)."""
    return up_exact(Fraction(numerator) / Fraction(denominator))
