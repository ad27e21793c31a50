"""A user's additive noise law as a continuous part of a loss law (THEORY §12, "Pairs").

Noise Z with a symmetric log-concave density f added to a scalar query of sensitivity Δ > 0:
P = Δ + Z, Q = Z. The loss L(x) = log f(x − Δ) − log f(x) is nondecreasing in x (log-concave
f), and by symmetry the add pair (Q, P) has the same PLD (x ↦ Δ − x maps one onto the other),
so one part serves both directions. Poisson subsampling at q (Zhu, Dong & Wang 2022, Thm 11):
remove ((1−q)Q + qP, Q) with loss link_q(L), add (Q, (1−q)Q + qP) with loss −link_q(L) under Q,
written in −x so that it increases. Given: ``log_density`` (vectorised, accurate to a few ulps:
the masses carry the relative margin `pairs.MASS_MARGIN`) and ``tail(x)`` >= P(Z > x) (an upper
bound; it prices the cut tails). The loss is inverted by bisection (60 halvings of the x-range:
below one ulp of it).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from attrs import evolve, frozen

from expost.pld.pairs import ROUND_TAIL, link

__all__ = ["NoisePart", "noise_parts"]

FloatArray = npt.NDArray[np.float64]
_BISECTIONS = 60


@frozen(eq=False)
class NoisePart:
    """P = Δ + Z on lo < x < hi, in units of ``scale`` (x = output/scale, so quadrature pieces
    are scale/16 wide); loss log f(s·x − Δ) − log f(s·x) (module doc)."""

    lo: float
    hi: float
    below: float
    above: float
    log_density: Callable[[FloatArray], FloatArray]
    tail: Callable[[float], float]
    shift: float
    scale: float
    q: float = 1.0  # Poisson sampling rate: remove ((1−q)Q + qP, Q), add (Q, (1−q)Q + qP)
    sign: int = 1  # −1: the add direction, in the variable −x (so its loss increases)

    def _x(self, x: FloatArray) -> FloatArray:
        return self.scale * (x if self.sign == 1 else -x)

    def density(self, x: FloatArray) -> FloatArray:
        """The density of the variable: s·((1−q)·f(s·x) + q·f(s·x − Δ)) (remove; s·f(s·x) at
        q = 1 is not used: then it is s·f(s·x − Δ)), or s·f(−s·x) (add: Q in −x)."""
        y = self._x(x)
        p = self.scale * np.exp(self.log_density(y - self.shift))
        if self.sign == -1:
            out: FloatArray = self.scale * np.exp(self.log_density(y))
            return out
        if self.q == 1.0:
            return p
        return (1.0 - self.q) * self.scale * np.exp(self.log_density(y)) + self.q * p

    def loss(self, x: FloatArray) -> FloatArray:
        """sign·link_q(log f(y − Δ) − log f(y)), y the output."""
        y = self._x(x)
        return self.sign * link(self.log_density(y - self.shift) - self.log_density(y), self.q)

    def inverse(self, losses: FloatArray) -> FloatArray:
        """x in [lo, hi] with L(x) = l by bisection (ends of the loss range map to the ends)."""
        a = np.full(losses.shape, self.lo)
        b = np.full(losses.shape, self.hi)
        for _ in range(_BISECTIONS):
            mid = 0.5 * (a + b)
            high = self.loss(mid) >= losses
            b = np.where(high, mid, b)
            a = np.where(high, a, mid)
        out: FloatArray = np.clip(0.5 * (a + b), self.lo, self.hi)
        return out

    def mass(self, lo: float, hi: float) -> float:
        """An upper bound on the variable's mass in (lo, hi) from the tail bound (either side
        of each component)."""
        if hi <= lo:
            return 0.0
        a, b = (
            (self.scale * lo, self.scale * hi)
            if self.sign == 1
            else (-self.scale * hi, -self.scale * lo)
        )

        def between(shift: float) -> float:  # P(a < shift + Z < b)
            return min(1.0, self.tail(a - shift), self.tail(shift - b))

        if self.sign == -1:
            return between(0.0)
        return (1.0 - self.q) * between(0.0) + self.q * between(self.shift)

    def restricted(self, lo: float, hi: float, below: float, above: float) -> NoisePart:
        """The same law on (lo, hi) with these tail bounds."""
        return evolve(self, lo=lo, hi=hi, below=below, above=above)


def noise_parts(
    log_density: Callable[[FloatArray], FloatArray],
    tail: Callable[[float], float],
    sensitivity: float,
    scale: float,
    tail_mass: float,
    q: float = 1.0,
) -> tuple[NoisePart, NoisePart]:
    """(remove, add) parts of Δ + Z vs Z (Poisson-subsampled at ``q``), cut where each tail is
    at most tail_mass·2^-30 (found by doubling from ``scale``); the cut tails priced by ``tail``
    (the same object twice at q = 1: the pair is symmetric)."""
    target = tail_mass * ROUND_TAIL
    reach = scale
    while tail(reach) > target:
        reach *= 2.0
        if not math.isfinite(reach):
            raise ValueError("tail(x) does not fall below tail_mass·2^-30")
    t = tail(reach)
    if q == 1.0:
        lo, hi = (sensitivity - reach) / scale, (sensitivity + reach) / scale
        part = NoisePart(lo, hi, t, t, log_density, tail, sensitivity, scale)
        return part, part
    lo, hi = -reach / scale, (sensitivity + reach) / scale
    remove = NoisePart(lo, hi, t, t, log_density, tail, sensitivity, scale, q, 1)
    add = NoisePart(
        -reach / scale, reach / scale, t, t, log_density, tail, sensitivity, scale, q, -1
    )
    return remove, add
