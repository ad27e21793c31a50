"""Prepared rounds of each `PrivateSession` release method (`expost.rounds`: the protocol).

Each ``prepare_*`` function checks and converts one method's arguments by the input contract
(docs/session.md) and picks the mechanism by the mode — the float sampler or the exact one
(`_FACTORIES` for the additive mechanisms): exactness is a property of the noise. Nothing here
draws, reserves or writes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from expost._validation import (
    EXACT_POISSON_MEAN_LIMIT,
    FLOAT_LIMIT,
    FLOAT_POISSON_MEAN_LIMIT,
    MAX_DOUBLING_TRIES,
    MAX_QUERIES,
    SKELLAM_VALUE_LIMIT,
    candidates_mask,
    exact_integer,
    exact_sensitivity,
    positive_parameter,
    rational,
    real_parameter,
    release_values,
)
from expost.errors import InvalidParameter
from expost.exact.samplers import MAX_SCALE
from expost.filters import BrownianCost, Cost, PrivacyFilter
from expost.grids import EpsilonGrid, OpenEpsilonGrid, TimeGrid
from expost.mechanisms import (
    AboveThreshold,
    AboveThresholdResult,
    BrownianNoiseReduction,
    BrownianThresholdResult,
    DoublingMethod,
    DoublingTranscript,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    LaplaceNoiseReduction,
    ReducedAboveThreshold,
    SkellamNoiseReduction,
    Transcript,
)
from expost.mechanisms.exact_additive import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from expost.mechanisms.exact_doubling import ExactDoubling, ExactDoublingTranscript
from expost.mechanisms.exact_threshold import ExactAboveThreshold
from expost.mechanisms.permute_and_flip import PermuteAndFlip
from expost.rounds import Mode, Prepared, check_rule, fixed, limit, result_cost
from expost.stopping import Never, RelativeError, as_stopping_rule

__all__ = [
    "clipped",
    "doubling_cap",
    "prepare_above_threshold",
    "prepare_brownian",
    "prepare_doubling",
    "prepare_exponential",
    "prepare_gaussian",
    "prepare_laplace",
    "prepare_laplace_noise_reduction",
    "prepare_reduced_above_threshold",
    "prepare_skellam",
]


def _bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidParameter(name, value, "must be True or False")
    return value


# ----------------------------------------------------------------------------- additive noise


def _exact_gaussian(sensitivity: object, rho: object) -> DiscreteGaussianMechanism:
    d, q = exact_sensitivity(sensitivity), rational("rho", rho)
    sigma2 = Fraction(d * d) / (2 * q)
    if sigma2 > MAX_SCALE**2:
        limit("sensitivity", sensitivity, f"with rho={rho!r}, σ² = Δ²/(2·rho)", sigma2, "2**80")
    return DiscreteGaussianMechanism(d, sigma2)


def _float(
    kind: type[GaussianMechanism | LaplaceMechanism], level_name: str
) -> Callable[[object, object], GaussianMechanism | LaplaceMechanism]:
    """The float mechanism ``kind`` with its noise scale (σ or b) at most `FLOAT_LIMIT`."""

    def build(sensitivity: object, level: object) -> GaussianMechanism | LaplaceMechanism:
        d = positive_parameter("sensitivity", sensitivity)
        m = kind(d, positive_parameter(level_name, level))
        scale = m.sigma if isinstance(m, GaussianMechanism) else m.scale
        if scale > FLOAT_LIMIT:
            limit(
                "sensitivity",
                sensitivity,
                f"with {level_name}={level!r}, the scale",
                scale,
                "2**1000",
            )
        return m

    return build


def _exact_laplace(sensitivity: object, eps: object) -> DiscreteLaplaceMechanism:
    d, q = exact_sensitivity(sensitivity), rational("eps", eps)
    if d / q > MAX_SCALE:
        limit("sensitivity", sensitivity, f"with eps={eps!r}, the scale Δ1/eps", d / q, "2**40")
    return DiscreteLaplaceMechanism(d, q)


class _Additive(Protocol):
    def cost(self) -> Cost: ...

    def run(self, value: Any, source: Any, /) -> Any: ...


#: (method, secure mode) -> the mechanism: the float sampler or the exact one, one table.
_FACTORIES: dict[tuple[str, bool], Callable[[object, object], _Additive]] = {
    ("gaussian", False): _float(GaussianMechanism, "rho"),
    ("gaussian", True): _exact_gaussian,
    ("laplace", False): _float(LaplaceMechanism, "eps"),
    ("laplace", True): _exact_laplace,
}


def _additive(
    name: str, mode: Mode, value: object, sensitivity: object, level: object
) -> Prepared[Any]:
    mechanism = _FACTORIES[name, mode.exact](sensitivity, level)
    v = release_values("value", value, exact=mode.exact)
    source: object = mode.bits if mode.exact else mode.rng
    return fixed(name, mechanism.cost(), lambda: mechanism.run(v, source))


def prepare_gaussian(
    mode: Mode, value: object, sensitivity: object, rho: object
) -> Prepared[npt.NDArray[Any]]:
    """value + N(0, σ²) (float) or + N_Z(0, Δ²/(2·rho)) (secure, CKS Thm 4)."""
    return _additive("gaussian", mode, value, sensitivity, rho)


def prepare_laplace(
    mode: Mode, value: object, sensitivity: object, eps: object
) -> Prepared[npt.NDArray[Any]]:
    """value + Lap(Δ1/eps) (float) or + discrete Laplace (secure, CKS Alg. 2)."""
    return _additive("laplace", mode, value, sensitivity, eps)


# ----------------------------------------------------------------------------- selection


def prepare_exponential(
    mode: Mode,
    scores: object,
    eps: object,
    monotone: object,
    candidates: object,
    sensitivity: object,
) -> Prepared[int]:
    """Gumbel-max (float) or permute-and-flip (secure) over the allowed candidates."""
    is_monotone = _bool("monotone", monotone)
    u = release_values("scores", scores, exact=mode.exact, vector=True)
    allowed = candidates_mask(candidates, u.shape)  # type: ignore[arg-type]  # checked there
    if mode.exact:
        pf = PermuteAndFlip(rational("eps", eps), exact_sensitivity(sensitivity))
        bits = mode.source()
        return fixed("exponential", pf.cost(), lambda: pf.run(u, bits, allowed))
    em = ExponentialMechanism(
        positive_parameter("eps", eps), is_monotone, positive_parameter("sensitivity", sensitivity)
    )
    if em.eps / em.sensitivity * float(np.abs(u).max()) > FLOAT_LIMIT:
        limit(
            "scores",
            scores,
            "eps·|u|/Δ",
            em.eps / em.sensitivity * float(np.abs(u).max()),
            "2**1000",
        )
    rng = mode.rng
    return fixed("exponential", em.cost(), lambda: em.run(u, rng, candidates=allowed))


def _utilities(utilities: object) -> list[object]:
    """The utilities, read (at most `MAX_QUERIES`) before the round: a lazy iterable is
    materialised here, so a bad entry is refused before anything is spent."""
    if isinstance(utilities, str | bytes) or not isinstance(utilities, Iterable):
        raise InvalidParameter("utilities", utilities, "must be an iterable of numbers")
    read = list(itertools.islice(utilities, MAX_QUERIES + 1))
    if len(read) > MAX_QUERIES:
        raise InvalidParameter("utilities", utilities, f"must hold at most {MAX_QUERIES} queries")
    return read


def prepare_above_threshold(
    mode: Mode, utilities: object, eps: object, threshold: object, sensitivity: object
) -> Prepared[AboveThresholdResult]:
    """AboveThreshold (Lyu et al. 2017) on the materialised utilities; exact in secure mode."""
    u = release_values("utilities", _utilities(utilities), exact=mode.exact, vector=True)
    if mode.exact:
        eat = ExactAboveThreshold(
            rational("eps", eps),
            exact_integer("threshold", threshold),
            exact_sensitivity(sensitivity),
        )
        if eat.query_scale > MAX_SCALE:
            limit("sensitivity", sensitivity, "the query scale 4Δ/eps", eat.query_scale, "2**40")
        bits = mode.source()
        return fixed("above-threshold", eat.cost(), lambda: eat.run(u, bits))
    at = AboveThreshold(
        positive_parameter("eps", eps),
        real_parameter("threshold", threshold),
        positive_parameter("sensitivity", sensitivity),
    )
    if at.query_scale > FLOAT_LIMIT or abs(at.threshold) > FLOAT_LIMIT:
        limit("sensitivity", sensitivity, "the query scale 4Δ/eps", at.query_scale, "2**1000")
    rng = mode.rng
    return fixed("above-threshold", at.cost(), lambda: at.run(u, rng))


# ----------------------------------------------------------------------------- doubling


def doubling_cap(
    f: PrivacyFilter, sensitivity: float, start_eps2: float, ratio: float, rule: object
) -> DoublingMethod:
    """The longest doubling schedule (at most `MAX_DOUBLING_TRIES` tries) whose total cost the
    filter admits, at least one try: the cost grows with the tries, so a doubling then a
    bisection search finds it in O(log K) schedules."""

    def method(tries: int) -> DoublingMethod | None:
        try:
            m = DoublingMethod(sensitivity, start_eps2, ratio, max_tries=tries, stop=rule)
        except InvalidParameter:  # eps² overflows: no longer schedule exists
            return None
        return m if f.admits(m.cost()) else None

    best = DoublingMethod(sensitivity, start_eps2, ratio, max_tries=1, stop=rule)
    low, high = 1, 2
    while high <= MAX_DOUBLING_TRIES and (longer := method(high)) is not None:
        best, low, high = longer, high, 2 * high
    high = min(high, MAX_DOUBLING_TRIES + 1)  # method(high) is refused or past the limit
    while high - low > 1:
        mid = (low + high) // 2
        if (found := method(mid)) is not None:
            best, low = found, mid
        else:
            high = mid
    return best


def prepare_doubling(
    mode: Mode, value: object, sensitivity: object, start_eps2: object, ratio: object, stop: object
) -> Prepared[DoublingTranscript | ExactDoublingTranscript]:
    """The doubling method (APC Sec. 7.1), capped by the budget; discrete Gaussian tries in
    secure mode (`ExactDoubling`)."""
    rule = RelativeError(0.1) if stop is None else as_stopping_rule(stop)
    v = release_values("value", value, exact=mode.exact)
    check_rule(rule, v.size)
    d: float = (
        exact_sensitivity(sensitivity)
        if mode.exact
        else positive_parameter("sensitivity", sensitivity)
    )
    start = positive_parameter("start_eps2", start_eps2)
    cap = doubling_cap(mode.filter, d, start, positive_parameter("ratio", ratio), rule)
    if mode.exact:
        sigma2 = Fraction(int(d) ** 2) / Fraction(start)
        if sigma2 > MAX_SCALE**2:
            limit("start_eps2", start_eps2, "the first try's σ² = Δ²/start_eps2", sigma2, "2**80")
        exact, bits = ExactDoubling(cap), mode.source()
        return Prepared("doubling", exact.cost(), lambda: exact.run(v, bits), result_cost)
    if cap.tries[0].sigma > FLOAT_LIMIT:
        limit("start_eps2", start_eps2, "the first try's σ", cap.tries[0].sigma, "2**1000")
    rng = mode.rng
    return Prepared("doubling", cap.cost(), lambda: cap.run(v, rng), result_cost)


# ----------------------------------------------------------------------------- noise reduction


def clipped(f: PrivacyFilter, grid: object, sensitivity: float) -> TimeGrid | EpsilonGrid:
    """An eps grid clipped to what the budget allows (APC Sec. 7: "as far as the budget allows")."""
    if not isinstance(grid, TimeGrid | EpsilonGrid | OpenEpsilonGrid):
        raise InvalidParameter("grid", grid, "must be a TimeGrid, EpsilonGrid or OpenEpsilonGrid")
    if not isinstance(grid, TimeGrid) and grid.sensitivity != sensitivity:
        raise InvalidParameter(
            "sensitivity", sensitivity, f"must equal the grid's sensitivity {grid.sensitivity!r}"
        )
    if isinstance(grid, TimeGrid):
        return grid
    max_eps = f.max_bm_eps(sensitivity)
    if max_eps is None:  # the filter does not price BMs by time: nothing to clip to
        if isinstance(grid, OpenEpsilonGrid):
            raise InvalidParameter(
                "grid",
                grid,
                f"an open grid needs a budget to close it: {type(f).__name__} "
                "does not price Brownian mechanisms by time",
            )
        return grid
    if grid.first_eps > max_eps:  # refused with what was spent, asked and remains
        f.check(BrownianCost.from_eps(grid.first_eps, sensitivity))
    return grid.clip(max_eps)


def _path(mode: Mode, mechanism: str, value: object, rule: object) -> npt.NDArray[np.float64]:
    """A float-only mechanism's value, shape (d,), with its rule checked for d."""
    mode.float_only(mechanism)
    v = release_values("value", value, exact=False).reshape(-1)
    check_rule(rule, v.size)
    return v


