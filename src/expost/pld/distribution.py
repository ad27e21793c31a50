"""`PrivacyLossDistribution`: a safe-sided PLD for both neighbour directions (THEORY §12).

Each direction (remove: P the law with the record; add: the pair for the other neighbour) is
discretised from its own exact PLD (§12 (b)) and composed on its own; the larger δ is taken only
after composing (Lebeda, Regehr, Kamath & Steinke 2024: never compose a per-round maximum).
Every δ and ε reported is an upper bound (`expost.pld.discrete`, `expost.pld.discretise`); the
brackets add a certified lower bound from the optimistic side (`expost.pld.optimistic`),
computed on demand by replaying the compositions. The constructors live in
`expost.pld.constructors`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from attrs import field, frozen
from attrs.validators import instance_of

import expost.pld.constructors as c
from expost._validation import (
    nonnegative,
    positive_int,
    probability,
)
from expost.errors import InvalidParameter
from expost.pld.discrete import DiscreteLoss
from expost.pld.discretise import discretise
from expost.pld.optimistic import coarsened_lower, discretise_lower
from expost.pld.pairs import LossLaw

__all__ = [
    "DEFAULT_TAIL_MASS",
    "DEFAULT_VALUE_DISCRETIZATION",
    "PrivacyLossDistribution",
    "clear_caches",
]

DEFAULT_VALUE_DISCRETIZATION = 5e-4  # grid spacing h of the losses (connect the dots: error ~h²)
DEFAULT_TAIL_MASS = 1e-16  # mass each cut tail may hold (the upper one goes to +∞: into δ)
_CACHE = 256  # constructors: small arrays
_COMPOSED_CACHE = 32  # compositions and powers: arrays up to a few MB each
LOWER_FINER = 8  # a coarsened PLD's optimistic laws stay on a grid this much finer (pooling loses)


FloatArray = npt.NDArray[np.float64]
Laws = tuple[LossLaw, LossLaw]
Sampler = Callable[[float], "PrivacyLossDistribution"]
Regrid = Callable[[float, float], "PrivacyLossDistribution"]


@frozen(eq=False)
class Origin:
    """How a PLD was made: from laws (``lower``: the optimistic laws; ``sampled``: the same
    pair Poisson-subsampled at a further rate; ``regrid``: the same pair on another grid) or as
    the composition of ``parts``; ``gaussian``: the pair is N(μ, 1) vs N(0, 1), whose
    compositions are Gaussian pairs again, μ = √(μ1² + μ2²), built directly)."""

    lower: Laws | None = None
    sampled: Sampler | None = None
    parts: tuple[PrivacyLossDistribution, PrivacyLossDistribution] | None = None
    regrid: Regrid | None = None  # the same pair on another (value_discretization, tail_mass)
    gaussian: tuple[float, float] | None = None  # (μ up, μ down) of an unsampled Gaussian pair
    coarse: PrivacyLossDistribution | None = None  # the PLD this one is coarsened from


@frozen(eq=False, repr=False)
class PrivacyLossDistribution:
    """The PLDs of a dominating pair in both neighbour directions, discretised safely.

    ``remove`` and ``add`` are `DiscreteLoss` values (the same object for a symmetric pair).
    Constructors (`expost.pld.constructors`, docs/pld.md): `gaussian`, `laplace`, `pure_dp`,
    `from_pmfs` (a user's two pmfs), `from_eps_delta` (the worst (ε, δ) pair),
    `from_noise` (a user's additive noise law), `discrete_gaussian`, `discrete_laplace`,
    `bounded_range` (the exponential mechanism), `vector_laplace` (ℓ1 sensitivity) and
    `sampled_without_replacement` (from (ε, δ), Balle, Barthe & Gaboardi 2018); any of them
    Poisson-subsampled by `poisson_sampled` or ``sampling_prob``. Constructors and compositions
    are cached (same arguments, same object); compose only PLDs with the same
    ``value_discretization``. `delta` and `eps` are upper bounds; `delta_bracket` and
    `eps_bracket` give (lower, upper) with a certified lower bound.
    """

    remove: DiscreteLoss = field(repr=False, validator=instance_of(DiscreteLoss))
    add: DiscreteLoss = field(repr=False, validator=instance_of(DiscreteLoss))
    origin: Origin = field(factory=Origin, repr=False, validator=instance_of(Origin))

    def __repr__(self) -> str:
        d = self.remove
        return (
            f"PrivacyLossDistribution(h={d.h}, remove={d.masses.size} points, "
            f"add={self.add.masses.size} points, symmetric={self.symmetric})"
        )

    @property
    def symmetric(self) -> bool:
        """Both directions are the same law (one pair serves both)."""
        return self.remove is self.add

    @classmethod
    def gaussian(
        cls,
        sigma: float,
        sensitivity: float = 1.0,
        sampling_prob: float = 1.0,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """Gaussian noise of standard deviation ``sigma`` on a query of L2 ``sensitivity``,
        optionally on a Poisson sample at rate ``sampling_prob`` (Zhu, Dong & Wang Thm 11)."""
        pld: PrivacyLossDistribution = c.gaussian(
            sigma, sensitivity, sampling_prob, value_discretization, tail_mass
        )
        return pld

    @classmethod
    def laplace(
        cls,
        scale: float,
        sensitivity: float = 1.0,
        sampling_prob: float = 1.0,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """Scalar Laplace noise of ``scale`` b on a query of ``sensitivity``, optionally on a
        Poisson sample at rate ``sampling_prob``."""
        pld: PrivacyLossDistribution = c.laplace(
            scale, sensitivity, sampling_prob, value_discretization, tail_mass
        )
        return pld

    @classmethod
    def vector_laplace(
        cls,
        scale: float,
        l1_sensitivity: float = 1.0,
        sampling_prob: float = 1.0,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """Laplace noise of ``scale`` b on each coordinate of a vector query of ℓ1 sensitivity
        Δ: priced by the scalar pair Lap(Δ, b) vs Lap(0, b), which dominates every product of
        coordinate pairs with Σ|v_i| <= Δ (proof in docs/pld.md, "Vector Laplace";
        ``expost prove vector-laplace``)."""
        pld: PrivacyLossDistribution = c.laplace(
            scale, l1_sensitivity, sampling_prob, value_discretization, tail_mass
        )
        return pld

    @classmethod
    def pure_dp(
        cls,
        eps: float,
        sampling_prob: float = 1.0,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """Any eps-DP round, by its dominating pair: randomised response (THEORY §12)."""
        pld: PrivacyLossDistribution = c.eps_delta(
            eps, 0.0, sampling_prob, value_discretization, tail_mass
        )
        return pld

    @classmethod
    def from_eps_delta(
        cls,
        eps: float,
        delta: float,
        sampling_prob: float = 1.0,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """Any (eps, delta)-DP round, by the worst (eps, delta) pair (Kairouz, Oh & Viswanath
        2015): P = (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0), Q reversed."""
        pld: PrivacyLossDistribution = c.eps_delta(
            eps, delta, sampling_prob, value_discretization, tail_mass
        )
        return pld

    @classmethod
    def from_pmfs(
        cls,
        p: object,
        q: object,
        sampling_prob: float = 1.0,
        *,
        tolerance: float = 1e-9,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """A user's mechanism by its pair: ``p`` the output pmf with the record, ``q`` without
        — two arrays over one support, or two mappings outcome -> probability. Each must be
        finite, >= 0 and sum to 1 within ``tolerance`` (it is then divided by its sum, rounding
        outward); both directions are priced from the pair (remove (P, Q), add (Q, P))."""
        pld: PrivacyLossDistribution = c.from_pmfs(
            p, q, sampling_prob, tolerance, value_discretization, tail_mass
        )
        return pld

    @classmethod
    def discrete_gaussian(
        cls,
        sigma: float,
        sensitivity: int = 1,
        sampling_prob: float = 1.0,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """The discrete Gaussian N_Z(0, σ²) added to an integer query of integer
        ``sensitivity`` (Canonne, Kamath & Steinke 2020), priced tightly from its pmfs."""
        pld: PrivacyLossDistribution = c.discrete_gaussian(
            sigma, sensitivity, sampling_prob, value_discretization, tail_mass
        )
        return pld

    @classmethod
    def discrete_laplace(
        cls,
        scale: float,
        sensitivity: int = 1,
        sampling_prob: float = 1.0,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """The discrete Laplace (P(x) ∝ e^{−|x|/scale}) added to an integer query of integer
        ``sensitivity``, priced tightly from its pmfs."""
        pld: PrivacyLossDistribution = c.discrete_laplace(
            scale, sensitivity, sampling_prob, value_discretization, tail_mass
        )
        return pld

    @classmethod
    def bounded_range(
        cls,
        eps: float,
        sampling_prob: float = 1.0,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """Any eps-bounded-range round — the exponential mechanism e^{eps·u/(2Δ)} (e^{eps·u/Δ}
        for a monotone utility) — by the worst eps-bounded-range pair (docs/pld.md, after
        Dong, Durfee & Rogers 2020)."""
        pld: PrivacyLossDistribution = c.bounded_range(
            eps, sampling_prob, value_discretization, tail_mass
        )
        return pld

    @classmethod
    def from_noise(
        cls,
        log_density: Callable[[FloatArray], FloatArray],
        tail: Callable[[float], float],
        sensitivity: float = 1.0,
        sampling_prob: float = 1.0,
        *,
        scale: float = 1.0,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """Additive noise Z of a user's law on a scalar query of ``sensitivity`` Δ: P = Δ + Z,
        Q = Z, for a symmetric log-concave density (so the loss is monotone), given by its
        ``log_density`` (vectorised) and ``tail(x)`` >= P(Z > x) (an upper bound);
        ``scale`` is the noise's natural scale (quadrature pieces are scale/16 wide)."""
        pld: PrivacyLossDistribution = c.from_noise(
            log_density, tail, sensitivity, sampling_prob, scale, value_discretization, tail_mass
        )
        return pld

    @classmethod
    def sampled_without_replacement(
        cls,
        eps: float,
        delta: float,
        sample_size: int,
        population_size: int,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PrivacyLossDistribution:
        """An (eps, delta)-DP mechanism (substitution neighbours) run on a uniform sample of
        ``sample_size`` of ``population_size`` records drawn without replacement: the worst
        (log(1 + γ(e^ε − 1)), γδ) pair, γ = m/n (Balle, Barthe & Gaboardi 2018: amplification
        by subsampling without replacement, substitution). A PLD of a pair is not subsampled
        this way: the mixture pair does not dominate it (THEORY §12)."""
        pld: PrivacyLossDistribution = c.without_replacement(
            eps, delta, sample_size, population_size, value_discretization, tail_mass
        )
        return pld

    def poisson_sampled(self, sampling_prob: float) -> PrivacyLossDistribution:
        """This round run on a Poisson sample at rate ``sampling_prob`` (each record kept
        independently): remove ((1−q)Q + qP, Q), add (Q, (1−q)Q + qP) of the round's pair
        (Zhu, Dong & Wang 2022, Thm 11); a sample of a sample at rates q1, q2 is one at q1·q2.
        Only for a PLD built by a constructor (a composition has no single pair: subsample
        each round, then compose)."""
        q = c.sampling_rate(sampling_prob)
        if self.origin.sampled is None:
            raise InvalidParameter(
                "self", repr(self), "must come from a constructor (subsample rounds, then compose)"
            )
        return self.origin.sampled(q)

    def compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """Both rounds, each direction convolved with the same direction of ``other``."""
        if not isinstance(other, PrivacyLossDistribution):
            raise InvalidParameter("other", other, "must be a PrivacyLossDistribution")
        return _compose(self, other)

    def self_compose(self, k: int) -> PrivacyLossDistribution:
        """``k`` rounds of this PLD, by repeated squaring (about 2·log2 k convolutions)."""
        k = positive_int("k", k)
        g = self.origin.gaussian
        if g is not None and k > 1:  # a Gaussian pair: μ√k directly (exact)
            composed: PrivacyLossDistribution = c.gaussian_composed(
                g, g, self.remove.h, self.remove.tail_mass, k
            )
            return composed
        result: PrivacyLossDistribution | None = None
        j = 0
        while k:
            if k & 1:
                power = _power(self, j)
                result = power if result is None else _compose(result, power)
            k >>= 1
            j += 1
        assert result is not None
        return result

    def coarsened(self, factor: int) -> PrivacyLossDistribution:
        """This PLD (a composition too) on the grid of spacing factor·h, ``factor`` a power of
        two: each direction's upper law split again between coarse grid points (connect the
        dots: δ only grows), its lower law pooled onto them (δ only falls), both safe
        (`DiscreteLoss.coarsened`, `expost.pld.optimistic.coarsened_lower`). For composing
        many rounds: the grid a composition needs grows with its spread
        (`expost.pld.compose_rounds`)."""
        r = positive_int("factor", factor)
        if r & (r - 1):
            raise InvalidParameter("factor", factor, "must be a power of two")
        return self if r == 1 else _coarsened(self, r)

    def delta(self, eps: float) -> float:
        """An upper bound on max over both directions of H_{e^eps}(P‖Q), eps >= 0."""
        e = nonnegative("eps", eps)
        if self.symmetric:
            return self.remove.delta(e)
        return max(self.remove.delta(e), self.add.delta(e))

    def eps(self, delta: float) -> float:
        """An upper bound on the smallest eps >= 0 at which δ(eps) <= delta in both directions
        (THEORY §12 (f)); inf if there is none."""
        d = probability("delta", delta)
        if self.symmetric:
            return self.remove.eps(d)
        return max(self.remove.eps(d), self.add.eps(d))

    def optimistic(self) -> tuple[DiscreteLoss, DiscreteLoss] | None:
        """The optimistic (remove, add) laws behind the brackets' lower sides (each dominated
        by its direction's exact pair; None where none is built): per-direction lower bounds,
        as `expost.costs.domination` needs them."""
        return _lower(self)

    def delta_bracket(self, eps: float) -> tuple[float, float]:
        """(lower, upper) bounds on the exact δ(eps) of the pair (or of the composition): the
        optimistic grid law's δ minus its convolution error, and `delta` (0 as the lower
        bound for a PLD made without laws)."""
        e = nonnegative("eps", eps)
        low = _lower(self)
        lower = 0.0 if low is None else max(low[0].delta_lower(e), low[1].delta_lower(e))
        return min(lower, self.delta(e)), self.delta(e)

    def eps_bracket(self, delta: float) -> tuple[float, float]:
        """(lower, upper) bounds on the smallest eps >= 0 with δ(eps) <= delta in both
        directions: the optimistic law's crossing (seen above ``delta`` up to it) and `eps`."""
        d = probability("delta", delta)
        low = _lower(self)
        lower = 0.0 if low is None else max(low[0].eps_lower(d), low[1].eps_lower(d))
        upper = self.eps(d)
        return min(lower, upper), upper


def from_laws(
    laws: Laws,
    lower: Laws | None,
    h: float,
    tail: float,
    sampled: Sampler | None = None,
    regrid: Regrid | None = None,
    gaussian: tuple[float, float] | None = None,
) -> PrivacyLossDistribution:
    """The PLD of (remove, add) laws (the same object for a symmetric pair); ``lower``: the
    laws the optimistic side discretises (None: only the upper side is known)."""
    remove, add = laws
    first = discretise(remove, h, tail)
    second = first if add is remove else discretise(add, h, tail)
    return PrivacyLossDistribution(first, second, Origin(lower, sampled, None, regrid, gaussian))


c.set_builder(from_laws)


@functools.lru_cache(maxsize=_COMPOSED_CACHE)
def _lower(p: PrivacyLossDistribution) -> tuple[DiscreteLoss, DiscreteLoss] | None:
    """The optimistic (remove, add) laws of ``p``, replaying its compositions."""
    o = p.origin
    if o.parts is not None:
        a, b = _lower(o.parts[0]), _lower(o.parts[1])
        if a is None or b is None:
            return None
        first = a[0].compose(b[0])
        return first, (first if a[1] is a[0] and b[1] is b[0] else a[1].compose(b[1]))
    if o.coarse is not None:
        low = _lower(o.coarse)
        if low is None:
            return None
        r = max(1, round(p.remove.h / LOWER_FINER / low[0].h))  # a power of two
        if r == 1:
            return low
        first = coarsened_lower(low[0], r)
        return first, (first if low[1] is low[0] else coarsened_lower(low[1], r))
    if o.lower is None:
        return None
    h, tail = p.remove.h, p.remove.tail_mass
    remove, add = o.lower
    first = discretise_lower(remove, h, tail).trimmed()  # tails dropped: smaller sums
    return first, (first if add is remove else discretise_lower(add, h, tail).trimmed())


@functools.lru_cache(maxsize=_COMPOSED_CACHE)
def _compose(a: PrivacyLossDistribution, b: PrivacyLossDistribution) -> PrivacyLossDistribution:
    ga, gb = a.origin.gaussian, b.origin.gaussian
    same_grid = (a.remove.h, a.remove.tail_mass) == (b.remove.h, b.remove.tail_mass)
    if ga is not None and gb is not None and same_grid:  # Gaussian pairs: exact, one grid law
        pair: PrivacyLossDistribution = c.gaussian_composed(ga, gb, a.remove.h, a.remove.tail_mass)
        return pair
    origin = Origin(parts=(a, b))
    remove = a.remove.compose(b.remove)
    if a.symmetric and b.symmetric:
        return PrivacyLossDistribution(remove, remove, origin)
    return PrivacyLossDistribution(remove, a.add.compose(b.add), origin)


@functools.lru_cache(maxsize=_COMPOSED_CACHE)
def _coarsened(p: PrivacyLossDistribution, factor: int) -> PrivacyLossDistribution:
    remove = p.remove.coarsened(factor)
    add = remove if p.symmetric else p.add.coarsened(factor)
    return PrivacyLossDistribution(remove, add, Origin(coarse=p))


@functools.lru_cache(maxsize=_COMPOSED_CACHE)
def _power(p: PrivacyLossDistribution, j: int) -> PrivacyLossDistribution:
    """p composed with itself 2**j times (squarings, cached)."""
    if j == 0:
        return p
    half = _power(p, j - 1)
    return _compose(half, half)


def clear_caches() -> None:
    """Forget every cached constructor and composition (memory; cold-start timings)."""
    c.clear_caches()
    for cached in (_compose, _power, _lower, _coarsened):
        cached.cache_clear()
