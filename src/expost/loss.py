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
evaluations agree (`expost.rounding.up_mp_converged`); ``eps_for_delta`` checks its answer
against the rounded-up ``delta_for_eps``. The Skellam loss is in `expost.skellam.loss`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    finite,
    finite_array,
    nonnegative,
    open_probability,
    positive,
    renyi_order,
    sample_count,
    validator,
)
from expost.rounding import MP_START, SMALLEST, delta_up, nudge_up, up_exact, up_mp_converged

__all__ = [
    "BrownianLoss",
    "GaussianLoss",
    "LaplaceLoss",
    "LaplaceNoiseReductionLoss",
    "PrivacyLoss",
    "eps_for_delta_of",
    "rho_of_sigma",
    "sigma_of_rho",
]

FloatArray = npt.NDArray[np.float64]

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


_UNDERFLOW_Z = 41.0  # Φ(−z) < 2⁻¹⁰⁷⁴ for z > 40 (Mills: Φ(−z) <= φ(z)/z); 1 of slack


def eps_for_delta_of(
    delta_for_eps: Callable[[float], float],
    delta: float,
    search: Callable[[float], float] | None = None,
    refine: Callable[[float], float] | None = None,
) -> float:
    """Invert the nonincreasing, continuous privacy profile by bracketing and Brent's method.

    ``search`` (default ``delta_for_eps``) is a fast float version used for the search, and
    ``refine`` (optional) improves its root (a Newton step on a more accurate profile); the root
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
    root = float(brentq(lambda e: fast(e) - d, lo, hi, xtol=1e-300, rtol=_RTOL, maxiter=500))
    if refine is not None:
        root = refine(root)
    return nudge_up(root, lambda e: delta_for_eps(e) <= d)


def rho_of_sigma(sigma: float, sensitivity: float = 1.0) -> float:
    """rho = Δ²/(2σ²), rounded up exactly: Gaussian noise of standard deviation σ on a query of
    ℓ2 sensitivity Δ is rho-zCDP (Bun & Steinke 2016, Prop. 1.6). The one σ → rho conversion."""
    return up_exact(Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2))


def sigma_of_rho(rho: float, sensitivity: float = 1.0, *, up: bool = True) -> float:
    """σ = Δ/sqrt(2·rho) as a float, the one rho → σ conversion: the float estimate stepped
    ``up`` until Δ²/(2σ²) <= rho exactly (noise that meets the budget), else down until
    Δ²/(2σ²) >= rho (a round that dominates the rho-zCDP one). 0 or inf as computed when not
    representable (callers refuse them)."""
    sigma = sensitivity / math.sqrt(2.0 * rho)
    if not 0.0 < sigma < math.inf:
        return sigma
    square, budget = Fraction(sensitivity) ** 2, 2 * Fraction(rho)

    def safe(s: float) -> bool:  # noise that meets the budget (up), or a dominating round
        return square <= budget * Fraction(s) ** 2 if up else square >= budget * Fraction(s) ** 2

    toward, away = (math.inf, 0.0) if up else (0.0, math.inf)
    while not safe(sigma):
        sigma = math.nextafter(sigma, toward)
    while 0.0 < (step := math.nextafter(sigma, away)) < math.inf and safe(step):
        sigma = step  # the tightest float on the safe side
    return sigma


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
        return cls(rho_of_sigma(s, dist))

    @property
    def mean(self) -> float:
        return self.rho

    @property
    def variance(self) -> float:
        return 2.0 * self.rho

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        size = sample_count(n, rng)
        return rng.normal(self.rho, math.sqrt(2.0 * self.rho), size)

    def cgf(self, lam: float) -> float:
        """lam·rho + lam²·rho."""
        x = finite("lam", lam)
        return x * (1.0 + x) * self.rho

    def renyi(self, alpha: float) -> float:
        """alpha·rho (Bun–Steinke), rounded up (exactly: the smallest float >= it)."""
        return up_exact(Fraction(renyi_order(alpha)) * Fraction(self.rho))

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
            return SMALLEST  # delta <= Φ(−z) <= φ(z)/z < 1e-348: below every positive float

        def value() -> Any:
            mu = mp.sqrt(2 * mp.mpf(rho))
            x = mp.mpf(e) / mu
            return mp.ncdf(mu / 2 - x) - mp.exp(e) * mp.ncdf(-x - mu / 2)

        return delta_up(value)

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
        size = sample_count(n, rng)
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

        a, d, b = renyi_order(alpha), self.distance, self.scale

        def value() -> Any:
            e, al = mp.mpf(d) / mp.mpf(b), mp.mpf(a)
            inner = al * mp.exp((al - 1) * e) + (al - 1) * mp.exp(-al * e)
            return mp.log(inner / (2 * al - 1)) / (al - 1)

        lost = 2 * max(0, -math.frexp(d / b)[1]) + max(0, -math.frexp(a - 1.0)[1])
        return up_mp_converged(value, MP_START + lost)

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
        return delta_up(lambda: -mp.expm1(-(mp.mpf(d) / mp.mpf(b) - x) / 2))

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
        size = sample_count(n, rng)
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
