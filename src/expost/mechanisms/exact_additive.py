"""Exact integer arithmetic for the mechanisms that release integers plus exact integer noise.

`integers` reads an integer value of any non-empty shape; `add_exact` adds integer noise to it
exactly (int64 when every sum fits, Python ints beyond), so a release is exactly value + noise
(issue 28). Used by every mechanism with ``exact=True`` (`GaussianMechanism`, `LaplaceMechanism`,
`AboveThreshold`, `ExponentialMechanism`, `SkellamNoiseReduction`) and by `PermuteAndFlip`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from expost._validation import exact_integers, int_array
from expost.errors import refused

__all__ = ["add_exact", "integers"]

IntArray = npt.NDArray[np.int64]


def integers(name: str, value: npt.ArrayLike) -> IntArray:
    """``value`` as exact integers (`expost._validation.exact_integers`), any non-empty shape."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise refused(name, value, "must be an array of integers (ragged or not numbers)") from None
    if arr.ndim <= 1 and arr.size:
        return exact_integers(name, value)
    return exact_integers(name, arr.reshape(-1)).reshape(arr.shape)


def add_exact(value: IntArray, noise: IntArray) -> IntArray:
    """value + noise in exact integer arithmetic: int64 when every sum fits, else Python ints;
    an array of their shape (0-d for a scalar, never a numpy scalar: docs/session.md)."""
    if value.dtype == noise.dtype == np.int64 and _within(value) and _within(noise):
        return np.asarray(value + noise)
    return int_array(value.astype(object) + noise.astype(object))


def _within(a: IntArray) -> bool:
    """Every entry in (−2**62, 2**62): sums of two such fit in int64."""
    return a.size == 0 or (int(a.min()) > -(2**62) and int(a.max()) < 2**62)
