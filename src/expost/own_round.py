"""A round of the caller's own mechanism: `PrivateSession.release(cost, draw)`.

The caller declares the round's cost before it runs (any cost of `expost.costs`: a built-in
one, ``PairCost.from_pmfs(p, q)``, ``PoissonSampled(cost, q)``, ``Composed(costs)``); the round
then follows the protocol of every built-in release (`expost.rounds`): the filter prices the
cost (a cost it cannot price is refused here, naming the filters that could, and nothing is
spent), the round is reserved at it, the caller's ``draw`` runs with the session's randomness,
and the round settles at the declared cost — also when ``draw`` raises (what may have been seen
is paid for). The guarantee is the filter's, *provided* ``draw`` is the mechanism the cost
describes: the library cannot check that (docs/your-own-mechanism.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from expost.costs.model import Mechanism
from expost.errors import InvalidParameter
from expost.rounds import Mode, Prepared, fixed

__all__ = ["prepare_release"]

R = TypeVar("R")


def prepare_release(mode: Mode, cost: object, draw: object) -> Prepared[Any]:
    """The prepared round: request and realised cost ``cost``; ``draw(source)`` with the
    session's rng (float mode) or its bit source (secure mode)."""
    if not isinstance(cost, Mechanism):
        raise InvalidParameter(
            "cost", type(cost).__name__, "must be a cost (expost.filters / expost.costs)"
        )
    if not callable(draw):
        raise InvalidParameter("draw", type(draw).__name__, "must be a callable draw(rng)")
    mode.filter.price(cost)  # type: ignore[arg-type]  # a refused kind: refused before reserving
    source = mode.noise
    run: Callable[[Any], Any] = draw
    return fixed("release", cost, lambda: run(source))  # type: ignore[arg-type]  # a Mechanism is a Cost