def prepare_brownian(
    mode: Mode, value: object, sensitivity: object, grid: object, stop: object, boundary: object
) -> Prepared[Transcript]:
    """The Brownian mechanism (APC Def 4.4) on the budget-clipped grid."""
    rule = Never() if stop is None else as_stopping_rule(stop)
    v = _path(mode, "brownian", value, rule)
    d = positive_parameter("sensitivity", sensitivity)
    bm = BrownianNoiseReduction(clipped(mode.filter, grid, d), d, rule, boundary)
    rng = mode.rng
    return Prepared("brownian", bm.cost(), lambda: bm.run(v, rng), result_cost)


def prepare_laplace_noise_reduction(
    mode: Mode, value: object, sensitivity: object, scales: object, stop: object
) -> Prepared[Transcript]:
    """Laplace noise reduction (BNR Sec. 4)."""
    rule = Never() if stop is None else as_stopping_rule(stop)
    v = _path(mode, "laplace-noise-reduction", value, rule)
    lnr = LaplaceNoiseReduction(scales, positive_parameter("sensitivity", sensitivity), rule)
    if lnr.scales[0] > FLOAT_LIMIT:
        limit("scales", scales, "the largest scale", lnr.scales[0], "2**1000")
    rng = mode.rng
    return Prepared("laplace-noise-reduction", lnr.cost(), lambda: lnr.run(v, rng), result_cost)


