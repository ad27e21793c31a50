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
    exact_sensitivity,
    positive_parameter,
    private_real,
)
from expost.costs import PoissonSampled
from expost.errors import InvalidParameter, refused
from expost.exact.samplers import MAX_SCALE, MIN_SCALE
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
    SubsampledGaussianMechanism,
)
from expost.rounds import NOT_EXACT, limit, too_small

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


def _gaussian(sensitivity: object, rho: object, *, exact: bool) -> GaussianMechanism:
    if exact:
        m = GaussianMechanism(sensitivity, rho, exact=True)  # an integer Δ, rho exact
        if m.sigma2 > MAX_SCALE**2:
            what = f"with rho={rho!r}, σ² = Δ²/(2·rho)"
            limit("sensitivity", sensitivity, what, m.sigma2, "2**80")
        if m.sigma2 < MIN_SCALE**2:
            too_small("rho", rho, f"with sensitivity={sensitivity!r}, σ² = Δ²/(2·rho)", "2**-80")
        return m
    m = GaussianMechanism(
        positive_parameter("sensitivity", sensitivity), positive_parameter("rho", rho)
    )
    if m.sigma > FLOAT_LIMIT:
        limit("sensitivity", sensitivity, f"with rho={rho!r}, the scale", m.sigma, "2**1000")
    return m


def _laplace(sensitivity: object, eps: object, *, exact: bool) -> LaplaceMechanism:
    if exact:
        m = LaplaceMechanism(sensitivity, eps, exact=True)  # an integer Δ, eps exact
        if m.scale > MAX_SCALE:
            limit(
                "sensitivity", sensitivity, f"with eps={eps!r}, the scale Δ1/eps", m.scale, "2**40"
            )
        if m.scale < MIN_SCALE:
            too_small("eps", eps, f"with sensitivity={sensitivity!r}, the scale Δ1/eps", "2**-40")
        return m
    m = LaplaceMechanism(
        positive_parameter("sensitivity", sensitivity), positive_parameter("eps", eps)
    )
    if m.scale > FLOAT_LIMIT:
        limit("sensitivity", sensitivity, f"with eps={eps!r}, the scale", m.scale, "2**1000")
    return m


def _subsampled_gaussian(
    sensitivity: object, sigma: object, sampling_prob: object
) -> SubsampledGaussianMechanism:
    """The DP-SGD step with float parameters (`Fraction` rounded to the nearest float); its
    own validators check σ·Δ <= 2**1000 and q in (0, 1]."""
    return SubsampledGaussianMechanism(
        positive_parameter("sensitivity", sensitivity),
        positive_parameter("sigma", sigma),
        positive_parameter("sampling_prob", sampling_prob),
    )


# ----------------------------------------------------------------------------- selection


def _exponential(
    eps: object,
    sensitivity: object,
    monotone: bool,
    scores: npt.NDArray[Any],
    given: object,
    *,
    exact: bool,
) -> ExponentialMechanism:
    """The exponential mechanism with the mode's noise: float eps and Δ, |eps·u/Δ| within
    FLOAT_LIMIT; or exact (a `Fraction` eps, an integer Δ, integer scores: no limit needed, the
    sampler's work does not grow with the scores, `expost.mechanisms.exact_selection`)."""
    if exact:
        return ExponentialMechanism(eps, monotone, sensitivity, exact=True)  # its converters
    em = ExponentialMechanism(
        positive_parameter("eps", eps), monotone, positive_parameter("sensitivity", sensitivity)
    )
    largest = float(em.eps) / float(em.sensitivity) * float(np.abs(scores).max())
    if largest > FLOAT_LIMIT:  # a private input: its size is not shown
        raise refused("scores", given, "eps·max|u|/Δ is above the limit 2**1000")
    return em


def _above_threshold(
    eps: object, threshold: object, sensitivity: object, *, exact: bool
) -> AboveThreshold:
    """`AboveThreshold` with the mode's noise: float parameters (a `Fraction` rounded to the
    nearest float), or exact ones (the class's converters); the query scale within the mode's
    sampler limit; |τ| <= 2**1000 as the utilities (the class's converter refuses more)."""
    most: float
    if exact:
        at = AboveThreshold(eps, threshold, sensitivity, exact=True)
        most, shown = MAX_SCALE, "2**40"
    else:
        at = AboveThreshold(
            positive_parameter("eps", eps),
            private_real("threshold", threshold),
            positive_parameter("sensitivity", sensitivity),
        )
        most, shown = FLOAT_LIMIT, "2**1000"
    if at.query_scale > most:
        limit("sensitivity", sensitivity, "the query scale 4Δ/eps", at.query_scale, shown)
    if exact and at.threshold_scale < MIN_SCALE:
        too_small("eps", eps, "the threshold's scale 2Δ/eps", "2**-40")
    return at


# ----------------------------------------------------------------------------- doubling


