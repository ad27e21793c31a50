"""Audits of ex-post Rényi DP and of ex-post bounds under post-processing (THEORY §11).

- ``ex-post-rdp/bm/<rule>/alpha-<α>``: the Brownian mechanism's ex-post RDP bound
  ε_α(y) = α·Δ²/(2·t_stop) (`expost.ex_post_rdp`, proof ``ex-post-rdp-brownian``) satisfies
  ``E_x[exp((α−1)(L − ε_α(Y)))] <= 1`` under adaptive stopping rules: ``relative-error`` (APC
  Sec. 7's rule, which stops early on high values), ``threshold`` (a threshold on the released
  value) and ``adversarial`` (stops as soon as the loss exceeds 1). `EValueClaim` (betting test,
  valid for heavy tails). At α > 2 plain Monte Carlo cannot see the tail (the second moment is
  exp(2(α−1)²·rho)), so runs are drawn tilted by θ = α − 2 (`expost.audit.tilting`: every
  iterate shifted by θ·(f(x) − f(x')), weight ``exp(−θL + θ(θ+1)·rho(T))`` on the path up to
  the stop, Girsanov in privacy time); the weighted sample then has second moment exp(2·rho).
  Twin: rho halved, whose mean is above 1.
- ``post-processing/gaussian-bucket`` (expected refuted): a Gaussian release with the constant
  ex-post bound ε that its loss exceeds with probability exactly delta = 1e-3 (Δ = σ); the
  release is coarsened into the bucket {y >= cut} (cut = `gaussian_bucket`: the lowest cut whose
  bucket's loss exceeds ε), which carries the same ε (sup over its preimage). The coarsened output
  exceeds ε with probability about 2.35·delta. Twin: the same claim at 1.5·delta, also refuted.
- ``post-processing/gaussian-bucket-rdp``: on the same coarsened outputs the ex-post RDP bound
  α·rho of the release (constant here) holds, α = 2; twin rho halved.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost.audit._shared import Constant, gaussian_loss
from expost.audit.claims import EValueClaim, ProbabilityClaim
from expost.audit.core import Audit, Twin
from expost.audit.paper.brownian import LossAbove
from expost.audit.registry import PAPER, QUICK, register
from expost.ex_post_rdp import ExPostRDP
from expost.grids import TimeGrid
from expost.mechanisms.noise_reduction import BrownianNoiseReduction
from expost.stopping import MemorylessRule, RelativeError, StoppingRule

__all__ = [
    "ALPHAS",
    "RULES",
    "ValueAbove",
    "bm_ex_post_rdp",
    "bm_rdp_samples",
    "bucket_rdp_samples",
    "bucket_violations",
    "gaussian_bucket",
    "per_value",
    "post_processing_failure",
    "tilted_runs",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]

ALPHAS = (1.5, 2.0, 4.0, 8.0)
_FX, _FXP = np.array([3.0]), np.array([2.0])  # Δ = 1; a value the relative-error rule can meet
_TIMES = tuple(float(t) for t in np.geomspace(4.0, 0.25, 30))  # rho from 1/8 to 2
RULES = ("relative-error", "threshold", "adversarial")
_DELTA = 1e-3
_RATIO = 1.0  # Δ/σ of the Gaussian release in the failure demonstration


@frozen
class ValueAbove(MemorylessRule):
    """Stop once the released (scalar) value exceeds ``level``: a threshold on the release."""

    level: float

    def _fires(
        self, values: FloatArray, times: FloatArray, sensitivity: float, index: IndexArray
    ) -> BoolArray:
        fired: BoolArray = values[..., 0] > self.level
        return fired


def _rule(name: str) -> StoppingRule:
    if name == "relative-error":
        return RelativeError(0.5)
    if name == "threshold":
        return ValueAbove(3.5)
    return LossAbove(Constant(1.0), tuple(_FX), tuple(_FXP))


def tilt(alpha: float) -> float:
    """θ = max(0, α − 2): the weighted sample's second moment is exp(2(α−1−θ)²·rho) (module doc)."""
    return max(0.0, alpha - 2.0)


