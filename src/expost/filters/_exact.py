"""Exact budget arithmetic for the filters: rounded-up conversions, Shewchuk partials, history.

Every conversion to a filter's unit (Δ²/(2t), eps²/2) is rounded up to a float, and a
round is admitted only if the exact sum of the recorded floats stays within the budget (the
sign of the correctly rounded ``math.fsum``), so no rounding can overspend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any, Generic, TypeVar

from attrs import frozen

from expost.errors import InvalidParameter
from expost.guarantees import rho_of_eps
from expost.rounding import up_ratio

__all__ = [
    "Chain",
    "Totals",
    "excess",
    "grow",
    "history",
    "prefix_sums_up",
    "rho_of_bounded_range",
    "rho_of_brownian",
    "rho_of_eps",
]


def rho_of_brownian(time: float, sensitivity: float) -> float:
    """Δ²/(2t) rounded up: a BM with sensitivity Δ stopped at t (APC Thm 3, Thm 5); +inf past the
    largest float. Exact integer arithmetic from a float start, which may overflow (Δ² or 2t
    past the floats: inf, or inf/inf) without harm: `up_ratio` is bounded from any start."""
    d, t = sensitivity, time
    (a, b), (c, e) = d.as_integer_ratio(), t.as_integer_ratio()
    approx = d * d / (2.0 * t)
    return up_ratio(0.0 if math.isnan(approx) else approx, a * a * e, 2 * b * b * c)


def rho_of_bounded_range(eps: float) -> float:
    """eps²/8 rounded up: an eps-bounded-range round is eps²/8-zCDP (Cesar–Rogers 2021).

    Exact from the integers (not eps²/2 divided by 4, which is inexact among the subnormals:
    BoundedRangeCost(5e-324) would cost 0); the smallest positive float at worst.
    """
    a, b = eps.as_integer_ratio()
    return up_ratio(eps * eps / 8.0, a * a, 8 * b * b)


def prefix_sums_up(parts: Iterable[float]) -> list[float]:
    """``Σ_(i<=k) parts_i`` for every k, each the smallest float >= the exact sum (parts > 0).

    A run charged the k-th entry is never charged less than the exact total of its parts;
    a float ``cumsum`` rounds to nearest and can fall a few ulps short.
    """
    total, out = Fraction(0), []
    for x in parts:
        total += Fraction(x)
        out.append(up_ratio(float(total), total.numerator, total.denominator))
    return out


def excess(parts: Iterable[float], budget: float) -> float:
    """Σ parts − budget, correctly rounded (``math.fsum``), so its sign is the exact sign."""
    return math.fsum([*parts, -budget])


def grow(partials: tuple[float, ...], x: float) -> tuple[float, ...]:
    """Non-overlapping floats whose exact sum is sum(partials) + x (Shewchuk's msum step)."""
    out = []
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo:
            out.append(lo)
        x = hi
    out.append(x)
    return tuple(out)


_T = TypeVar("_T")


@frozen(eq=False, repr=False)
class Chain(Generic[_T]):
    """An immutable sequence that grows at the end: `append` is O(1) and shares the older links.

    ``_link`` is (the chain before the last item, the last item), None when empty; `items`
    (O(n)) builds the tuple only when asked. Equality, hashing, repr and pickling walk the
    links iteratively, so no history length can exhaust the recursion limit.
    """

    _link: tuple[Chain[_T], _T] | None = None
    size: int = 0

    @classmethod
    def of(cls, items: Iterable[_T]) -> Chain[_T]:
        chain: Chain[_T] = cls()
        for item in items:
            chain = chain.append(item)
        return chain

    def append(self, item: _T) -> Chain[_T]:
        return Chain((self, item), self.size + 1)

    def items(self) -> tuple[_T, ...]:
        out = []
        link = self._link
        while link is not None:
            out.append(link[1])
            link = link[0]._link
        return tuple(reversed(out))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Chain):
            return NotImplemented
        if self.size != other.size:
            return False
        mine, theirs = self._link, other._link
        while mine is not None and theirs is not None and mine is not theirs:
            if mine[1] != theirs[1]:
                return False
            mine, theirs = mine[0]._link, theirs[0]._link
        return True

    def __hash__(self) -> int:
        return hash(self.items())

    def __repr__(self) -> str:
        last = "" if self._link is None else f", last {self._link[1]!r}"
        return f"<chain of {self.size}{last}>"

    def __reduce__(self) -> tuple[Callable[[Iterable[_T]], Chain[_T]], tuple[tuple[_T, ...]]]:
        return Chain.of, (self.items(),)


def history(value: tuple[_T, ...] | Chain[_T]) -> Chain[_T]:
    """The chain of a filter's ``realised`` argument: a tuple of costs (or a chain, as kept)."""
    if isinstance(value, Chain):
        return value
    if not isinstance(value, tuple):
        raise InvalidParameter("realised", value, "must be a tuple of costs")
    return Chain.of(value)


@frozen
class Totals:
    """The exact sums of the amounts and deltas of the costs in ``chain``, each as a few partials.

    A filter's ``_totals`` is derived state, used only if its ``chain`` is the filter's own
    (else, e.g. after ``attrs.evolve(f, realised=...)``, it is recomputed); `spend` passes the
    updated sums on so that a round costs O(1).
    """

    chain: Chain[Any]
    amounts: tuple[float, ...] = ()
    deltas: tuple[float, ...] = ()

    def add(self, cost: object, amount: float, delta: float) -> Totals:
        return Totals(self.chain.append(cost), grow(self.amounts, amount), grow(self.deltas, delta))
