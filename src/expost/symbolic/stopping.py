"""Exact adaptive-stopping games on finite mechanisms, for the counting-filter proof (THEORY §12).

An analyst runs rounds chosen from a *menu* of finite pairs (P, Q) (P the output law with the
record, Q without), adaptively: after each output it stops or picks the next mechanism, as long
as the filter admits the multiset of mechanisms run so far. Every quantity is an exact rational
(`fractions.Fraction`): the hockey-stick divergence H_γ(P‖Q) = Σ_o (P(o) − γ·Q(o))_+ of the
stopped transcript, its supremum over all strategies (backward induction over the output tree,
which equals the maximum over every deterministic strategy; `strategies` enumerates them for
small games, and randomised strategies are mixtures of these) and the points γ where those
piecewise-linear profiles can bend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from fractions import Fraction
from functools import cache
from itertools import product as cartesian

from attrs import field, frozen

from expost.errors import InvalidParameter

__all__ = [
    "Game",
    "Pair",
    "Strategy",
    "best_value",
    "hockey_stick",
    "kinks",
    "pair_product",
    "randomized_response",
    "reverse",
    "strategies",
    "strategy_value",
]

Pair = tuple[tuple[Fraction, ...], tuple[Fraction, ...]]
"""(P, Q): two probability vectors over the same finite outputs."""
Strategy = tuple[int, tuple["Strategy", ...]] | None
"""None: stop; (m, children): run menu item m, then children[o] after output o."""


def randomized_response(e_eps: Fraction) -> Pair:
    """Randomised response at e^ε0 = e_eps: P = (e, 1)/(1 + e), Q reversed (THEORY §12)."""
    if e_eps < 1:
        raise InvalidParameter("e_eps", e_eps, "must be >= 1 (e^eps0 of an eps0 >= 0)")
    p = e_eps / (1 + e_eps)
    return (p, 1 - p), (1 - p, p)


def reverse(pair: Pair) -> Pair:
    """The other neighbour direction: (Q, P)."""
    return pair[1], pair[0]


def hockey_stick(pair: Pair, gamma: Fraction) -> Fraction:
    """H_γ(P‖Q) = Σ_o (P(o) − γ·Q(o))_+, exactly."""
    return sum((max(p - gamma * q, Fraction(0)) for p, q in zip(*pair, strict=True)), Fraction(0))


def pair_product(pairs: Sequence[Pair]) -> Pair:
    """(⊗P_i, ⊗Q_i) over the product of the output sets (the empty product is the point mass)."""
    p: tuple[Fraction, ...] = (Fraction(1),)
    q: tuple[Fraction, ...] = (Fraction(1),)
    for mp, mq in pairs:
        p = tuple(a * x for a in p for x in mp)
        q = tuple(b * y for b in q for y in mq)
    return p, q


def kinks(menu: Sequence[Pair], rounds: int) -> tuple[Fraction, ...]:
    """0, every product of at most ``rounds`` finite likelihood ratios P(o)/Q(o) and Q(o)/P(o)
    of the menu's pairs, and one point past the largest.

    Every transcript of at most ``rounds`` rounds has leaf likelihood ratios in this set, so the
    profile γ ↦ H_γ of any stopped interaction (and of any product of menu pairs) is linear
    between consecutive points and on the ray past the last one: an inequality between two such
    profiles that holds at every point returned holds for every γ >= 0.
    """
    ratios = {
        p / q
        for mp, mq in menu
        for p, q in ((a, b) for a, b in zip(mp, mq, strict=True))
        if p > 0 and q > 0
    }
    ratios |= {1 / r for r in ratios}
    points = {Fraction(1)}
    for _ in range(rounds):
        points |= {x * r for x in points for r in ratios}
    top = max(points)
    return (Fraction(0), *sorted(points), top + 1)


def _pairs(value: Iterable[Pair]) -> tuple[Pair, ...]:
    return tuple(value)


def _admits_all(_history: tuple[int, ...]) -> bool:
    return True


@frozen
class Game:
    """The analyst's options: the menu, the filter's admission rule and a cap on the rounds.

    ``admits(history)`` receives the sorted menu indices of the rounds run so far, the next one
    included, and says whether the filter lets that round run; ``max_rounds`` caps the depth.
    """

    menu: tuple[Pair, ...] = field(converter=_pairs)
    max_rounds: int = field()
    admits: Callable[[tuple[int, ...]], bool] = field(default=_admits_all)

    @max_rounds.validator
    def _check(self, attribute: object, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidParameter("max_rounds", value, "must be an integer >= 0")

    def options(self, history: tuple[int, ...]) -> list[tuple[int, tuple[int, ...]]]:
        """The menu items the filter admits after ``history``, with the history they make."""
        if len(history) >= self.max_rounds:
            return []
        nexts = [(m, tuple(sorted((*history, m)))) for m in range(len(self.menu))]
        return [(m, h) for m, h in nexts if self.admits(h)]


def best_value(game: Game, gamma: Fraction) -> Fraction:
    """sup over the analyst's strategies of H_γ(stopped transcript under P ‖ under Q), exactly.

    Backward induction: at a node reached with probabilities (a, b) the analyst stops (leaf
    contributes (a − γb)_+) or runs an admitted item, whose children add up; the transcript's
    hockey-stick is the sum over its leaves, so the best choice at each node is local.
    """

    @cache
    def value(ratio: Fraction, history: tuple[int, ...]) -> Fraction:
        # per unit of Q-mass at the node: H is positively homogeneous in (a, b), so the value
        # at (a, b) is b·value(a/b); an output Q cannot produce has infinite loss: its P-mass
        # counts in full whatever follows
        best = max(ratio - gamma, Fraction(0))
        for m, h in game.options(history):
            mp, mq = game.menu[m]
            run = sum(
                (
                    y * value(ratio * x / y, h) if y > 0 else ratio * x
                    for x, y in zip(mp, mq, strict=True)
                ),
                Fraction(0),
            )
            best = max(best, run)
        return best

    return value(Fraction(1), ())


def strategies(game: Game, history: tuple[int, ...] = ()) -> Iterator[Strategy]:
    """Every deterministic strategy of the analyst from ``history`` on (stop first)."""
    yield None
    for m, h in game.options(history):
        outputs = len(game.menu[m][0])
        subtrees = [list(strategies(game, h)) for _ in range(outputs)]
        for children in cartesian(*subtrees):
            yield m, tuple(children)


def strategy_value(game: Game, strategy: Strategy, gamma: Fraction) -> Fraction:
    """H_γ of the transcript that ``strategy`` produces (P with the record, Q without)."""

    def walk(node: Strategy, a: Fraction, b: Fraction) -> Fraction:
        if node is None:
            return max(a - gamma * b, Fraction(0))
        mp, mq = game.menu[node[0]]
        return sum(
            (walk(c, a * x, b * y) for c, x, y in zip(node[1], mp, mq, strict=True)), Fraction(0)
        )

    return walk(strategy, Fraction(1), Fraction(1))