def doubling_cap(
    f: PrivacyFilter,
    sensitivity: float,
    start_eps2: float,
    ratio: float,
    rule: object,
    *,
    exact: bool = False,
) -> DoublingMethod:
    """The longest doubling schedule (at most `MAX_DOUBLING_TRIES` tries) whose total cost the
    filter admits, at least one try: the cost grows with the tries, so a doubling then a
    bisection search finds it in O(log K) schedules. ``exact``: discrete Gaussian tries, priced
    as `ZCDPCost` (`DoublingMethod.cost`), the last with σ² >= 2**-80 (`MIN_SCALE`)."""

    def method(tries: int) -> DoublingMethod | None:
        try:
            m = DoublingMethod(
                sensitivity, start_eps2, ratio, max_tries=tries, stop=rule, exact=exact
            )
        except InvalidParameter:  # eps² overflows: no longer schedule exists
            return None
        if exact and Fraction(sensitivity**2) / Fraction(float(m.grid.eps2[-1])) < MIN_SCALE**2:
            return None  # the last try's σ² is below the exact sampler's limit
        return m if f.admits(m.cost()) else None

    best = DoublingMethod(sensitivity, start_eps2, ratio, max_tries=1, stop=rule, exact=exact)
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
    f: PrivacyFilter,
    sensitivity: object,
    start_eps2: object,
    ratio: object,
    rule: object,
    *,
    exact: bool,
) -> DoublingMethod:
    """The budget-capped `DoublingMethod` of the mode; its first (noisiest) try within the
    sampler's limit: σ <= 2**1000 (float), σ² = Δ²/start_eps2 <= 2**80 exactly (exact)."""
    d = exact_sensitivity(sensitivity) if exact else positive_parameter("sensitivity", sensitivity)
    start = positive_parameter("start_eps2", start_eps2)
    cap = doubling_cap(f, d, start, positive_parameter("ratio", ratio), rule, exact=exact)
    if exact:
        sigma2 = Fraction(d**2) / Fraction(start)
        if sigma2 > MAX_SCALE**2:
            limit("start_eps2", start_eps2, "the first try's σ² = Δ²/start_eps2", sigma2, "2**80")
        if sigma2 < MIN_SCALE**2:  # the first try; the cap keeps the others above it
            too_small("start_eps2", start_eps2, "the first try's σ² = Δ²/start_eps2", "2**-80")
    elif (sigma := GaussianMechanism(d, start / 2.0).sigma) > FLOAT_LIMIT:
        limit("start_eps2", start_eps2, "the first try's σ", sigma, "2**1000")
    return cap


# ----------------------------------------------------------------------------- noise reduction


def _skellam(
    times: object, rate: object, sensitivity: object, rule: object, boundary: object, *, exact: bool
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


def _modes(
    release: str,
    mechanism: type,
    build: Callable[..., Any],
    float_price: tuple[type[Cost], str],
    exact_price: tuple[type[Cost], str],
) -> dict[tuple[str, ModeName], Choice]:
    """The two entries of one idea: the same class and ``build``, told the mode by ``exact``."""
    return {
        (release, "float"): Choice(mechanism, *float_price, partial(build, exact=False)),
        (release, "exact"): Choice(mechanism, *exact_price, partial(build, exact=True)),
    }


#: (release, mode) → the mechanism chosen, its cost type and why; the one place the mode decides.
MECHANISMS: Mapping[tuple[str, ModeName], Choice] = {
    **_modes(
        "gaussian",
        GaussianMechanism,
        _gaussian,
        (GaussianCost, "mu-GDP with mu = Δ/σ, rho = mu²/2 (THEORY §2)"),
        (
            ZCDPCost,
            (
                "rho-zCDP (CKS Thm 4), not GDP: the discrete Gaussian's loss is not N(rho, 2rho); "
                "on a scalar value DiscreteGaussianCost, its own pair (§12)"
            ),
        ),
    ),
    **_modes(
        "laplace",
        LaplaceMechanism,
        _laplace,
        (DPCost, "eps-DP (THEORY §2); on a scalar value LaplaceCost, the Laplace pair (§12)"),
        (DPCost, f"eps-DP (CKS Alg. 2), {SAME}; on a scalar value DiscreteLaplaceCost (§12)"),
    ),
    **_modes(
        "exponential",
        ExponentialMechanism,
        _exponential,
        (BoundedRangeCost, "eps-bounded range, eps²/8-zCDP (Cesar–Rogers)"),
        (BoundedRangeCost, f"eps-bounded range: exact rejection draws the same law, {SAME}"),
    ),
    **_modes(
        "above-threshold",
        AboveThreshold,
        _above_threshold,
        (DPCost, "eps-DP (Lyu et al. 2017, Alg. 1)"),
        (DPCost, f"eps-DP with discrete Laplace noises (Lyu et al. 2017), {SAME}"),
    ),
    **_modes(
        "doubling",
        DoublingMethod,
        _doubling,
        (GaussianCost, "Gaussian tries: GDP (APC Sec. 7.1)"),
        (ZCDPCost, "discrete Gaussian tries: zCDP (CKS Thm 4), not GDP, as for gaussian"),
    ),
    **_modes(
        "skellam",
        SkellamNoiseReduction,
        _skellam,
        (ExPostCost, "ex-post (BNR App. E; DPCost with fixed_delta)"),
        (ExPostCost, f"ex-post (BNR App. E; DPCost with fixed_delta), {SAME}"),
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
    ("subsampled-gaussian", "float"): Choice(
        SubsampledGaussianMechanism,
        PoissonSampled,
        "the Poisson-subsampled Gaussian pair (THEORY §12); elsewhere the Gaussian's rho = 1/(2σ²)",
        _subsampled_gaussian,
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
