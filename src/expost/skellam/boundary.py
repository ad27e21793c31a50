"""A time-uniform privacy boundary for Skellam noise reduction (THEORY §10, beyond the papers).

Skellam noise reduction releases ``f(x) + X(t)`` at decreasing times with X(t) ~ Skellam(λt, λt)
(BNR App. E). Its loss after the releases so far is ℓ_t(z) = log p_t(z) − log p_t(z − D) at the
last time t and noise z (sufficiency), D = f(x') − f(x), 1 <= |D| <= Δ. For a shift k < 0,
R^k = p_t(z − k)/p_t(z) is a likelihood ratio, a nonnegative martingale under the truth whatever
the adaptive times, and so is M = Σ_k w_k R^k for weights summing to at most 1: by Ville,
P(∃t: M >= 1/delta) <= delta. The Skellam pmf is log-concave, so ℓ_t and M are non-increasing
in z; with z*(t) = max{z : M_t(z) >= 1/delta}, ψ(t) = max_D ℓ_t(z*(t) + 1) has
{loss > ψ} ⊆ {M >= 1/delta}: a delta-privacy boundary (BNR Def 3.5) for every stopping rule and
grid. D < 0 mirrors (p_t is symmetric). The full proof is in docs/mechanisms/skellam.md.

Safe side: log p_t = log ive(|z|, 2λt) (`expost.skellam.pmf`: scipy, Amos) has absolute error below 2.3e-13 in the
measured range (2λt in [2e-3, 2e6], against 30-digit mpmath); where ive underflows, Debye's
expansion is within 2e-16·|log p| + 1e-12. The code assumes 1e-10 + 1e-14·|log p|, lowers M
by that (so the z* used is never above the exact one) and raises ψ by it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Literal, Self, overload

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    finite_array,
    open_probability,
    positive,
    positive_int,
    validator,
)
from expost.errors import InvalidParameter
from expost.skellam.pmf import MAX_MEAN, MIN_MEAN, SkellamLogPmf

__all__ = ["SkellamPrivacyBoundary"]

FloatArray = npt.NDArray[np.float64]

_LOG_PMF_ERROR = 1e-10  # assumed bound on |log ive − exact| (measured <= 2.3e-13, module doc)
_LOG_PMF_RELATIVE = 1e-14  # and relative to |log p| (Debye tail: measured 2e-16 relative)
_TAIL_SD = 9.0  # half-normal weights beyond 9 scales are dropped (mass < e^-40; dropping is safe)
_MAX_SHIFTS = 1 << 18  # the most shifts a mixture may have
_WEIGHT_SHRINK = 1.0 - 2.0**-40  # makes the float weights' sum <= 1
_TIME_RTOL = 1e-7  # time_for: relative width of the final bracket


def _mixing(name: str, value: object) -> None:
    if value not in ("normal", "single"):
        raise InvalidParameter(name, value, "must be 'normal' or 'single'")


def _mean_limit(name: str, mean: FloatArray, value: object) -> None:
    if np.any(mean > MAX_MEAN) or np.any(mean < MIN_MEAN):
        raise InvalidParameter(
            name,
            value,
            f"rate·t must lie in [{MIN_MEAN:g}, {MAX_MEAN:g}] (where ψ's error is bounded)",
        )


@frozen
class SkellamPrivacyBoundary:
    """ψ(t) for Skellam noise reduction with rate λ and integer sensitivity Δ (THEORY §10).

    ``mixing="normal"``: weights w_j ∝ exp(−j²/(2·scale²)) on the shifts −j, j = 1, 2, …
    (a discretised half-normal mixing distribution; the analogue of BNR's mixture boundary).
    ``mixing="single"``: all weight on the one shift −round(scale) (the analogue of BNR's
    linear boundary). Either way P(∃n: L_n > ψ(T_n)) <= delta for every stopping rule on the
    released values and every grid (module docstring), and the float ψ is never below the
    exact ψ of these weights. Times are Skellam times t (X(t) ~ Skellam(λt, λt)).
    """

    scale: float = field(converter=as_float, validator=validator(positive))
    delta: float = field(converter=as_float, validator=validator(open_probability))
    sensitivity: int = field(default=1, validator=validator(positive_int))
    rate: float = field(default=1.0, converter=as_float, validator=validator(positive))
    mixing: Literal["normal", "single"] = field(default="normal", validator=validator(_mixing))

    def __attrs_post_init__(self) -> None:
        if self.mixing == "single" and round(self.scale) < 1:
            raise InvalidParameter("scale", self.scale, "a single shift must round to >= 1")
        if self.mixing == "normal" and self.scale * _TAIL_SD > _MAX_SHIFTS:
            raise InvalidParameter(
                "scale", self.scale, f"must be <= {_MAX_SHIFTS / _TAIL_SD:g} (cost of the mixture)"
            )

    # -- the mixture ---------------------------------------------------------------------

    def weights(self) -> FloatArray:
        """w_j for the shifts −1, −2, …, −J (index j − 1), summing to at most 1."""
        if self.mixing == "single":
            w = np.zeros(round(self.scale))
            w[-1] = 1.0
            return w
        j = np.arange(1, math.ceil(self.scale * _TAIL_SD) + 1, dtype=np.float64)
        raw: FloatArray = np.exp(-0.5 * (j / self.scale) ** 2)
        out: FloatArray = raw / raw.sum() * _WEIGHT_SHRINK
        return out

    # -- evaluation ----------------------------------------------------------------------

    @overload
    def __call__(self, t: float) -> float: ...
    @overload
    def __call__(self, t: npt.ArrayLike) -> FloatArray: ...
    def __call__(self, t: float | npt.ArrayLike) -> float | FloatArray:
        """ψ(t) = max_{1<=D<=Δ} ℓ_t(z*(t) + 1), rounded up (vectorised over t)."""
        times = finite_array("t", t)
        if np.any(times <= 0.0):
            raise InvalidParameter("t", t, "must be > 0")
        mean = self.rate * times
        _mean_limit("t", mean, t)
        unique, inverse = np.unique(mean, return_inverse=True)
        psi = np.array([_psi_memo(self, float(m)) for m in unique])
        out = psi[inverse].reshape(times.shape)
        if isinstance(t, int | float | np.number):
            return float(out)
        return out

    def boundary(self, times: npt.ArrayLike) -> FloatArray:
        """ψ at the mechanism's own times (an array of the same shape)."""
        return np.asarray(self(np.asarray(times, dtype=np.float64)), dtype=np.float64)

    def crossing_point(self, t: float) -> int:
        """z*(t) as used (never above the exact one): the last noise value z with M_t(z) >= 1/delta."""
        m = self.rate * positive("t", t)
        _mean_limit("t", np.array(m), t)
        return self._z_star(SkellamLogPmf(m), self.weights())

    def _z_star(self, logp: SkellamLogPmf, w: FloatArray, hint: int | None = None) -> int:
        """The last z with M_t(z) >= 1/delta (as lowered for safety), by bracketing then
        bisection. M is non-increasing in z (log-concavity), so the result does not depend on
        where the search starts: from 0 and −1 by doubling, or from ``hint`` (z* at a nearby
        time, as `time_for` passes) by steps doubling away from it (a few evaluations instead
        of about 2·log2|z*|)."""
        target = math.log(1.0 / self.delta)
        # Lowering M by the pmf error and the float error of the sum keeps z* on the safe side.
        slack = (w.size + 4) * 2.0**-52
        j = np.arange(1, w.size + 1)

        def crosses(z: int) -> bool:
            lp = logp.at(z + j)
            centre = float(logp.at(np.array([z]))[0])
            if not math.isfinite(centre):
                return True  # p_t(z) underflowed: far in the tail, M(z) is huge (checked below)
            with np.errstate(over="ignore"):  # inf: M(z) is huge, it crosses
                total = float(np.dot(w, np.exp(lp - centre)))
            error = 2.0 * _LOG_PMF_ERROR + _LOG_PMF_RELATIVE * (
                abs(centre) + float(np.max(np.abs(lp[np.isfinite(lp)]), initial=0.0))
            )
            return total > 0.0 and math.log(total) - slack - error >= target

        lo, hi = self._bracket(crosses, logp.mean, -1 if hint is None else min(hint, -1))
        if not math.isfinite(float(logp.at(np.array([lo]))[0])):
            lo = logp.finite_left(lo, hi)
            if not crosses(lo):
                raise InvalidParameter(
                    "t", logp.mean / self.rate, "is too small: the pmf underflows before ψ"
                )
        while hi - lo > 1:  # crosses(lo), not crosses(hi)
            mid = (lo + hi) // 2
            if crosses(mid):
                lo = mid
            else:
                hi = mid
        return lo

    def _bracket(self, crosses: Callable[[int], bool], mean: float, start: int) -> tuple[int, int]:
        """(lo, hi) with crosses(lo) and not crosses(hi), lo < hi <= 0 (M(0) <= 1: p_t(0) is
        the mode), by steps doubling from ``start`` <= −1, upward or downward."""
        step = 1
        if crosses(start):
            lo, hi = start, min(start + step, 0)
            while hi < 0 and crosses(hi):
                step *= 2
                lo, hi = hi, min(hi + step, 0)
            return lo, hi
        hi, lo = start, start - step
        while not crosses(lo):
            step *= 2
            hi, lo = lo, lo - step
            if lo < -(1 << 40):
                raise InvalidParameter(
                    "delta",
                    self.delta,
                    f"is too small for scale {self.scale!r} at rate·t = {mean!r}: no crossing "
                    "point within |z| <= 2**40",
                )
        return lo, hi

    def _psi_at(self, mean: float, w: FloatArray, hint: int | None = None) -> tuple[float, int]:
        """(ψ at λt = ``mean``, the z* it used)."""
        logp = SkellamLogPmf(mean)
        zs = self._z_star(logp, w, hint)
        z = zs + 1
        # max over 1 <= D <= Δ of log p(z) − log p(z − D): log p is concave (the pmf is
        # log-concave), so log p(z − D) is concave in D and its minimum over 1..Δ is at an end.
        d = np.unique([1, self.sensitivity])
        top = float(logp.at(np.array([z]))[0])
        losses = top - logp.at(z - d)
        worst = float(np.max(losses))
        if not math.isfinite(worst):
            raise InvalidParameter("t", mean / self.rate, "is too small: the pmf underflows")
        # Each log pmf is within _LOG_PMF_ERROR; the subtraction adds at most one rounding.
        low = float(np.min(logp.at(z - d)))
        margin = 2.0 * _LOG_PMF_ERROR + (_LOG_PMF_RELATIVE + 4.0 * 2.0**-52) * (abs(top) + abs(low))
        return max(math.nextafter(worst + margin, math.inf), 0.0), zs

    # -- inverse and tuning ----------------------------------------------------------------

    def time_for(self, level: float) -> float:
        """A time t with ψ(t) <= level, at most a factor 1 + 1e-7 above the bracketed crossing.

        Bisection on log t between a time with ψ > level and one with ψ <= level (ψ falls as
        t grows, up to the small steps of the integer z*). The result is checked: ψ(t) <= level.
        """
        e = positive("level", level)
        w = self.weights()
        last: tuple[int, float] | None = None  # (z*, mean) of the last evaluation

        def psi(t: float) -> float:
            """ψ(t), its z* search started from the last z* scaled by sqrt(mean / its mean)
            (z* grows about as the noise's standard deviation; only the start changes)."""
            nonlocal last
            mean = self.rate * t
            _mean_limit("t", np.array(mean), t)
            hint = None if last is None else round(last[0] * math.sqrt(mean / last[1]))
            value, z = self._psi_at(mean, w, hint)
            last = (z, mean)
            return value

        lo, hi = 1e-3 / self.rate, 1.0 / self.rate
        while psi(hi) > e:
            lo, hi = hi, 4.0 * hi
            if self.rate * hi > MAX_MEAN:
                raise InvalidParameter("level", level, "is too small for rate·t <= 1e6")
        if psi(lo) <= e:
            return lo
        while hi > lo * (1.0 + _TIME_RTOL):
            mid = math.sqrt(lo * hi)
            if psi(mid) <= e:
                hi = mid
            else:
                lo = mid
        return hi

    @classmethod
    def tuned_for(
        cls,
        level: float,
        delta: float,
        sensitivity: int = 1,
        rate: float = 1.0,
        mixing: Literal["normal", "single"] = "normal",
    ) -> Self:
        """The scale minimising ``time_for(level)`` (as BNR's appendix tunes r).

        The search starts at the shift of the Gaussian analogue (a single shift k at noise
        variance σ² has ψ ≈ (Δ·log(1/delta))/k + Δ(k + Δ)/(2σ²)); single: the best integer
        near it; normal: a bounded Brent search on log scale.
        """
        from scipy.optimize import minimize_scalar  # lazy: keeps `import expost` fast

        e = positive("level", level)
        d = open_probability("delta", delta)
        sens = positive_int("sensitivity", sensitivity)
        lam = positive("rate", rate)
        _mixing("mixing", mixing)
        ell = math.log(1.0 / d)
        # maximise 1/σ² = 2(e − Δℓ/k)/(Δ(k + Δ)) over k > Δℓ/e: k = Δ(ℓ + sqrt(ℓ² + ℓe))/e.
        k0 = sens * (ell + math.sqrt(ell * ell + ell * e)) / e

        def time(scale: float) -> float:
            return cls(scale, d, sens, lam, mixing).time_for(e)

        if mixing == "single":
            base = max(1, round(k0))
            candidates = sorted({max(1, base + i) for i in range(-2, 3)})
            best = min(candidates, key=time)
            return cls(float(best), d, sens, lam, "single")
        found = minimize_scalar(
            lambda s: math.log(time(math.exp(s))),
            bounds=(math.log(k0) - 2.0, math.log(k0) + 1.0),
            method="bounded",
            options={"xatol": 1e-2},
        )
        return cls(math.exp(float(found.x)), d, sens, lam, "normal")


@functools.lru_cache(maxsize=1 << 14)
def _psi_memo(boundary: SkellamPrivacyBoundary, mean: float) -> float:
    """ψ at λt = ``mean``: a pure function of the (frozen) boundary and the mean, memoised
    because sessions evaluate it again on the same grid every round (about 2 ms a point)."""
    return boundary._psi_at(mean, boundary.weights())[0]
