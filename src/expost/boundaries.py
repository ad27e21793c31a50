"""Time-uniform martingale boundaries and the privacy boundaries built on them.

Martingale boundaries g(v) on intrinsic time v >= 0 bound a standard Brownian motion (or a
sub-Gaussian martingale with variance process v) at all times at once:
``P(∃v: S_v >= g(v)) <= delta`` (THEORY §3, BNR App. A; THEORY §5, Howard et al. 2020/2021).
Privacy boundaries ψ(t) on Brownian time t > 0 bound the privacy loss of a stopped Brownian
mechanism (BNR Def 3.5, Thm 3.6). Every boundary is vectorised: a float in gives a float
out, an array in gives an array out.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Literal, Protocol, Self, overload

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    finite_array,
    nonnegative,
    open_probability,
    positive,
    validator,
)
from expost.errors import InvalidParameter
from expost.rounding import iv_eval, nudge_up, up_array, up_iv

__all__ = [
    "Boundary",
    "FACStitched",
    "LineCrossing",
    "LinearPrivacyBoundary",
    "MixturePrivacyBoundary",
    "NormalMixture",
    "PolynomialStitching",
    "PrivacyBoundary",
    "apc_psi",
]

FloatArray = npt.NDArray[np.float64]
Points = npt.NDArray[np.floating[Any]] | npt.NDArray[np.integer[Any]] | Sequence[float]

_RTOL = 1e-13  # root finders: relative tolerance, below the promised 1e-12
_NEWTON_STEPS = 60  # a guard: from its start Newton's method needs at most a few steps
_NEWTON_TOL = 2.0**-53  # the one-sided mixture's Newton error bound, relative to the root
_ROUNDING = 2.0**-48  # widening that covers the one-sided mixture's rounding errors
_BLOCK = 1 << 14  # values per block of the one-sided mixture (about 2x faster than one pass)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_HALF = math.sqrt(0.5)
_SQRT_HALF_PI = math.sqrt(0.5 * math.pi)
# Directed rounding (issue 21): every boundary value is rounded up. Where every product and
# quotient of an evaluation stays a normal float, each IEEE operation errs by at most u = 2⁻⁵³
# relative and libm's log and log1p (glibc; NumPy's SIMD umath) by < 4 ulp <= 8u relative, so
# a proven count of ulps moves the float value above the exact one (`up_array`). Elsewhere
# (under- or overflow, NaN) the value is recomputed in interval arithmetic (mpmath ``iv``).
_NORMAL = float(np.finfo(np.float64).tiny)
_IV_PREC = 160  # bits of the interval fallback: far more than its rounding to float needs
_LINE_ULPS = 3  # a·v + b: two roundings, < 2u relative
_MIXTURE_ULPS = 8  # two-sided mixture: < 7u relative (derivation in `_two_sided_mixture`)
_POLY_ULPS = 16  # PolynomialStitching: < 16u relative where not recomputed (`_g`)
_STITCHED_ULPS = 16  # FACStitched: < 16u relative (derivation in `FACStitched._g`)
_PSI_ULPS = 5  # Δ²/(2t) + (Δ/t)·G given an upper bound G on g: < 4u relative (`_psi`)
_LEVEL_MARGIN = 2.0**-48  # `LinearPrivacyBoundary` solves at eps·(1 − this), below ψ's rounding


def _points(name: str, value: npt.ArrayLike, *, strict: bool) -> FloatArray:
    if isinstance(value, int | float | np.number):  # fast path for one scalar
        return np.asarray((positive if strict else nonnegative)(name, value))
    if isinstance(value, str | bytes):
        raise InvalidParameter(name, value, "must be a real number or an array of them")
    arr = finite_array(name, value)
    if np.any(arr <= 0.0) if strict else np.any(arr < 0.0):
        raise InvalidParameter(name, value, "must be > 0" if strict else "must be >= 0")
    return arr


def _shaped(value: object, out: FloatArray) -> float | FloatArray:
    if isinstance(value, int | float | np.number):
        return float(out)
    return out


def _iv(compute: Any) -> Any:
    """``compute(iv)`` evaluated in mpmath's interval context at _IV_PREC bits."""
    return iv_eval(compute, _IV_PREC)


