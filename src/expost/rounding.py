"""Directed rounding: every number the library reports lies on its safe side (issue 21).

A guarantee is an upper bound *for the float that is reported*, not only for the real number
the formula denotes: an eps, delta, rho, mu, ψ or price is a float >= its exact value (rounded
**up**); a budget, or the largest parameter that is still admissible (a time at which ψ is
within a level, the rho a budget allows), is a float <= its exact value (rounded **down**).
Rounding to nearest would put half of all answers an ulp on the unsafe side.

One tool per kind of quantity:

- **Rational** (sums, products and quotients of floats, e.g. eps²/2, Δ²/(2t)): the exact value
  is a `Fraction`; `up_exact` / `down_exact` give the nearest float on the safe side by exact
  integer comparison (`up_ratio` / `down_ratio` start from a float a few ulps away: faster;
  `sum_up` / `sum_down` for sums of floats).
- **Transcendental with a proven error bound** (a few correctly rounded or faithful libm
  operations: exp, log, sqrt, log1p): compute in floats, then `up` / `down` (`up_array` /
  `down_array` for numpy) by the number of ulps that bounds the evaluation's error, stated where
  it is used.
- **Found numerically** (a root of a monotone function): `nudge_up` / `nudge_down` find the
  nearest float on the safe side at which a rigorous check of the defining inequality holds
  (`smallest_where` / `largest_where`: bounded bisection on the floats' bit patterns); or
  `up_mp` / `down_mp` from a high-precision (mpmath) value or the end of an mpmath interval.
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from expost.errors import InvalidParameter

__all__ = [
    "MP_START",
    "SMALLEST",
    "delta_up",
    "down",
    "down_array",
    "down_exact",
    "down_mp",
    "down_ratio",
    "iv_below",
    "iv_eval",
    "largest_where",
    "largest_where_array",
    "last_integer",
    "neg_log_up",
    "nudge_down",
    "nudge_up",
    "smallest_where",
    "sqrt_up_exact",
    "sum_down",
    "sum_up",
    "up",
    "up_array",
    "up_exact",
    "up_iv",
    "up_mp",
    "up_mp_converged",
    "up_ratio",
]

FloatArray = npt.NDArray[np.float64]


def _steps(ulps: int) -> int:
    if isinstance(ulps, bool) or not isinstance(ulps, int) or ulps < 0:
        raise InvalidParameter("ulps", ulps, "must be an integer >= 0")
    return ulps


def _number(x: float) -> float:
    if math.isnan(x):
        raise InvalidParameter("x", x, "must not be NaN (no side of it is safe)")
    return x


def up(x: float, ulps: int = 1) -> float:
    """``x`` moved up by ``ulps`` floats: an upper bound of a value within ``ulps`` ulps below.

    +inf stays +inf; NaN is refused.
    """
    x = _number(float(x))
    for _ in range(_steps(ulps)):
        x = math.nextafter(x, math.inf)
    return x


def down(x: float, ulps: int = 1) -> float:
    """``x`` moved down by ``ulps`` floats: a lower bound of a value within ``ulps`` ulps above."""
    x = _number(float(x))
    for _ in range(_steps(ulps)):
        x = math.nextafter(x, -math.inf)
    return x


def neg_log_up(x: float) -> float:
    """An upper bound on −log(x) = log(1/x), 0 < x < 1: libm's log (error < 1 ulp) moved up
    2 ulps; no 1/x, which overflows for subnormal x."""
    return up(-math.log(x), 2)


def _finite_or_inf(name: str, x: npt.ArrayLike) -> FloatArray:
    a = np.asarray(x, dtype=np.float64)
    if np.any(np.isnan(a)):
        raise InvalidParameter(name, "NaN", "must not contain NaN (no side of it is safe)")
    return a


def up_array(x: npt.ArrayLike, ulps: int = 1) -> FloatArray:
    """`up` elementwise on a float64 array (a new array)."""
    a = _finite_or_inf("x", x)
    for _ in range(_steps(ulps)):
        a = np.nextafter(a, np.inf)
    return np.array(a, dtype=np.float64)


def down_array(x: npt.ArrayLike, ulps: int = 1) -> FloatArray:
    """`down` elementwise on a float64 array (a new array)."""
    a = _finite_or_inf("x", x)
    for _ in range(_steps(ulps)):
        a = np.nextafter(a, -np.inf)
    return np.array(a, dtype=np.float64)


def _below(x: float, num: int, den: int) -> bool:
    """x < num/den exactly (den > 0; −inf is below and +inf above every rational; NaN, a hint
    lost to inf/inf or 0/0, is below, so that `_walk_up` never arrives from it)."""
    if math.isnan(x):
        return True
    if math.isinf(x):
        return x < 0
    p, q = x.as_integer_ratio()
    return p * den < num * q


_HINT_STEPS = 64
"""Floats `up_ratio` walks from its hint before it starts again from the exact nearest float."""


def _walk_up(x: float, num: int, den: int, steps: int) -> tuple[float, bool]:
    """Walk from ``x`` towards the smallest float >= num/den: (where it stopped, arrived), at
    most ``steps`` steps."""
    while _below(x, num, den):
        if (steps := steps - 1) < 0:
            return x, False
        x = math.nextafter(x, math.inf)
    while not _below(below := math.nextafter(x, -math.inf), num, den):
        if (steps := steps - 1) < 0:
            return x, False
        x = below
    return x, True


def up_ratio(approx: float, num: int, den: int) -> float:
    """The smallest float >= num/den (integers, den > 0), from ``approx`` a few ulps away.

    Exact integer comparisons; +inf where num/den exceeds the largest float. Bounded: a hint
    more than `_HINT_STEPS` floats away or NaN (a product that underflowed to 0 or a
    subnormal, an intermediate that overflowed) is replaced by num/den correctly rounded, one step away.
    """
    found, arrived = _walk_up(approx, num, den, _HINT_STEPS)
    if not arrived:
        found, _ = _walk_up(_nearest(Fraction(num, den)), num, den, _HINT_STEPS)
    return found


def down_ratio(approx: float, num: int, den: int) -> float:
    """The largest float <= num/den (integers, den > 0), from ``approx`` a few ulps away."""
    return -up_ratio(-approx, -num, den)


def _ratio(q: Fraction | int) -> Fraction:
    if isinstance(q, bool) or not isinstance(q, Fraction | int):
        raise InvalidParameter("q", q, "must be a Fraction or an int")
    return Fraction(q)


def _quotient(num: int, den: int) -> float:
    """num/den (den > 0) rounded to nearest (int true division is correctly rounded); ±inf past
    the floats."""
    try:
        return num / den
    except OverflowError:
        return math.inf if num > 0 else -math.inf


def _nearest(q: Fraction) -> float:
    """q rounded to nearest; ±inf past the floats."""
    return _quotient(q.numerator, q.denominator)


def up_exact(q: Fraction | int) -> float:
    """The smallest float >= the rational ``q`` (+inf above the largest float)."""
    r = _ratio(q)
    return up_ratio(_nearest(r), r.numerator, r.denominator)


def down_exact(q: Fraction | int) -> float:
    """The largest float <= the rational ``q`` (−inf below the most negative float)."""
    r = _ratio(q)
    return down_ratio(_nearest(r), r.numerator, r.denominator)


def _exact_sum(values: Iterable[float]) -> Fraction | float:
    xs = [_number(float(v)) for v in values]
    if any(math.isinf(x) for x in xs):
        return math.fsum(xs)  # ±inf, or a ValueError for inf − inf
    return sum(map(Fraction, xs), Fraction(0))


def sum_up(values: Iterable[float]) -> float:
    """The smallest float >= the exact sum of ``values`` (a sum of floats is rational)."""
    total = _exact_sum(values)
    return total if isinstance(total, float) else up_exact(total)


def sum_down(values: Iterable[float]) -> float:
    """The largest float <= the exact sum of ``values``."""
    total = _exact_sum(values)
    return total if isinstance(total, float) else down_exact(total)


def _mp_fraction(x: Any, end: int) -> Fraction | float:
    """The exact value of an mpmath mpf, or of an ``mpmath.iv`` interval's end (0 lower, 1 upper),
    at whatever precision it was computed (no rounding to the working precision)."""
    from mpmath import libmp  # lazy: comes with sympy, needed only here

    raw = x._mpi_[end] if hasattr(x, "_mpi_") else getattr(x, "_mpf_", None)
    if raw is None:
        raise InvalidParameter("x", x, "must be an mpmath mpf or interval")
    if raw == libmp.fnan:
        raise InvalidParameter("x", x, "must not be NaN (no side of it is safe)")
    if raw in (libmp.finf, libmp.fninf):
        return math.inf if raw == libmp.finf else -math.inf
    p, q = libmp.to_rational(raw)
    return Fraction(int(p), int(q))


def up_mp(x: Any) -> float:
    """The smallest float >= an mpmath number (for an ``mpmath.iv`` interval: its upper end)."""
    q = _mp_fraction(x, 1)
    return q if isinstance(q, float) else up_exact(q)


def down_mp(x: Any) -> float:
    """The largest float <= an mpmath number (for an ``mpmath.iv`` interval: its lower end)."""
    q = _mp_fraction(x, 0)
    return q if isinstance(q, float) else down_exact(q)


_IV_PREC = 128  # bits of `iv_eval`'s interval arithmetic by default


def iv_eval(compute: Callable[[Any], Any], prec: int = _IV_PREC) -> Any:
    """``compute(iv)`` in mpmath's interval context at ``prec`` bits: a rigorous enclosure."""
    from mpmath import iv  # lazy: comes with sympy, needed only here

    saved = iv.prec
    iv.prec = prec
    try:
        return compute(iv)
    finally:
        iv.prec = saved


