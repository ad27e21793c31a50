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
from typing import Protocol

import numpy as np
import numpy.typing as npt
from attrs import evolve, frozen

from expost.rounding import up, up_exact

__all__ = [
    "BLATANT",
    "LossLaw",
    "Part",
    "blatant_laws",
    "bounded_range_laws",
    "gaussian_laws",
    "laplace_laws",
    "link",
    "randomised_response_law",
]

FloatArray = npt.NDArray[np.float64]
MASS_MARGIN = 2.0**-30  # relative margin on every mass computed from library special functions
BLATANT = 1000.0  # μ or ε0 from which a pair is replaced by the disjoint pair (`blatant_laws`)
ROUND_TAIL = 2.0**-30  # the share of tail_mass a single round may cut
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_TINY = math.ulp(0.0)


@frozen
class Part:
    """A density on lo < x < hi with an increasing loss (module doc); ``below`` / ``above``:
    upper bounds on the mass left of lo and right of hi (0 for a bounded support)."""

    lo: float
    hi: float
    below: float
    above: float
    log_weights: tuple[float, ...]  # logs of the components' weights (no underflow)
    centres: tuple[float, ...]  # normal means, or exponential rates when ``normal`` is false
    normal: bool
    a: float
    c: float
    q: float
    sign: int

    def density(self, x: FloatArray) -> FloatArray:
        """The (unnormalised mixture) density at x: Σ e^{log w}·φ(x − m) or Σ e^{log w + r·x}."""
        out = np.zeros_like(x)
        for lw, m in zip(self.log_weights, self.centres, strict=True):
            if self.normal:
                out += np.exp(lw - 0.5 * (x - m) ** 2) / _SQRT_2PI
            else:
                out += np.exp(lw + m * x)
        return out

    def restricted(self, lo: float, hi: float, below: float, above: float) -> Part:
        """The same density on (lo, hi) with these tail bounds."""
        return evolve(self, lo=lo, hi=hi, below=below, above=above)

    def mass(self, lo: float, hi: float) -> float:
        """An upper bound on the density's mass on [lo, hi] (closed forms, `MASS_MARGIN`)."""
        if hi <= lo:
            return 0.0
        from scipy.special import ndtr  # lazy: importing expost loads no scipy

        total = 0.0
        for lw, m in zip(self.log_weights, self.centres, strict=True):
            if self.normal:  # the difference of the two small tails (no cancellation)
                if lo >= m:
                    share = float(ndtr(m - lo) - ndtr(m - hi))
                elif hi <= m:
                    share = float(ndtr(hi - m) - ndtr(lo - m))
                else:
                    share = float(1.0 - ndtr(lo - m) - ndtr(m - hi)) + 2.0**-52
                total += math.exp(lw) * share
            elif m > 0:
                total += math.exp(lw + m * hi) * -math.expm1(m * (lo - hi)) / m
            elif m < 0:
                total += math.exp(lw + m * lo) * -math.expm1(m * (hi - lo)) / -m
            else:
                total += math.exp(lw) * (hi - lo)
        return total * (1.0 + MASS_MARGIN) + _TINY

    def loss(self, x: FloatArray) -> FloatArray:
        """L(x) = sign·link_q(a·x + c)."""
        return self.sign * link(self.a * x + self.c, self.q)

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


def link(g: FloatArray, q: float) -> FloatArray:
    """link_q(g) = log(1 − q + q·e^g), without overflow (the identity at q = 1)."""
    if q == 1.0:
        return g
    with np.errstate(over="ignore"):
        small = np.log1p(q * np.expm1(np.minimum(g, 30.0)))
        large = np.logaddexp(math.log1p(-q), math.log(q) + g)
    out: FloatArray = np.where(g < 30.0, small, large)
    return out


class PartLike(Protocol):
    """What the discretisations need of a continuous part (`Part`, `noise.NoisePart`)."""

    @property
    def lo(self) -> float: ...
    @property
    def hi(self) -> float: ...
    @property
    def below(self) -> float: ...
    @property
    def above(self) -> float: ...
    def density(self, x: FloatArray) -> FloatArray: ...
    def loss(self, x: FloatArray) -> FloatArray: ...
    def inverse(self, losses: FloatArray) -> FloatArray: ...
    def mass(self, lo: float, hi: float) -> float: ...
    def restricted(self, lo: float, hi: float, below: float, above: float) -> PartLike: ...


@frozen(eq=False)
class LossLaw:
    """Atoms (loss, mass) — a tuple of pairs or an (n, 2) array — and continuous parts of one
    direction's PLD."""

    atoms: tuple[tuple[float, float], ...] | FloatArray
    parts: tuple[PartLike, ...]


def _cut_normal(
    log_weights: tuple[float, ...],
    means: tuple[float, ...],
    a: float,
    c: float,
    q: float,
    sign: int,
    tail: float,
) -> Part:
    """A normal mixture cut where each tail holds at most tail·2^-30 (the upper one goes to +∞
    in every round: k rounds put k times its mass there)."""
    from scipy.special import ndtr, ndtri  # lazy: importing expost loads no scipy

    z = float(ndtri(tail * ROUND_TAIL))  # Φ(z) = tail·2^-30, z < 0
    lo, hi = min(means) + z, max(means) - z
    pairs = list(zip(log_weights, means, strict=True))
    below = sum(math.exp(w) * float(ndtr(lo - m)) for w, m in pairs)
    above = sum(math.exp(w) * float(ndtr(m - hi)) for w, m in pairs)
    margin = 1.0 + MASS_MARGIN
    return Part(lo, hi, below * margin, above * margin, log_weights, means, True, a, c, q, sign)


