"""Domination decided by computation (`PLDFilter` for pairs no closed-form order relates), and
domination up to τ (THEORY §13; `expost.costs.domination`).

A pair B is dominated by A (a post-processing of A) iff H_γ(B) <= H_γ(A) for every γ >= 0 in
both neighbour directions; the hockey-stick identity H_γ(P‖Q) = 1 − γ + γ·H_{1/γ}(Q‖P) turns
the γ < 1 half of one direction into the γ > 1 half of the other, so ε >= 0 in *both* directions
is the whole statement. On a grid 1 = γ_0 < … < γ_m the test U_B(γ_i) <= τ + (1 − τ)·L_A(γ_{i+1})
(i < m), B's likelihood ratios at most γ_m and P_B(ratio = ∞) <= τ + (1 − τ)·P_A(ratio = ∞),
in both directions, shows B dominated by A ⊗ T_τ, T_τ the *symmetric* (0, τ) pair
((1−τ, τ, 0) against (1−τ, 0, τ)), whose profile is exactly τ + (1 − τ)·H_γ(A).

Checked exactly (rationals; profiles are piecewise linear in γ, so checking every kink covers
all γ >= 0): the identity; on two instances, that every pair the test admits is dominated at
every kink in both directions (the first admitted, the second — dominated in the remove
direction only — refused); that H_γ(A ⊗ T_τ) = τ + (1 − τ)·H_γ(A) and that "reveal the record
with probability τ, else run A" is dominated by A ⊗ T_τ, in both directions; that K rounds of
A ⊗ T_τ stay within H_γ(A^⊗K) + K·τ; and the library's verdicts on the same pairs.

The claim is (directions checked, T_τ symmetric) = (2, 1). The wrong variant (1, 0) checks the
remove direction only — it admits the one-direction pair, which the add direction shows is not
dominated — and uses the one-sided pair (1−τ, τ) against (1, 0), whose profile is
τ + (1 − τ)·H_{γ/(1−τ)}(A), below what "reveal with probability τ" needs (THEORY §13's
Gaussian example: 0.1706 > 0.1620).
Assumptions: finite pairs (a pair with unbounded loss needs a tail argument); τ and the grid
fixed in advance. Source: THEORY §13; Zhu, Dong & Wang 2022 (domination for all γ >= 0).
"""

from __future__ import annotations

import itertools
from fractions import Fraction as Fr
from typing import Any

import sympy as sp

from expost.symbolic import Proof, Step
from expost.symbolic.stopping import Pair, hockey_stick, pair_product, randomized_response, reverse

__all__ = ["PROOF"]

_A = randomized_response(Fr(2))  # the filter's pair: RR at e^ε0 = 2
_USER = ((Fr(1, 2), Fr(3, 10), Fr(1, 5)), (Fr(2, 5), Fr(3, 10), Fr(3, 10)))  # ratios ≤ 3/2
_ONE_WAY = ((Fr(1, 2), Fr(1, 2), Fr(0)), (Fr(9, 20), Fr(9, 20), Fr(1, 10)))  # remove only
_TAU = Fr(1, 20)
_INNER = randomized_response(Fr(3, 2))  # run after "reveal with probability τ": below A
_GRID = tuple(1 + Fr(i, 40) for i in range(41))  # γ from 1 to 2


def _kinks(*pairs: Pair) -> list[Fr]:
    """0, every finite likelihood ratio of the pairs (both ways), and a point past them."""
    ratios = {a / b for p in pairs for a, b in zip(*p, strict=True) if a > 0 and b > 0}
    ratios |= {1 / r for r in ratios} | {Fr(1)}
    return [Fr(0), *sorted(ratios), max(ratios) + 1]


def _dominated(a: Pair, b: Pair) -> bool:
    """H_γ(B) <= H_γ(A) at every kink of both, in both directions (exact)."""
    return all(
        hockey_stick(d(b), g) <= hockey_stick(d(a), g)
        for d in (lambda p: p, reverse)
        for g in _kinks(a, b)
    )


def _inf_mass(p: Pair) -> Fr:
    return sum((x for x, y in zip(*p, strict=True) if x > 0 and y == 0), Fr(0))


def _grid_test(a: Pair, b: Pair, tau: Fr, n_directions: int) -> bool:
    """The certified grid test (module docstring) in the first ``n_directions`` directions,
    with the exact profiles as the certified bounds."""
    for d in (lambda p: p, reverse)[:n_directions]:
        fa, fb = d(a), d(b)
        ratios = [x / y for x, y in zip(*fb, strict=True) if x > 0 and y > 0]
        if max(ratios) > _GRID[-1] or _inf_mass(fb) > tau + (1 - tau) * _inf_mass(fa):
            return False
        if any(
            hockey_stick(fb, g0) > tau + (1 - tau) * hockey_stick(fa, g1)
            for g0, g1 in itertools.pairwise(_GRID)
        ):
            return False
    return True