def up_iv(compute: Callable[[Any], Any], prec: int = _IV_PREC) -> float:
    """The smallest float >= the upper end of the interval ``compute(iv)`` (`iv_eval`)."""
    return up_mp(iv_eval(compute, prec))


def iv_below(x: Any, y: Any) -> bool:
    """The upper end of the interval ``x`` is <= the lower end of ``y``, decided exactly: then
    every value in ``x`` is <= every value in ``y``."""
    return _mp_fraction(x, 1) <= _mp_fraction(y, 0)


_SIGN = 1 << 63


def _key(x: float) -> int:
    """An integer that orders floats as their values do (adjacent floats: adjacent integers;
    −0.0 and 0.0 both 0; ±inf at the ends)."""
    bits = int.from_bytes(struct.pack("<d", x), "little")
    return bits if bits < _SIGN else -(bits - _SIGN)


def _float(key: int) -> float:
    """The float of `_key` ``key``."""
    bits = key if key >= 0 else _SIGN - key
    (x,) = struct.unpack("<d", struct.pack("<Q", bits))
    return float(x)


def last_integer(holds: Callable[[int], bool], start: int, low: int, high: int) -> int | None:
    """The largest integer k in [low, high] at which ``holds`` (true up to some k, false above)
    is true, None if it is true nowhere: gallop from ``start`` by 1, 2, 4, … then bisect. At most
    about 2·log2(high − low) evaluations (2·64 for floats' 64-bit keys), whatever the distance."""
    start = min(max(start, low), high)
    if holds(start):
        good, step = start, 1
        while good < high:
            probe = min(good + step, high)
            if not holds(probe):
                bad = probe
                break
            good, step = probe, 2 * step
        else:
            return high
    else:
        bad, step = start, 1
        while bad > low:
            probe = max(bad - step, low)
            if holds(probe):
                good = probe
                break
            bad, step = probe, 2 * step
        else:
            return None
    while bad - good > 1:
        mid = (good + bad) // 2
        if holds(mid):
            good = mid
        else:
            bad = mid
    return good


