"""One mechanism per idea: the mode chooses the sampler, this table is the only place it does.

`MECHANISMS` maps (release, mode) — a `Prepared.mechanism` name and ``"float"`` or ``"exact"`` —
to a `Choice`: the mechanism class, the cost type it charges, why that type differs from its
sibling's, and ``build``, which checks the mode's parameters (floats or exact rationals and
integers, every sampler limit) and returns the mechanism. Every mechanism built here has
``cost()`` and ``run(value, source, ...)`` with ``source`` the mode's noise source
(`expost.rounds.Mode.noise`: a numpy Generator or a `BitSource`), so `expost.prepare` never asks
which mode it is in (issue 28, item 4; docs/session.md, "One mechanism per idea"). A release with
no exact entry is refused in secure mode by `mechanism_for`, naming the alternative
(`expost.rounds.NOT_EXACT`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost._validation import (
    EXACT_POISSON_MEAN_LIMIT,
    FLOAT_LIMIT,
    FLOAT_POISSON_MEAN_LIMIT,
    MAX_DOUBLING_TRIES,
    exact_integer,
    exact_sensitivity,
    positive_parameter,
    rational,
    real_parameter,
)
from expost.errors import InvalidParameter
from expost.exact.samplers import MAX_SCALE
from expost.filters import (
    BoundedRangeCost,
    BrownianCost,
    Cost,
    DPCost,
    ExPostCost,
    GaussianCost,
    PrivacyFilter,
    ZCDPCost,
)
from expost.mechanisms import (
    AboveThreshold,
    BrownianNoiseReduction,
    DoublingMethod,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    LaplaceNoiseReduction,
    ReducedAboveThreshold,
    SkellamNoiseReduction,
)
from expost.mechanisms.exact_additive import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from expost.mechanisms.exact_doubling import ExactDoubling
from expost.mechanisms.exact_threshold import ExactAboveThreshold
from expost.mechanisms.permute_and_flip import PermuteAndFlip
from expost.rounds import NOT_EXACT, limit

if TYPE_CHECKING:
    from expost.skellam.boundary import SkellamPrivacyBoundary
    from expost.stopping import StoppingRule

__all__ = ["MECHANISMS", "Choice", "ModeName", "doubling_cap", "mechanism_for"]

ModeName = Literal["float", "exact"]
"""The noise a session draws: numpy's float samplers or exact ones from a `BitSource`."""


@frozen
class Choice:
    """One (release, mode) entry: ``build(...)`` checks the mode's parameters and returns a
    ``mechanism`` whose ``cost()`` is a ``cost_type``; ``why`` says why that type is the price."""

    mechanism: type
    cost_type: type[Cost]
    why: str
    build: Callable[..., Any]


# ----------------------------------------------------------------------------- additive noise


def _gaussian(sensitivity: object, rho: object) -> GaussianMechanism:
    m = GaussianMechanism(
        positive_parameter("sensitivity", sensitivity), positive_parameter("rho", rho)
    )
    if m.sigma > FLOAT_LIMIT:
        limit("sensitivity", sensitivity, f"with rho={rho!r}, the scale", m.sigma, "2**1000")
    return m


def _exact_gaussian(sensitivity: object, rho: object) -> DiscreteGaussianMechanism:
    d, q = exact_sensitivity(sensitivity), rational("rho", rho)
    sigma2 = Fraction(d * d) / (2 * q)
    if sigma2 > MAX_SCALE**2:
        limit("sensitivity", sensitivity, f"with rho={rho!r}, σ² = Δ²/(2·rho)", sigma2, "2**80")
    return DiscreteGaussianMechanism(d, sigma2)


def _laplace(sensitivity: object, eps: object) -> LaplaceMechanism:
    m = LaplaceMechanism(
        positive_parameter("sensitivity", sensitivity), positive_parameter("eps", eps)
    )
    if m.scale > FLOAT_LIMIT:
        limit("sensitivity", sensitivity, f"with eps={eps!r}, the scale", m.scale, "2**1000")
    return m


def _exact_laplace(sensitivity: object, eps: object) -> DiscreteLaplaceMechanism:
    d, q = exact_sensitivity(sensitivity), rational("eps", eps)
    if d / q > MAX_SCALE:
        limit("sensitivity", sensitivity, f"with eps={eps!r}, the scale Δ1/eps", d / q, "2**40")
    return DiscreteLaplaceMechanism(d, q)


