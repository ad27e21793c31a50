"""Argument checks shared by every constructor and public function.

Each check returns the value as a float (so callers can write ``x = positive("x", x)``)
or raises `InvalidParameter` naming the argument, the value and the rule. The ``*_attr``
variants are attrs validators built from the same checks.

Arrays and private inputs (a release's value, records, scores, utilities, a threshold) are
never printed: their checks refuse with `refused`, which shows the input by type, shape and
dtype (`expost.errors.Described`) and names the index and kind of the fault ("entry 2 is inf").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from expost._faults import fault, first, kind, nonfinite
from expost.errors import Described, InvalidParameter, refused

if TYPE_CHECKING:
    from expost.exact.bits import BitSource

__all__ = [
    "EXACT_POISSON_MEAN_LIMIT",
    "FLOAT_LIMIT",
    "FLOAT_POISSON_MEAN_LIMIT",
    "MAX_DOUBLING_TRIES",
    "MAX_QUERIES",
    "as_float",
    "check_scale",
    "exact_integer",
    "exact_integers",
    "exact_sensitivity",
    "finite",
    "finite_array",
    "float_tuple",
    "float_values",
    "generator",
    "int_array",
    "nonnegative",
    "open_probability",
    "path_value",
    "point",
    "positive",
    "positive_decreasing",
    "positive_increasing",
    "positive_int",
    "positive_parameter",
    "private_real",
    "probability",
    "rational",
    "read_only",
    "real_parameter",
    "release_values",
    "strictly_decreasing",
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


def sampling_probability(name: str, value: object) -> float:
    """A sampling rate q in (0, 1] (Poisson subsampling: each record kept with probability q).

    The one check of a sampling rate: mechanisms, costs, PLDs, Rényi curves and DP-SGD use it."""
    q = finite(name, value)
    if not 0.0 < q <= 1.0:
        raise InvalidParameter(name, value, "must lie in (0, 1]")
    return q


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


def _real_entry(x: object) -> bool:
    return isinstance(x, int | float | np.integer | np.floating) and not isinstance(x, bool)


def finite_array(name: str, value: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A float array with no NaN or infinity (refusals describe it, `refused`)."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError, OverflowError):  # ragged, or not numbers: refused below
        raw = np.empty(0, dtype=object)
    if raw.dtype.kind not in "iuf":
        at = fault(value, _real_entry) or f"its dtype is {raw.dtype}"
        raise refused(name, value, f"must be an array of real numbers: {at}")
    arr = raw.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise refused(name, value, f"must contain only finite numbers: {nonfinite(arr)}")
    return arr


def generator(rng: object, name: str = "rng") -> np.random.Generator:
    """An explicit ``numpy.random.Generator`` (the only source of randomness anywhere)."""
    if not isinstance(rng, np.random.Generator):
        raise InvalidParameter(name, rng, "must be a numpy.random.Generator")
    return rng


def bit_source(bits: object, name: str = "bits") -> BitSource:
    """A bit source (`expost.exact.bits`): an object with ``below(n, size)``, not a numpy
    Generator (wrap one in ``GeneratorBits(rng)``) and not a class."""
    if isinstance(bits, type) or not callable(getattr(bits, "below", None)):
        raise InvalidParameter(
            name,
            bits,
            "must be a bit source: SecureBits(), or GeneratorBits(rng) to draw reproducibly "
            "from a numpy Generator",
        )
    return cast("BitSource", bits)


def noise_source(exact: bool, source: object) -> np.random.Generator | BitSource:
    """The source a mechanism draws from, checked against its noise: a `BitSource` for exact
    noise, a numpy Generator for float noise (issue 28, item 4: exactness is a property of the
    noise)."""
    return bit_source(source, "source") if exact else generator(source, "source")


def flag(name: str, value: object) -> bool:
    """True or False, nothing else (no 0/1, no numpy bools)."""
    if not isinstance(value, bool):
        raise InvalidParameter(name, value, "must be True or False")
    return value


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


def as_float(value: float) -> float:
    """attrs converter: real numbers become floats (−0.0 becomes 0.0, so a value and its ledger
    record compare equal); anything else is left for the validator."""
    if isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        big = isinstance(value, int) and value.bit_length() > 1023  # float() may raise
        return math.inf if big else float(value) + 0.0
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


# ----------------------------------------------------------------------------- the input contract
# One set of rules for every `PrivateSession` release method (docs/session.md, "The input
# contract"); the exact mechanisms use the same functions.

#: Largest |value| and noise scale in the float mode, so value + noise stays finite.
FLOAT_LIMIT = 2.0**1000
#: Largest mean of an exact Poisson draw (and so of the binomial thinnings after it): the float
#: mode's `FLOAT_POISSON_MEAN_LIMIT`, so both modes take the same runs. From 2**20 on the exact
#: samplers cost polylog(mean), about 0.2–0.3 ms a draw (`expost.exact.polylog`), and their rare
#: exact refinement stays bounded (products of about 10**6 factors at 2**40; docs/exact-samplers.md).
EXACT_POISSON_MEAN_LIMIT = 2**40
#: Largest mean λ·t_1 of a float-mode Skellam run (numpy's Poisson): the noise stays far below
#: 2**62 (int64); value + noise is added exactly (`add_exact`, Python ints beyond int64).
FLOAT_POISSON_MEAN_LIMIT = 2**40
#: Most utilities an AboveThreshold round takes (they are read before the round is reserved).
MAX_QUERIES = 2**20
#: Most tries of a doubling run (the cap the budget allows is searched up to this).
MAX_DOUBLING_TRIES = 1024
_INT64 = (-(2**63), 2**63 - 1)
_EXACT_LIMIT = 2**1000  # = FLOAT_LIMIT: stopping rules see the released integers as floats


def _integral(name: str, value: object, shown: object) -> int:
    """An exact integer from an int, a numpy integer, an integral float or an integral Fraction
    (``shown``: the value as a refusal shows it)."""
    if _integer_entry(value) or (isinstance(value, Fraction) and value.denominator == 1):
        return int(cast("int", value))
    what = "a non-integral Fraction" if isinstance(value, Fraction) else kind(value)
    rule = f"must be an integer (an integral int, float or Fraction): the value is {what}"
    raise InvalidParameter(name, shown, rule)


def exact_integer(name: str, value: object) -> int:
    """A private integer scalar of the secure mode (a threshold): int, numpy integer, integral
    float or Fraction, |x| <= 2**1000 as a release's value; never a bool or a string. Refusals
    describe it (`refused`)."""
    x = _integral(name, value, Described(value))
    if abs(x) > _EXACT_LIMIT:
        raise refused(name, value, "must have magnitude at most 2**1000 (the value is above)")
    return x


def private_real(name: str, value: object) -> float:
    """A private real scalar of the float mode (a threshold derived from data): an int, float,
    numpy number or Fraction (rounded to the nearest float), finite, |x| <= 2**1000 (`FLOAT_LIMIT`:
    noise added to it stays finite). Refusals describe it (`refused`)."""
    exact = isinstance(value, Fraction) or (isinstance(value, int) and not isinstance(value, bool))
    if not (exact or _real_entry(value)):
        raise refused(name, value, "must be a real number")
    big = exact and abs(Fraction(cast("Fraction", value))) > FLOAT_LIMIT  # float() may overflow
    x = math.inf if big else float(cast("float", value))
    if not abs(x) <= FLOAT_LIMIT:
        what = "above" if math.isfinite(x) or big else kind(x)
        raise refused(name, value, f"must be finite, |x| <= 2**1000: it is {what}")
    return x


def exact_sensitivity(value: object, name: str = "sensitivity") -> int:
    """A positive integer sensitivity; an integral float (1.0) is taken as its int."""
    d = _integral(name, value, value)
    if d < 1:
        raise InvalidParameter(name, value, "must be a positive integer")
    return d


def rational(name: str, value: object) -> Fraction:
    """``value`` as an exact positive `Fraction` (a float is converted exactly, never rounded)."""
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, int | float | Fraction | np.integer | np.floating
    ):
        raise InvalidParameter(name, value, "must be an int, a float or a Fraction")
    if isinstance(value, float | np.floating) and not math.isfinite(value):
        raise InvalidParameter(name, value, "must be finite")
    if isinstance(value, np.integer | np.floating):
        value = value.item()  # the same number as a Python int or float
    q = Fraction(value)
    if q <= 0:
        raise InvalidParameter(name, value, "must be > 0")
    return q


def real_parameter(name: str, value: object) -> float:
    """A float-mode real parameter: finite, an int, float, numpy scalar or Fraction (rounded to
    the nearest float), never a bool or a string."""
    if isinstance(value, Fraction):
        try:
            return float(value)
        except OverflowError:
            raise InvalidParameter(name, value, "must be finite (within the floats)") from None
    return finite(name, value)


def positive_parameter(name: str, value: object) -> float:
    """A float-mode parameter > 0 (`real_parameter`)."""
    x = real_parameter(name, value)
    if x <= 0.0:
        raise InvalidParameter(name, value, "must be > 0")
    return x


def _as_array(name: str, value: object, dtype: type | None = None) -> npt.NDArray[Any]:
    """A private value as an array (``dtype``: object, for Python ints of any size)."""
    if isinstance(value, str | bytes):
        raise refused(name, value, "must be numbers, not a string")
    if isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        at = fault(value, _real_entry) or "not an array of numbers"
        raise refused(name, value, f"must be a scalar or an array of numbers: {at}") from None


def _shape(name: str, value: object, arr: npt.NDArray[Any], vector: bool) -> None:
    if arr.size == 0 or arr.ndim > 1 or (vector and arr.ndim != 1):
        shape = "a non-empty 1-d array" if vector else "a scalar or a non-empty 1-d array"
        raise refused(name, value, f"must be {shape} (shape {arr.shape})")


def int_array(values: list[int] | npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Python integers as int64 when all fit, else as an object array of Python ints."""
    obj = np.asarray(values, dtype=object)
    if obj.size == 0 or (_INT64[0] <= min(obj.flat) and max(obj.flat) <= _INT64[1]):
        return obj.astype(np.int64)
    return obj


