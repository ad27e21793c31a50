"""Audits of ReducedAboveThreshold with a Brownian mechanism and of Laplace noise reduction.

- ``bnr-cor5.2-reduced-above-threshold`` (BNR Cor 5.2): BM iterates checked privately by
  ReducedAboveThreshold at levels E_n = ψ(T_n) (linear boundary, delta = 0.05); only the first
  iterate that passes is released. Claim: the total loss exceeds 2ψ(T_N) with probability <= delta.
  The total loss is L^BM(T_N) plus the threshold part, which BNR Thm 5.1 bounds by E_N = ψ(T_N);
  the audit counts the runs with L^BM(T_N) + ψ(T_N) > 2ψ(T_N), a superset of the claim's event,
  computing L^BM exactly from the released iterate. The private check is adversarial: it asks
  whether the BM loss is above ψ. N is not a stopping time of the released iterates; the bound
  holds because ψ bounds the BM loss at all times at once. Twin: a BM that adds a quarter of
  the noise variance it claims (half the noise sd), with the same levels and claim.
- ``bnr-prop4.2-laplace-noise-reduction/d-{1,3}`` (BNR Prop 4.2): stopped at scale t by any
  stopping rule, the loss is at most Δ1/t with probability 1: claim P(L > Δ1/t) <= 0 (a single
  violation refutes it; a relative float tolerance of 1e-9 absorbs rounding of the computed loss).
  The rule stops when the iterate lies on the far side of f(x) from f(x'), where the loss is
  largest. Twin: the bound Δ1/(2t).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import numpy.typing as npt

from expost.audit._shared import gaussian_loss, laplace_loss, neighbours, runs
from expost.audit.claims import ProbabilityClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, QUICK, register
from expost.boundaries import LinearPrivacyBoundary
from expost.mechanisms.noise_reduction import LaplaceNoiseReduction
from expost.mechanisms.threshold import ReducedAboveThreshold
from expost.processes import sample_brownian_grid
from expost.stopping import WhenPublicUtility

__all__ = [
    "laplace_noise_reduction",
    "laplace_noise_reduction_exceeds",
    "reduced_above_threshold",
    "reduced_above_threshold_exceeds",
    "released_loss_above",
    "threshold_times",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_DELTA = 0.05
_TUNED_AT, _SPAN, _POINTS = 1.0, 100.0, 60
_FLOAT_TOLERANCE = 1e-9


def _towards_loss(fx: FloatArray, fxp: FloatArray) -> FloatArray:
    """The unit vector from f(x') to f(x): moving the iterate along it raises the loss."""
    gap = fx - fxp
    direction: FloatArray = gap / np.linalg.norm(gap)
    return direction


def threshold_times(boundary: LinearPrivacyBoundary) -> FloatArray:
    """The audit's decreasing nominal times T_n: `_POINTS` log-spaced around ψ's time for E = 1."""
    centre = boundary.time_for(_TUNED_AT)
    return np.geomspace(centre * _SPAN, centre / _SPAN, _POINTS)


def released_loss_above(
    boundary: LinearPrivacyBoundary,
    actual: FloatArray,
    iterates: FloatArray,
    fx: FloatArray,
    fxp: FloatArray,
    rng: np.random.Generator,
) -> BoolArray:
    """ReducedAboveThreshold on given BM ``iterates`` (n, K, d): is ``L^BM(T_N) + ψ(T_N) > 2ψ(T_N)``?

    The iterates' noise variances are ``actual`` (``variance``·T_n); the checks use the nominal
    times `threshold_times` and levels ψ(T_n). Utility of iterate y on the data:
    ``⟨y − f(x), e⟩ − g(T)`` with e = `_towards_loss` and the public
    g(T) = T(ψ(T) − Δ²/(2T))/Δ, threshold 0: the check asks whether the BM loss is above ψ
    (sensitivity Δ). The threshold noise is drawn here from ``rng``, independently of the
    iterates. Runs where no check passes release nothing and count as no event.
    """
    delta_2 = boundary.sensitivity
    times = threshold_times(boundary)
    levels = boundary(times)
    rat = ReducedAboveThreshold(0.0, float(levels[-1]), delta_2)
    public_offset = times * (levels - delta_2**2 / (2.0 * times)) / delta_2
    utilities = (iterates - fx) @ _towards_loss(fx, fxp) - public_offset
    index = rat.run_batch(utilities, levels, rng)
    halted = index >= 0
    at = np.where(halted, index, 0)
    bm_loss = gaussian_loss(iterates[np.arange(iterates.shape[0]), at], actual[at], fx, fxp)
    total_bound = bm_loss + levels[at]  # > 2ψ only where bm_loss > ψ (monotone rounding)
    return np.asarray(halted & (total_bound > 2.0 * levels[at]))


def reduced_above_threshold_exceeds(
    boundary: LinearPrivacyBoundary, d: int, variance: float, n: int, rng: np.random.Generator
) -> BoolArray:
    """Runs of BNR Cor 5.2: does ``L^BM(T_N) + ψ(T_N)`` exceed ``2ψ(T_N)`` at the halting N?

    The BM's noise variance at nominal time T is ``variance``·T (1 for the real mechanism);
    the check and the event are `released_loss_above`.
    """
    fx, fxp = neighbours(boundary.sensitivity, d)
    actual = variance * threshold_times(boundary)
    iterates = fx + sample_brownian_grid(actual, n, d, rng)
    return released_loss_above(boundary, actual, iterates, fx, fxp, rng)


@register(QUICK, PAPER)
def reduced_above_threshold(suite: str) -> Audit:
    """BNR Cor 5.2: (2ψ(T_N), delta)-ex-post privacy of ReducedAboveThreshold on a BM."""
    psi = LinearPrivacyBoundary.tuned_for(_TUNED_AT, _DELTA, 1.0)
    d = 3
    name = "bnr-cor5.2-reduced-above-threshold"
    return Audit(
        name=name,
        source="BNR Cor 5.2, Thm 5.1",
        statement=(
            f"ReducedAboveThreshold on BM iterates (d={d}, {_POINTS} times), levels psi(T_n) of "
            "the linear boundary, adversarial check 'is the BM loss above psi': "
            f"P(L_BM(T_N) + psi(T_N) > 2 psi(T_N)) <= {_DELTA:g} (threshold part <= psi(T_N))"
        ),
        claim=ProbabilityClaim(_DELTA),
        simulate=partial(reduced_above_threshold_exceeds, psi, d, 1.0),
        n=runs(suite, 20_000, 400_000),
        twin=Twin(
            f"{name}/half-the-noise",
            ProbabilityClaim(_DELTA),
            partial(reduced_above_threshold_exceeds, psi, d, 0.25),
        ),
        chunk_size=25_000,
    )


def _displacement(fx: FloatArray, direction: FloatArray, values: FloatArray) -> FloatArray:
    """⟨y − f(x), e⟩ for iterates y (..., d): public once x and x' are fixed."""
    result: FloatArray = (values - fx) @ direction
    return result


def laplace_noise_reduction_exceeds(
    d: int, halve_bound: bool, n: int, rng: np.random.Generator
) -> BoolArray:
    """Runs of Laplace noise reduction (ℓ1 sensitivity 1): is L > Δ1/t (or Δ1/(2t)) at the stop?"""
    fx, fxp = neighbours(1.0, d, norm=1)
    rule = WhenPublicUtility(
        partial(_displacement, fx, np.sign(fx - fxp)), 0.0, at_least=True, batched=True
    )
    lnr = LaplaceNoiseReduction(tuple(np.geomspace(10.0, 0.1, 30)), 1.0, rule)
    tr = lnr.run_batch(fx, n, rng)
    loss = laplace_loss(tr.value, tr.times, fx, fxp)
    assert tr.ex_post_bound is not None  # Laplace noise reduction always has one
    bound = tr.ex_post_bound / 2.0 if halve_bound else tr.ex_post_bound
    return np.asarray(loss > bound * (1.0 + _FLOAT_TOLERANCE))


@register(QUICK, PAPER)
def laplace_noise_reduction(suite: str) -> list[Audit]:
    """BNR Prop 4.2: the loss at the stopping scale t is at most Δ1/t, surely."""
    dims = (1,) if suite == QUICK else (1, 3)
    return [
        Audit(
            name=f"bnr-prop4.2-laplace-noise-reduction/d-{d}",
            source="BNR Prop 4.2, APC Lemma C.1",
            statement=(
                f"Laplace noise reduction, d={d}, l1 sensitivity 1, 30 scales in [0.1, 10], "
                "stopped when the iterate is past f(x) away from f(x'): P(L > 1/t) <= 0"
            ),
            claim=ProbabilityClaim(0.0),
            simulate=partial(laplace_noise_reduction_exceeds, d, False),
            n=runs(suite, 20_000, 400_000),
            twin=Twin(
                f"bnr-prop4.2-laplace-noise-reduction/d-{d}/bound-1-over-2t",
                ProbabilityClaim(0.0),
                partial(laplace_noise_reduction_exceeds, d, True),
            ),
        )
        for d in dims
    ]