def _tail_pair(tau: Fr, sym: Any) -> Pair:
    """T_τ: symmetric ((1−τ, τ, 0), (1−τ, 0, τ)), or the one-sided ((1−τ, τ), (1, 0))."""
    if sym == 1:
        return (1 - tau, tau, Fr(0)), (1 - tau, Fr(0), tau)
    return (1 - tau, tau), (Fr(1), Fr(0))


def _reveal(a: Pair, tau: Fr) -> Pair:
    """Reveal the record with probability τ, else run ``a``."""
    p, q = a
    return (tau, Fr(0), *((1 - tau) * x for x in p)), (Fr(0), tau, *((1 - tau) * y for y in q))


def _library() -> Step:
    from expost.costs.domination import dominated
    from expost.costs.pairs import ClosedPair, PmfPair

    def pmf(p: Pair) -> PmfPair:
        return PmfPair(tuple(map(float, p[0])), tuple(map(float, p[1])))

    rr = ClosedPair("rr", float(sp.log(2)))
    reveal = pmf(_reveal(_INNER, _TAU))
    verdicts = (
        dominated(rr, pmf(_USER)),
        not dominated(rr, pmf(_ONE_WAY)),
        not dominated(rr, reveal),
        dominated(pmf(_A), reveal, float(_TAU)),
    )
    return Step(
        "expost.costs.domination agrees: admits the user pair under RR(2), refuses the "
        "one-direction pair and the reveal pair, admits the reveal pair up to τ = 1/20 "
        f"{verdicts}",
        all(verdicts),
    )


def check(form: Any) -> tuple[Step, ...]:
    """The identity, the grid test's soundness, the τ pair, K rounds, the library."""
    n_dirs, sym = int(form[0]), form[1]
    identity = all(
        hockey_stick(p, g) == 1 - g + g * hockey_stick(reverse(p), 1 / g)
        for p in (_A, _USER, _ONE_WAY)
        for g in _kinks(p)[1:]
    )
    steps = [Step("H_γ(P‖Q) = 1 − γ + γ·H_{1/γ}(Q‖P) at every kink [exact]", identity)]
    for name, b in (("user pair", _USER), ("one-direction pair", _ONE_WAY)):
        admitted = _grid_test(_A, b, Fr(0), n_dirs)
        steps.append(
            Step(
                f"{name}: the grid test (τ = 0) admits it only if it is dominated by RR(2) at "
                f"every kink, both directions (admitted: {admitted}) [exact]",
                not admitted or _dominated(_A, b),
            )
        )
    steps.append(
        Step("the user pair is admitted (the test is not vacuous)", _grid_test(_A, _USER, Fr(0), 2))
    )
    t = _tail_pair(_TAU, sym)
    joint = pair_product([_A, t])
    kinks = _kinks(_A, t, _reveal(_A, _TAU))
    steps.append(
        Step(
            "H_γ(A ⊗ T_τ) = τ + (1 − τ)·H_γ(A) at every kink, both directions [exact]",
            all(
                hockey_stick(d(joint), g) == _TAU + (1 - _TAU) * hockey_stick(d(_A), g)
                for d in (lambda p: p, reverse)
                for g in kinks
            ),
        )
    )
    steps.append(
        Step(
            "'reveal with probability τ, else run A' is dominated by A ⊗ T_τ, both directions "
            "[exact]",
            _dominated(joint, _reveal(_A, _TAU)),
        )
    )
    steps.append(
        Step(
            "the grid test up to τ admits 'reveal with probability τ, else run RR(3/2)' (not "
            "dominated by A alone), and it is dominated by A ⊗ T_τ at every kink [exact]",
            _grid_test(_A, _reveal(_INNER, _TAU), _TAU, n_dirs)
            and not _dominated(_A, _reveal(_INNER, _TAU))
            and _dominated(joint, _reveal(_INNER, _TAU)),
        )
    )
    for k in (1, 2, 3):
        ak = pair_product([_A] * k)
        akt = pair_product([_A] * k + [t] * k)
        steps.append(
            Step(
                f"{k} rounds: H_γ(A^⊗{k} ⊗ T_τ^⊗{k}) <= H_γ(A^⊗{k}) + {k}·τ at every kink [exact]",
                all(
                    hockey_stick(d(akt), g) <= hockey_stick(d(ak), g) + k * _TAU
                    for d in (lambda p: p, reverse)
                    for g in _kinks(ak, t)
                ),
            )
        )
    return (*steps, _library())


PROOF = Proof(
    name="computed-domination",
    source="THEORY §13; Zhu–Dong–Wang 2022",
    statement=(
        "A pair whose certified upper profile at each grid point is at most τ + (1 − τ) times "
        "the fixed pair's certified lower profile at the next grid point, with bounded loss and "
        "ordered masses at +∞, in both neighbour directions, is dominated by the fixed pair "
        "composed with the symmetric (0, τ) pair; K such rounds cost δ_K(ε) + K·τ."
    ),
    assumptions=(
        "finite pairs (bounded loss; an unbounded one needs an analytic tail argument)",
        "τ and the grid fixed before the first round",
    ),
    claim=sp.Tuple(2, 1),
    wrong_claim=sp.Tuple(1, 0),
    check=check,
)