def _iv_up(compute: Any) -> float:
    """The smallest float >= the upper end of the interval ``compute(iv)``."""
    return up_iv(compute, _IV_PREC)


def _upper(
    values: FloatArray,
    ulps: int,
    lost: npt.NDArray[np.bool_],
    points: FloatArray,
    exact: Any,
) -> FloatArray:
    """``values`` moved up by ``ulps`` (a proven bound on their rounding error), except where
    ``lost`` (an intermediate left the normal range): there ``_iv_up(exact(point))``."""
    out: FloatArray = np.array(up_array(values, ulps), dtype=np.float64)
    for i in np.flatnonzero(lost):
        out.flat[i] = _iv_up(exact(float(points.flat[i])))
    return out


class Boundary(Protocol):
    """A time-uniform martingale boundary g(v) on intrinsic time v >= 0."""

    @overload
    def __call__(self, v: float) -> float: ...
    @overload
    def __call__(self, v: Points) -> FloatArray: ...


class PrivacyBoundary(Protocol):
    """A privacy boundary ψ(t) on Brownian time t > 0 (BNR Def 3.5), decreasing in t."""

    @overload
    def __call__(self, t: float) -> float: ...
    @overload
    def __call__(self, t: Points) -> FloatArray: ...
    def time_for(self, eps: float) -> float: ...
    def times_for(self, levels: npt.ArrayLike) -> FloatArray: ...


class _MartingaleBoundary(ABC):
    """Shared vectorised evaluation on v >= 0; subclasses define ``_g``, an upper bound on g(v).

    Rounding: every float g(v) returned is >= the exact g(v) (issue 21), within a few ulps.
    """

    __slots__ = ()

    @abstractmethod
    def _g(self, v: FloatArray) -> FloatArray: ...

    @overload
    def __call__(self, v: float) -> float: ...
    @overload
    def __call__(self, v: Points) -> FloatArray: ...
    def __call__(self, v: float | Points) -> float | FloatArray:
        return _shaped(v, self._g(_points("v", v, strict=False)))


_POSITIVE = field(converter=as_float, validator=validator(positive))
_DELTA = field(converter=as_float, validator=validator(open_probability))


@frozen
class LineCrossing(_MartingaleBoundary):
    """g(v) = a·v + b: ``P(∃v: S_v >= a·v + b) <= exp(−2ab)`` (BNR App. A; equality for BM).

    Rounding: g(v) up (two roundings: 3 ulps), ``delta`` up, ``for_delta``'s b up.
    """

    a: float = _POSITIVE
    b: float = _POSITIVE

    @classmethod
    def for_delta(cls, a: float, delta: float) -> Self:
        """The line of slope ``a`` crossed with probability <= ``delta``: b = log(1/delta)/(2a),
        rounded up (a larger b only lowers the crossing probability)."""
        a, d = positive("a", a), open_probability("delta", delta)
        return cls(a, _iv_up(lambda iv: -iv.log(iv.mpf(d)) / (2 * iv.mpf(a))))

    @property
    def delta(self) -> float:
        """The crossing probability exp(−2ab), rounded up."""
        return _crossing(self.a, self.b)

    def _g(self, v: FloatArray) -> FloatArray:
        product = self.a * v
        lost = ~(product >= _NORMAL) & (v != 0.0)
        return _upper(product + self.b, _LINE_ULPS, lost, v, self._g_iv)

    def _g_iv(self, v: float) -> Any:
        return lambda iv: iv.mpf(self.a) * iv.mpf(v) + iv.mpf(self.b)


def _crossing(a: float, b: float) -> float:
    """exp(−2ab) rounded up (the exact product 2ab is not a float: interval arithmetic)."""
    return _iv_up(lambda iv: iv.exp(-2 * iv.mpf(a) * iv.mpf(b)))


def _two_sided_mixture(v: FloatArray, r: float, delta: float) -> FloatArray:
    """sqrt((v + r)·(−2·log(delta) + log1p(v/r))), rounded up by _MIXTURE_ULPS.

    Error (first order, u = 2⁻⁵³): −2·log(delta) <= 8u (libm); log1p(v/r) <= 8u + u (its
    condition number x/((1 + x)·log1p(x)) is <= 1; an underflowed v/r adds < 2⁻¹⁰⁷⁵ against a
    sum >= 2⁻⁵²); their sum <= 10u; the product with v + r <= 12u; sqrt halves it, plus its
    own u: < 7u, i.e. < 7 ulps of the result. An underflowed product goes to intervals.
    """
    product = (v + r) * (-2.0 * math.log(delta) + np.log1p(v / r))
    lost = ~(product >= _NORMAL)
    return _upper(np.sqrt(product), _MIXTURE_ULPS, lost, v, _two_sided_iv(r, delta))


