"""Evaluating a boundary: argument checks, float-or-array results, directed rounding up.

Shared by the martingale boundaries (`expost.boundaries.martingale`) and the privacy
boundaries (`expost.boundaries.privacy`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import field

from expost._validation import (
    as_float,
    finite_array,
    nonnegative,
    open_probability,
    positive,
    validator,
)
from expost.errors import InvalidParameter
from expost.rounding import up_array, up_iv

__all__ = [
    "DELTA",
    "NORMAL",
    "POSITIVE",
    "FloatArray",
    "Points",
    "iv_up",
    "points",
    "shaped",
    "upper",
]

FloatArray = npt.NDArray[np.float64]
Points = npt.NDArray[np.floating[Any]] | npt.NDArray[np.integer[Any]] | Sequence[float]

# Directed rounding (issue 21): every boundary value is rounded up. Where every product and
# quotient of an evaluation stays a normal float, each IEEE operation errs by at most u = 2⁻⁵³
# relative and libm's log and log1p (glibc; NumPy's SIMD umath) by < 4 ulp <= 8u relative, so
# a proven count of ulps moves the float value above the exact one (`up_array`). Elsewhere
# (under- or overflow, NaN) the value is recomputed in interval arithmetic (mpmath ``iv``).
NORMAL = float(np.finfo(np.float64).tiny)
"""The smallest normal float: an intermediate below it has lost the relative error bound."""
_IV_PREC = 160  # bits of the interval fallback: far more than its rounding to float needs

POSITIVE = field(converter=as_float, validator=validator(positive))
"""An attrs field: a float > 0."""
DELTA = field(converter=as_float, validator=validator(open_probability))
"""An attrs field: a probability in (0, 1)."""


def points(name: str, value: npt.ArrayLike, *, strict: bool) -> FloatArray:
    """``value`` as a float array of times > 0 (``strict``) or >= 0, else InvalidParameter."""
    if isinstance(value, int | float | np.number):  # fast path for one scalar
        return np.asarray((positive if strict else nonnegative)(name, value))
    if isinstance(value, str | bytes):
        raise InvalidParameter(name, value, "must be a real number or an array of them")
    arr = finite_array(name, value)
    if np.any(arr <= 0.0) if strict else np.any(arr < 0.0):
        raise InvalidParameter(name, value, "must be > 0" if strict else "must be >= 0")
    return arr


def shaped(value: object, out: FloatArray) -> float | FloatArray:
    """A float for a scalar ``value``, else the array ``out``."""
    if isinstance(value, int | float | np.number):
        return float(out)
    return out


def iv_up(compute: Any) -> float:
    """The smallest float >= the upper end of the interval ``compute(iv)``."""
    return up_iv(compute, _IV_PREC)


def upper(
    values: FloatArray,
    ulps: int,
    lost: npt.NDArray[np.bool_],
    points: FloatArray,
    exact: Any,
) -> FloatArray:
    """``values`` moved up by ``ulps`` (a proven bound on their rounding error), except where
    ``lost`` (an intermediate left the normal range): there ``iv_up(exact(point))``."""
    out: FloatArray = np.array(up_array(values, ulps), dtype=np.float64)
    for i in np.flatnonzero(lost):
        out.flat[i] = iv_up(exact(float(points.flat[i])))
    return out
