"""A user's additive noise law as a continuous part of a loss law (THEORY §12, "Pairs").

Noise Z with a symmetric log-concave density f added to a scalar query of sensitivity Δ > 0:
P = Δ + Z, Q = Z. The loss L(x) = log f(x − Δ) − log f(x) is nondecreasing in x (log-concave
f), and by symmetry the add pair (Q, P) has the same PLD (x ↦ Δ − x maps one onto the other),
so one part serves both directions. Given: ``log_density`` (vectorised, accurate to a few ulps:
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

from expost.pld.pairs import ROUND_TAIL

__all__ = ["NoisePart", "noise_part"]

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

    def density(self, x: FloatArray) -> FloatArray:
        """s·f(s·x − Δ): the density of output/s."""
        return self.scale * np.exp(self.log_density(self.scale * x - self.shift))

    def loss(self, x: FloatArray) -> FloatArray:
        """log f(s·x − Δ) − log f(s·x)."""
        y = self.scale * x
        return self.log_density(y - self.shift) - self.log_density(y)

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
        """An upper bound on P(lo < Δ + Z < hi) from the tail bound (either side)."""
        if hi <= lo:
            return 0.0
        s = self.scale
        return min(1.0, self.tail(s * lo - self.shift), self.tail(self.shift - s * hi))

    def restricted(self, lo: float, hi: float, below: float, above: float) -> NoisePart:
        """The same law on (lo, hi) with these tail bounds."""
        return evolve(self, lo=lo, hi=hi, below=below, above=above)


def noise_part(
    log_density: Callable[[FloatArray], FloatArray],
    tail: Callable[[float], float],
    sensitivity: float,
    scale: float,
    tail_mass: float,
) -> NoisePart:
    """The part of Δ + Z cut where each side's tail is at most tail_mass·2^-30 (found by
    doubling from ``scale``); the cut tails priced by ``tail``."""
    target = tail_mass * ROUND_TAIL
    reach = scale
    while tail(reach) > target:
        reach *= 2.0
        if not math.isfinite(reach):
            raise ValueError("tail(x) does not fall below tail_mass·2^-30")
    lo, hi = (sensitivity - reach) / scale, (sensitivity + reach) / scale
    t = tail(reach)
    return NoisePart(lo, hi, t, t, log_density, tail, sensitivity, scale)
