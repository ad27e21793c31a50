"""Backward martingale: M(t) = exp(λB(t)/t − λ²/(2t)) has E[M(t)] = 1 and E[M(t) | B(s)] = M(s), s > t.

The claim is the compensator λ²/(2t); the conditional step uses the Brownian bridge
B(t) | B(s) = b ~ N((t/s)·b, t(s − t)/s) (proofs/brownian_bridge.py).
Assumptions: t > 0, s = t + h with h > 0; λ real; B a standard BM (time-reversed Markov).
Source: APC Lemma 6.1.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from expost.symbolic import Proof, Step
from expost.symbolic.gaussian import normal_expectation_exp
from expost.symbolic.steps import identity, log_identity

__all__ = ["PROOF"]

t, h = sp.symbols("t h", positive=True)
lam, x, b = sp.symbols("lambda x b", real=True)
s = t + h


def check(compensator: Any) -> tuple[Step, ...]:
    """Integrate M(t) against N(0, t) and against the bridge law given B(s) = b."""
    log_m = lam * x / t - compensator
    return (
        identity("E[M(t)] = ∫ M(t) N(x; 0, t) dx = 1", normal_expectation_exp(log_m, x, 0, t), 1),
        log_identity(
            "E[M(t) | B(s) = b] = M(s) for s = t + h > t: a martingale in reversed time",
            normal_expectation_exp(log_m, x, t * b / s, t * (s - t) / s),
            sp.exp(lam * b / s - compensator.subs(t, s)),
        ),
    )


PROOF = Proof(
    name="apc-lemma-6.1",
    source="APC Lemma 6.1",
    statement=(
        "For a standard Brownian motion B, M(t) = exp(λ·B(t)/t − λ²/(2t)) has mean 1 and is a "
        "martingale in reversed time."
    ),
    assumptions=("t > 0", "s > t", "λ real", "B(t) ~ N(0, t)"),
    claim=lam**2 / (2 * t),
    wrong_claim=lam**2 / t,
    check=check,
)
