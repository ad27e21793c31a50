"""Ex-post Rényi DP at deployment deltas: the Markov form (THEORY §11; the paper-suite audits of
ex-post RDP are in `expost.audit.paper.ex_post_rdp`).

``ex-post-rdp-markov/bm/<rule>/alpha-<α>/delta-<δ>``: the Markov form
  ``P(L > ε_α(Y) + log(1/delta)/(α−1)) <= delta`` at deployment deltas, drawn tilted by θ = α − 1,
  where the weight on the event is below delta (`ImportanceClaim`). Twin: the Markov term
  dropped (the RDP value itself claimed as a high-probability bound).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import numpy.typing as npt

from expost.audit.core import Audit
from expost.audit.paper.ex_post_rdp import RULES, per_value, tilted_runs
from expost.audit.registry import DEPLOY, DEPLOY_QUICK, register_at_deltas
from expost.audit.tilting import ROUNDING_MARGIN, ImportanceCase
from expost.ex_post_rdp import ExPostRDP

__all__ = ["bm_ex_post_rdp_markov", "markov_weights"]

FloatArray = npt.NDArray[np.float64]


def markov_weights(
    rule: str, alpha: float, delta: float, markov: bool, n: int, rng: np.random.Generator
) -> FloatArray:
    """n runs of ``w·1{L > ε_α(Y) + log(1/delta)/(α−1)}`` (``markov=False``, the twin: the term
    log(1/delta)/(α−1) dropped), drawn tilted by θ = α − 1. On the event
    ``w = exp(−θL + θ(θ+1)·rho) < exp(−log(1/delta)) = delta`` (1 for the twin): the Markov step
    of THEORY §11 is the weight bound."""
    loss, rho, log_w = tilted_runs(rule, alpha - 1.0, n, rng)

    def level(r: float) -> float:
        g = ExPostRDP.of_rho(r)
        return g.probabilistic(delta, orders=[alpha]).bound if markov else g.eps(alpha)

    out: FloatArray = np.where(loss > per_value(rho, level), np.exp(log_w), 0.0)
    return out


def _markov_audit(suite: str, delta: float, rule: str, alpha: float) -> Audit:
    name = f"ex-post-rdp-markov/bm/{rule}/alpha-{alpha:g}"
    return ImportanceCase(
        delta=delta,
        name=name,
        source="THEORY §11 (ex-post RDP, Markov conversion)",
        statement=(
            f"BM, Δ = 1, 30 log-spaced times in [0.25, 4], {rule} stopping rule: "
            f"P(L > α·Δ²/(2T) + log(1/delta)/(α−1)) <= delta at α = {alpha:g}"
        ),
        proposal=f"every iterate shifted by (α−1)·(f(x) − f(x')), α = {alpha:g}",
        weight_bound=delta * ROUNDING_MARGIN,
        simulate=partial(markov_weights, rule, alpha, delta, True),
        twin_name=f"{name}/markov-term-dropped",
        twin_proposal="the same tilt (weight < 1 on P(L > α·rho))",
        twin_bound=ROUNDING_MARGIN,
        twin_simulate=partial(markov_weights, rule, alpha, delta, False),
    ).audit(200_000 if suite == DEPLOY else 50_000, 50_000)


@register_at_deltas(DEPLOY, DEPLOY_QUICK)
def bm_ex_post_rdp_markov(suite: str, delta: float) -> list[Audit]:
    """The Markov form of the BM's ex-post RDP at deployment deltas (deploy-quick: one rule)."""
    rules = RULES if suite == DEPLOY else ("adversarial",)
    return [_markov_audit(suite, delta, rule, a) for rule in rules for a in (2.0, 4.0)]
