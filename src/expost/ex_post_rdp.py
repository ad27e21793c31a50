"""Ex-post Rényi differential privacy: the ex-post guarantee that survives post-processing.

THEORY §11 (after Räisä, Koskela & Honkela, arXiv 2509.22213). For neighbours x, x' and the
loss L(y) = log p_x(y)/p_x'(y), a function ε_α(y) computable from the release y is an *ex-post
RDP bound of order α > 1* if ``E_(Y~M(x))[exp((α−1)(L(Y) − ε_α(Y)))] <= 1`` for all neighbours.
A constant ε_α is ordinary RDP. One `ExPostRDP` value carries one of three shapes:

- ``rho``: ex-post zCDP, ε_α = α·rho(y) at every order (the Brownian mechanism stopped at τ has
  rho = Δ²/(2τ), THEORY §11 by Lévy time inversion and optional stopping, proof
  ``ex-post-rdp-brownian``; a rho-zCDP mechanism has a constant rho);
- ``pure``: pure ex-post privacy L(y) <= ε(y) (Laplace noise reduction, BNR Prop 4.2), which is
  ε_α = ε(y) at every order (the exponential is <= 1 pointwise);
- ``orders``: values at a finite set of orders (what a supremum of mixed shapes leaves).

A pointwise minimum of two ex-post bounds is *not* one in general (the exponentials add), so a
value never mixes shapes. ε_β(y) for β >= α is also a bound of order α (Jensen: t ↦
t^((α−1)/(β−1)) is concave), which `ExPostRDP.eps` uses between the orders of a table.

Conversions (every number rounded up, `expost.rounding`): `ExPostRDP.probabilistic` (Markov at
each of k orders fixed in advance with delta/k each, then the best order for the realised y:
``ε_α(y) + log(k/delta)/(α−1)``), `ExPostRDP.pure_ex_post` (where it is pure), and
`ExPostRDP.sup` (post-processing: z = g(y) carries sup{ε_α(y) : g(y) = z}, by the joint
convexity of (a, b) ↦ a^α·b^(1−α)).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from attrs import field, frozen

from expost._validation import open_probability, renyi_order
from expost.errors import InvalidParameter
from expost.guarantees import ExPost
from expost.rounding import down_exact, neg_log_up, sum_up, up_exact

__all__ = ["DEFAULT_ORDERS", "ExPostRDP", "markov_bound", "renyi_orders"]

DEFAULT_ORDERS = (1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0, 128.0)
"""The orders `ExPostRDP.probabilistic` splits delta over unless told otherwise (fixed in
advance: choosing the order after seeing y is paid for by the split)."""


def _level(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParameter(name, value, "must be a real number >= 0")
    x = float(value)
    if not (math.isfinite(x) and x >= 0.0):
        raise InvalidParameter(name, value, "must be finite and >= 0")
    return x


def _optional_level(_instance: Any, attribute: Any, value: Any) -> None:
    if value is not None:
        _level(attribute.name, value)


def _table(value: object) -> tuple[tuple[float, float], ...]:
    """Orders and values as sorted (α, ε_α) pairs: α > 1 distinct, ε_α finite >= 0."""
    items = value.items() if isinstance(value, Mapping) else value
    if not isinstance(items, Iterable):
        raise InvalidParameter("orders", value, "must map orders α > 1 to values ε_α >= 0")
    pairs = []
    for item in items:
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise InvalidParameter("orders", value, "must map orders α > 1 to values ε_α >= 0")
        pairs.append((renyi_order(item[0]), _level("orders", item[1])))
    pairs.sort()
    if len({a for a, _ in pairs}) != len(pairs):
        raise InvalidParameter("orders", value, "must not repeat an order")
    return tuple(pairs)


def renyi_orders(value: Iterable[float]) -> tuple[float, ...]:
    """A non-empty set of distinct Rényi orders (each finite and > 1), sorted."""
    out = tuple(sorted(renyi_order(a) for a in value))
    if not out or len(set(out)) != len(out):
        raise InvalidParameter("orders", value, "must be a non-empty set of distinct orders > 1")
    return out


def markov_bound(eps_alpha: float, alpha: float, delta: float) -> float:
    """``ε_α + log(1/delta)/(α−1)`` rounded up: Markov on exp((α−1)(L − ε_α)) (THEORY §11).

    log(1/delta) is libm's log moved up 2 ulps (`neg_log_up`); the quotient and the sum are
    rounded up exactly.
    """
    a = renyi_order(alpha)
    d = open_probability("delta", delta)
    tail = up_exact(Fraction(neg_log_up(d)) / (Fraction(a) - 1))
    return sum_up([_level("eps_alpha", eps_alpha), tail])


@frozen
class ExPostRDP:
    """An ex-post RDP guarantee of the values released (THEORY §11; module docstring).

    Exactly one of ``rho`` (ε_α = α·rho, ex-post zCDP), ``pure`` (ε_α = pure at every order)
    and ``orders`` (sorted (α, ε_α) pairs) is given; build with `of_rho`, `of_pure`,
    `of_orders`.
    """

    rho: float | None = field(default=None, validator=_optional_level)
    pure: float | None = field(default=None, validator=_optional_level)
    orders: tuple[tuple[float, float], ...] = field(default=(), converter=_table)

    def __attrs_post_init__(self) -> None:
        given = (self.rho is not None) + (self.pure is not None) + bool(self.orders)
        if given != 1:
            raise InvalidParameter(
                "ExPostRDP", (self.rho, self.pure, self.orders), "needs exactly one shape"
            )

    @classmethod
    def of_rho(cls, rho: float) -> ExPostRDP:
        """Ex-post zCDP: ε_α(y) = α·rho(y) at every order α > 1."""
        return cls(rho=_level("rho", rho))

    @classmethod
    def of_pure(cls, eps: float) -> ExPostRDP:
        """Pure ex-post privacy L(y) <= eps(y): ε_α = eps at every order."""
        return cls(pure=_level("eps", eps))

    @classmethod
    def of_orders(cls, orders: Mapping[float, float] | Iterable[tuple[float, float]]) -> ExPostRDP:
        """ε_α(y) at a finite set of orders."""
        return cls(orders=_table(orders))

    def eps(self, alpha: float) -> float:
        """ε_α(y), rounded up: α·rho exactly rounded; pure; or, for a table, the value at the
        smallest tabled order >= α (Jensen, module docstring; InvalidParameter above them all)."""
        a = renyi_order(alpha)
        if self.rho is not None:
            return up_exact(Fraction(a) * Fraction(self.rho))
        if self.pure is not None:
            return self.pure
        for order, value in self.orders:
            if order >= a:
                return value
        raise InvalidParameter("alpha", alpha, f"is above the largest order {self.orders[-1][0]}")

    def pure_ex_post(self) -> ExPost | None:
        """``ExPost(eps)`` with delta 0 where the guarantee is pure ex-post, else None."""
        return None if self.pure is None else ExPost(self.pure)

    def _fixed_orders(self, orders: Sequence[float] | None) -> tuple[float, ...]:
        if orders is not None:
            return renyi_orders(orders)
        return tuple(a for a, _ in self.orders) if self.orders else DEFAULT_ORDERS

    def probabilistic(self, delta: float, orders: Sequence[float] | None = None) -> ExPost:
        """``ExPost(bound, delta)``: P(L > bound) <= delta, bound = min over the k ``orders``
        (fixed before the release; default `DEFAULT_ORDERS` or the table's) of
        ``ε_α(y) + log(k/delta)/(α−1)`` (Markov at delta/k per order, union bound; THEORY §11).

        A pure guarantee is returned as ``ExPost(eps)``: delta 0, stronger than asked.
        """
        d = open_probability("delta", delta)
        if self.pure is not None:
            return ExPost(self.pure)
        chosen = self._fixed_orders(orders)
        share = down_exact(Fraction(d) / len(chosen))  # rounded down: the shares sum <= delta
        best = min(markov_bound(self.eps(a), a, share) for a in chosen)
        return ExPost(best, d)

    @classmethod
    def sup(cls, members: Iterable[ExPostRDP], orders: Sequence[float] | None = None) -> ExPostRDP:
        """What z = g(y) carries: sup of ε_α over the preimage {y : g(y) = z} (THEORY §11).

        Same shape in, same shape out (max of rho, or of pure); mixed shapes give a table at
        ``orders`` (default: the members' tabled orders, else `DEFAULT_ORDERS`).
        """
        ms = list(members)
        if not ms or not all(isinstance(m, ExPostRDP) for m in ms):
            raise InvalidParameter("members", ms, "must be a non-empty iterable of ExPostRDP")
        if all(m.rho is not None for m in ms):
            return cls.of_rho(max(float(m.rho or 0.0) for m in ms))
        if all(m.pure is not None for m in ms):
            return cls.of_pure(max(float(m.pure or 0.0) for m in ms))
        if orders is not None:
            chosen = renyi_orders(orders)
        else:
            tabled = {a for m in ms for a, _ in m.orders}
            chosen = tuple(sorted(tabled)) if tabled else DEFAULT_ORDERS
        return cls.of_orders({a: max(m.eps(a) for m in ms) for a in chosen})