def largest_where(
    ok: Callable[[float], bool], start: float, low: float = -math.inf, high: float = math.inf
) -> float | None:
    """The largest float in [low, high] at which ``ok`` holds, for ``ok`` true up to a point and
    false above it; None if it holds nowhere there. Searched from ``start`` by galloping then
    bisecting on the floats' bit patterns: at most about 130 evaluations of ``ok``, however far
    ``start`` is. Only values at which ``ok`` was seen to hold are returned, so the answer is
    safe even where ``ok`` is not exactly monotone."""
    k = last_integer(lambda j: ok(_float(j)), _key(_number(start)), _key(low), _key(high))
    return None if k is None else _float(k)


def smallest_where(
    ok: Callable[[float], bool], start: float, low: float = -math.inf, high: float = math.inf
) -> float | None:
    """The smallest float in [low, high] at which ``ok`` holds, for ``ok`` false up to a point
    and true above it; None if it holds nowhere there (`largest_where` mirrored)."""
    k = last_integer(lambda j: ok(_float(-j)), -_key(_number(start)), -_key(high), -_key(low))
    return None if k is None else _float(-k)


def sqrt_up_exact(q: Fraction | int) -> float:
    """The smallest float whose square is >= the rational ``q`` > 0 (+inf past the floats):
    `smallest_where` from sqrt(`up_exact`(q)), at most about 130 exact checks."""
    r = _ratio(q)
    if r <= 0:
        raise InvalidParameter("q", q, "must be > 0")
    start = math.sqrt(min(up_exact(r), sys.float_info.max))
    s = smallest_where(lambda x: Fraction(x) ** 2 >= r, start, 0.0, sys.float_info.max)
    return math.inf if s is None else s


