"""Argument checks shared by every constructor and public function.

Each check returns the value as a float (so callers can write ``x = positive("x", x)``)
or raises `InvalidParameter` naming the argument, the value and the rule. The ``*_attr``
variants are attrs validators built from the same checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from expost.errors import InvalidParameter

__all__ = [
    "as_float",
    "candidates_mask",
    "check_scale",
    "finite",
    "finite_array",
    "float_tuple",
    "generator",
    "nonnegative",
    "open_probability",
    "path_value",
    "point",
    "positive",
    "positive_decreasing",
    "positive_increasing",
    "positive_int",
    "probability",
    "read_only",
    "scores_array",
    "strictly_decreasing",
    "strictly_increasing",
    "validator",
]


def _real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidParameter(name, value, "must be a real number")
    return float(value)


def finite(name: str, value: object) -> float:
    """A finite real number (no NaN, no infinity)."""
    x = _real(name, value)
    if not math.isfinite(x):
        raise InvalidParameter(name, value, "must be finite (not NaN or infinite)")
    return x


def positive(name: str, value: object) -> float:
    """A finite real number > 0."""
    x = finite(name, value)
    if x <= 0.0:
        raise InvalidParameter(name, value, "must be > 0")
    return x


def nonnegative(name: str, value: object) -> float:
    """A finite real number >= 0."""
    x = finite(name, value)
    if x < 0.0:
        raise InvalidParameter(name, value, "must be >= 0")
    return x


def probability(name: str, value: object) -> float:
    """A failure probability delta in [0, 1)."""
    x = finite(name, value)
    if not 0.0 <= x < 1.0:
        raise InvalidParameter(name, value, "must lie in [0, 1)")
    return x


def open_probability(name: str, value: object) -> float:
    """A failure probability in (0, 1), as needed wherever log(1/delta) appears."""
    x = finite(name, value)
    if not 0.0 < x < 1.0:
        raise InvalidParameter(name, value, "must lie in (0, 1)")
    return x


def positive_int(name: str, value: object) -> int:
    """An integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InvalidParameter(name, value, "must be an integer")
    if value < 1:
        raise InvalidParameter(name, value, "must be >= 1")
    return int(value)


