"""Privacy-loss random variables (THEORY.md §1–3).

The privacy loss of an output y for neighbours x, x' is ``L(y) = log p_x(y)/p_x'(y)``,
and the privacy-loss random variable is L(A(x)) (APC Def 2.2). Each class below is the
law of L for one mechanism and one pair of neighbours at a given distance, with:

- ``sample(n, rng)``: n independent draws of L;
- ``mean``, ``variance``;
- ``cgf(lam)`` = log E[exp(lam·L)];
- ``renyi(alpha)`` = cgf(alpha − 1)/(alpha − 1), the Rényi divergence D_alpha(P_x ‖ P_x');
- ``tail(e)`` = P(L > e);
- ``delta_for_eps(eps)`` = E[(1 − exp(eps − L))_+], the hockey-stick divergence, i.e. the
  smallest delta for which this pair satisfies (eps, delta)-DP in the direction x → x';
- ``eps_for_delta(delta)``: the smallest eps >= 0 with delta_for_eps(eps) <= delta.

``delta_for_eps`` takes eps >= 0 only: the hockey-stick divergence is defined for every
real eps, but DP parameters are nonnegative and ``eps_for_delta`` searches [0, ∞).

Rounding (issue 21): for the Gaussian, Brownian, Laplace and Laplace noise-reduction losses,
``delta_for_eps``, ``eps_for_delta``, ``renyi`` and the closed-form levels (``rho``, ``eps``,
``ex_post_bound``) are rounded up: never below the exact value of the float inputs, within a few
ulps of it. Transcendental values come from mpmath at a precision that is doubled until two
evaluations agree (`_mp_up`); ``eps_for_delta`` checks its answer against the rounded-up
``delta_for_eps``. `SkellamLoss` sums a truncated support (omitted mass < 1e-15) and is not
rounded.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from attrs import converters, field, frozen, validators

from expost._validation import (
    as_float,
    finite,
    finite_array,
    generator,
    nonnegative,
    open_probability,
    positive,
    positive_int,
    validator,
)
from expost.errors import InvalidParameter
from expost.rounding import nudge_up, up_exact, up_mp

__all__ = [
    "BrownianLoss",
    "GaussianLoss",
    "LaplaceLoss",
    "LaplaceNoiseReductionLoss",
    "PrivacyLoss",
    "SkellamLoss",
    "eps_for_delta_of",
]

FloatArray = npt.NDArray[np.float64]

_SKELLAM_TAIL = 5e-16  # omitted Skellam mass on each side of the truncated support
_RTOL = 4.0 * float(np.finfo(np.float64).eps)  # brentq's smallest relative tolerance


@runtime_checkable
class PrivacyLoss(Protocol):
    """The law of a privacy-loss random variable L = L(A(x); x, x') (APC Def 2.2)."""

    @property
    def mean(self) -> float:
        """E[L], the KL divergence D(P_x ‖ P_x')."""
        ...

    @property
    def variance(self) -> float:
        """Var[L]."""
        ...

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        """n independent draws of L."""
        ...

    def cgf(self, lam: float) -> float:
        """log E[exp(lam·L)]."""
        ...

    def renyi(self, alpha: float) -> float:
        """Rényi divergence of order alpha > 1: cgf(alpha − 1)/(alpha − 1)."""
        ...

    def tail(self, e: float) -> float:
        """P(L > e)."""
        ...

    def delta_for_eps(self, eps: float) -> float:
        """E[(1 − exp(eps − L))_+] for eps >= 0."""
        ...

    def eps_for_delta(self, delta: float) -> float:
        """The smallest eps >= 0 with delta_for_eps(eps) <= delta, for delta in (0, 1)."""
        ...


def _draws(n: int, rng: np.random.Generator) -> int:
    generator(rng)
    return positive_int("n", n)


def _order(alpha: float) -> float:
    a = finite("alpha", alpha)
    if a <= 1.0:
        raise InvalidParameter("alpha", alpha, "must be > 1")
    return a


_UNDERFLOW_Z = 41.0  # Φ(−z) < 2⁻¹⁰⁷⁴ for z > 40 (Mills: Φ(−z) <= φ(z)/z); 1 of slack
_SMALLEST = math.ulp(0.0)  # the smallest positive float, 2⁻¹⁰⁷⁴
_MP_START = 128  # bits of the first mpmath evaluation
_MP_MARGIN = 2.0**-64  # relative widening above the disagreement tolerance of `_mp_up`


def _mp_up(value: Callable[[], Any], start: int = _MP_START) -> float:
    """The float >= ``value()`` (mpmath, exact value > 0): evaluated at P and 2P bits, P doubling
    from ``start`` until the two agree to 2⁻⁶⁴ relative, then widened by 2⁻⁶⁴ and rounded up.

    If the evaluation at P bits has lost k bits to cancellation its error is about 2^(k−P), so
    agreement to 2⁻⁶⁴ means k <= P − 64 and the 2P-bit value is off by about 2^(k−2P) <= 2^(−64−P),
    far inside the widening. This is precision doubling, not an interval proof; the rounding audit
    (tests/test_rounding_loss.py) checks the results against 50-digit references."""
    import mpmath as mp  # lazy: keeps `import expost` fast

    prec = start
    while True:
        with mp.workprec(prec):
            low = value()
        with mp.workprec(2 * prec):
            high = value()
            if high > 0 and abs(high - low) <= high * _MP_MARGIN:
                return up_mp(high * (1 + mp.mpf(_MP_MARGIN)))
        prec *= 2


def _renyi_from_cgf(cgf: Callable[[float], float], alpha: float) -> float:
    a = _order(alpha)
    return cgf(a - 1.0) / (a - 1.0)


def eps_for_delta_of(
    delta_for_eps: Callable[[float], float],
    delta: float,
    search: Callable[[float], float] | None = None,
) -> float:
    """Invert the nonincreasing, continuous privacy profile by bracketing and Brent's method.

    ``search`` (default ``delta_for_eps``) is a fast float version used for the search; the root
    is then moved up until ``delta_for_eps`` (rounded up) is <= delta: the answer is never
    below the exact smallest eps.
    """
    from scipy.optimize import brentq  # lazy: keeps `import expost` fast

    d = open_probability("delta", delta)
    if delta_for_eps(0.0) <= d:
        return 0.0
    fast = delta_for_eps if search is None else search
    hi = 1.0
    while fast(hi) > d:
        hi *= 2.0
    while hi > 1e-300 and fast(hi / 2.0) <= d:
        hi /= 2.0
    lo = hi / 2.0  # fast(lo) > d >= fast(hi)
    root = brentq(lambda e: fast(e) - d, lo, hi, xtol=1e-300, rtol=_RTOL, maxiter=500)
    return nudge_up(float(root), lambda e: delta_for_eps(e) <= d)


@frozen
class GaussianLoss:
    """Loss of the Gaussian mechanism at neighbour distance = sensitivity: L ~ N(rho, 2rho).

    The mechanism is rho-zCDP with rho = Δ2²/(2σ²) (THEORY §2). ``delta_for_eps`` is the
    analytic Gaussian mechanism of Balle–Wang (2018):
    Φ(−eps/μ + μ/2) − e^eps·Φ(−eps/μ − μ/2) with μ = sqrt(2rho).
    """

    rho: float = field(converter=as_float, validator=validator(positive))

    @classmethod
    def from_mechanism(
        cls, sigma: float, sensitivity: float, distance: float | None = None
    ) -> GaussianLoss:
        """N(f(x), σ²I) for neighbours at ℓ2 distance ``distance`` (default: ``sensitivity``).

        rho = distance²/(2σ²). Any distance > 0 is accepted: distances below the
        sensitivity give the loss of a particular closer pair; above it, pairs that are not
        neighbours under that sensitivity.
        """
        s = positive("sigma", sigma)
        dist = positive("sensitivity", sensitivity)
        if distance is not None:
            dist = positive("distance", distance)
        return cls(up_exact(Fraction(dist) ** 2 / (2 * Fraction(s) ** 2)))  # rounded up

    @property
    def mean(self) -> float:
        return self.rho

    @property
    def variance(self) -> float:
        return 2.0 * self.rho

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        size = _draws(n, rng)
        return rng.normal(self.rho, math.sqrt(2.0 * self.rho), size)

    def cgf(self, lam: float) -> float:
        """lam·rho + lam²·rho."""
        x = finite("lam", lam)
        return x * (1.0 + x) * self.rho

    def renyi(self, alpha: float) -> float:
        """alpha·rho (Bun–Steinke), rounded up (exactly: the smallest float >= it)."""
        return up_exact(Fraction(_order(alpha)) * Fraction(self.rho))

    def tail(self, e: float) -> float:
        """Φ((rho − e)/sqrt(2rho))."""
        from scipy import special  # lazy: keeps `import expost` fast

        x = finite("e", e)
        return float(special.ndtr((self.rho - x) / math.sqrt(2.0 * self.rho)))

    def delta_for_eps(self, eps: float) -> float:
        """Balle–Wang (2018): Φ(−eps/μ + μ/2) − e^eps·Φ(−eps/μ − μ/2), μ = sqrt(2rho), rounded up
        (mpmath, `_mp_up`; the exact value is > 0: the Gaussian mechanism is never pure DP)."""
        import mpmath as mp  # lazy: keeps `import expost` fast

        e, rho = nonnegative("eps", eps), self.rho
        if e / math.sqrt(2.0 * rho) - math.sqrt(rho / 2.0) > _UNDERFLOW_Z:
            return _SMALLEST  # delta <= Φ(−z) <= φ(z)/z < 1e-348: below every positive float

        def value() -> Any:
            mu = mp.sqrt(2 * mp.mpf(rho))
            x = mp.mpf(e) / mu
            return mp.ncdf(mu / 2 - x) - mp.exp(e) * mp.ncdf(-x - mu / 2)

        return _mp_up(value)

    def _delta_float(self, e: float) -> float:
        """`delta_for_eps` in floats (the search of `eps_for_delta`); for eps > rho via erfcx,
        free of cancellation at large eps. With x1 = eps/μ − μ/2 and x2 = eps/μ + μ/2 one has
        x2²/2 − eps = x1²/2, so delta = ½·exp(−x1²/2)·(erfcx(x1/√2) − erfcx(x2/√2)).
        """
        from scipy import special  # lazy: keeps `import expost` fast

        mu = math.sqrt(2.0 * self.rho)
        x1, x2 = e / mu - mu / 2.0, e / mu + mu / 2.0
        if x1 < 0.0:
            delta = special.ndtr(-x1) - math.exp(e) * special.ndtr(-x2)
        else:
            root2 = math.sqrt(2.0)
            gap = special.erfcx(x1 / root2) - special.erfcx(x2 / root2)
            delta = 0.5 * math.exp(-0.5 * x1 * x1) * gap
        return max(float(delta), 0.0)

    def eps_for_delta(self, delta: float) -> float:
        """The smallest eps with delta_for_eps(eps) <= delta, rounded up (`eps_for_delta_of`)."""
        return eps_for_delta_of(self.delta_for_eps, delta, self._delta_float)


def _exp_remainder(x: float) -> float:
    """e^x − 1 − x without cancellation near 0."""
    if abs(x) >= 0.5:
        return math.expm1(x) - x
    term, total = x, 0.0
    for k in range(2, 30):
        term *= x / k
        total += term
    return total


@frozen
class LaplaceLoss:
    """Loss of the Laplace mechanism f(x) + Lap(scale), neighbours at ℓ1 distance ``distance``.

    With Y ~ Lap(b), f(x) = 0, f(x') = d: L = (|Y − d| − |Y|)/b ∈ [−ε, ε], ε = d/b (THEORY §2).
    Law: an atom ½ at ε, an atom ½e^{−ε} at −ε and density ¼·exp(−(ε − l)/2) on (−ε, ε).
    """

    scale: float = field(converter=as_float, validator=validator(positive))
    distance: float = field(converter=as_float, validator=validator(positive))

    @classmethod
    def from_eps(cls, eps: float) -> LaplaceLoss:
        """The eps-DP Laplace mechanism at full sensitivity: scale 1, distance eps."""
        return cls(1.0, positive("eps", eps))

    @property
    def eps(self) -> float:
        """ε = distance/scale, the pure-DP level and the bound on |L|, rounded up."""
        return up_exact(Fraction(self.distance) / Fraction(self.scale))

    @property
    def mean(self) -> float:
        """ε − 1 + e^{−ε}."""
        return _exp_remainder(-self.eps)

    @property
    def variance(self) -> float:
        """3 − 4εe^{−ε} − 2e^{−ε} − e^{−2ε} (= 3ε² − m(4 + 2ε + m) with m the mean)."""
        e = self.eps
        if e <= 1.0:
            m = self.mean
            return 3.0 * e * e - m * (4.0 + 2.0 * e + m)
        return 3.0 - (4.0 * e + 2.0) * math.exp(-e) - math.exp(-2.0 * e)

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        size = _draws(n, rng)
        y = rng.laplace(0.0, self.scale, size)
        # (|y − d| − |y|)/b written piecewise, exact also where |y| >> d
        return np.clip((self.distance - 2.0 * y) / self.scale, -self.eps, self.eps)

    def cgf(self, lam: float) -> float:
        """log[((1 + λ)e^{λε} + λe^{−(1+λ)ε})/(1 + 2λ)]; at λ = −½ its limit −ε/2 + log(1 + ε/2).

        Written as log1p of ((1 + λ)h(λε) + λh(−(1 + λ)ε))/(1 + 2λ), h(x) = e^x − 1 − x,
        which has no cancellation for small ε away from λ = −½; near λ = −½ or at huge
        exponents it uses log-sum-exp of the three parts (atoms and continuous part).
        """
        from scipy import special  # lazy: keeps `import expost` fast

        lam = finite("lam", lam)
        e = self.eps
        x1, x2, c = lam * e, -(1.0 + lam) * e, 1.0 + 2.0 * lam
        if abs(c) >= 0.25 and max(x1, x2) < 700.0:
            return math.log1p(((1.0 + lam) * _exp_remainder(x1) + lam * _exp_remainder(x2)) / c)
        if c > 0.0:
            log_g = math.log(-math.expm1(-c * e)) - math.log(c)
        elif c < 0.0:
            log_g = -c * e + math.log(-math.expm1(c * e)) - math.log(-c)
        else:
            log_g = math.log(e)
        return float(special.logsumexp([x1, x2, x1 + log_g])) - math.log(2.0)

    def renyi(self, alpha: float) -> float:
        """log(α/(2α−1)·e^{(α−1)ε} + (α−1)/(2α−1)·e^{−αε})/(α − 1), rounded up (mpmath, with
        ε = distance/scale exact; it starts with the bits that the cancellation at small ε and
        at α near 1 needs)."""
        import mpmath as mp  # lazy: keeps `import expost` fast

        a, d, b = _order(alpha), self.distance, self.scale

        def value() -> Any:
            e, al = mp.mpf(d) / mp.mpf(b), mp.mpf(a)
            inner = al * mp.exp((al - 1) * e) + (al - 1) * mp.exp(-al * e)
            return mp.log(inner / (2 * al - 1)) / (al - 1)

        lost = 2 * max(0, -math.frexp(d / b)[1]) + max(0, -math.frexp(a - 1.0)[1])
        return _mp_up(value, _MP_START + lost)

    def tail(self, e: float) -> float:
        """1 for e < −ε; 1 − ½·exp(−(ε − e)/2) for −ε <= e < ε; 0 for e >= ε."""
        x = finite("e", e)
        if x >= self.eps:
            return 0.0
        if x < -self.eps:
            return 1.0
        return 1.0 - 0.5 * math.exp(-(self.eps - x) / 2.0)

    def delta_for_eps(self, eps: float) -> float:
        """1 − exp(−(ε − eps)/2) for eps < ε, else 0; rounded up (ε = distance/scale exact)."""
        import mpmath as mp  # lazy: keeps `import expost` fast

        x, d, b = nonnegative("eps", eps), self.distance, self.scale
        if Fraction(x) * Fraction(b) >= Fraction(d):
            return 0.0
        return _mp_up(lambda: -mp.expm1(-(mp.mpf(d) / mp.mpf(b) - x) / 2))

    def _delta_float(self, x: float) -> float:
        return max(-math.expm1(-(self.distance / self.scale - x) / 2.0), 0.0)

    def eps_for_delta(self, delta: float) -> float:
        """The smallest eps with delta_for_eps(eps) <= delta, rounded up (`eps_for_delta_of`)."""
        return eps_for_delta_of(self.delta_for_eps, delta, self._delta_float)


class _Delegating(ABC):
    """Forwards the PrivacyLoss interface to ``law``, a loss variable with the same law."""

    __slots__ = ()

    @property
    @abstractmethod
    def law(self) -> PrivacyLoss:
        """The loss variable with the same law (each subclass names it)."""

    @property
    def mean(self) -> float:
        return self.law.mean

    @property
    def variance(self) -> float:
        return self.law.variance

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        return self.law.sample(n, rng)

    def cgf(self, lam: float) -> float:
        return self.law.cgf(lam)

    def renyi(self, alpha: float) -> float:
        return self.law.renyi(alpha)

    def tail(self, e: float) -> float:
        return self.law.tail(e)

    def delta_for_eps(self, eps: float) -> float:
        return self.law.delta_for_eps(eps)

    def eps_for_delta(self, delta: float) -> float:
        return self.law.eps_for_delta(delta)


@frozen
class BrownianLoss(_Delegating):
    """Loss of the Brownian mechanism stopped at time t, neighbours at ℓ2 distance Δ.

    L = Δ²/(2t) + (Δ/t)·W(t) with W a standard Brownian motion (APC Thm 3, BNR Thm 3.4);
    at a fixed t this is the Gaussian mechanism's loss N(Δ²/(2t), Δ²/t), rho = Δ²/(2t).
    """

    time: float = field(converter=as_float, validator=validator(positive))
    distance: float = field(converter=as_float, validator=validator(positive))

    @property
    def rho(self) -> float:
        """Δ²/(2t), the zCDP cost of stopping at t, rounded up (the smallest float >= it)."""
        return up_exact(Fraction(self.distance) ** 2 / (2 * Fraction(self.time)))

    @property
    def law(self) -> GaussianLoss:
        return GaussianLoss(self.rho)

    def at(self, w: npt.ArrayLike) -> FloatArray:
        """The loss Δ²/(2t) + (Δ/t)·w for given values w of W(t) (APC Thm 3)."""
        values = finite_array("w", w)
        return self.rho + (self.distance / self.time) * values

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        size = _draws(n, rng)
        return self.at(rng.normal(0.0, math.sqrt(self.time), size))


@frozen
class LaplaceNoiseReductionLoss(_Delegating):
    """Loss of Laplace noise reduction stopped at scale t, neighbours at ℓ1 distance d.

    L = −(1/t)(|X| − |X − d|) with X ~ Lap(t) (APC Lemma C.1): the law of
    LaplaceLoss(scale=t, distance=d); |L| <= d/t, the ex-post bound (BNR Prop 4.2).
    """

    scale: float = field(converter=as_float, validator=validator(positive))
    distance: float = field(converter=as_float, validator=validator(positive))

    @property
    def ex_post_bound(self) -> float:
        """d/t (BNR Prop 4.2), rounded up (the smallest float >= it)."""
        return up_exact(Fraction(self.distance) / Fraction(self.scale))

    @property
    def law(self) -> LaplaceLoss:
        return LaplaceLoss(self.scale, self.distance)


def _skellam_upper_cut(mu1: float, mu2: float) -> int:
    """The smallest k >= mean with P(Y > k) <= _SKELLAM_TAIL for Y ~ Skellam(mu1, mu2).

    Uses the Chernoff bound P(Y >= k) <= exp(inf_λ≥0 [mu1(e^λ − 1) + mu2(e^−λ − 1) − λk]),
    whose minimiser is e^λ = (k + sqrt(k² + 4·mu1·mu2))/(2·mu1).
    """
    start = math.ceil(mu1 - mu2)
    width = math.ceil(20.0 * math.sqrt(mu1 + mu2)) + 64
    while True:
        k = np.arange(start, start + width, dtype=np.float64)
        m = k + 1.0
        lam = np.log((m + np.sqrt(m * m + 4.0 * mu1 * mu2)) / (2.0 * mu1))
        log_bound = mu1 * np.expm1(lam) + mu2 * np.expm1(-lam) - lam * m
        ok = np.flatnonzero(log_bound <= math.log(_SKELLAM_TAIL))
        if ok.size:
            return int(k[ok[0]])
        width *= 2


@frozen
class SkellamLoss:
    """Loss of the Skellam mechanism f(x) + Skellam(mu, mu2), integer neighbour shift d.

    L(y) = log pmf(y) − log pmf(y − d) for y ~ Skellam(mu, mu2) (BNR App. E); ``mu2``
    defaults to ``mu`` (symmetric noise). Everything but ``sample`` is a sum over the
    support truncated to [lo, hi] with P(Y < lo), P(Y > hi) <= 5e-16 each (Chernoff
    bounds), so the omitted mass is below 1e-15; the pmf is not renormalised. ``cgf`` at
    large |lam| is dominated by the far tails and is then only as good as that truncation.
    """

    mu: float = field(converter=as_float, validator=validator(positive))
    distance: int = field(validator=validator(positive_int))
    mu2: float | None = field(
        default=None,
        converter=converters.optional(as_float),
        validator=validators.optional(validator(positive)),
    )
    _lo: int = field(init=False, repr=False, eq=False)
    _log_p: FloatArray = field(init=False, repr=False, eq=False)
    _loss: FloatArray = field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        from scipy import stats  # lazy: keeps `import expost` fast

        mu1, mu2 = self.mu, self._mu2
        lo = -_skellam_upper_cut(mu2, mu1)
        hi = _skellam_upper_cut(mu1, mu2)
        y = np.arange(lo, hi + 1, dtype=np.float64)
        log_p = stats.skellam.logpmf(y, mu1, mu2)
        loss = self._loss_at(y)
        if not np.all(np.isfinite(loss)):
            raise InvalidParameter(
                "distance",
                self.distance,
                f"is too large for mu={mu1!r}, mu2={mu2!r}: the pmf at y − distance underflows",
            )
        object.__setattr__(self, "_lo", lo)
        object.__setattr__(self, "_log_p", log_p)
        object.__setattr__(self, "_loss", loss)

    @property
    def _mu2(self) -> float:
        return self.mu if self.mu2 is None else self.mu2

    def _loss_at(self, y: FloatArray) -> FloatArray:
        from scipy import stats  # lazy: keeps `import expost` fast

        lp = stats.skellam.logpmf
        loss: FloatArray = lp(y, self.mu, self._mu2) - lp(y - self.distance, self.mu, self._mu2)
        return loss

    @property
    def _p(self) -> FloatArray:
        return np.exp(self._log_p)

    @property
    def mean(self) -> float:
        return float(np.dot(self._p, self._loss))

    @property
    def variance(self) -> float:
        return float(np.dot(self._p, (self._loss - self.mean) ** 2))

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        size = _draws(n, rng)
        idx = rng.poisson(self.mu, size) - rng.poisson(self._mu2, size) - self._lo
        outside = (idx < 0) | (idx >= self._loss.size)
        loss = self._loss[np.where(outside, 0, idx)]
        if outside.any():  # probability < 1e-15 per draw
            loss[outside] = self._loss_at((idx[outside] + self._lo).astype(np.float64))
        return loss

    def cgf(self, lam: float) -> float:
        """logsumexp over the support of log pmf(y) + lam·L(y)."""
        from scipy import special  # lazy: keeps `import expost` fast

        x = finite("lam", lam)
        return float(special.logsumexp(self._log_p + x * self._loss))

    def renyi(self, alpha: float) -> float:
        return _renyi_from_cgf(self.cgf, alpha)

    def tail(self, e: float) -> float:
        x = finite("e", e)
        return float(self._p[self._loss > x].sum())

    def delta_for_eps(self, eps: float) -> float:
        """Σ_{L(y) > eps} pmf(y)·(1 − exp(eps − L(y)))."""
        x = nonnegative("eps", eps)
        above = self._loss > x
        return float(np.dot(self._p[above], -np.expm1(x - self._loss[above])))

    def eps_for_delta(self, delta: float) -> float:
        return eps_for_delta_of(self.delta_for_eps, delta)
