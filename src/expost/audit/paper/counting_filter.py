"""The counting filter (`PLDFilter`) under adaptive stopping, and a mixed-family adversary that
breaks a naive natural filter (THEORY §12).

Both audits test the filter's (ε, δ)-DP as the hockey-stick mean ``E[(1 − e^(ε − L))⁺] <= δ``
of the stopped interaction's total loss L (`EValueClaim`; ``P(L > ε) <= δ`` is not what
(ε, δ)-DP promises).

``counting-filter/laplace-stopping``: Laplace rounds of ε0 = 0.2 on a scalar of sensitivity 1,
as many as `PLDFilter(1, 0.05, LaplaceCost(0.2))` admits (its count K, read from the library by
spending until it refuses); the analyst sees each released value (so the loss, it knows x and
x') and stops once the loss falls to −2·ε0 or below (a poor start) or rises past ε + 1 (banked).
The rule is simulated as stated (`stops`): a round's loss |y| − |y − ε0| is +ε0 for y >= ε0,
−ε0 for y <= 0 and 2y − ε0 between, so the loss is kept as ε0·j + 2·s, j an integer (each round
adds ±1) and s the sum of the outputs strictly between 0 and ε0; a path of atoms only (s = 0) is
compared in integers, so it stops exactly at −2·ε0 (a float sum of ±ε0 drifts: 0.2 + 0.2 + 0.2
is 0.6000000000000001). With s > 0 the loss is continuous, compared in floats.
Twin ``twice-the-rounds``: a filter admitting 2K rounds, the same analyst.

``counting-filter/mixed-menu``: randomised response at e^ε0 = 2 and 3, (ε, δ) = (log 1.5, 0.38).
The analyst runs RR(2); after output 0 (the one the record favours) RR(3); after output 1 RR(2)
again and, after its output 0, a third RR(2). Under `PLDFilter` fixed on the ε0 = log 3 pair
(which dominates both) only the first round runs. Twin ``natural-filter``: a naive natural
filter that admits a round while the composed PLD of the rounds actually run fits (ε, δ): every
run of this analyst fits (the library's PLD of RR(2)⊗RR(3) and of RR(2)^⊗3 at ε), yet the
stopped interaction's δ is 89/216 = 0.412 > 0.38 (exact, `proofs/counting_filter.py`; Regehr
et al., arXiv 2602.15815: natural filters are free only for totally ordered families).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import partial

import numpy as np
import numpy.typing as npt

from expost.audit.claims import EValueClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, QUICK, register
from expost.errors import BudgetExceeded
from expost.filters import Cost, DPCost, LaplaceCost, PLDFilter
from expost.pld import PrivacyLossDistribution

__all__ = [
    "counting_filter_audits",
    "filter_rounds",
    "laplace_stopping",
    "mixed_menu",
    "stops",
]

FloatArray = npt.NDArray[np.float64]

_EPS, _DELTA, _EPS0 = 1.0, 0.05, 0.2
_MIXED_EPS, _MIXED_DELTA = math.log(1.5), 0.38


def filter_rounds(filt: PLDFilter, cost: Cost) -> int:
    """How many rounds of ``cost`` the library's filter records before it refuses one."""
    count = 0
    while True:
        try:
            filt = filt.spend(cost)
        except BudgetExceeded:
            return count
        count += 1


def stops(
    j: npt.NDArray[np.int64], s: FloatArray, eps0: float, top: float
) -> npt.NDArray[np.bool_]:
    """Whether the loss L = eps0·j + 2·s (module doc) has fallen to −2·eps0 or risen past
    ``top``; atoms-only paths (s = 0) in integers (eps0·j > top iff j > ⌊top/eps0⌋, in
    rationals: eps0 and top are the floats given)."""
    above = math.floor(Fraction(top) / Fraction(eps0))
    low = np.where(s == 0.0, j <= -2, 2.0 * s <= -eps0 * (j + 2))
    high = np.where(s == 0.0, j > above, eps0 * j + 2.0 * s > top)
    out: npt.NDArray[np.bool_] = low | high
    return out


def laplace_stopping(rounds: int, n: int, rng: np.random.Generator) -> FloatArray:
    """``(1 − e^(ε − L))⁺`` of n interactions of up to ``rounds`` Laplace rounds, stopped early
    once L <= −2·ε0 or L > ε + 1 (module doc: the loss kept in atoms, `stops`)."""
    j, s = np.zeros(n, dtype=np.int64), np.zeros(n)
    running = np.ones(n, dtype=bool)
    for _ in range(rounds):
        y = rng.laplace(_EPS0, 1.0, n)  # the released value over b, under x (f(x) = ε0·b)
        j += np.where(running, np.where(y >= _EPS0, 1, -1), 0)
        s += np.where(running & (y > 0.0) & (y < _EPS0), y, 0.0)
        running &= ~stops(j, s, _EPS0, _EPS + 1.0)
    loss = _EPS0 * j + 2.0 * s
    out: FloatArray = np.maximum(0.0, -np.expm1(_EPS - loss))
    return out


