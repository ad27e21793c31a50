"""Time-uniform martingale boundaries g(v) on intrinsic time v >= 0.

They bound a standard Brownian motion (or a sub-Gaussian martingale with variance process v) at
all times at once: ``P(∃v: S_v >= g(v)) <= delta`` (THEORY §3, BNR App. A; THEORY §5, Howard
et al. 2020/2021). Every boundary is vectorised (a float in, a float out; an array in, an array
out) and rounded up (issue 21).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, Literal, Protocol, Self, overload

import numpy as np
from attrs import field, frozen

from expost._validation import as_float, open_probability, positive, validator
from expost.boundaries._evaluation import (
    DELTA,
    NORMAL,
    POSITIVE,
    FloatArray,
    Points,
    iv_up,
    points,
    shaped,
    upper,
)
from expost.errors import InvalidParameter

__all__ = [
    "Boundary",
    "FACStitched",
    "LineCrossing",
    "MartingaleBoundary",
    "NormalMixture",
    "PolynomialStitching",
    "apc_psi",
    "crossing_probability",
    "two_sided_interval",
]

_NEWTON_STEPS = 60  # a guard: from its start Newton's method needs at most a few steps
_NEWTON_TOL = 2.0**-53  # the one-sided mixture's Newton error bound, relative to the root
_ROUNDING = 2.0**-48  # widening that covers the one-sided mixture's rounding errors
_BLOCK = 1 << 14  # values per block of the one-sided mixture (about 2x faster than one pass)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_HALF = math.sqrt(0.5)
_SQRT_HALF_PI = math.sqrt(0.5 * math.pi)
_LINE_ULPS = 3  # a·v + b: two roundings, < 2u relative
_MIXTURE_ULPS = 8  # two-sided mixture: < 7u relative (derivation in `_two_sided_mixture`)
_POLY_ULPS = 16  # PolynomialStitching: < 16u relative where not recomputed (`_g`)
_STITCHED_ULPS = 16  # FACStitched: < 16u relative (derivation in `FACStitched._g`)


class Boundary(Protocol):
    """A time-uniform martingale boundary g(v) on intrinsic time v >= 0."""

    @overload
    def __call__(self, v: float) -> float: ...
    @overload
    def __call__(self, v: Points) -> FloatArray: ...


class MartingaleBoundary(ABC):
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
        return shaped(v, self._g(points("v", v, strict=False)))

    def bound(self, v: FloatArray) -> FloatArray:
        """g on an array of v >= 0 already checked, rounded up (the privacy boundaries' g)."""
        return self._g(v)


@frozen
class LineCrossing(MartingaleBoundary):
    """g(v) = a·v + b: ``P(∃v: S_v >= a·v + b) <= exp(−2ab)`` (BNR App. A; equality for BM).

    Rounding: g(v) up (two roundings: 3 ulps), ``delta`` up, ``for_delta``'s b up.
    """

    a: float = POSITIVE
    b: float = POSITIVE

    @classmethod
    def for_delta(cls, a: float, delta: float) -> Self:
        """The line of slope ``a`` crossed with probability <= ``delta``: b = log(1/delta)/(2a),
        rounded up (a larger b only lowers the crossing probability)."""
        a, d = positive("a", a), open_probability("delta", delta)
        return cls(a, iv_up(lambda iv: -iv.log(iv.mpf(d)) / (2 * iv.mpf(a))))

    @property
    def delta(self) -> float:
        """The crossing probability exp(−2ab), rounded up."""
        return crossing_probability(self.a, self.b)

    def _g(self, v: FloatArray) -> FloatArray:
        product = self.a * v
        lost = ~(product >= NORMAL) & (v != 0.0)
        return upper(product + self.b, _LINE_ULPS, lost, v, self.interval)

    def interval(self, v: float) -> Any:
        """g(v) as a computation in mpmath's interval context (the rounding fallback)."""
        return lambda iv: iv.mpf(self.a) * iv.mpf(v) + iv.mpf(self.b)


def crossing_probability(a: float, b: float) -> float:
    """exp(−2ab) rounded up (the exact product 2ab is not a float: interval arithmetic)."""
    return iv_up(lambda iv: iv.exp(-2 * iv.mpf(a) * iv.mpf(b)))


def _two_sided_mixture(v: FloatArray, r: float, delta: float) -> FloatArray:
    """sqrt((v + r)·(−2·log(delta) + log1p(v/r))), rounded up by _MIXTURE_ULPS.

    Error (first order, u = 2⁻⁵³): −2·log(delta) <= 8u (libm); log1p(v/r) <= 8u + u (its
    condition number x/((1 + x)·log1p(x)) is <= 1; an underflowed v/r adds < 2⁻¹⁰⁷⁵ against a
    sum >= 2⁻⁵²); their sum <= 10u; the product with v + r <= 12u; sqrt halves it, plus its
    own u: < 7u, i.e. < 7 ulps of the result. An underflowed product goes to intervals.
    """
    product = (v + r) * (-2.0 * math.log(delta) + np.log1p(v / r))
    lost = ~(product >= NORMAL)
    return upper(np.sqrt(product), _MIXTURE_ULPS, lost, v, two_sided_interval(r, delta))


def two_sided_interval(r: float, delta: float) -> Any:
    """The two-sided mixture g(v) at v, as a function of an mpmath interval context."""

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
class NormalMixture(MartingaleBoundary):
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

    r: float = POSITIVE
    delta: float = DELTA
    sides: Literal[1, 2] = field(default=2, validator=validator(_sides))

    def _g(self, v: FloatArray) -> FloatArray:
        if self.sides == 2:
            return _two_sided_mixture(v, self.r, self.delta)
        return _one_sided_mixture(v, self.r, self.delta)


def _greater_than_one(name: str, value: object) -> None:
    if positive(name, value) <= 1.0:
        raise InvalidParameter(name, value, "must be > 1")


@frozen
class PolynomialStitching(MartingaleBoundary):
    """Polynomial stitching for sub-Gaussian martingales, c = 0 (Howard et al. 2021, Thm 1).

    g(v) = k1·sqrt(m·ℓ(m)) with m = max(v, v0), k1 = (η^(1/4) + η^(−1/4))/√2 and
    ℓ(m) = s·log log(η·m/v0) + log(ζ(s)/(delta·(log η)^s)); ``P(∃v: S_v >= g(v)) <= delta``.
    """

    v0: float = POSITIVE
    delta: float = DELTA
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
        lost = (ell > 0.0) & (~(err <= 16.0 * ell) | ~(product >= NORMAL))
        with np.errstate(invalid="ignore"):  # ell <= 0: no boundary there (nan), as before
            g = k1 * np.sqrt(product)
        if np.any(np.isnan(g)):
            return np.asarray(g, dtype=np.float64)
        return upper(g, _POLY_ULPS, lost, m, self._g_iv)

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
class FACStitched(MartingaleBoundary):
    """The closed-form stitched boundary of FAC Thm 3 (from Howard et al. 2021, eta = 2, s = 1.4).

    g(V) = 1.7·sqrt(V·(log log(2V/v0) + 0.72·log(5.2/delta))) for V >= v0, ∞ while V < v0.
    It is never below `PolynomialStitching` (v0, delta, eta=2, s=1.4), so it is valid.
    """

    v0: float = POSITIVE
    delta: float = DELTA

    def _g(self, v: FloatArray) -> FloatArray:
        m = np.maximum(v, self.v0)
        inner = np.log(np.log(2.0 * m / self.v0)) + 0.72 * math.log(5.2 / self.delta)
        product = m * inner
        # inner >= log log 2 + 0.72·log 5.2 > 0.8 (delta < 1), so its absolute error of a few u
        # is under 8u relative; the root, the product and the constants 1.7, 0.72, 5.2 (each
        # within half an ulp of the paper's decimals) add under 8u: moved up _STITCHED_ULPS
        lost = ~(product >= NORMAL)
        g = upper(1.7 * np.sqrt(product), _STITCHED_ULPS, lost, m, self._g_iv)
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