def _two_sided_iv(r: float, delta: float) -> Any:
    def at(v: float) -> Any:
        def compute(iv: Any) -> Any:
            total = iv.mpf(v) + iv.mpf(r)
            return iv.sqrt(total * (iv.log(total / iv.mpf(r)) - 2 * iv.log(iv.mpf(delta))))

        return compute

    return at


def _one_sided_mixture(v: FloatArray, r: float, delta: float) -> FloatArray:
    """`_one_sided_block` on blocks of _BLOCK values, whose temporaries stay in cache."""
    flat = v.reshape(-1)
    out = np.empty(flat.shape)
    for start in range(0, flat.size, _BLOCK):
        out[start : start + _BLOCK] = _one_sided_block(flat[start : start + _BLOCK], r, delta)
    return out.reshape(v.shape)


def _one_sided_block(v: FloatArray, r: float, delta: float) -> FloatArray:
    """g = u·sqrt(v + r) with u >= 0 the root of h(u) = u²/2 + log(2Φ(u)) = c; never below it.

    Here c = log(1 + v/r)/2 − log(delta). With L = sqrt(2·max(c − log 2, 0)) (the two-sided
    mixture at 2·delta, in units of sqrt(v + r)) and u = L + d, F(d) = h(u) − c is
    d(L + d/2) + log Φ(u) if c >= log 2, else u²/2 + log1p(erf(u/√2)) − c: no cancellation.
    F increases, is convex with F'' = h'' ∈ (0, 1), and F(0) < 0. So the first step
    d1 = x/s0 from d = 0, with s0 = F'(0) <= F'(d*) and x >= −F(0) (x = q/(1 − q), q = 1 − Φ(L),
    as −log(1 − q) <= q/(1 − q) <= −log(1 − q) + q²/(2(1 − q)²)), lands at or right of the root
    d*, with d1 − d* <= (x + F(0) + d1²/2)/s0; from there Newton's method decreases
    monotonically to d*, a step F(d)/F'(d) leaving an error <= step²·F'(d)/(2·s0²). It stops
    once the bound is below 2⁻⁵³·u and widens by _ROUNDING (16 ulp; the rounding error of
    the whole evaluation measured against 50-digit mpmath is below 2 ulp).
    """
    from scipy.special import erf, erfcx, log_ndtr  # lazy: keeps `import expost` fast

    root_w = np.sqrt(v + r)
    c = 0.5 * np.log1p(v / r) - math.log(delta)
    excess = c - math.log(2.0)
    lower = np.sqrt(2.0 * np.maximum(excess, 0.0))  # L
    # φ(L) = exp(−L²/2)/sqrt(2π) with exp(−L²/2) = min(1, 2·exp(−c)) = min(1, 2·delta·sqrt(r/w)).
    density = np.minimum(2.0 * delta * math.sqrt(r) / root_w, 1.0) * _INV_SQRT_2PI
    q = _SQRT_HALF_PI * density * erfcx(_SQRT_HALF * lower)  # 1 − Φ(L)
    odds = q / (1.0 - q)
    slope0 = lower + density * (1.0 + odds)  # F'(0) = L + φ(L)/Φ(L)
    d = np.where(excess >= 0.0, odds, c) / slope0
    todo = np.flatnonzero(odds * odds + d * d > 2.0 * slope0 * _NEWTON_TOL * (lower + d))
    for _ in range(_NEWTON_STEPS):
        if todo.size == 0:
            break
        low, dd, s0 = lower[todo], d[todo], slope0[todo]
        u = low + dd
        log_cdf = log_ndtr(u)
        slope = u + np.exp(-0.5 * u * u - _LOG_SQRT_2PI - log_cdf)
        tail = np.where(excess[todo] >= 0.0, log_cdf, np.log1p(erf(_SQRT_HALF * u)) - c[todo])
        step = (dd * (low + 0.5 * dd) + tail) / slope
        d[todo] = np.maximum(dd - step, 0.0)
        todo = todo[step * step * slope > 2.0 * s0 * s0 * _NEWTON_TOL * (low + d[todo])]
    g: FloatArray = (lower + d) * root_w * (1.0 + _ROUNDING)
    return g