def blatant_laws(q: float) -> tuple[LossLaw, LossLaw]:
    """(remove, add) laws of the disjoint pair (P ⊥ Q: loss +∞), subsampled at q; it dominates
    every pair, and stands in for pairs so far apart (μ or ε0 >= `BLATANT`) that their profile
    differs from it by less than e^{−400} relative at every ε <= `LOSS_CAP` (a float's width)."""
    if q == 1.0:
        law = LossLaw(((math.inf, 1.0),), ())
        return law, law
    remove = LossLaw(((up(math.log1p(-q), 2), up(1.0 - q, 1)), (math.inf, q)), ())
    return remove, LossLaw(((up(-math.log1p(-q), 2), 1.0),), ())


def gaussian_laws(mu: float, q: float, tail: float) -> tuple[LossLaw, LossLaw]:
    """(remove, add) laws of the Gaussian pair with μ = Δ/σ (rounded up), subsampled at q."""
    if mu >= BLATANT:
        return blatant_laws(q)
    if q == 1.0:
        law = LossLaw((), (_cut_normal((0.0,), (mu,), mu, -mu * mu / 2, 1.0, 1, tail),))
        return law, law
    remove = _cut_normal((math.log1p(-q), math.log(q)), (0.0, mu), mu, -mu * mu / 2, q, 1, tail)
    add = _cut_normal((0.0,), (0.0,), -mu, -mu * mu / 2, q, -1, tail)
    return LossLaw((), (remove,)), LossLaw((), (add,))


def _link_up(g: float, q: float, sign: int) -> float:
    """sign·link_q(g) rounded up (libm log1p/expm1/log: a few ulps, moved up 8); for g > 30
    the form log(1 − q + q·e^g) = g + log q + log1p((1 − q)e^{−g}/q) does not overflow."""
    if q == 1.0:
        v = g
    elif g > 30.0:
        v = g + math.log(q) + math.log1p((1.0 - q) * math.exp(-g) / q)
    else:
        v = math.log1p(q * math.expm1(g))
    return up(sign * v, 8)


def laplace_laws(eps0: float, q: float) -> tuple[LossLaw, LossLaw]:
    """(remove, add) laws of the Laplace pair with ε0 = Δ/b (rounded up), subsampled at q.
    Densities carry log-weights, so nothing underflows for huge ε0 (e^{−ε0} < 2^-1074); an
    atom mass that underflows is raised to the smallest subnormal (an upper bound)."""
    if eps0 >= BLATANT:
        return blatant_laws(q)
    log_half = -math.log(2.0)
    low = max(0.5 * math.exp(-eps0), _TINY)  # P(x <= 0) under P = Lap(ε0, 1), rounded up
    high = 0.5  # P(x >= ε0)
    if q == 1.0:
        part = Part(0.0, eps0, 0.0, 0.0, (log_half - eps0,), (1.0,), False, 2.0, -eps0, 1.0, 1)
        law = LossLaw(((up(-eps0, 1), low), (eps0, high)), (part,))
        return law, law
    mixed = (math.log1p(-q) + log_half, math.log(q) + log_half - eps0)
    remove = LossLaw(
        (
            (_link_up(-eps0, q, 1), (1 - q) * 0.5 + q * low),
            (_link_up(eps0, q, 1), (1 - q) * low + q * high),
        ),
        (Part(0.0, eps0, 0.0, 0.0, mixed, (-1.0, 1.0), False, 2.0, -eps0, q, 1),),
    )
    add = LossLaw(
        ((_link_up(-eps0, q, -1), 0.5), (_link_up(eps0, q, -1), low)),
        (Part(-eps0, 0.0, 0.0, 0.0, (log_half,), (1.0,), False, -2.0, -eps0, q, -1),),
    )
    return remove, add


def bounded_range_laws(eps: float, q: float) -> tuple[LossLaw, LossLaw]:
    """(remove, add) laws of the worst ε-bounded-range pair, subsampled at q: L has density
    e^{(l−ε)/2}/(2(1 − e^{−ε})) on (−ε, ε) under P, no atoms — written in x = (l + ε)/2 on
    (0, ε) with density e^{x−ε}/(1 − e^{−ε}) (docs/pld.md derives it from the two-point pairs
    of Dong, Durfee & Rogers 2020); symmetric at q = 1."""
    if eps >= BLATANT:
        return blatant_laws(q)
    log_norm = -math.log(-math.expm1(-eps))
    if q == 1.0:
        part = Part(0.0, eps, 0.0, 0.0, (log_norm - eps,), (1.0,), False, 2.0, -eps, 1.0, 1)
        law = LossLaw((), (part,))
        return law, law
    mixed = (math.log1p(-q) + log_norm, math.log(q) + log_norm - eps)  # (1−q)Q + qP in x
    remove = Part(0.0, eps, 0.0, 0.0, mixed, (-1.0, 1.0), False, 2.0, -eps, q, 1)
    add = Part(-eps, 0.0, 0.0, 0.0, (log_norm,), (1.0,), False, -2.0, -eps, q, -1)  # Q in −x
    return LossLaw((), (remove,)), LossLaw((), (add,))


def randomised_response_law(eps0: float) -> LossLaw:
    """Randomised response: loss ε0 with mass e^{ε0}/(1 + e^{ε0}), −ε0 with 1/(1 + e^{ε0})."""
    tiny = math.exp(-eps0)  # no overflow for huge ε0; masses rounded up (4 ulps: exp, +, /)
    lower, upper = max(up(tiny / (1.0 + tiny), 4), _TINY), up(1.0 / (1.0 + tiny), 4)
    return LossLaw(((up(-eps0, 1), lower), (eps0, upper)), ())


def ratio_up(numerator: float, denominator: float) -> float:
    """numerator/denominator rounded up (exact rational rounding)."""
    return up_exact(Fraction(numerator) / Fraction(denominator))