def bm_rdp_samples(
    rule: str, alpha: float, theta: float, halved: bool, n: int, rng: np.random.Generator
) -> FloatArray:
    """n runs of ``w·exp((α−1)(L − ε_α(Y)))`` for the BM on f(x) = 3, f(x') = 2 (Δ = 1).

    Drawn with every iterate shifted by θ·(f(x) − f(x')) (θ = 0: the plain law), weighted by
    ``w = exp(−θL + θ(θ+1)·Δ²/(2T))``; ε_α(Y) = ``ExPostRDP.of_rho(rho).eps(α)`` with the
    library's realised rho (the batch's ``cost``), halved for the twin. The Markov level of
    `markov_weights` is the library's ``probabilistic(delta, orders=[α])``.
    """
    loss, rho, log_w = tilted_runs(rule, theta, n, rng)
    eps = per_value(rho / (2.0 if halved else 1.0), lambda r: ExPostRDP.of_rho(r).eps(alpha))
    out: FloatArray = np.exp((alpha - 1.0) * (loss - eps) + log_w)
    return out


def tilted_runs(
    rule: str, theta: float, n: int, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(L, the library's realised rho, log w) of n BM runs with every iterate shifted by
    θ·(f(x) − f(x')); ``log w = −θL + θ(θ+1)·Δ²/(2T)`` (Girsanov in privacy time)."""
    bm = BrownianNoiseReduction(TimeGrid(_TIMES), 1.0, _rule(rule))
    tr = bm.run_batch(_FX + theta * (_FX - _FXP), n, rng)
    assert tr.cost is not None  # a BM always has its zCDP cost
    loss = gaussian_loss(tr.value, tr.times, _FX, _FXP)
    log_w: FloatArray = -theta * loss + theta * (theta + 1.0) / (2.0 * tr.times)
    return loss, np.asarray(tr.cost, dtype=np.float64), log_w


def per_value(values: FloatArray, bound: Callable[[float], float]) -> FloatArray:
    """``bound`` (a library guarantee) at each run's value, evaluated once per distinct value."""
    distinct, where = np.unique(values, return_inverse=True)
    out: FloatArray = np.array([bound(float(v)) for v in distinct])[where]
    return out


def _bm_audit(suite: str, rule: str, alpha: float) -> Audit:
    theta = tilt(alpha)
    name = f"ex-post-rdp/bm/{rule}/alpha-{alpha:g}"
    how = "plain Monte Carlo" if theta == 0.0 else f"tilted by θ = {theta:g} (Girsanov)"
    n = 20_000 if suite == QUICK else 200_000
    return Audit(
        name=name,
        source="THEORY §11 (ex-post RDP of the BM; Räisä, Koskela & Honkela 2025)",
        statement=(
            f"BM, Δ = 1, 30 log-spaced times in [0.25, 4], {rule} stopping rule: "
            f"E[exp((α−1)(L − α·Δ²/(2T)))] <= 1 at α = {alpha:g} ({how})"
        ),
        claim=EValueClaim(1.0),
        simulate=partial(bm_rdp_samples, rule, alpha, theta, False),
        n=n,
        twin=Twin(
            f"{name}/rho-halved",
            EValueClaim(1.0),
            partial(bm_rdp_samples, rule, alpha, theta, True),
        ),
        chunk_size=50_000,
    )


@register(QUICK, PAPER)
def bm_ex_post_rdp(suite: str) -> list[Audit]:
    """The BM's ex-post RDP under three adaptive rules at α in `ALPHAS` (quick: α = 4 only)."""
    alphas = (4.0,) if suite == QUICK else ALPHAS
    return [_bm_audit(suite, rule, a) for rule in RULES for a in alphas]


# --- Post-processing: a probabilistic ex-post bound fails, ex-post RDP holds ----------------


def _tail(z: float) -> float:
    """P(N(0, 1) > z)."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def gaussian_bucket(delta: float = _DELTA, ratio: float = _RATIO) -> tuple[float, float, float]:
    """(ε, cut, P): for y ~ N(f(x), σ²) with Δ/σ = ``ratio`` and z = (y − f(x))/σ,

    ε = ratio²/2 + ratio·z_(1−delta) is the constant ex-post bound that L = ratio·z + ratio²/2
    exceeds with probability delta; the bucket {z >= c} has loss log Q(c)/Q(c + ratio) (Q the
    normal tail, increasing in c); ``cut`` is the c where it equals ε (any higher cut exceeds ε);
    P = Q(cut)
    is the probability that the coarsened output exceeds its carried bound ε. mpmath, 30 digits.
    The audits cut `_ABOVE` higher, so that the bucket's loss is strictly above ε.
    """
    import mpmath as mp  # lazy: comes with sympy, needed only here

    with mp.workdps(30):
        r = mp.mpf(ratio)
        z = mp.sqrt(2) * mp.erfinv(1 - 2 * mp.mpf(delta))
        eps = r**2 / 2 + r * z

        def q(c: Any) -> Any:
            return mp.erfc(c / mp.sqrt(2)) / 2

        cut = mp.findroot(lambda c: mp.log(q(c) / q(c + r)) - eps, z - r)
        return float(eps), float(cut), float(q(cut))


_ABOVE = 1e-9  # the audits' cut sits this far above `gaussian_bucket`'s (loss strictly > ε)


def _coarsened_loss(z: FloatArray, cut: float, ratio: float) -> FloatArray:
    """Loss of the post-processed output: the bucket's loss above ``cut``, y's own below."""
    cut += _ABOVE
    bucket = math.log(_tail(cut) / _tail(cut + ratio))
    out: FloatArray = np.where(z >= cut, bucket, ratio * z + ratio**2 / 2)
    return out


def bucket_violations(n: int, rng: np.random.Generator) -> BoolArray:
    """n releases under x, coarsened: does the output's loss exceed the carried bound ε?"""
    eps, cut, _ = gaussian_bucket()
    z = rng.standard_normal(n)
    out: BoolArray = _coarsened_loss(z, cut, _RATIO) > eps
    return out


def bucket_rdp_samples(alpha: float, halved: bool, n: int, rng: np.random.Generator) -> FloatArray:
    """n values of exp((α−1)(L_g − ε_α)) on the coarsened outputs, ε_α of the release (rho =
    ratio²/2 through `ExPostRDP`), halved for the twin."""
    _, cut, _ = gaussian_bucket()
    rho = _RATIO**2 / 2 / (2.0 if halved else 1.0)
    eps = ExPostRDP.of_rho(rho).eps(alpha)
    z = rng.standard_normal(n)
    out: FloatArray = np.exp((alpha - 1.0) * (_coarsened_loss(z, cut, _RATIO) - eps))
    return out


@register(PAPER)
def post_processing_failure(suite: str) -> list[Audit]:
    """The bucket above the cut refutes the probabilistic ex-post bound; ex-post RDP holds."""
    eps, cut, prob = gaussian_bucket()
    n = 1_000_000
    setting = (
        f"Gaussian release, Δ = σ, constant ex-post bound ε = {eps:.5g} (P(L > ε) = {_DELTA:g}); "
        f"coarsened into the bucket {{y >= f(x) + {cut:.4f}σ}} (= f(x') + {cut + _RATIO:.4f}σ), "
        f"which carries ε (sup over its preimage)"
    )
    return [
        Audit(
            name="post-processing/gaussian-bucket",
            source="THEORY §11 (probabilistic ex-post is not immune; Räisä et al. 2025)",
            statement=(
                f"{setting}: P(L_g > ε) <= {_DELTA:g} (exact: {prob:.5g} = {prob / _DELTA:.4g}·delta)"
            ),
            claim=ProbabilityClaim(_DELTA),
            simulate=bucket_violations,
            n=n,
            twin=Twin(
                "post-processing/gaussian-bucket/claimed-at-1.5-delta",
                ProbabilityClaim(1.5 * _DELTA),
            ),
            expected="refuted",
            chunk_size=200_000,
        ),
        Audit(
            name="post-processing/gaussian-bucket-rdp",
            source="THEORY §11 (ex-post RDP is immune to post-processing)",
            statement=f"{setting}: E[exp((α−1)(L_g − α·Δ²/(2σ²)))] <= 1 at α = 2",
            claim=EValueClaim(1.0),
            simulate=partial(bucket_rdp_samples, 2.0, False),
            n=n,
            twin=Twin(
                "post-processing/gaussian-bucket-rdp/rho-halved",
                EValueClaim(1.0),
                partial(bucket_rdp_samples, 2.0, True),
            ),
            chunk_size=200_000,
        ),
    ]
