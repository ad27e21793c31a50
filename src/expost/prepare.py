"""Prepared rounds of each `PrivateSession` release method (`expost.rounds`: the protocol).

Each ``prepare_*`` function checks and converts one method's arguments by the input contract
(docs/session.md) and takes the mechanism the mode chooses from `expost.mechanism_table.MECHANISMS` (the float
sampler or the exact one, one table): exactness is a property of the noise, so no function here
branches on the mode to pick a class. Nothing here draws, reserves or writes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from expost._validation import (
    MAX_QUERIES,
    flag,
    positive_parameter,
    private_real,
    real_parameter,
    release_values,
)
from expost.errors import InvalidParameter, refused
from expost.filters import BrownianCost, PrivacyFilter
from expost.grids import EpsilonGrid, OpenEpsilonGrid, TimeGrid
from expost.mechanism_table import doubling_cap, mechanism_for
from expost.mechanisms import (
    AboveThresholdResult,
    BrownianNoiseReduction,
    BrownianThresholdResult,
    DoublingTranscript,
    Transcript,
)
from expost.mechanisms.selection_inputs import candidates_mask
from expost.mechanisms.skellam_noise_reduction import fixed_cost_method
from expost.mechanisms.subsampled import records_array
from expost.rounds import Mode, Prepared, check_rule, fixed, result_cost
from expost.stopping import Never, RelativeError, as_stopping_rule

if TYPE_CHECKING:
    from expost.mechanisms.noise_reduction import PrivacyBoundaryWithDelta

__all__ = [
    "SKELLAM_FILTERS",
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
    "prepare_subsampled_gaussian",
]


SKELLAM_FILTERS = (
    "a Skellam round has a delta — (ψ(t_stop), delta)-ex-post private with a boundary (an "
    "ExPostCost), (eps, fixed_delta)-DP with fixed_delta (a DPCost) — so it needs a filter with "
    "an ex-post or a delta budget: ExPostFilter(eps, delta) for either; with a boundary also "
    "ConcurrentFilter(zcdp, ExPostFilter(eps, delta), delta_second) beside a zCDP budget; with "
    "fixed_delta also ZCDPFilter(rho, delta), UnifiedFilter(rho, delta, delta_second) or "
    "ApproxDPFilter(eps, delta_prime, delta_second) (UnifiedFilter.from_dp has no delta budget: "
    "it keeps delta for the conversion)"
)
"""Why a filter that cannot charge a Skellam round refuses it, and which filters can."""


# ----------------------------------------------------------------------------- additive noise


def _additive(
    name: str, mode: Mode, value: object, sensitivity: object, level: object
) -> Prepared[Any]:
    mechanism = mechanism_for(name, mode.name).build(sensitivity, level)
    v = release_values("value", value, exact=mode.exact)
    noise = mode.noise
    return fixed(name, mechanism.cost_for(v.size), lambda: mechanism.run(v, noise))


def prepare_gaussian(
    mode: Mode, value: object, sensitivity: object, rho: object
) -> Prepared[npt.NDArray[Any]]:
    """value + N(0, σ²) (float) or + N_Z(0, Δ²/(2·rho)) (secure, CKS Thm 4)."""
    return _additive("gaussian", mode, value, sensitivity, rho)


def prepare_laplace(
    mode: Mode, value: object, sensitivity: object, eps: object
) -> Prepared[npt.NDArray[Any]]:
    """value + Lap(Δ1/eps) (float) or + discrete Laplace (secure, CKS Alg. 2); a float round on
    a scalar value costs `LaplaceCost` (`LaplaceMechanism.cost_for`)."""
    return _additive("laplace", mode, value, sensitivity, eps)


def prepare_subsampled_gaussian(
    mode: Mode, records: object, sensitivity: object, sigma: object, sampling_prob: object
) -> Prepared[npt.NDArray[np.float64]]:
    """One DP-SGD step (`SubsampledGaussianMechanism`): the records checked (`records_array`)
    before anything is reserved; refused in secure mode (`expost.rounds.NOT_EXACT`)."""
    build = mechanism_for("subsampled-gaussian", mode.name).build
    m = build(sensitivity, sigma, sampling_prob)
    rows = records_array("records", records)
    rng = mode.rng
    return fixed("subsampled-gaussian", m.cost(), lambda: m.run(rows, rng))


# ----------------------------------------------------------------------------- selection


def prepare_exponential(
    mode: Mode,
    scores: object,
    eps: object,
    monotone: object,
    candidates: object,
    sensitivity: object,
) -> Prepared[int]:
    """The exponential mechanism over the allowed candidates: Gumbel-max (float noise) or exact
    rejection (secure), the same law and price (`ExponentialMechanism`)."""
    is_monotone = flag("monotone", monotone)
    u = release_values("scores", scores, exact=mode.exact, vector=True)
    # any object may arrive here: candidates_mask refuses what is not an array of booleans
    allowed = candidates_mask(cast("npt.ArrayLike | None", candidates), u.shape)
    choice = mechanism_for("exponential", mode.name)
    m = choice.build(eps, sensitivity, is_monotone, u, scores)
    noise = mode.noise
    return fixed("exponential", m.cost(), lambda: m.run(u, noise, allowed))


def _utilities(utilities: object) -> list[object]:
    """The utilities, read (at most `MAX_QUERIES`) before the round: a lazy iterable is
    materialised here, so a bad entry is refused before anything is spent."""
    if isinstance(utilities, str | bytes) or not isinstance(utilities, Iterable):
        raise refused("utilities", utilities, "must be an iterable of numbers")
    read = list(itertools.islice(utilities, MAX_QUERIES + 1))
    if len(read) > MAX_QUERIES:
        raise refused("utilities", utilities, f"must hold at most {MAX_QUERIES} queries")
    return read


def prepare_above_threshold(
    mode: Mode, utilities: object, eps: object, threshold: object, sensitivity: object
) -> Prepared[AboveThresholdResult]:
    """AboveThreshold (Lyu et al. 2017) on the materialised utilities; exact in secure mode."""
    u = release_values("utilities", _utilities(utilities), exact=mode.exact, vector=True)
    m = mechanism_for("above-threshold", mode.name).build(eps, threshold, sensitivity)
    noise = mode.noise
    return fixed("above-threshold", m.cost(), lambda: m.run(u, noise))


# ----------------------------------------------------------------------------- doubling


def prepare_doubling(
    mode: Mode, value: object, sensitivity: object, start_eps2: object, ratio: object, stop: object
) -> Prepared[DoublingTranscript]:
    """The doubling method (APC Sec. 7.1), capped by the budget; discrete Gaussian tries in
    secure mode (`DoublingMethod` with ``exact=True``)."""
    rule = RelativeError(0.1) if stop is None else as_stopping_rule(stop)
    v = release_values("value", value, exact=mode.exact)
    check_rule(rule, v.size)
    build = mechanism_for("doubling", mode.name).build
    m = build(mode.filter, sensitivity, start_eps2, ratio, rule)
    noise = mode.noise
    return Prepared("doubling", m.cost(), lambda: m.run(v, noise), result_cost)


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
    mechanism_for(mechanism, mode.name)  # refused in secure mode, naming the alternative
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
    build = mechanism_for("brownian", mode.name).build
    bm = build(clipped(mode.filter, grid, d), d, rule, boundary)
    rng = mode.generator
    return Prepared("brownian", bm.cost(), lambda: bm.run(v, rng), result_cost)


def prepare_laplace_noise_reduction(
    mode: Mode, value: object, sensitivity: object, scales: object, stop: object
) -> Prepared[Transcript]:
    """Laplace noise reduction (BNR Sec. 4)."""
    rule = Never() if stop is None else as_stopping_rule(stop)
    v = _path(mode, "laplace-noise-reduction", value, rule)
    lnr = mechanism_for("laplace-noise-reduction", mode.name).build(scales, sensitivity, rule)
    rng = mode.generator
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
    price: object,
) -> Prepared[Transcript]:
    """Skellam noise reduction on one count (BNR App. E, THEORY §10); exact Poisson and
    binomial draws in secure mode, numpy's otherwise (the mechanism's ``exact``). The value is
    checked by the mechanism's own rule (`SkellamNoiseReduction.check_value`); ``price``
    (``fixed_price``) chooses how ``fixed_delta``'s price is computed, and only with it."""
    if (boundary is None) == (fixed_delta is None):
        raise InvalidParameter(
            "boundary",
            boundary,
            "give a SkellamPrivacyBoundary (tuned_for(level, delta)) or fixed_delta, not both",
        )
    how = fixed_cost_method("fixed_price", price)
    if fixed_delta is None and how != "exact":
        raise InvalidParameter(
            "fixed_price", price, "applies to fixed_delta only (a boundary's round is charged ψ)"
        )
    rule = Never() if stop is None else as_stopping_rule(stop)
    check_rule(rule, 1)
    skellam = mechanism_for("skellam", mode.name).build(times, rate, sensitivity, rule, boundary)
    count = skellam.check_value(value)
    if count.size != 1:
        raise refused("value", value, f"must be one count (shape {count.shape})")
    noise = mode.noise
    draw: Callable[[], Transcript] = lambda: skellam.run(count, noise)
    if fixed_delta is None:
        prepared = Prepared("skellam", skellam.cost(), draw, result_cost)
    else:
        price_of = skellam.fixed_cost(real_parameter("fixed_delta", fixed_delta), how)
        prepared = fixed("skellam", price_of, draw)
    try:
        mode.filter.admits(prepared.request)  # raises for a cost the filter can never admit
    except InvalidParameter as err:
        why = f"cannot admit {prepared.request!r}: {SKELLAM_FILTERS}"
        raise InvalidParameter("filter", type(mode.filter).__name__, why) from err
    return prepared


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
    # the mechanism's validators refuse a grid or boundary of the wrong type
    bm = BrownianNoiseReduction(
        cast("TimeGrid | EpsilonGrid", grid), d, Never(), cast("PrivacyBoundaryWithDelta", boundary)
    )
    psi = bm.boundary
    assert psi is not None
    build = mechanism_for("reduced-above-threshold", mode.name).build
    rat = build(private_real("threshold", threshold), float(psi(bm.smallest_time)), d)
    rng = mode.generator
    return Prepared(
        "reduced-above-threshold",
        rat.brownian_cost(bm),
        lambda: rat.run_with_brownian(bm, v, utility, rng),
        result_cost,
    )
