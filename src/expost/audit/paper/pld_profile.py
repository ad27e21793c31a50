"""A composed PLD's δ(ε) against Monte Carlo of the true privacy loss (THEORY §12).

`PrivacyLossDistribution.delta(eps)` claims an upper bound on H_{e^ε}(P‖Q) = E_P[(1 − e^(ε − L))⁺]
of the k-fold product pair, L the sum of the k rounds' true losses, in both neighbour
directions. The simulators draw L exactly (round by round, per direction) and return
``X = (1 − e^(ε − L))⁺ ∈ [0, 1]``; the claim ``E[X] <= pld.delta(ε)`` is tested by the betting
test (`EValueClaim`). Pairs (σ and Laplace scales in units of the sensitivity), Poisson
subsampling at rate q (Zhu, Dong & Wang Thm 11): remove direction ((1 − q)·Q + q·P, Q), add
direction (Q, (1 − q)·Q + q·P), with P = N(μ, 1) or Lap(ε0, 1) and Q centred at 0.

Twins (wrong claims about the same runs, each refuted):

- ``remove-only``: Poisson-subsampled Laplace (b = 1, q = 0.5), 2 rounds, ε = 0.25, the δ of
  the remove direction alone: after one round it is the larger, after two the add direction is
  (Lebeda, Regehr, Kamath & Steinke, arXiv 2405.20769), so pricing one direction under-reports.
- ``one-round-short``: 4 Gaussian rounds (μ = 1) priced as 3.
- ``half-rate``: Poisson-subsampled Gaussian (σ = 1, q = 0.2, 10 steps) priced at q = 0.1, the
  commonest DP-SGD accounting bug.

The deploy-suite audit of a PLD profile is in `expost.audit.deploy.pld_profile`.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

import numpy as np
import numpy.typing as npt

from expost.audit.claims import EValueClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, QUICK, register
from expost.pld import PrivacyLossDistribution

__all__ = [
    "gaussian_excess",
    "laplace_excess",
    "pld_profile_audits",
]

FloatArray = npt.NDArray[np.float64]
Direction = Literal["remove", "add"]


def _excess(eps: float, loss: FloatArray) -> FloatArray:
    out: FloatArray = np.maximum(0.0, -np.expm1(eps - loss))
    return out


def _subsampled(log_ratio: FloatArray, q: float, direction: Direction) -> FloatArray:
    """The loss of one round from log(p1/p0) at the output: log((1 − q) + q·p1/p0), negated in
    the add direction."""
    mixed: FloatArray = np.log1p(q * np.expm1(log_ratio)) if q < 1.0 else log_ratio
    return mixed if direction == "remove" else -mixed


def _with_record(n: int, q: float, direction: Direction, rng: np.random.Generator) -> FloatArray:
    """1.0 where the output is drawn from the shifted law P (remove direction, with prob. q)."""
    if direction == "add":
        return np.zeros(n)
    out: FloatArray = (rng.random(n) < q).astype(np.float64)
    return out


def gaussian_excess(
    mu: float, q: float, rounds: int, direction: Direction, eps: float, n: int,
    rng: np.random.Generator,
) -> FloatArray:  # fmt: skip
    """X for ``rounds`` Poisson-subsampled Gaussian rounds at μ = Δ/σ (unit variance)."""
    loss = np.zeros(n)
    for _ in range(rounds):
        y = rng.standard_normal(n) + mu * _with_record(n, q, direction, rng)
        loss += _subsampled(mu * y - mu * mu / 2.0, q, direction)
    return _excess(eps, loss)


def laplace_excess(
    eps0: float, q: float, rounds: int, direction: Direction, eps: float, n: int,
    rng: np.random.Generator,
) -> FloatArray:  # fmt: skip
    """X for ``rounds`` Poisson-subsampled Laplace rounds at ε0 = Δ/b (unit scale)."""
    loss = np.zeros(n)
    for _ in range(rounds):
        u = rng.laplace(0.0, 1.0, n) + eps0 * _with_record(n, q, direction, rng)
        loss += _subsampled(np.abs(u) - np.abs(u - eps0), q, direction)
    return _excess(eps, loss)


def _audit(
    name: str, statement: str, pld: PrivacyLossDistribution, wrong: float, twin: str,
    eps: float, simulate: partial[FloatArray], n: int,
) -> Audit:  # fmt: skip
    return Audit(
        name=f"pld-profile/{name}",
        source="THEORY §12; Zhu–Dong–Wang Thm 10, 11",
        statement=f"{statement}: E[(1 − e^(eps − L))+] <= pld.delta({eps:g}) = {pld.delta(eps):.5g}",
        claim=EValueClaim(pld.delta(eps)),
        simulate=simulate,
        n=n,
        twin=Twin(f"pld-profile/{name}/{twin}", EValueClaim(wrong)),
        chunk_size=50_000,
    )


def _laplace_case(n: int) -> Audit:
    eps, rounds = 0.25, 2
    pld = PrivacyLossDistribution.laplace(1.0, sampling_prob=0.5).self_compose(rounds)
    return _audit(
        "laplace-subsampled-add",
        "2 Poisson-subsampled Laplace rounds (b = 1, q = 0.5), add direction",
        pld, pld.remove.delta(eps), "remove-only", eps,
        partial(laplace_excess, 1.0, 0.5, rounds, "add", eps), n,
    )  # fmt: skip


def _gaussian_case(n: int) -> Audit:
    eps, one = 1.0, PrivacyLossDistribution.gaussian(1.0)
    return _audit(
        "gaussian", "4 Gaussian rounds (μ = 1)", one.self_compose(4),
        one.self_compose(3).delta(eps), "one-round-short", eps,
        partial(gaussian_excess, 1.0, 1.0, 4, "remove", eps), n,
    )  # fmt: skip


def _subsampled_case(n: int) -> Audit:
    eps, steps = 0.5, 10
    pld = PrivacyLossDistribution.gaussian(1.0, sampling_prob=0.2).self_compose(steps)
    wrong = PrivacyLossDistribution.gaussian(1.0, sampling_prob=0.1).self_compose(steps)
    return _audit(
        "subsampled-gaussian-remove",
        "10 Poisson-subsampled Gaussian steps (σ = 1, q = 0.2), remove direction",
        pld, wrong.delta(eps), "half-rate", eps,
        partial(gaussian_excess, 1.0, 0.2, steps, "remove", eps), n,
    )  # fmt: skip


@register(QUICK, PAPER)
def pld_profile_audits(suite: str) -> list[Audit]:
    """The DP-SGD profile in every suite; the Lebeda twin and Gaussian rounds in the paper
    suite (the remove-only twin is 11% below the truth: too close to refute at small N)."""
    if suite == QUICK:
        return [_subsampled_case(50_000)]
    return [_laplace_case(400_000), _gaussian_case(200_000), _subsampled_case(200_000)]