def _integer_entry(x: object) -> bool:
    """An entry of a secure-mode value: an int, numpy integer or integral finite float."""
    if isinstance(x, float | np.floating):
        return math.isfinite(x) and float(x).is_integer()
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


def exact_integers(name: str, value: object, *, vector: bool = False) -> npt.NDArray[Any]:
    """A secure-mode value: a non-empty scalar or 1-d array (``vector``: 1-d only) of integers —
    ints of any size, numpy integers of any width, integral floats — as int64 when every entry
    fits, else as Python ints (an object array); |x| <= 2**1000 (`FLOAT_LIMIT`), as in the float
    mode. Bools, strings, Fractions, NaN/inf refused. Python numbers are read one by one (numpy
    would turn a list mixing ints beyond int64 into rounded floats)."""
    arr = _as_array(name, value, object)
    _shape(name, value, arr, vector)
    if arr.dtype.kind == "i":
        return arr.astype(np.int64)
    flat: list[Any] = arr.ravel().tolist() if arr.dtype.kind in "ufO" else [None]
    if not all(_integer_entry(x) for x in flat):
        at = fault(value, _integer_entry) or f"its dtype is {arr.dtype}"
        raise refused(name, value, f"must be integers (exact mechanisms release integers): {at}")
    out = int_array([int(x) for x in flat]).reshape(arr.shape)
    if out.dtype == object and max(abs(x) for x in out.flat) > _EXACT_LIMIT:
        at = first(np.array([abs(x) > _EXACT_LIMIT for x in out.flat]).reshape(out.shape))
        raise refused(name, value, f"must have magnitude at most 2**1000: {at} is above")
    return out