def _sides(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value not in (1, 2):
        raise InvalidParameter(name, value, "must be the integer 1 or 2")


@frozen
class NormalMixture(_MartingaleBoundary):
    """Normal-mixture boundary with mixing precision r (Howard et al. 2021; BNR App. A).

    ``sides=2``: g(v) = sqrt(2(v + r)·log((1/delta)·sqrt((v + r)/r))) and
    ``P(∃v: |S_v| >= g(v)) <= delta`` (Gaussian mixing distribution; the bound BNR prints
    with "=" is this two-sided one, THEORY §3).
    ``sides=1``: the one-sided mixture with a half-normal mixing distribution, g solves
    ``sqrt(r/(v + r))·exp(g²/(2(v + r)))·2Φ(g/sqrt(v + r)) = 1/delta`` and
    ``P(∃v: S_v >= g(v)) <= delta``; it lies between the two-sided boundaries at 2·delta
    and at delta, and is found by a vectorised Newton iteration from the lower end with a
    proven error bound; the float returned is never below the exact root and within
    1e-14 relative of it.
    """

    r: float = _POSITIVE
    delta: float = _DELTA
    sides: Literal[1, 2] = field(default=2, validator=validator(_sides))

    def _g(self, v: FloatArray) -> FloatArray:
        if self.sides == 2:
            return _two_sided_mixture(v, self.r, self.delta)
        return _one_sided_mixture(v, self.r, self.delta)


def _greater_than_one(name: str, value: object) -> None:
    if positive(name, value) <= 1.0:
        raise InvalidParameter(name, value, "must be > 1")


@frozen
class PolynomialStitching(_MartingaleBoundary):
    """Polynomial stitching for sub-Gaussian martingales, c = 0 (Howard et al. 2021, Thm 1).

    g(v) = k1·sqrt(m·ℓ(m)) with m = max(v, v0), k1 = (η^(1/4) + η^(−1/4))/√2 and
    ℓ(m) = s·log log(η·m/v0) + log(ζ(s)/(delta·(log η)^s)); ``P(∃v: S_v >= g(v)) <= delta``.
    """

    v0: float = _POSITIVE
    delta: float = _DELTA
    eta: float = field(default=2.0, converter=as_float, validator=validator(_greater_than_one))
    s: float = field(default=1.4, converter=as_float, validator=validator(_greater_than_one))

    def _g(self, v: FloatArray) -> FloatArray:
        from scipy.special import zeta  # lazy: keeps `import expost` fast

        m = np.maximum(v, self.v0)
        k1 = (self.eta**0.25 + self.eta**-0.25) / math.sqrt(2.0)
        constant = math.log(float(zeta(self.s)) / (self.delta * math.log(self.eta) ** self.s))
        log_x = np.log(self.eta * m / self.v0)  # > 0: eta > 1, m >= v0
        log_log = np.log(log_x)
        ell = self.s * log_log + constant
        # ell's absolute error in u: log x is off by <= 2 + log x, so log log x by
        # <= (2 + log x)/log x + 1 + |log log x|; the constant (zeta, power, logs) by <= 8 + |c|.
        # Where that is <= 16·ell the root is within 8u and k1, the products and root add < 8u:
        # moved up _POLY_ULPS; elsewhere (cancellation, subnormal) recomputed in intervals.
        err = self.s * ((2.0 + log_x) / log_x + 1.0 + np.abs(log_log)) + 8.0 + abs(constant)
        product = m * ell
        lost = (ell > 0.0) & (~(err <= 16.0 * ell) | ~(product >= _NORMAL))
        with np.errstate(invalid="ignore"):  # ell <= 0: no boundary there (nan), as before
            g = k1 * np.sqrt(product)
        if np.any(np.isnan(g)):
            return np.asarray(g, dtype=np.float64)
        return _upper(g, _POLY_ULPS, lost, m, self._g_iv)

    def _g_iv(self, v: float) -> Any:
        import mpmath

        def compute(iv: Any) -> Any:
            m, eta, s = iv.mpf(max(v, self.v0)), iv.mpf(self.eta), iv.mpf(self.s)
            with mpmath.workprec(iv.prec + 32):
                z = mpmath.zeta(self.s)  # within its working precision: widened by 2^-(prec)
            zeta_s = iv.mpf(
                [z * (1 - mpmath.mpf(2) ** -iv.prec), z * (1 + mpmath.mpf(2) ** -iv.prec)]
            )
            quarter = iv.sqrt(iv.sqrt(eta))
            k1 = (quarter + 1 / quarter) / iv.sqrt(2)
            c = iv.log(zeta_s / (iv.mpf(self.delta) * iv.exp(s * iv.log(iv.log(eta)))))
            return k1 * iv.sqrt(m * (s * iv.log(iv.log(eta * m / iv.mpf(self.v0))) + c))

        return compute


@frozen
class FACStitched(_MartingaleBoundary):
    """The closed-form stitched boundary of FAC Thm 3 (from Howard et al. 2021, eta = 2, s = 1.4).

    g(V) = 1.7·sqrt(V·(log log(2V/v0) + 0.72·log(5.2/delta))) for V >= v0, ∞ while V < v0.
    It is never below `PolynomialStitching` (v0, delta, eta=2, s=1.4), so it is valid.
    """

    v0: float = _POSITIVE
    delta: float = _DELTA

    def _g(self, v: FloatArray) -> FloatArray:
        m = np.maximum(v, self.v0)
        inner = np.log(np.log(2.0 * m / self.v0)) + 0.72 * math.log(5.2 / self.delta)
        product = m * inner
        # inner >= log log 2 + 0.72·log 5.2 > 0.8 (delta < 1), so its absolute error of a few u
        # is under 8u relative; the root, the product and the constants 1.7, 0.72, 5.2 (each
        # within half an ulp of the paper's decimals) add under 8u: moved up _STITCHED_ULPS
        lost = ~(product >= _NORMAL)
        g = _upper(1.7 * np.sqrt(product), _STITCHED_ULPS, lost, m, self._g_iv)
        return np.where(v < self.v0, np.inf, g)

    def _g_iv(self, v: float) -> Any:
        def compute(iv: Any) -> Any:
            m = iv.mpf(max(v, self.v0))
            c = iv.mpf("0.72") * iv.log(iv.mpf("5.2") / iv.mpf(self.delta))
            return iv.mpf("1.7") * iv.sqrt(m * (iv.log(iv.log(2 * m / iv.mpf(self.v0))) + c))

        return compute


@overload
def apc_psi(v: float, gamma: float, delta: float) -> float: ...
@overload
def apc_psi(v: Points, gamma: float, delta: float) -> FloatArray: ...
def apc_psi(v: float | Points, gamma: float, delta: float) -> float | FloatArray:
    """ψ(v; γ, delta) = sqrt((v + γ)·log((v + γ)/(delta²·γ))) (APC Lemma 6.1, eq. 1, Thm 4).

    It equals the two-sided `NormalMixture` with r = γ, and that is how it is computed; so it is
    rounded up (never below the exact ψ, within 8 ulps of it).
    """
    return NormalMixture(positive("gamma", gamma), delta, sides=2)(v)


class _PrivacyBoundaryBase(ABC):
    """ψ(t) = Δ²/(2t) + (Δ/t)·g(t) for a martingale boundary g of W (BNR Thm 3.4, 3.6).

    Rounding: ψ(t) is rounded up, never below the exact ψ(t) (issue 21); ``time_for`` returns
    a time at which ψ, as computed here, is <= the level (so the exact ψ is too).
    """

    __slots__ = ()
    sensitivity: float

    @abstractmethod
    def _martingale(self) -> _MartingaleBoundary: ...

    @abstractmethod
    def _g_iv(self, t: float) -> Any: ...

    def _psi(self, t: FloatArray) -> FloatArray:
        """Rounded up by _PSI_ULPS from an upper bound G on g: Δ·Δ/(2t) errs by <= 2u relative
        (or, underflowed, by < u·ψ), Δ/t by u, its product with G by u more, the sum by u: < 4u.
        """
        d = self.sensitivity
        ratio = d / t
        second = ratio * self._martingale()._g(t)
        lost = ~(ratio >= _NORMAL) | ~(second >= _NORMAL) | (d * d < _NORMAL)
        return _upper(d * d / (2.0 * t) + second, _PSI_ULPS, lost, t, self._psi_iv)

    def _psi_iv(self, t: float) -> Any:
        def compute(iv: Any) -> Any:
            d, time = iv.mpf(self.sensitivity), iv.mpf(t)
            return d * d / (2 * time) + d / time * self._g_iv(t)(iv)

        return compute

    def _nudged(self, t: float, eps: float) -> float:
        """``t`` moved up until ψ(t), as this library computes it, is <= eps."""
        return nudge_up(t, lambda x: bool(self._psi(np.array(x)) <= eps))

    @overload
    def __call__(self, t: float) -> float: ...
    @overload
    def __call__(self, t: Points) -> FloatArray: ...
    def __call__(self, t: float | Points) -> float | FloatArray:
        return _shaped(t, self._psi(_points("t", t, strict=True)))

    @abstractmethod
    def time_for(self, eps: float) -> float: ...

    def times_for(self, levels: npt.ArrayLike) -> FloatArray:
        """`time_for` at each level of an array (same shape)."""
        arr = _points("levels", levels, strict=True)
        return np.array([self.time_for(float(e)) for e in arr.ravel()]).reshape(arr.shape)


@frozen
class MixturePrivacyBoundary(_PrivacyBoundaryBase):
    """ψ(t) = Δ²/(2t) + (Δ/t)·sqrt(2(t + r)·log((1/delta)·sqrt((t + r)/r))) (BNR Thm 3.6).

    A delta-privacy boundary for the Brownian mechanism with sensitivity Δ: the loss exceeds
    ψ at the stopping time with probability at most delta, whatever the stopping function.
    """

    r: float = _POSITIVE
    delta: float = _DELTA
    sensitivity: float = field(default=1.0, converter=as_float, validator=validator(positive))

    def _martingale(self) -> _MartingaleBoundary:
        return NormalMixture(self.r, self.delta, sides=2)

    def _g_iv(self, t: float) -> Any:
        return _two_sided_iv(self.r, self.delta)(t)

    def time_for(self, eps: float) -> float:
        """The smallest t with ψ(t) <= eps (BNR Cor 3.7, corrected; THEORY §3).

        ψ decreases from ∞ to 0, so this is the root of ψ(t) = eps, found by Brent's method.
        Rounding: the result is never below the exact root and within 1e-12 relative of it, and
        ψ(result) <= eps holds for ψ as computed here (checked; moved up until it does). (BNR
        Cor 3.7 prints inf{t: ψ(t) >= eps}, which would be 0.)
        """
        from scipy.optimize import brentq  # lazy: keeps `import expost` fast

        e = positive("eps", eps)
        lo = self.sensitivity**2 / (2.0 * e)  # ψ(t) > Δ²/(2t) >= eps for all t <= lo
        hi = 2.0 * lo
        while self._psi(np.array(hi)) > e:
            lo, hi = hi, 2.0 * hi
            if not math.isfinite(hi):
                raise InvalidParameter("eps", eps, "is too small: ψ(t) <= eps has no finite t")
        root = brentq(lambda t: float(self._psi(np.array(t))) - e, lo, hi, xtol=1e-300, rtol=_RTOL)
        return self._nudged(min(float(root) * (1.0 + _RTOL), hi), e)

    @classmethod
    def tuned_for(cls, eps: float, delta: float, sensitivity: float = 1.0) -> Self:
        """The r minimising ``time_for(eps)`` (BNR appendix: r* = argmin_r (ψ_r)^(−1)(eps)).

        The tuned boundary lets a run stop at the least noise (smallest t, i.e. largest
        privacy time 1/t) while its ex-post loss bound is still at most eps. Numerical:
        bounded Brent search on log r around the linear boundary's tuned time.
        """
        from scipy.optimize import minimize_scalar  # lazy: keeps `import expost` fast

        e = positive("eps", eps)
        d = open_probability("delta", delta)
        sens = positive("sensitivity", sensitivity)
        ell = math.log(1.0 / d)
        scale = LinearPrivacyBoundary.tuned_for(e, d, sens).time_for(e)
        centre = math.log(scale / (2.0 * ell + math.log1p(2.0 * ell)))

        def log_time(log_r: float) -> float:
            return math.log(cls(math.exp(log_r), d, sens).time_for(e))

        best = minimize_scalar(
            log_time, bounds=(centre - 8.0, centre + 8.0), method="bounded", options={"xatol": 1e-9}
        )
        return cls(math.exp(float(best.x)), d, sens)


@frozen
class LinearPrivacyBoundary(_PrivacyBoundaryBase):
    """ψ(t) = (Δ/t)(Δ/2 + b) + Δ·a, a delta-privacy boundary with delta = exp(−2ab) (BNR Thm 3.6).

    Rounding: ψ(t) up (within 8 ulps), ``delta`` up, ``from_delta``'s b up.
    """

    a: float = _POSITIVE
    b: float = _POSITIVE
    sensitivity: float = field(default=1.0, converter=as_float, validator=validator(positive))

    @classmethod
    def from_delta(cls, a: float, delta: float, sensitivity: float = 1.0) -> Self:
        """The boundary with slope ``a`` and b = log(1/delta)/(2a)."""
        line = LineCrossing.for_delta(a, delta)
        return cls(line.a, line.b, sensitivity)

    @property
    def delta(self) -> float:
        """The failure probability exp(−2ab), rounded up."""
        return _crossing(self.a, self.b)

    def _martingale(self) -> _MartingaleBoundary:
        return LineCrossing(self.a, self.b)

    def _g_iv(self, t: float) -> Any:
        return LineCrossing(self.a, self.b)._g_iv(t)

    def _times(self, name: str, levels: object, e: FloatArray) -> FloatArray:
        """Solved at eps·(1 − _LEVEL_MARGIN), which leaves room for ψ's rounding (< 2⁻⁴⁹
        relative); then each time is checked against ψ as computed here and moved up if needed."""
        d = self.sensitivity
        target = e * (1.0 - _LEVEL_MARGIN)
        if np.any(target <= d * self.a):
            raise InvalidParameter(
                name,
                levels,
                f"must exceed the boundary's asymptote Δ·a = {d * self.a!r} "
                f"by more than {_LEVEL_MARGIN!r} relative (rounding)",
            )
        times: FloatArray = np.asarray(d * (d / 2.0 + self.b) / (target - d * self.a))
        for i in np.flatnonzero(~(self._psi(times) <= e)):
            times.flat[i] = self._nudged(float(times.flat[i]), float(e.flat[i]))
        return times

    def time_for(self, eps: float) -> float:
        """The smallest t with ψ(t) <= eps: t = Δ(Δ/2 + b)/(eps − Δa) (BNR Cor 3.7, corrected).

        (BNR Cor 3.7 prints inf{t: ψ(t) >= eps}, which would be 0; ψ decreases in t.)
        Rounding: never below the exact root, above it by about 2⁻⁴⁸·eps/(eps − Δa) relative;
        ψ(result) <= eps holds for ψ as computed here.
        """
        return float(self._times("eps", eps, np.array(positive("eps", eps))))

    def times_for(self, levels: npt.ArrayLike) -> FloatArray:
        """`time_for` at each level of an array (same shape), in closed form."""
        return self._times("levels", levels, _points("levels", levels, strict=True))

    @classmethod
    def tuned_for(cls, eps: float, delta: float, sensitivity: float = 1.0) -> Self:
        """The slope a minimising ``time_for(eps)``, b = log(1/delta)/(2a) (BNR appendix).

        With x = Δa and ℓ = log(1/delta), time_for(eps) = Δ²(x + ℓ)/(2x(eps − x)), minimised
        on (0, eps) at the root of x² + 2ℓx − ℓ·eps = 0: x* = sqrt(ℓ² + ℓ·eps) − ℓ. The tuned
        boundary stops at the least noise while its ex-post bound is at most eps.
        """
        e = positive("eps", eps)
        d = open_probability("delta", delta)
        sens = positive("sensitivity", sensitivity)
        ell = math.log(1.0 / d)
        x = ell * e / (math.sqrt(ell * ell + ell * e) + ell)  # = sqrt(ℓ² + ℓe) − ℓ, no cancellation
        return cls.from_delta(x / sens, d, sens)
