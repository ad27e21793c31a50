"""Exact AboveThreshold: integer utilities and discrete Laplace noises (Lyu et al. 2017, Alg. 1).

The float `AboveThreshold` compares float noisy values; this one compares integers, with
threshold noise discrete Laplace(2Δ/eps) and query noises discrete Laplace(4Δ/eps) drawn exactly
(CKS Alg. 2). Lyu et al.'s proof of eps-DP shifts the threshold noise by Δ and the noise of the
answered query by 2Δ and bounds the density ratios by e^{eps/2} each; with integer utilities and
integer Δ those shifts are integers and the discrete Laplace pmf ratios obey the same bounds, so
the proof holds unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import exact_integer, exact_sensitivity, rational
from expost.errors import InvalidParameter
from expost.exact.bits import BitSource
from expost.exact.samplers import discrete_laplace
from expost.filters.costs import DPCost
from expost.guarantees import PureDP
from expost.mechanisms.exact_additive import integers
from expost.mechanisms.threshold import AboveThresholdResult
from expost.rounding import up_exact

__all__ = ["ExactAboveThreshold"]

IntArray = npt.NDArray[np.intp]


def _eps(value: Fraction | float) -> Fraction:
    return rational("eps", value)


def _threshold(value: object) -> int:
    return exact_integer("threshold", value)


@frozen
class ExactAboveThreshold:
    """AboveThreshold on integer utilities with exact discrete Laplace noises: eps-DP however
    many queries (Lyu et al. 2017); cost DPCost(eps), as `AboveThreshold`.

    Halts at the first i with u_i + ξ_i >= τ + ζ, ζ ~ DLap(2Δ/eps) once, ξ_i ~ DLap(4Δ/eps).
    """

    eps: Fraction = field(converter=_eps)
    threshold: int = field(converter=_threshold)
    sensitivity: int = field(default=1, converter=exact_sensitivity)

    def guarantee(self) -> PureDP:
        """eps-DP (Lyu et al. 2017), eps rounded up."""
        return PureDP(up_exact(self.eps))

    def cost(self) -> DPCost:
        """DPCost(eps), as `AboveThreshold`."""
        return DPCost(up_exact(self.eps))

    @property
    def threshold_scale(self) -> Fraction:
        """2Δ/eps, exactly."""
        return 2 * self.sensitivity / self.eps

    @property
    def query_scale(self) -> Fraction:
        """4Δ/eps, exactly."""
        return 4 * self.sensitivity / self.eps

    def run(self, utilities: Iterable[float], bits: BitSource) -> AboveThresholdResult:
        """Consume ``utilities`` lazily (each must be an integer) and halt at the first above."""
        noisy_threshold = 0
        asked = 0
        for u in utilities:
            value = int(integers("utilities", u))
            if asked == 0:
                noisy_threshold = self.threshold + int(
                    discrete_laplace(self.threshold_scale, bits, 1)[0]
                )
            asked += 1
            if value + int(discrete_laplace(self.query_scale, bits, 1)[0]) >= noisy_threshold:
                return AboveThresholdResult(asked - 1, asked, self.cost())
        return AboveThresholdResult(None, asked, self.cost())

    def run_batch(self, utilities: npt.ArrayLike, bits: BitSource) -> IntArray:
        """Each trial's stop index (−1: none) for (trials, n) integer utilities."""
        u = integers("utilities", utilities)
        if u.ndim != 2 or u.shape[1] == 0:
            raise InvalidParameter("utilities", u.shape, "must have shape (trials, n), n >= 1")
        zeta = discrete_laplace(self.threshold_scale, bits, u.shape[0])[:, None]
        xi = discrete_laplace(self.query_scale, bits, u.size).reshape(u.shape)
        fired = u + xi >= self.threshold + zeta
        result: IntArray = np.where(fired.any(axis=1), np.argmax(fired, axis=1), -1)
        return result
