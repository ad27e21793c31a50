"""A user's own mechanism admitted by computed domination, under adaptive stopping (THEORY §13).

``computed-domination/user-pair``: `PLDFilter(2, 0.05)` fixed on randomised response at
ε0 = 0.5 admits a three-outcome mechanism given by its pmfs — P = (0.5, 0.3, 0.2) with the
record, Q = (0.4, 0.3, 0.3) without — only by computation (no closed-form order relates a pmf
pair to randomised response; `expost.costs.domination`). The analyst runs the rounds the filter
admits (K, read from the library by spending until it refuses) and stops on the loss it sees
(below −1, or past ε + 1). The audit tests the add direction (neighbours without the record:
the loss log Q/P under Q), the filter's (ε, δ)-DP as the hockey-stick mean
``E[(1 − e^(ε − L))⁺] <= δ`` (`EValueClaim`).

Twin ``one-direction``: a filter that checks domination in the remove direction only admits
P' = (0.5, 0.5, 0), Q' = (0.45, 0.45, 0.1) — below randomised response in that direction
(checked with the library's own bounds), but in the add direction an output Q' has and P' lacks
reveals the record with probability 0.1 per round: the same K rounds have δ >= 1 − 0.9^K.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import numpy.typing as npt

from expost.audit.claims import EValueClaim
from expost.audit.core import Audit, Twin
from expost.audit.paper.counting_filter import filter_rounds
from expost.audit.registry import PAPER, QUICK, register
from expost.costs import PairCost
from expost.costs.domination import profile_bounds
from expost.costs.pairs import ClosedPair
from expost.filters import DPCost, PLDFilter

__all__ = ["computed_domination_audits", "pair_stopping"]

FloatArray = npt.NDArray[np.float64]

_EPS, _DELTA, _EPS0 = 2.0, 0.05, 0.5
USER = ((0.5, 0.3, 0.2), (0.4, 0.3, 0.3))
"""(P, Q) of the user's mechanism, dominated by randomised response at ε0 in both directions."""
ONE_SIDED = ((0.5, 0.5, 0.0), (0.45, 0.45, 0.1))
"""(P', Q') of the twin's mechanism, dominated in the remove direction only."""


def pair_stopping(
    pair: tuple[tuple[float, ...], tuple[float, ...]], rounds: int, n: int, rng: np.random.Generator
) -> FloatArray:
    """``(1 − e^(ε − L))⁺`` of n interactions of up to ``rounds`` rounds of ``pair`` in the add
    direction (outputs drawn from Q, loss log Q/P: +∞ where P is 0), stopped once L <= −1 or
    L > ε + 1."""
    p, q = np.asarray(pair[0]), np.asarray(pair[1])
    with np.errstate(divide="ignore"):
        step = np.log(q) - np.log(p)  # +inf where p = 0 (q > 0 there)
    loss = np.zeros(n)
    running = np.ones(n, dtype=bool)
    for _ in range(rounds):
        out = rng.choice(q.size, size=n, p=q)
        loss = np.where(running, loss + step[out], loss)
        running &= (loss > -1.0) & (loss <= _EPS + 1.0)
    with np.errstate(over="ignore"):
        result: FloatArray = np.maximum(0.0, -np.expm1(_EPS - loss))
    return result


def _one_direction_admits() -> bool:
    """Would a check of the remove direction alone admit the twin's pair? (Its upper δ below
    randomised response's lower δ on a grid up to its largest loss, and no loss +∞ there.)"""
    fixed = ClosedPair("rr", _EPS0)  # DPCost(_EPS0)'s pair
    twin = PairCost.from_pmfs(*ONE_SIDED).pair()
    grid = np.linspace(0.0, math.log(0.5 / 0.45) * (1 + 1e-12), 200)
    upper = profile_bounds(twin, grid[:-1], "remove")[1]
    lower = profile_bounds(fixed, grid[1:], "remove")[0]
    return bool(np.all(upper <= lower))


def _audit(n: int) -> Audit:
    filt = PLDFilter(_EPS, _DELTA, DPCost(_EPS0))
    user = PairCost.from_pmfs(*USER)
    rounds = filter_rounds(filt, user)
    if filt.accepts(PairCost.from_pmfs(*ONE_SIDED)) or not _one_direction_admits():
        raise AssertionError("the twin must be admitted by a one-direction check, not the filter")
    name = "computed-domination/user-pair"
    claim = EValueClaim(_DELTA)
    return Audit(
        name=name,
        source="THEORY §13 (domination on a grid)",
        statement=(
            f"PLDFilter({_EPS:g}, {_DELTA:g}) fixed on RR(eps0 = {_EPS0:g}) admits a pmf pair by "
            f"computation ({rounds} rounds), analyst stopping on its loss, add direction: "
            f"E[(1 − e^(eps − L))+] <= {_DELTA:g}"
        ),
        claim=claim,
        simulate=partial(pair_stopping, USER, rounds),
        n=n,
        twin=Twin(f"{name}/one-direction", claim, partial(pair_stopping, ONE_SIDED, rounds)),
        chunk_size=50_000,
    )


@register(QUICK, PAPER)
def computed_domination_audits(suite: str) -> list[Audit]:
    """The user pair admitted by computation, in every suite."""
    return [_audit(50_000 if suite == QUICK else 400_000)]
