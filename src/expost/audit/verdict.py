"""A test's outcome (`Verdict`) and what a claim offers (`Claim`): ARCHITECTURE "Statistical audits".

A claim's test has false-alarm level at most ``alpha`` when the claim is true and reports a lower
confidence bound (level 1 − alpha) on the audited quantity; its `Verdict` is ``refuted`` iff that
bound exceeds the claimed value, or (`ImportanceClaim`) a sample exceeds the weight bound that the
claim's derivation guarantees on every run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Literal, Protocol

import numpy.typing as npt
from attrs import field, frozen

__all__ = ["Claim", "Expected", "Verdict"]

Expected = Literal["holds", "refuted"]


class _Figures(Mapping[str, float | str]):
    """A read-only copy of a mapping (picklable, unlike ``types.MappingProxyType``)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, float | str]) -> None:
        self._data = dict(data)

    def __getitem__(self, key: str) -> float | str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(self._data)


def _frozen_mapping(value: Mapping[str, float | str]) -> Mapping[str, float | str]:
    return value if isinstance(value, _Figures) else _Figures(value)


@frozen
class Verdict:
    """The outcome of one test: ``refuted`` iff ``bound`` (a lower confidence bound) > ``claimed``
    or, for an `ImportanceClaim`, a sample exceeds its weight bound (``extra["violation"]``).

    ``extra``: a read-only mapping of further figures a claim reports (an `ImportanceClaim`'s
    proposal, weight bound, upper bound, ratio to delta with its interval, effective sample size,
    and the weight-bound violation if any); the JSON report writes it under ``"importance"``.
    Empty for the other claims.
    """

    n: int
    observed: float
    bound: float
    claimed: float
    refuted: bool
    detail: str
    extra: Mapping[str, float | str] = field(
        factory=dict, converter=_frozen_mapping, hash=False, repr=False
    )

    @property
    def word(self) -> Expected:
        """``"refuted"`` or ``"holds"`` (not refuted at the audit's level)."""
        return "refuted" if self.refuted else "holds"


class Claim(Protocol):
    """What is asserted about the samples a simulator returns, and the test that checks it."""

    def describe(self) -> str:
        """The claim in words, e.g. ``P(event) <= 0.01``."""
        ...

    def verdict(self, samples: npt.ArrayLike, alpha: float) -> Verdict:
        """Test the claim on ``samples`` at false-alarm level ``alpha``."""
        ...
