"""A grid of counting filters over two budgets (steps, checks), reported at the cheapest filter
that admits the run, is valid at the *sum* of the filters' δ; not at their maximum.

Accuracy-first DP-SGD (docs/apps/dp-sgd.md, "Why the report is valid") fixes before the run a
family of filters F_(j,m): at most j units of steps (each round dominated by one pair A) and
checks of total cost at most B_m (each unit of check cost dominated by one pair C). F_(j,m) is
(ε_jm, δ_jm)-DP (δ_jm = max over both directions of H_(e^ε_jm)(A^⊗j ⊗ C^⊗B_m): the padding
argument of THEORY §12 for each budget, the two budgets' rounds interleaved adaptively). The
report is ε_K for K the cheapest filter admitting the realised run (a function of the
transcript). For every event S, P_x(S) <= E_x'[e^(ε_K)·1_S] + Σ δ_jm: split S by K; on {K = k}
the transcript is the one F_k would have produced (THEORY §12 (ii), §13 route choice).

Checked exactly (rational arithmetic) on an instance with randomised-response pairs, A at
e^ε0 = 2 and C at e^ε0 = 2, j <= 2, B = (1, 2), e^ε_jm = (3/2)^(j+m): the supremum over every
adaptive strategy (steps and checks interleaved in any order, stop anywhere; backward induction
over the output tree) of sup_S [P_x(S) − E_x'[e^(ε_K) 1_S]] = E_x[(1 − e^(ε_K)/LR)_+] is at most
the claimed aggregate of the four δ_jm in both directions; and the library's `checked_grid`
splits δ so that its J·M filters' δ sum to at most δ and reports the cheapest admitting filter.
The wrong variant aggregates by the maximum (each filter at the full δ, no split): an analyst
that stops at different filters on different outputs reaches 25/81 > 5/18.
Assumptions: each round dominated (γ >= 0 sense) by its budget's pair; the pairs, the filters
and the ε_jm fixed before the first round; the analyst adaptive. Source: THEORY §12, §13.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as Fr
from functools import cache
from typing import Any

import sympy as sp

from expost.symbolic import Proof, Step
from expost.symbolic.stopping import (
    Pair,
    hockey_stick,
    pair_product,
    randomized_response,
    reverse,
)

__all__ = ["PROOF"]

_J, _BUDGETS = 2, (1, 2)
_FILTERS = tuple((j, m) for j in range(1, _J + 1) for m in range(len(_BUDGETS)))
deltas = sp.symbols(f"delta_1:{len(_FILTERS) + 1}", positive=True)  # δ of each filter
_STEP, _CHECK = randomized_response(Fr(2)), randomized_response(Fr(2))
_GAMMA = {(j, m): Fr(3, 2) ** (j + m) for j, m in _FILTERS}  # e^ε_jm, increasing in j and m


def _delta(j: int, m: int) -> Fr:
    joint = pair_product([_STEP] * j + [_CHECK] * _BUDGETS[m])
    g = _GAMMA[(j, m)]
    return max(hockey_stick(joint, g), hockey_stick(reverse(joint), g))


def _reported(j: int, b: int) -> Fr:
    """e^ε of the cheapest filter admitting j steps and b checks (ε increasing in j and m)."""
    m = next(m for m, budget in enumerate(_BUDGETS) if b <= budget)
    return _GAMMA[(max(j, 1), m)]


def _sup(step: Pair, check: Pair) -> Fr:
    """max over adaptive strategies of Σ_transcripts (P − e^ε_K·Q)_+ (backward induction)."""

    @cache
    def value(j: int, b: int, p: Fr, q: Fr) -> Fr:
        best = max(p - _reported(j, b) * q, Fr(0))  # stop here
        if j < _J:
            best = max(
                best,
                sum((value(j + 1, b, p * x, q * y) for x, y in zip(*step, strict=True)), Fr(0)),
            )
        if b < _BUDGETS[-1]:
            best = max(
                best,
                sum((value(j, b + 1, p * x, q * y) for x, y in zip(*check, strict=True)), Fr(0)),
            )
        return best

    return value(0, 0, Fr(1), Fr(1))


def _library() -> Step:
    from expost.apps.learning.accounting import Unit, checked_grid

    units, budgets, delta = (Unit(5, 1.0, 0.1), Unit(5, 1.0, 0.1)), (0.01, 0.04), 1e-5
    grid = checked_grid(units, budgets, delta)
    total = Fr(grid.delta_each) * len(units) * len(budgets)
    cheapest = all(
        grid.reported(j, s) == grid.eps[j - 1][m] for j in (1, 2) for m, s in enumerate(budgets)
    )
    monotone = all(a <= b for row in grid.eps for a, b in itertools.pairwise(row)) and all(
        a <= b for a, b in zip(grid.eps[0], grid.eps[1], strict=True)
    )
    return Step(
        f"checked_grid: {len(units) * len(budgets)} filters at δ_each = {grid.delta_each!r}, "
        f"Σ δ = {float(total):.6g} <= δ = {delta:g} [exact]; ε monotone, so the report "
        "(units, first budget >= spent) is the cheapest admitting filter",
        total <= Fr(delta) and cheapest and monotone and math.isfinite(grid.eps[-1][-1]),
    )


def check(claim: Any) -> tuple[Step, ...]:
    """The supremum over strategies against the claimed aggregate of the filters' δ, both
    directions; the library's split and report."""
    values = {
        d: sp.Rational(_delta(j, m).numerator, _delta(j, m).denominator)
        for d, (j, m) in zip(deltas, _FILTERS, strict=True)
    }
    bound = sp.Rational(claim.subs(values))
    forward, backward = _sup(_STEP, _CHECK), _sup(reverse(_STEP), reverse(_CHECK))
    tag = "instance (A, C = RR at 2, j <= 2, B = (1, 2), e^ε_jm = (3/2)^(j+m))"
    return (
        Step(
            f"{tag}: the four filters' δ_jm = {[str(_delta(j, m)) for j, m in _FILTERS]} [exact]",
            all(_delta(j, m) > 0 for j, m in _FILTERS),
        ),
        Step(
            f"{tag}: sup over adaptive strategies of E_x[(1 − e^ε_K/LR)_+] = {forward} <= "
            f"aggregate {bound} [exact, backward induction]",
            Fr(str(forward)) <= Fr(str(bound)),
        ),
        Step(
            f"{tag}: the same with x and x' exchanged, {backward} <= {bound} [exact]",
            Fr(str(backward)) <= Fr(str(bound)),
        ),
        _library(),
    )


PROOF = Proof(
    name="checked-grid",
    source="THEORY §12 (filters that count, realised privacy), §13 (choosing among routes)",
    statement=(
        "Counting filters F_(j,m) over steps and check budgets fixed in advance, each "
        "(ε_jm, δ_jm)-DP; reporting ε_K of the cheapest filter admitting the run gives "
        "P_x(S) <= E_x'[e^ε_K 1_S] + Σ δ_jm for every event S."
    ),
    assumptions=(
        "each round dominated, for every γ >= 0, by its budget's pair",
        "pairs, filters and ε_jm fixed before the first round; the analyst adaptive",
    ),
    claim=sp.Add(*deltas),
    wrong_claim=sp.Max(*deltas),
    check=check,
)