# ----------------------------------------------------------------------------- selection


def _exponential(
    eps: object, sensitivity: object, monotone: bool, scores: npt.NDArray[Any], given: object
) -> ExponentialMechanism:
    em = ExponentialMechanism(
        positive_parameter("eps", eps), monotone, positive_parameter("sensitivity", sensitivity)
    )
    largest = em.eps / em.sensitivity * float(np.abs(scores).max())
    if largest > FLOAT_LIMIT:
        limit("scores", given, "eps·|u|/Δ", largest, "2**1000")
    return em


def _permute_and_flip(
    eps: object, sensitivity: object, monotone: bool, scores: npt.NDArray[Any], given: object
) -> PermuteAndFlip:
    return PermuteAndFlip(rational("eps", eps), exact_sensitivity(sensitivity))


def _above_threshold(eps: object, threshold: object, sensitivity: object) -> AboveThreshold:
    at = AboveThreshold(
        positive_parameter("eps", eps),
        real_parameter("threshold", threshold),
        positive_parameter("sensitivity", sensitivity),
    )
    if at.query_scale > FLOAT_LIMIT or abs(at.threshold) > FLOAT_LIMIT:
        limit("sensitivity", sensitivity, "the query scale 4Δ/eps", at.query_scale, "2**1000")
    return at


def _exact_above_threshold(
    eps: object, threshold: object, sensitivity: object
) -> ExactAboveThreshold:
    eat = ExactAboveThreshold(
        rational("eps", eps), exact_integer("threshold", threshold), exact_sensitivity(sensitivity)
    )
    if eat.query_scale > MAX_SCALE:
        limit("sensitivity", sensitivity, "the query scale 4Δ/eps", eat.query_scale, "2**40")
    return eat


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


def _doubling(
    f: PrivacyFilter, sensitivity: object, start_eps2: object, ratio: object, rule: object
) -> DoublingMethod:
    d = positive_parameter("sensitivity", sensitivity)
    start = positive_parameter("start_eps2", start_eps2)
    cap = doubling_cap(f, d, start, positive_parameter("ratio", ratio), rule)
    if cap.tries[0].sigma > FLOAT_LIMIT:
        limit("start_eps2", start_eps2, "the first try's σ", cap.tries[0].sigma, "2**1000")
    return cap


def _exact_doubling(
    f: PrivacyFilter, sensitivity: object, start_eps2: object, ratio: object, rule: object
) -> ExactDoubling:
    d = exact_sensitivity(sensitivity)
    start = positive_parameter("start_eps2", start_eps2)
    cap = doubling_cap(f, d, start, positive_parameter("ratio", ratio), rule)
    sigma2 = Fraction(d**2) / Fraction(start)
    if sigma2 > MAX_SCALE**2:
        limit("start_eps2", start_eps2, "the first try's σ² = Δ²/start_eps2", sigma2, "2**80")
    return ExactDoubling(cap)


# ----------------------------------------------------------------------------- noise reduction


def _skellam(
    exact: bool, times: object, rate: object, sensitivity: object, rule: object, boundary: object
) -> SkellamNoiseReduction:
    """`SkellamNoiseReduction` with the mode's noise (``exact``), its mean λ·t_1 within the
    mode's Poisson limit (`FLOAT_POISSON_MEAN_LIMIT`, `EXACT_POISSON_MEAN_LIMIT`)."""
    skellam = SkellamNoiseReduction(
        cast("tuple[float, ...]", times),  # the mechanism's validators check these
        positive_parameter("rate", rate),
        exact_sensitivity(sensitivity),
        cast("StoppingRule", rule),
        cast("SkellamPrivacyBoundary | None", boundary),
        exact=exact,
    )
    most = EXACT_POISSON_MEAN_LIMIT if exact else FLOAT_POISSON_MEAN_LIMIT
    mean = Fraction(skellam.rate) * Fraction(skellam.times[0])
    if mean > most:
        what = f"with times[0]={skellam.times[0]!r}, the mean λ·t_1"
        limit("rate", rate, what, float(mean), most)
    return skellam