def _wide_ints(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """An object array of Python ints (any width) and floats as float64, correctly rounded (beyond
    2**1000: 2**1001, for the caller's limit); anything else is returned as it is, refused."""
    items = arr.ravel().tolist()
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in items):
        return arr
    wide = [v if abs(v) <= FLOAT_LIMIT else 2 * FLOAT_LIMIT for v in items]  # no OverflowError
    return np.array([float(v) for v in wide], dtype=np.float64).reshape(arr.shape)


def float_values(name: str, value: object, *, vector: bool = False) -> npt.NDArray[np.float64]:
    """A float-mode value: a non-empty scalar or 1-d array (``vector``: 1-d only) of finite reals
    (ints, floats, numpy numbers) with |x| <= `FLOAT_LIMIT`, as float64. Bools, strings,
    Fractions, NaN/inf refused."""
    arr = _as_array(name, value)
    _shape(name, value, arr, vector)
    out = _wide_ints(arr) if arr.dtype == object else arr
    if out.dtype.kind not in "iuf":
        at = fault(value, _real_entry) or f"its dtype is {arr.dtype}"
        raise refused(name, value, f"must be real numbers (ints or floats): {at}")
    out = out.astype(np.float64)
    if not np.all(np.isfinite(out)):
        raise refused(name, value, f"must contain only finite numbers: {nonfinite(out)}")
    if np.any(big := np.abs(out) > FLOAT_LIMIT):
        raise refused(name, value, f"must have magnitude at most 2**1000: {first(big)} is above")
    return out


def release_values(
    name: str, value: object, *, exact: bool, vector: bool = False
) -> npt.NDArray[Any]:
    """The value of a release under the session's mode (`exact_integers` or `float_values`)."""
    if exact:
        return exact_integers(name, value, vector=vector)
    return float_values(name, value, vector=vector)
