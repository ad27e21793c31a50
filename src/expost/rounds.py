"""The round protocol: a release is prepared (checked and priced, no side effects), then released.

A ``prepare_*`` function (`expost.prepare`) turns one `PrivateSession` release method's arguments
into a `Prepared` round: the mechanism's name, its worst-case cost (the *request*), a ``draw``
that runs the mechanism on the converted inputs, and the ``realised`` cost of its result.
Preparing applies the whole input contract of docs/session.md ("The input contract"), every limit
a sampler will enforce included, so a draw cannot fail on input. `PrivateSession._release`
reserves every round but a batch (ARCHITECTURE "Filters guard budgets"); `refusing` makes every
input error raised while preparing say that nothing was spent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any, Generic, Literal, NoReturn, Protocol, TypeVar

import numpy as np
from attrs import field, frozen

from expost.errors import ExpostError, InvalidParameter, NotAStoppingTime, shown
from expost.exact.bits import BitSource
from expost.filters import Cost, PrivacyFilter

__all__ = [
    "NOT_EXACT",
    "Mode",
    "Number",
    "Prepared",
    "Round",
    "check_rule",
    "fixed",
    "limit",
    "nothing_spent",
    "refusing",
    "result_cost",
    "too_small",
]

R = TypeVar("R")
Number = float | Fraction | np.integer[Any] | np.floating[Any]
"""A scalar parameter as the session's methods take it (docs/session.md, "The input contract")."""
NOTHING_SPENT = "nothing was spent"

NOT_EXACT = {
    "brownian": "use Skellam noise reduction (SkellamNoiseReduction) on integer values",
    "laplace-noise-reduction": "use Skellam noise reduction (SkellamNoiseReduction)",
    "reduced-above-threshold": "no exact version; use exponential_mechanism rounds",
    "subsampled-gaussian": (
        "the Poisson sample could be drawn exactly, but clipping to an ℓ2 "
        "norm needs square roots, and the discrete Gaussian's privacy loss distribution is not "
        "the Gaussian pair the step is priced by; use gaussian rounds (discrete Gaussian) on "
        "integer sums"
    ),
}
"""Mechanisms refused in secure mode, with the alternative each refusal names."""


@frozen
class Mode:
    """What a round is prepared against: the session's rng (None in a secure session built
    without one), its bit source (secure mode when set) and the filter state (doubling caps and
    eps grids are clipped to the budget)."""

    rng: np.random.Generator | None
    bits: BitSource | None
    filter: PrivacyFilter

    @property
    def exact(self) -> bool:
        """Secure mode: integer releases with exact noise from ``bits``."""
        return self.bits is not None

    @property
    def name(self) -> Literal["float", "exact"]:
        """The key of `expost.mechanism_table.MECHANISMS` this mode chooses by."""
        return "exact" if self.exact else "float"

    @property
    def noise(self) -> np.random.Generator | BitSource:
        """The source a mechanism draws from: the bit source in secure mode, else the rng."""
        return self.generator if self.bits is None else self.bits

    @property
    def generator(self) -> np.random.Generator:
        """The rng of a float mechanism (a float-mode session always has one)."""
        if self.rng is None:
            raise InvalidParameter("rng", None, "a float mechanism needs a numpy Generator")
        return self.rng


@frozen
class Round:
    """One admitted round: what it was, what it could cost, what it cost, what was released."""

    index: int
    mechanism: str
    request: Cost
    realised: Cost
    result: object = field(eq=False)


@frozen
class Prepared(Generic[R]):
    """A round ready to run: ``draw()`` releases, ``realised(result)`` prices the result,
    ``request`` is the worst case the filter must admit first."""

    mechanism: str
    request: Cost
    draw: Callable[[], R]
    realised: Callable[[R], Cost]


class _Costed(Protocol):
    @property
    def cost(self) -> Cost | None: ...


def result_cost(result: _Costed) -> Cost:
    """The realised cost a result reports (every mechanism a session runs reports one)."""
    if result.cost is None:
        raise InvalidParameter("mechanism", type(result).__name__, "reported no realised cost")
    return result.cost


def fixed(mechanism: str, cost: Cost, draw: Callable[[], R]) -> Prepared[R]:
    """A round charged its request whatever happens."""
    return Prepared(mechanism, cost, draw, lambda _: cost)


def nothing_spent(err: InvalidParameter) -> InvalidParameter:
    """``err`` with the refusal's consequence stated: its rule ends in "nothing was spent"."""
    if err.rule.endswith(NOTHING_SPENT):
        return err
    return InvalidParameter(err.name, err.value, f"{err.rule}; {NOTHING_SPENT}")


@contextmanager
def refusing(method: str) -> Iterator[None]:
    """Input errors inside become `InvalidParameter` saying that nothing was spent; an error that
    numpy or a constructor raised on a bad argument names the method's arguments."""
    try:
        yield
    except InvalidParameter as err:
        raise nothing_spent(err) from err
    except NotAStoppingTime as err:
        raise NotAStoppingTime(f"{err}; {NOTHING_SPENT}") from err
    except ExpostError:  # BudgetExceeded says so itself
        raise
    except (TypeError, ValueError, ArithmeticError, AttributeError) as err:
        raise InvalidParameter(
            "arguments", method, f"were refused ({type(err).__name__}: {err}); {NOTHING_SPENT}"
        ) from err


def limit(name: str, value: object, what: str, size: object, limit: object) -> NoReturn:
    if isinstance(size, Fraction) and size.denominator == 1:
        size = size.numerator  # shown as the integer it is
    raise InvalidParameter(name, value, f"{what} = {shown(size)} is above the limit {limit}")


def too_small(name: str, value: object, what: str, limit: str) -> NoReturn:
    raise InvalidParameter(name, value, f"{what} is below the limit {limit}")


def check_rule(rule: object, d: int) -> None:
    """A rule that cannot judge iterates of dimension d is refused before the round."""
    check = getattr(rule, "check_dimension", None)
    if callable(check):
        check(d)
