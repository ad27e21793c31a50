"""Privacy boundaries ψ(t) on Brownian time t > 0: the ex-post loss bound of a stopped Brownian
mechanism (BNR Def 3.5, Thm 3.4, 3.6), ψ(t) = Δ²/(2t) + (Δ/t)·g(t) for a martingale boundary g.

Mixture (`MixturePrivacyBoundary`) and linear (`LinearPrivacyBoundary`), each with ``time_for``
(BNR Cor 3.7, corrected: THEORY §3) and ``tuned_for`` (BNR appendix); rounded up (issue 21).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, Protocol, Self, overload

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import as_float, open_probability, positive, validator
from expost.boundaries._evaluation import (
    DELTA,
    NORMAL,
    POSITIVE,
    FloatArray,
    Points,
    points,
    shaped,
    upper,
)
from expost.boundaries.martingale import (
    LineCrossing,
    MartingaleBoundary,
    NormalMixture,
    crossing_probability,
    two_sided_interval,
)
from expost.errors import InvalidParameter
from expost.rounding import nudge_up

__all__ = ["LinearPrivacyBoundary", "MixturePrivacyBoundary", "PrivacyBoundary"]

_RTOL = 1e-13  # root finders: relative tolerance, below the promised 1e-12
_PSI_ULPS = 5  # Δ²/(2t) + (Δ/t)·G given an upper bound G on g: < 4u relative (`_psi`)
_LEVEL_MARGIN = 2.0**-48  # `LinearPrivacyBoundary` solves at eps·(1 − this), below ψ's rounding


class PrivacyBoundary(Protocol):
    """A privacy boundary ψ(t) on Brownian time t > 0 (BNR Def 3.5), decreasing in t."""

    @overload
    def __call__(self, t: float) -> float: ...
    @overload
    def __call__(self, t: Points) -> FloatArray: ...
    def time_for(self, eps: float) -> float: ...
    def times_for(self, levels: npt.ArrayLike) -> FloatArray: ...


class _PrivacyBoundaryBase(ABC):
    """ψ(t) = Δ²/(2t) + (Δ/t)·g(t) for a martingale boundary g of W (BNR Thm 3.4, 3.6).

    Rounding: ψ(t) is rounded up, never below the exact ψ(t) (issue 21); ``time_for`` returns
    a time at which ψ, as computed here, is <= the level (so the exact ψ is too).
    """

    __slots__ = ()
    sensitivity: float

    @abstractmethod
    def _martingale(self) -> MartingaleBoundary: ...

    @abstractmethod
    def _g_iv(self, t: float) -> Any: ...

    def _psi(self, t: FloatArray) -> FloatArray:
        """Rounded up by _PSI_ULPS from an upper bound G on g: Δ·Δ/(2t) errs by <= 2u relative
        (or, underflowed, by < u·ψ), Δ/t by u, its product with G by u more, the sum by u: < 4u.
        """
        d = self.sensitivity
        ratio = d / t
        second = ratio * self._martingale().bound(t)
        lost = ~(ratio >= NORMAL) | ~(second >= NORMAL) | (d * d < NORMAL)
        return upper(d * d / (2.0 * t) + second, _PSI_ULPS, lost, t, self._psi_iv)

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
        return shaped(t, self._psi(points("t", t, strict=True)))

    @abstractmethod
    def time_for(self, eps: float) -> float: ...

    def times_for(self, levels: npt.ArrayLike) -> FloatArray:
        """`time_for` at each level of an array (same shape)."""
        arr = points("levels", levels, strict=True)
        return np.array([self.time_for(float(e)) for e in arr.ravel()]).reshape(arr.shape)


@frozen
class MixturePrivacyBoundary(_PrivacyBoundaryBase):
    """ψ(t) = Δ²/(2t) + (Δ/t)·sqrt(2(t + r)·log((1/delta)·sqrt((t + r)/r))) (BNR Thm 3.6).

    A delta-privacy boundary for the Brownian mechanism with sensitivity Δ: the loss exceeds
    ψ at the stopping time with probability at most delta, whatever the stopping function.
    """

    r: float = POSITIVE
    delta: float = DELTA
    sensitivity: float = field(default=1.0, converter=as_float, validator=validator(positive))

    def _martingale(self) -> MartingaleBoundary:
        return NormalMixture(self.r, self.delta, sides=2)

    def _g_iv(self, t: float) -> Any:
        return two_sided_interval(self.r, self.delta)(t)

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

    a: float = POSITIVE
    b: float = POSITIVE
    sensitivity: float = field(default=1.0, converter=as_float, validator=validator(positive))

    @classmethod
    def from_delta(cls, a: float, delta: float, sensitivity: float = 1.0) -> Self:
        """The boundary with slope ``a`` and b = log(1/delta)/(2a)."""
        line = LineCrossing.for_delta(a, delta)
        return cls(line.a, line.b, sensitivity)

    @property
    def delta(self) -> float:
        """The failure probability exp(−2ab), rounded up."""
        return crossing_probability(self.a, self.b)

    def _martingale(self) -> MartingaleBoundary:
        return LineCrossing(self.a, self.b)

    def _g_iv(self, t: float) -> Any:
        return LineCrossing(self.a, self.b).interval(t)

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
        return self._times("levels", levels, points("levels", levels, strict=True))

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