def prepare_skellam(
    mode: Mode,
    value: object,
    sensitivity: object,
    times: object,
    rate: object,
    stop: object,
    boundary: object,
    fixed_delta: object,
) -> Prepared[Transcript]:
    """Skellam noise reduction on one count (BNR App. E, THEORY §10); exact Poisson and
    binomial draws in secure mode, numpy's otherwise."""
    if (boundary is None) == (fixed_delta is None):
        raise InvalidParameter(
            "boundary",
            boundary,
            "give a SkellamPrivacyBoundary (tuned_for(level, delta)) or fixed_delta, not both",
        )
    v = release_values("value", value, exact=True)
    if v.size != 1:
        raise InvalidParameter("value", value, "must be one count")
    count = int(v.reshape(-1)[0])
    if abs(count) > SKELLAM_VALUE_LIMIT:
        limit("value", value, "|value|", abs(count), "2**52")
    rule = Never() if stop is None else as_stopping_rule(stop)
    check_rule(rule, 1)
    skellam = SkellamNoiseReduction(
        times,
        positive_parameter("rate", rate),
        exact_sensitivity(sensitivity),
        rule,
        boundary,  # type: ignore[arg-type]  # validated there
    )
    mean = Fraction(skellam.rate) * Fraction(skellam.times[0])
    most = EXACT_POISSON_MEAN_LIMIT if mode.exact else FLOAT_POISSON_MEAN_LIMIT
    if mean > most:
        limit(
            "rate", rate, f"with times[0]={skellam.times[0]!r}, the mean λ·t_1", float(mean), most
        )
    if mode.exact:
        bits = mode.source()
        draw: Callable[[], Transcript] = lambda: skellam.run_exact(count, bits)
    else:
        rng = mode.rng
        draw = lambda: skellam.run(count, rng)
    if fixed_delta is None:
        return Prepared("skellam", skellam.cost(), draw, result_cost)
    return fixed("skellam", skellam.fixed_cost(real_parameter("fixed_delta", fixed_delta)), draw)


def prepare_reduced_above_threshold(
    mode: Mode,
    value: object,
    utility: object,
    grid: object,
    boundary: object,
    threshold: object,
    sensitivity: object,
) -> Prepared[BrownianThresholdResult]:
    """ReducedAboveThreshold on Brownian iterates (BNR Algorithm 1, Cor 5.2)."""
    v = _path(mode, "reduced-above-threshold", value, None)
    if not callable(utility):
        raise InvalidParameter("utility", utility, "must be callable")
    if boundary is None:
        raise InvalidParameter("boundary", boundary, "must be a privacy boundary ψ with a delta")
    d = positive_parameter("sensitivity", sensitivity)
    bm = BrownianNoiseReduction(grid, d, Never(), boundary)  # type: ignore[arg-type]  # validated there
    psi = bm.boundary
    assert psi is not None
    rat = ReducedAboveThreshold(
        real_parameter("threshold", threshold), float(psi(bm.smallest_time)), d
    )
    rng = mode.rng
    return Prepared(
        "reduced-above-threshold",
        rat.brownian_cost(bm),
        lambda: rat.run_with_brownian(bm, v, utility, rng),
        result_cost,
    )
