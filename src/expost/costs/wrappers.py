"""Costs built from costs: a Poisson subsample of a mechanism, several mechanisms in one round,
and a mechanism given by its two probability mass functions (docs/your-own-mechanism.md).

`PoissonSampled(cost, q)`: ``cost``'s mechanism run on a Poisson sample of the data (each record
kept independently with probability q). Its pair is ``cost``'s pair subsampled in both neighbour
directions (remove ((1−q)Q + qP, Q), add (Q, (1−q)Q + qP); Zhu, Dong & Wang 2022 Thm 11); every
other representation is ``cost``'s own (under add/remove neighbours the subsampled mechanism's
output laws are mixtures of the unsampled mechanism's on neighbouring inputs, and each divergence
a filter prices by is jointly (quasi-)convex), except that a Gaussian's Rényi curve is the exact
subsampled one (Mironov–Talwar–Zhang 2019).

`Composed(costs)`: one round releasing every cost's mechanism on the same data. Its pair is the
product pair, its zCDP rho, GDP mu², Rényi ε_α and (eps, delta) the sums (composition: Bun–Steinke
2016 Lemma 2.3, Dong–Roth–Su Cor. 3.3, Mironov 2017 Prop 1, basic composition), each rounded up;
a representation is known only when every part has it.

`PairCost(p, q)`: a mechanism with finitely many outputs, P the law with the record, Q without
(`from_pmfs`); its Rényi curve and (eps, 0) are computed from the pmfs (rounded up).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from attrs import field, frozen

from expost._validation import as_float, sampling_probability, validator
from expost.costs.model import Mechanism, Price
from expost.costs.pairs import Pair, PmfPair, ProductPair
from expost.errors import InvalidParameter
from expost.rounding import sum_up, up

__all__ = ["Composed", "PairCost", "PoissonSampled"]


def _mechanism(_instance: object, attribute: Any, value: object) -> None:
    if not isinstance(value, Mechanism):
        raise InvalidParameter(attribute.name, type(value).__name__, "must be a cost")


@frozen
class PoissonSampled(Mechanism):
    """``of``'s mechanism on a Poisson sample at rate ``sampling_prob`` (module docstring)."""

    of: Any = field(validator=_mechanism)
    sampling_prob: float = field(converter=as_float, validator=validator(sampling_probability))

    def pair(self) -> Pair | None:
        """``of``'s pair subsampled at the rate (both directions)."""
        inner = self.of.pair()
        return None if inner is None else inner.sampled(self.sampling_prob)

    def rdp(self, alpha: float) -> float | None:
        """The subsampled Gaussian's exact ε_α; any other mechanism's own curve."""
        exact = getattr(self.of, "sampled_rdp", None)
        if exact is not None:
            return float(exact(self.sampling_prob, alpha))
        return self.of.rdp(alpha)  # type: ignore[no-any-return]  # a Mechanism's

    def zcdp(self) -> Price | None:
        """``of``'s (rho, delta)."""
        return self.of.zcdp()  # type: ignore[no-any-return]  # a Mechanism's

    def gdp(self) -> float | None:
        """``of``'s mu²."""
        return self.of.gdp()  # type: ignore[no-any-return]  # a Mechanism's

    def dp(self) -> Price | None:
        """``of``'s (eps, delta)."""
        return self.of.dp()  # type: ignore[no-any-return]  # a Mechanism's

    def ex_post(self) -> None:
        """None: a realised ex-post bound is not inherited through sampling."""
        return


def _parts(value: object) -> tuple[Any, ...]:
    parts: tuple[Any, ...] = tuple(value) if isinstance(value, Iterable) else ()
    if not parts or not all(isinstance(p, Mechanism) for p in parts):
        raise InvalidParameter("costs", f"{len(parts)} values", "must be one or more costs")
    return parts


def _summed(values: list[Any]) -> list[float] | None:
    return None if any(v is None for v in values) else values


@frozen
class Composed(Mechanism):
    """Several mechanisms released in one round (module docstring)."""

    costs: tuple[Any, ...] = field(converter=_parts)

    def pair(self) -> Pair | None:
        """The product of the parts' pairs."""
        pairs = [c.pair() for c in self.costs]
        return None if any(p is None for p in pairs) else ProductPair(tuple(pairs))

    def rdp(self, alpha: float) -> float | None:
        """Σ ε_α, rounded up."""
        xs = _summed([c.rdp(alpha) for c in self.costs])
        return None if xs is None else sum_up(xs)

    def zcdp(self) -> Price | None:
        """(Σ rho, Σ delta), rounded up."""
        xs = [c.zcdp() for c in self.costs]
        if any(x is None for x in xs):
            return None
        return sum_up([x[0] for x in xs]), sum_up([x[1] for x in xs])

    def gdp(self) -> float | None:
        """Σ mu², rounded up."""
        xs = _summed([c.gdp() for c in self.costs])
        return None if xs is None else sum_up(xs)

    def dp(self) -> Price | None:
        """(Σ eps, Σ delta), rounded up."""
        xs = [c.dp() for c in self.costs]
        if any(x is None for x in xs):
            return None
        return sum_up([x[0] for x in xs]), sum_up([x[1] for x in xs])

    def ex_post(self) -> None:
        """None: ex-post rounds are not composed inside one round."""
        return


def _floats(value: object) -> tuple[float, ...]:
    return tuple(np.asarray(value, dtype=np.float64).ravel().tolist())


@frozen
class PairCost(Mechanism):
    """A mechanism with finitely many outputs: ``p`` its pmf on neighbours with the record,
    ``q`` without (`from_pmfs`). Both neighbour directions: remove (P, Q), add (Q, P)."""

    p: tuple[float, ...] = field(converter=_floats)
    q: tuple[float, ...] = field(converter=_floats)

    def __attrs_post_init__(self) -> None:
        PmfPair(self.p, self.q)  # validates: same outcomes, finite masses summing to 1

    @classmethod
    def from_pmfs(cls, p: Any, q: Any) -> PairCost:
        """The round whose output has pmf ``p`` with the record and ``q`` without."""
        return cls(p, q)

    def pair(self) -> Pair:
        """The pair itself (`PmfPair`)."""
        return PmfPair(self.p, self.q)

    def _max_loss(self) -> float:
        """max |log P/Q| over outcomes either law charges, rounded up; inf if a support differs."""
        worst = 0.0
        for a, b in zip(self.p, self.q, strict=True):
            if (a > 0) != (b > 0):
                return math.inf
            if a > 0:
                worst = max(worst, up(abs(math.log(a / b)), 4))
        return worst

    def dp(self) -> Price | None:
        """(the largest absolute log(P/Q), rounded up 4 ulps, 0) when both laws have the same
        support; None otherwise."""
        e = self._max_loss()
        return (e, 0.0) if 0.0 < e < math.inf else None

    def rdp(self, alpha: float) -> float | None:
        """max over both directions of log Σ p^α q^(1−α)/(α−1), rounded up (None where a
        support differs)."""
        if not math.isfinite(self._max_loss()):
            return None
        from expost.rounding import up_iv

        def divergence(x: tuple[float, ...], y: tuple[float, ...]) -> float:
            def compute(iv: Any) -> Any:
                a = iv.mpf(alpha)
                terms = (
                    iv.mpf(u) ** a * iv.mpf(v) ** (1 - a)
                    for u, v in zip(x, y, strict=True)
                    if u > 0
                )
                return iv.log(sum(terms, iv.mpf(0))) / (a - 1)

            return up_iv(compute)

        return max(divergence(self.p, self.q), divergence(self.q, self.p), 0.0)
