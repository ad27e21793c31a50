"""Exact rational references for convolutions of float arrays (tests of `expost.pld.splitting`)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def exact_convolution(a: FloatArray, b: FloatArray) -> list[Fraction]:
    """a * b of the float inputs, exactly."""
    fa, fb = [Fraction(float(x)) for x in a], [Fraction(float(x)) for x in b]
    out = [Fraction(0)] * (a.size + b.size - 1)
    for i, x in enumerate(fa):
        if x:
            for j, y in enumerate(fb):
                out[i + j] += x * y
    return out


def shortfall(c: FloatArray, exact: list[Fraction], lower: bool) -> Fraction:
    """Σ (a * b − c)_+ (upper side) or Σ (c − a * b)_+ (lower side), exactly: a convolution's
    promise is that this is at most its error bound."""
    total = Fraction(0)
    for x, e in zip(c.tolist(), exact, strict=True):
        total += max(Fraction(x) - e if lower else e - Fraction(x), Fraction(0))
    return total