def largest_where_array(
    ok: Callable[[FloatArray], npt.NDArray[np.bool_]], start: npt.ArrayLike, none: float = 0.0
) -> FloatArray:
    """`largest_where` elementwise over the positive finite floats, vectorised: ``ok`` maps an
    array of candidates to an array of checks (true up to a point, false above it, per element);
    ``none`` where it holds nowhere. The same gallop then bisection on bit patterns (positive
    floats' bit patterns are ordered as their values): at most about 130 calls of ``ok``."""
    low, high = np.int64(1), np.int64(_key(sys.float_info.max))
    keys = np.clip(np.asarray(start, dtype=np.float64).view(np.int64), low, high)

    def check(k: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        return np.asarray(ok(k.view(np.float64)), dtype=np.bool_)

    holds = check(keys)
    good = np.where(holds, keys, low - 1)  # low − 1: none found yet
    bad = np.where(holds, high + 1, keys)  # high + 1: none refused yet
    step = 1
    while True:
        rising = (bad > high) & (good < high)
        falling = (good < low) & (bad > low)
        if not (rising | falling).any():
            break
        probe = np.where(
            rising,
            np.minimum(good, high - step) + step,
            np.where(falling, np.maximum(bad - step, low), good),
        )
        passed = check(probe)
        good = np.where((rising | falling) & passed, probe, good)
        bad = np.where((rising | falling) & ~passed, probe, bad)
        step = min(2 * step, int(high))  # no int64 overflow
    while ((bad - good > 1) & (good >= low)).any():
        open_ = (bad - good > 1) & (good >= low)
        mid = np.where(open_, good + (bad - good) // 2, good)
        passed = check(mid)
        good = np.where(open_ & passed, mid, good)
        bad = np.where(open_ & ~passed, mid, bad)
    return np.where(good >= low, good.view(np.float64), none)


def _somewhere(x: float | None) -> float:
    if x is None:
        raise InvalidParameter("ok", "the check", "holds at no float: nothing is on the safe side")
    return x


def nudge_up(x: float, ok: Callable[[float], bool]) -> float:
    """The smallest float at which the rigorous check ``ok`` holds (an upper bound), searched
    from ``x`` (`smallest_where`).

    For a value found numerically (a root may end on either side): ``ok`` must be monotone and
    hold exactly at every value on the safe side of the true answer, e.g. "the delta at this eps
    is within the target".
    """
    return _somewhere(smallest_where(ok, x))


def nudge_down(x: float, ok: Callable[[float], bool]) -> float:
    """The largest float at which the rigorous check ``ok`` holds (a lower bound), searched from
    ``x`` (`largest_where`)."""
    return _somewhere(largest_where(ok, x))


SMALLEST = math.ulp(0.0)  # the smallest positive float, 2⁻¹⁰⁷⁴
MP_START = 128  # bits of the first evaluation of `up_mp_converged`
_MP_MARGIN = 2.0**-64  # relative widening above the disagreement tolerance of `up_mp_converged`


def up_mp_converged(value: Callable[[], Any], start: int = MP_START) -> float:
    """The float >= ``value()`` (mpmath, exact value > 0): evaluated at P and 2P bits, P doubling
    from ``start`` until the two agree to 2⁻⁶⁴ relative, then widened by 2⁻⁶⁴ and rounded up.

    If the evaluation at P bits has lost k bits to cancellation its error is about 2^(k−P), so
    agreement to 2⁻⁶⁴ means k <= P − 64 and the 2P-bit value is off by about 2^(k−2P) <= 2^(−64−P),
    far inside the widening. This is precision doubling, not an interval proof; the rounding audit
    (tests/rounding/test_rounding_loss.py) checks the results against 50-digit references."""
    import mpmath as mp  # lazy: comes with sympy, needed only here

    prec = start
    while True:
        with mp.workprec(prec):
            low = value()
        with mp.workprec(2 * prec):
            high = value()
            if high > 0 and abs(high - low) <= high * _MP_MARGIN:
                return up_mp(high * (1 + mp.mpf(_MP_MARGIN)))
        prec *= 2


def delta_up(value: Callable[[], Any]) -> float:
    """A hockey-stick divergence rounded up (`up_mp_converged`) and capped at 1, which it never
    exceeds (it is at most the total variation distance)."""
    return min(up_mp_converged(value), 1.0)
