"""Hypothesis strategies for the values of `expost`, for property tests here and downstream.

Needs ``hypothesis`` (the ``test`` extra). Every strategy draws valid values only, with
parameters in ranges where floating point stays exact enough for the library's checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from attrs import field, frozen
from hypothesis import strategies as st

from expost._validation import as_float, finite, positive, validator
from expost.grids import EpsilonGrid, TimeGrid
from expost.guarantees import ZCDP, ApproxDP, ExPost, Guarantee, ProbabilisticDP, PureDP
from expost.stopping import AtIndex, Never, RelativeError, StoppingRule

__all__ = [
    "AdaptiveAnalyst",
    "AdaptiveStep",
    "BrownianRequest",
    "Request",
    "ZCDPRequest",
    "adaptive_analysts",
    "eps_grids",
    "guarantees",
    "stopping_rules",
    "time_grids",
]

_GUARANTEE_KINDS: dict[str, type] = {
    "pure": PureDP,
    "approx": ApproxDP,
    "zcdp": ZCDP,
    "pdp": ProbabilisticDP,
    "ex_post": ExPost,
}


def _levels(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Positive floats log-uniform-ish on [lo, hi], on a grid of 100 points per decade."""
    a, b = round(100 * math.log10(lo)), round(100 * math.log10(hi))
    return st.integers(a, b).map(lambda k: 10.0 ** (k / 100.0))


def _deltas(max_delta: float) -> st.SearchStrategy[float]:
    return st.one_of(st.just(0.0), st.floats(1e-12, max_delta, exclude_max=True))


def guarantees(
    kinds: Sequence[str] = tuple(_GUARANTEE_KINDS), max_delta: float = 0.5
) -> st.SearchStrategy[Guarantee]:
    """Valid guarantees: `PureDP`, `ApproxDP`, `ZCDP`, `ProbabilisticDP`, `ExPost`.

    ``kinds`` restricts the types (names: pure, approx, zcdp, pdp, ex_post); eps, rho and
    bounds lie in [1e-3, 100], delta in {0} ∪ [1e-12, max_delta).
    """
    unknown = [k for k in kinds if k not in _GUARANTEE_KINDS]
    if unknown or not kinds:
        raise ValueError(f"kinds must be a non-empty subset of {list(_GUARANTEE_KINDS)}")
    level, delta = _levels(1e-3, 100.0), _deltas(max_delta)
    built: dict[str, st.SearchStrategy[Guarantee]] = {
        "pure": st.builds(PureDP, level),
        "approx": st.builds(ApproxDP, level, delta),
        "zcdp": st.builds(ZCDP, level, delta),
        "pdp": st.builds(ProbabilisticDP, level, delta),
        "ex_post": st.builds(ExPost, level, delta),
    }
    return st.one_of([built[k] for k in kinds])


def _distinct_sorted(
    lo: float, hi: float, min_size: int, max_size: int, *, reverse: bool
) -> st.SearchStrategy[list[float]]:
    """Strictly monotone lists of distinct grid levels (100 per decade, so no float ties)."""
    a, b = round(100 * math.log10(lo)), round(100 * math.log10(hi))
    ints = st.lists(st.integers(a, b), min_size=min_size, max_size=max_size, unique=True)
    return ints.map(lambda ks: [10.0 ** (k / 100.0) for k in sorted(ks, reverse=reverse)])


def time_grids(
    min_size: int = 1, max_size: int = 20, lo: float = 1e-3, hi: float = 1e3
) -> st.SearchStrategy[TimeGrid]:
    """`TimeGrid` of strictly decreasing Brownian times in [lo, hi]."""
    return _distinct_sorted(lo, hi, min_size, max_size, reverse=True).map(TimeGrid)