def _laplace_noise_reduction(
    scales: object, sensitivity: object, rule: object
) -> LaplaceNoiseReduction:
    lnr = LaplaceNoiseReduction(scales, positive_parameter("sensitivity", sensitivity), rule)
    if lnr.scales[0] > FLOAT_LIMIT:
        limit("scales", scales, "the largest scale", lnr.scales[0], "2**1000")
    return lnr


SAME = "the same price as the float mechanism: the guarantee holds for the exact sampler as proven"

#: (release, mode) → the mechanism chosen, its cost type and why; the one place the mode decides.
MECHANISMS: Mapping[tuple[str, ModeName], Choice] = {
    ("gaussian", "float"): Choice(
        GaussianMechanism, GaussianCost, "mu-GDP with mu = Δ/σ, rho = mu²/2 (THEORY §2)", _gaussian
    ),
    ("gaussian", "exact"): Choice(
        DiscreteGaussianMechanism,
        ZCDPCost,
        "rho-zCDP (CKS Thm 4), not GDP: the discrete Gaussian's privacy loss is not N(rho, 2rho)",
        _exact_gaussian,
    ),
    ("laplace", "float"): Choice(LaplaceMechanism, DPCost, "eps-DP (THEORY §2)", _laplace),
    ("laplace", "exact"): Choice(
        DiscreteLaplaceMechanism, DPCost, f"eps-DP (CKS Alg. 2), {SAME}", _exact_laplace
    ),
    ("exponential", "float"): Choice(
        ExponentialMechanism,
        BoundedRangeCost,
        "eps-bounded range, eps²/8-zCDP (Cesar–Rogers)",
        _exponential,
    ),
    ("exponential", "exact"): Choice(
        PermuteAndFlip,
        DPCost,
        "pure eps-DP (McKenna–Sheldon 2020), not bounded range: that property is not proven "
        "for permute-and-flip, so a zCDP filter charges eps²/2",
        _permute_and_flip,
    ),
    ("above-threshold", "float"): Choice(
        AboveThreshold, DPCost, "eps-DP (Lyu et al. 2017, Alg. 1)", _above_threshold
    ),
    ("above-threshold", "exact"): Choice(
        ExactAboveThreshold,
        DPCost,
        f"eps-DP with discrete Laplace noises (Lyu et al. 2017), {SAME}",
        _exact_above_threshold,
    ),
    ("doubling", "float"): Choice(
        DoublingMethod, GaussianCost, "Gaussian tries: GDP (APC Sec. 7.1)", _doubling
    ),
    ("doubling", "exact"): Choice(
        ExactDoubling,
        ZCDPCost,
        "discrete Gaussian tries: zCDP (CKS Thm 4), not GDP, as for gaussian",
        _exact_doubling,
    ),
    ("brownian", "float"): Choice(
        BrownianNoiseReduction,
        BrownianCost,
        "ex-post, priced by the stopping time (APC Thm 5)",
        BrownianNoiseReduction,
    ),
    ("laplace-noise-reduction", "float"): Choice(
        LaplaceNoiseReduction,
        ExPostCost,
        "ex-post eps of the scale stopped at (BNR Sec. 4)",
        _laplace_noise_reduction,
    ),
    ("skellam", "float"): Choice(
        SkellamNoiseReduction,
        ExPostCost,
        "ex-post (BNR App. E; DPCost with fixed_delta)",
        partial(_skellam, False),
    ),
    ("skellam", "exact"): Choice(
        SkellamNoiseReduction,
        ExPostCost,
        f"ex-post (BNR App. E; DPCost with fixed_delta), {SAME}",
        partial(_skellam, True),
    ),
    ("reduced-above-threshold", "float"): Choice(
        ReducedAboveThreshold,
        ExPostCost,
        "ex-post (2ψ(t_min), delta) (BNR Cor 5.2)",
        ReducedAboveThreshold,
    ),
}


def mechanism_for(release: str, mode: ModeName) -> Choice:
    """The (release, mode) entry of `MECHANISMS`; a release with no exact version is refused in
    secure mode naming the alternative (`NOT_EXACT`)."""
    choice = MECHANISMS.get((release, mode))
    if choice is not None:
        return choice
    if mode == "exact" and release in NOT_EXACT:
        raise InvalidParameter(
            "mechanism", release, f"has no exact version (secure mode): {NOT_EXACT[release]}"
        )
    raise InvalidParameter("mechanism", release, f"is not a release method with a {mode} mode")
