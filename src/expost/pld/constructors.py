"""The constructors of `PrivacyLossDistribution` (docs/pld.md lists them with their pairs).

Each builds the pair's (remove, add) loss laws twice: with parameters rounded so the pair
dominates the exact one (the upper side; μ, ε0, q rounded up) and so the exact pair dominates it
(the lower side, for `PrivacyLossDistribution.delta_bracket`), and keeps a closure that rebuilds
the same pair Poisson-subsampled at a further rate (`PrivacyLossDistribution.poisson_sampled`).
Built PLDs are cached per argument. The PLDs themselves are made by the builder that
`expost.pld.distribution` registers (`set_builder`: the class lives there, and this module
must not import it back).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from expost._validation import (
    finite,
    nonnegative,
    open_probability,
    positive,
    positive_int,
    probability,
)
from expost.errors import InvalidParameter
from expost.pld import mechanisms
from expost.pld.noise import noise_parts
from expost.pld.pairs import (
    LossLaw,
    bounded_range_laws,
    gaussian_laws,
    laplace_laws,
    ratio_up,
)
from expost.rounding import down, down_exact, sqrt_up_exact, up

__all__ = [
    "bounded_range",
    "clear_caches",
    "discrete_gaussian",
    "discrete_laplace",
    "eps_delta",
    "from_laws",
    "from_noise",
    "from_pmfs",
    "gaussian",
    "grid",
    "laplace",
    "sampling_rate",
    "set_builder",
    "without_replacement",
]

FloatArray = npt.NDArray[np.float64]
_CACHE = 256
PLD = Any  # a `PrivacyLossDistribution`, made by the registered builder
_BUILDER: list[Callable[..., PLD]] = []
SMALLEST = 2.0**-40  # μ, ε0 or ε below it: the upper side uses it (dominating), the lower TRIVIAL
_NOTHING = LossLaw(((0.0, 1.0),), ())  # the pair P = Q: dominated by every pair
TRIVIAL = (_NOTHING, _NOTHING)


def set_builder(build: Callable[..., PLD]) -> None:
    """Register `expost.pld.distribution.from_laws` (called once, when that module loads)."""
    _BUILDER[:] = [build]


def from_laws(*args: Any) -> PLD:
    """A PLD from (laws, lower laws, h, tail, sampled, regrid, gaussian) by the builder."""
    return _BUILDER[0](*args)


def sampling_rate(q: object) -> float:
    """A validated Poisson sampling rate in (0, 1]."""
    x = finite("sampling_prob", q)
    if not 0.0 < x <= 1.0:
        raise InvalidParameter("sampling_prob", q, "must lie in (0, 1]")
    return x


def grid(h: object, tail: object) -> tuple[float, float]:
    """The validated (value_discretization, tail_mass)."""
    step = positive("value_discretization", h)
    if step > 0.1:
        raise InvalidParameter("value_discretization", h, "must be <= 0.1")
    return step, open_probability("tail_mass", tail)


def _rates(q: float, s: float) -> tuple[float, float]:
    """(up, down) roundings of the rate q·s of a sample of a sample (q·s itself if exact)."""
    r = q * s
    if Fraction(r) == Fraction(q) * Fraction(s):
        return r, r
    return up(r, 1), max(down(r, 1), 0.0)


def _ratio_down(numerator: float, denominator: float) -> float:
    return down_exact(Fraction(numerator) / Fraction(denominator))


# Gaussian and Laplace: the laws of `expost.pld.pairs`, one parameter each side


@functools.lru_cache(maxsize=_CACHE)
def _gaussian(mu: tuple[float, float], q: tuple[float, float], h: float, tail: float) -> PLD:
    def sampled(s: float) -> PLD:
        return _gaussian(mu, _rates(q[0], s), h, tail)

    def regrid(step: float, t: float) -> PLD:
        return _gaussian(mu, q, step, t)

    upper = gaussian_laws(max(mu[0], SMALLEST), q[0], tail)  # a larger μ dominates
    lower = gaussian_laws(mu[1], q[1], tail) if mu[1] >= SMALLEST else TRIVIAL
    plain = mu if q[0] == 1.0 else None
    return from_laws(upper, lower, h, tail, sampled, regrid, plain)


def gaussian_composed(
    a: tuple[float, float], b: tuple[float, float], h: float, tail: float, k: int = 1
) -> PLD:
    """Unsampled Gaussian rounds as one Gaussian pair: μ² = μa² + μb² (``k`` = 1), or k·μa²
    (k rounds of ``a``). The product N(μa, 1)⊗N(μb, 1) vs N(0, I) is N(μ, 1) vs N(0, 1) after
    a rotation (exact); μ rounded up for the upper side (exact rationals) and down for the
    lower (2 ulps below the float sqrt). ``a``, ``b``: (μ up, μ down)."""
    if k > 1:
        square_up, square_down = k * Fraction(a[0]) ** 2, k * Fraction(a[1]) ** 2
    else:
        square_up = Fraction(a[0]) ** 2 + Fraction(b[0]) ** 2
        square_down = Fraction(a[1]) ** 2 + Fraction(b[1]) ** 2
    upper = sqrt_up_exact(square_up)
    lower = down(math.sqrt(float(square_down)), 2)
    return _gaussian((upper, lower), (1.0, 1.0), h, tail)


@functools.lru_cache(maxsize=_CACHE)
def _laplace(eps0: tuple[float, float], q: tuple[float, float], h: float, tail: float) -> PLD:
    def sampled(s: float) -> PLD:
        return _laplace(eps0, _rates(q[0], s), h, tail)

    def regrid(step: float, t: float) -> PLD:
        return _laplace(eps0, q, step, t)

    lower = laplace_laws(eps0[1], q[1]) if eps0[1] >= SMALLEST else TRIVIAL
    upper = laplace_laws(max(eps0[0], SMALLEST), q[0])  # a larger ε0 dominates
    return from_laws(upper, lower, h, tail, sampled, regrid)


@functools.lru_cache(maxsize=_CACHE)
def _bounded_range(eps: float, q: tuple[float, float], h: float, tail: float) -> PLD:
    def sampled(s: float) -> PLD:
        return _bounded_range(eps, _rates(q[0], s), h, tail)

    def regrid(step: float, t: float) -> PLD:
        return _bounded_range(eps, q, step, t)

    lower = bounded_range_laws(eps, q[1]) if eps >= SMALLEST else TRIVIAL
    upper = bounded_range_laws(max(eps, SMALLEST), q[0])  # a larger range dominates
    return from_laws(upper, lower, h, tail, sampled, regrid)


def gaussian(sigma: float, sensitivity: float, q: float, h: float, tail: float) -> PLD:
    """`PrivacyLossDistribution.gaussian`."""
    d, s = positive("sensitivity", sensitivity), positive("sigma", sigma)
    r = sampling_rate(q)
    step, t = grid(h, tail)
    return _gaussian((ratio_up(d, s), _ratio_down(d, s)), (r, r), step, t)


def laplace(scale: float, sensitivity: float, q: float, h: float, tail: float) -> PLD:
    """`PrivacyLossDistribution.laplace` (and `vector_laplace`)."""
    d, b = positive("sensitivity", sensitivity), positive("scale", scale)
    r = sampling_rate(q)
    step, t = grid(h, tail)
    return _laplace((ratio_up(d, b), _ratio_down(d, b)), (r, r), step, t)


def bounded_range(eps: float, q: float, h: float, tail: float) -> PLD:
    """`PrivacyLossDistribution.bounded_range`."""
    e = positive("eps", eps)
    r = sampling_rate(q)
    step, t = grid(h, tail)
    return _bounded_range(e, (r, r), step, t)


# Pairs given by pmfs (`expost.pld.mechanisms`)


def _from_bounds(
    make: Callable[[], mechanisms.Bounds], q: tuple[float, float], h: float, tail: float
) -> PLD:
    bounds = make()

    def sampled(s: float) -> PLD:
        return _from_bounds(lambda: bounds, _rates(q[0], s), h, tail)

    def regrid(step: float, t: float) -> PLD:
        return _from_bounds(lambda: bounds, q, step, t)

    upper = bounds.sampled(q[0]).laws()
    lower = bounds.sampled(q[1]).lower_laws()
    return from_laws(_symmetric(upper), _symmetric(lower), h, tail, sampled, regrid)


def _symmetric(laws: tuple[LossLaw, LossLaw]) -> tuple[LossLaw, LossLaw]:
    """One law object for both directions where their atoms are equal (a symmetric pair)."""
    a, b = (np.asarray(law.atoms) for law in laws)
    if a.shape == b.shape and np.array_equal(a[np.lexsort(a.T)], b[np.lexsort(b.T)]):
        return laws[0], laws[0]
    return laws


@functools.lru_cache(maxsize=_CACHE)
def _eps_delta(eps: float, delta: float, q: float, h: float, tail: float) -> PLD:
    return _from_bounds(lambda: mechanisms.eps_delta(eps, delta), (q, q), h, tail)


def eps_delta(eps: float, delta: float, q: float, h: float, tail: float) -> PLD:
    """`PrivacyLossDistribution.from_eps_delta` and `pure_dp`."""
    e, d = nonnegative("eps", eps), probability("delta", delta)
    if not math.isfinite(e):
        raise InvalidParameter("eps", eps, "must be finite")
    step, t = grid(h, tail)
    return _eps_delta(e, d, sampling_rate(q), step, t)


def from_pmfs(p: object, q: object, s: float, tolerance: float, h: float, tail: float) -> PLD:
    """`PrivacyLossDistribution.from_pmfs` (not cached: arrays)."""
    tol = nonnegative("tolerance", tolerance)
    rate = sampling_rate(s)
    step, t = grid(h, tail)
    bounds = mechanisms.pmf_bounds(p, q, tol)
    return _from_bounds(lambda: bounds, (rate, rate), step, t)


def _integer(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidParameter(name, value, "must be a positive integer")
    return positive_int(name, int(value))


@functools.lru_cache(maxsize=_CACHE)
def _discrete_gaussian(sigma: float, d: int, q: float, h: float, tail: float) -> PLD:
    return _from_bounds(lambda: mechanisms.discrete_gaussian(sigma, d, tail), (q, q), h, tail)


def discrete_gaussian(sigma: float, sensitivity: int, q: float, h: float, tail: float) -> PLD:
    """`PrivacyLossDistribution.discrete_gaussian`."""
    s, d = positive("sigma", sigma), _integer("sensitivity", sensitivity)
    if not math.isfinite(s) or s > 1e300:
        raise InvalidParameter("sigma", sigma, "must be finite (at most 1e300)")
    step, t = grid(h, tail)
    return _discrete_gaussian(s, d, sampling_rate(q), step, t)


@functools.lru_cache(maxsize=_CACHE)
def _discrete_laplace(scale: float, d: int, q: float, h: float, tail: float) -> PLD:
    return _from_bounds(lambda: mechanisms.discrete_laplace(scale, d), (q, q), h, tail)


def discrete_laplace(scale: float, sensitivity: int, q: float, h: float, tail: float) -> PLD:
    """`PrivacyLossDistribution.discrete_laplace`."""
    b, d = positive("scale", scale), _integer("sensitivity", sensitivity)
    step, t = grid(h, tail)
    return _discrete_laplace(finite("scale", b), d, sampling_rate(q), step, t)


def without_replacement(eps: float, delta: float, m: int, n: int, h: float, tail: float) -> PLD:
    """`PrivacyLossDistribution.sampled_without_replacement`: the worst (ε', δ') pair with
    ε' = log(1 + γ(e^ε − 1)) (rounded up), δ' = γδ (rounded up), γ = m/n (Balle, Barthe &
    Gaboardi 2018: subsampling without replacement, substitution)."""
    e, d = nonnegative("eps", eps), probability("delta", delta)
    size, population = _integer("sample_size", m), _integer("population_size", n)
    if size > population:
        raise InvalidParameter("sample_size", m, f"must be at most population_size ({n})")
    gamma = Fraction(size, population)
    g = float(gamma)  # rounded to nearest: both formulas below are moved up 8 ulps
    eps_s = up(math.log1p(g * math.expm1(e)) if e < 700 else e + math.log(g), 8)
    delta_s = min(1.0, up(float(gamma * Fraction(d)), 1))
    return eps_delta(max(eps_s, 0.0), delta_s, 1.0, h, tail)


def from_noise(
    log_density: Callable[[FloatArray], FloatArray],
    tail_bound: Callable[[float], float],
    sensitivity: float,
    q: float,
    scale: float,
    h: float,
    tail: float,
) -> PLD:
    """`PrivacyLossDistribution.from_noise` (not cached: functions)."""
    d, s = positive("sensitivity", sensitivity), positive("scale", scale)
    step, t = grid(h, tail)
    rate = sampling_rate(q)

    def parts(r: float) -> tuple[LossLaw, LossLaw]:
        try:
            remove, add = noise_parts(log_density, tail_bound, d, s, t, r)
        except ValueError as e:
            raise InvalidParameter("tail", tail_bound, str(e)) from None
        law = LossLaw((), (remove,))
        return (law, law) if remove is add else (law, LossLaw((), (add,)))

    def build(r: tuple[float, float]) -> PLD:
        def sampled(more: float) -> PLD:
            return build(_rates(r[0], more))

        lower = parts(r[1]) if r[1] != r[0] else None
        upper = parts(r[0])
        return from_laws(upper, upper if lower is None else lower, step, t, sampled, None, None)

    return build((rate, rate))


def clear_caches() -> None:
    """Forget every cached constructor."""
    for cached in (
        _gaussian, _laplace, _bounded_range, _eps_delta, _discrete_gaussian, _discrete_laplace,
    ):  # fmt: skip
        cached.cache_clear()