def eps_grids(
    min_size: int = 1,
    max_size: int = 20,
    lo: float = 1e-3,
    hi: float = 10.0,
    sensitivities: st.SearchStrategy[float] | None = None,
) -> st.SearchStrategy[EpsilonGrid]:
    """`EpsilonGrid` of strictly increasing eps in [lo, hi]; sensitivity 1 unless drawn."""
    eps = _distinct_sorted(lo, hi, min_size, max_size, reverse=False)
    sens = st.just(1.0) if sensitivities is None else sensitivities
    return st.builds(EpsilonGrid, eps, sens)


def stopping_rules(max_index: int = 10) -> st.SearchStrategy[StoppingRule]:
    """Built-in stopping rules: `RelativeError`, `AtIndex` (k <= max_index), `Never`."""
    return st.one_of(
        st.builds(RelativeError, st.floats(0.01, 1.0)),
        st.builds(AtIndex, st.integers(0, max_index)),
        st.just(Never()),
    )


@frozen
class ZCDPRequest:
    """A rho-zCDP round (e.g. a Gaussian or exponential mechanism)."""

    rho: float = field(converter=as_float, validator=validator(positive))


@frozen
class BrownianRequest:
    """A Brownian noise-reduction round over ``grid`` that stops by ``stop``."""

    grid: EpsilonGrid
    stop: StoppingRule


Request = ZCDPRequest | BrownianRequest


@frozen
class AdaptiveStep:
    """Round k of an analyst: ``high`` if the last released value exceeds ``threshold``, else ``low``.

    The first round (nothing released yet) asks for ``low``. So the cost of a round depends on
    what was released before it, as in fully adaptive composition (FAC, APC Sec. 5).
    """

    low: Request
    high: Request
    threshold: float = field(converter=as_float, validator=validator(finite))

    def __call__(self, released: Sequence[float]) -> Request:
        return self.high if released and released[-1] > self.threshold else self.low


@frozen
class AdaptiveAnalyst:
    """A program of adaptive requests: step k maps the values released so far to round k."""

    steps: tuple[AdaptiveStep, ...]

    def __len__(self) -> int:
        return len(self.steps)

    def next_request(self, released: Sequence[float]) -> Request | None:
        """The request of round ``len(released)``, or None once the program is over."""
        k = len(released)
        return self.steps[k](released) if k < len(self.steps) else None

    def run(self, respond: Callable[[Request], float | None]) -> list[tuple[Request, float]]:
        """Play the program: ``respond(request)`` releases a value, or None to end (refused)."""
        released: list[float] = []
        transcript: list[tuple[Request, float]] = []
        while (request := self.next_request(released)) is not None:
            value = respond(request)
            if value is None:
                break
            released.append(float(value))
            transcript.append((request, float(value)))
        return transcript


def _requests(max_rho: float, grid_size: int, brownian: bool) -> st.SearchStrategy[Request]:
    zcdp = st.builds(ZCDPRequest, st.floats(1e-4, max_rho))
    if not brownian:
        return zcdp
    grid = eps_grids(1, grid_size, lo=1e-2, hi=(2.0 * max_rho) ** 0.5)
    bm = grid.flatmap(lambda g: st.builds(BrownianRequest, st.just(g), stopping_rules(len(g) - 1)))
    return st.one_of(zcdp, bm)


def adaptive_analysts(
    min_rounds: int = 1,
    max_rounds: int = 6,
    max_rho: float = 0.5,
    grid_size: int = 8,
    brownian: bool = True,
) -> st.SearchStrategy[AdaptiveAnalyst]:
    """Small adaptive programs of `ZCDPRequest` / `BrownianRequest` rounds.

    Each round's worst-case cost is at most ``max_rho`` (a BM grid's last eps² / 2 included) and
    depends on the previous released value through `AdaptiveStep`.
    """
    request = _requests(max_rho, grid_size, brownian)
    step = st.builds(AdaptiveStep, request, request, st.floats(-10.0, 10.0))
    return st.lists(step, min_size=min_rounds, max_size=max_rounds).map(
        lambda steps: AdaptiveAnalyst(tuple(steps))
    )