def _rr(e_eps: float, n: int, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    """n outputs of randomised response at e^ε0 under x (1.0 = output 0, P = e/(1 + e)) and the
    loss of each."""
    zero = (rng.random(n) < e_eps / (1.0 + e_eps)).astype(np.float64)
    return zero, np.where(zero > 0, math.log(e_eps), -math.log(e_eps))


def mixed_menu(max_rounds: int, n: int, rng: np.random.Generator) -> FloatArray:
    """``(1 − e^(ε − L))⁺`` of the module doc's analyst, cut after ``max_rounds`` rounds."""
    first, loss = _rr(2.0, n, rng)
    if max_rounds >= 2:
        _, after_zero = _rr(3.0, n, rng)
        again, after_one = _rr(2.0, n, rng)
        loss += np.where(first > 0, after_zero, after_one)
        if max_rounds >= 3:
            _, third = _rr(2.0, n, rng)
            loss += np.where((first == 0) & (again > 0), third, 0.0)
    out: FloatArray = np.maximum(0.0, -np.expm1(_MIXED_EPS - loss))
    return out


def _natural_admits() -> bool:
    """Does the naive natural filter admit both runs the mixed-menu analyst can make?"""
    rr2 = PrivacyLossDistribution.pure_dp(math.log(2.0))
    rr3 = PrivacyLossDistribution.pure_dp(math.log(3.0))
    runs = (rr2.compose(rr3), rr2.self_compose(3))
    return all(run.delta(_MIXED_EPS) <= _MIXED_DELTA for run in runs)


def _audit(
    name: str, source: str, statement: str, delta: float, simulate: partial[FloatArray],
    twin: str, twin_simulate: partial[FloatArray], n: int,
) -> Audit:  # fmt: skip
    """``E[(1 − e^(ε − L))⁺] <= delta`` for the runs and for the twin's own runs."""
    return Audit(
        name=name,
        source=source,
        statement=f"{statement}: E[(1 − e^(eps − L))+] <= {delta:g}",
        claim=EValueClaim(delta),
        simulate=simulate,
        n=n,
        twin=Twin(f"{name}/{twin}", EValueClaim(delta), twin_simulate),
        chunk_size=50_000,
    )


def _laplace_audit(n: int) -> Audit:
    rounds = filter_rounds(PLDFilter(_EPS, _DELTA, LaplaceCost(_EPS0)), LaplaceCost(_EPS0))
    return _audit(
        "counting-filter/laplace-stopping",
        "THEORY §12 (counting filters)",
        f"PLDFilter({_EPS:g}, {_DELTA:g}) on Laplace rounds of eps0 = {_EPS0:g} ({rounds} "
        "rounds), analyst stopping on released values",
        _DELTA, partial(laplace_stopping, rounds),
        "twice-the-rounds", partial(laplace_stopping, 2 * rounds), n,
    )  # fmt: skip


def _mixed_audit(n: int) -> Audit:
    filt = PLDFilter(_MIXED_EPS, _MIXED_DELTA, DPCost(math.log(3.0)))
    rounds = filter_rounds(filt, DPCost(math.log(2.0)))
    if not _natural_admits():  # the twin would not be the filter it claims to be
        raise AssertionError("the naive natural filter must admit the analyst's runs")
    return _audit(
        "counting-filter/mixed-menu",
        "THEORY §12; Regehr et al. 2026",
        f"PLDFilter(log 1.5, {_MIXED_DELTA:g}) fixed on RR(e^eps0 = 3) ({rounds} round), an "
        "adaptive analyst mixing RR(2) and RR(3)",
        _MIXED_DELTA, partial(mixed_menu, rounds),
        "natural-filter", partial(mixed_menu, 3), n,
    )  # fmt: skip


@register(QUICK, PAPER)
def counting_filter_audits(suite: str) -> list[Audit]:
    """Adaptive stopping under the counting filter in every suite; the mixed-menu adversary in
    the paper suite (its twin is 8% above the claim: too close to refute at small N)."""
    if suite == QUICK:
        return [_laplace_audit(50_000)]
    return [_laplace_audit(400_000), _mixed_audit(400_000)]