def finite_array(name: str, value: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A float array with no NaN or infinity."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InvalidParameter(name, value, "must be an array of real numbers") from exc
    if raw.dtype.kind not in "iuf":
        raise InvalidParameter(name, value, "must be an array of real numbers")
    arr = raw.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise InvalidParameter(name, value, "must contain only finite numbers (no NaN or inf)")
    return arr


def generator(rng: object) -> np.random.Generator:
    """An explicit ``numpy.random.Generator`` (the only source of randomness anywhere)."""
    if not isinstance(rng, np.random.Generator):
        raise InvalidParameter("rng", rng, "must be a numpy.random.Generator")
    return rng


def sample_count(n: int, rng: object) -> int:
    """The number of draws ``n`` (a positive int) for a `numpy.random.Generator` ``rng``."""
    generator(rng)
    return positive_int("n", n)


def renyi_order(alpha: float) -> float:
    """A Rényi order: finite and > 1."""
    a = finite("alpha", alpha)
    if a <= 1.0:
        raise InvalidParameter("alpha", alpha, "must be > 1")
    return a


def point(name: str, value: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A finite scalar (0-d) or non-empty 1-d array of reals, shape kept."""
    v = finite_array(name, value)
    if v.ndim > 1 or v.size == 0:
        raise InvalidParameter(name, value, "must be a scalar or a non-empty 1-d array")
    return v


def strictly_decreasing(name: str, value: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A non-empty 1-d finite array, strictly decreasing."""
    arr = finite_array(name, value)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidParameter(name, value, "must be a non-empty 1-d sequence")
    if np.any(np.diff(arr) >= 0):
        raise InvalidParameter(name, value, "must be strictly decreasing")
    return arr


def strictly_increasing(name: str, value: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A non-empty 1-d finite array, strictly increasing."""
    arr = finite_array(name, value)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidParameter(name, value, "must be a non-empty 1-d sequence")
    if np.any(np.diff(arr) <= 0):
        raise InvalidParameter(name, value, "must be strictly increasing")
    return arr


def as_float(value: float) -> float:
    """attrs converter: real numbers become floats; anything else is left for the validator."""
    if isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        return float(value)
    return value


def validator(check: Callable[[str, Any], object]) -> Callable[[Any, Any, Any], None]:
    """An attrs validator running ``check(attribute.name, value)``."""

    def run(_instance: Any, attribute: Any, value: Any) -> None:
        check(attribute.name, value)

    return run


def read_only(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A read-only float64 copy."""
    arr = np.array(values, dtype=np.float64)
    arr.flags.writeable = False
    return arr


def _real_sequence(name: str, value: object) -> npt.NDArray[np.float64]:
    """A non-empty 1-d sequence of finite positive reals (no booleans, strings or objects)."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InvalidParameter(name, value, "must be a 1-d sequence of real numbers") from exc
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf":
        raise InvalidParameter(name, value, "must be a non-empty 1-d sequence of real numbers")
    out = arr.astype(np.float64)
    if not np.all(np.isfinite(out)):
        raise InvalidParameter(name, value, "must contain only finite numbers (no NaN or inf)")
    if np.any(out <= 0.0):
        raise InvalidParameter(name, value, "must contain only numbers > 0")
    return out


def _monotone(name: str, value: object, *, increasing: bool) -> npt.NDArray[np.float64]:
    arr = _real_sequence(name, value)
    steps = np.diff(arr)
    if np.any(steps <= 0.0) if increasing else np.any(steps >= 0.0):
        direction = "increasing" if increasing else "decreasing"
        raise InvalidParameter(name, value, f"must be strictly {direction}")
    return arr


def positive_decreasing(name: str, value: object) -> npt.NDArray[np.float64]:
    """A non-empty, strictly decreasing 1-d sequence of finite reals > 0."""
    return _monotone(name, value, increasing=False)


def positive_increasing(name: str, value: object) -> npt.NDArray[np.float64]:
    """A non-empty, strictly increasing 1-d sequence of finite reals > 0."""
    return _monotone(name, value, increasing=True)


def float_tuple(value: Any) -> Any:
    """attrs converter: a 1-d sequence of reals becomes a tuple of floats; else left for the validator."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        return value
    if arr.ndim == 1 and arr.dtype.kind in "iuf":
        return tuple(arr.astype(np.float64).tolist())
    return value


def check_scale(name: str, value: float, scale: float) -> None:
    """A noise scale derived from ``value`` (and a sensitivity) must be finite and > 0."""
    if not (math.isfinite(scale) and scale > 0.0):
        raise InvalidParameter(
            name, value, f"with this sensitivity gives a noise scale {scale!r}, not in (0, ∞)"
        )


def path_value(value: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A finite scalar or non-empty 1-d array, as shape (d,): the value a run perturbs."""
    return point("value", value).reshape(-1)


def scores_array(scores: npt.ArrayLike, *, max_ndim: int) -> npt.NDArray[np.float64]:
    """Finite scores of shape (m,) (``max_ndim`` 1) or also (trials, m) (2), m >= 1."""
    u = finite_array("scores", scores)
    if not 1 <= u.ndim <= max_ndim or u.shape[-1] == 0 or u.size == 0:
        shape = "(m,)" if max_ndim == 1 else "(m,) or (trials, m)"
        raise InvalidParameter("scores", scores, f"must be a non-empty array of shape {shape}")
    return u


def candidates_mask(
    candidates: npt.ArrayLike | None, shape: tuple[int, ...]
) -> npt.NDArray[np.bool_] | None:
    """The candidates mask broadcast to the scores' shape; every row must allow one candidate."""
    if candidates is None:
        return None
    mask = np.asarray(candidates)
    if mask.dtype != np.bool_:
        raise InvalidParameter("candidates", candidates, "must be a boolean mask")
    try:
        allowed = np.broadcast_to(mask, shape)
    except ValueError as exc:
        raise InvalidParameter(
            "candidates", candidates, f"must broadcast to the scores' shape {shape}"
        ) from exc
    if not np.all(allowed.any(axis=-1)):
        raise InvalidParameter("candidates", candidates, "must allow at least one candidate")
    return allowed
