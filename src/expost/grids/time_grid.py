"""Brownian time grids t1 > t2 > … > 0, walked noisiest first (APC Def 4.4, BNR Def 3.1).

A `TimeGrid` holds times only (t = noise variance), so its prices take the sensitivity:
``eps_for(Δ)``, ``rho_for(Δ)``, ``max_rho_for(Δ)`` (rho = Δ²/(2t), APC Thm 3, BNR Thm 3.4).
`TimeGrid.from_boundary` reads a privacy boundary's times (`HasTimeFor`, BNR Cor 3.7).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    float_tuple,
    positive,
    positive_decreasing,
    positive_increasing,
    read_only,
    validator,
)
from expost.errors import InvalidParameter
from expost.rounding import up_array

__all__ = ["HasTimeFor", "TimeGrid", "summary"]

FloatArray = npt.NDArray[np.float64]

_PRICE_ULPS = 3  # Δ·Δ/(2t): two roundings, < 2u relative (or < 2⁻¹⁰⁷⁴ absolute once subnormal)


@runtime_checkable
class HasTimeFor(Protocol):
    """A privacy boundary ψ that maps a level E to the smallest t with ψ(t) <= E (BNR Cor 3.7)."""

    def time_for(self, eps: float) -> float: ...


def summary(values: tuple[float, ...]) -> str:
    """A grid's points for its repr: all of them up to 8, else how many and the two ends."""
    if len(values) <= 8:
        return repr(values)
    return f"<{len(values)} points from {values[0]!r} to {values[-1]!r}>"


@frozen(repr=False)
class TimeGrid:
    """Brownian times t1 > t2 > … > 0, walked noisiest first (APC Def 4.4, BNR Def 3.1).

    Stopping at t costs rho = Δ²/(2t) (APC Thm 3); the worst case is the `smallest` time.
    """

    times: tuple[float, ...] = field(
        converter=float_tuple, validator=validator(positive_decreasing)
    )

    def __repr__(self) -> str:
        return f"TimeGrid({summary(self.times)})"

    def __len__(self) -> int:
        return len(self.times)

    def __iter__(self) -> Iterator[float]:
        return iter(self.times)

    @property
    def array(self) -> FloatArray:
        """The times as a read-only float64 array."""
        return read_only(self.times)

    @property
    def smallest(self) -> float:
        """The last (least noisy) time: the one that fixes the grid's worst-case cost."""
        return self.times[-1]

    def rho_for(self, sensitivity: float = 1.0) -> FloatArray:
        """The cost Δ²/(2t) of stopping at each time (APC Thm 3, BNR Thm 3.4), rounded up."""
        s = positive("sensitivity", sensitivity)
        return read_only(up_array(s * s / (2.0 * self.array), _PRICE_ULPS))

    def max_rho_for(self, sensitivity: float = 1.0) -> float:
        """The worst-case cost Δ²/(2·t_min) a filter must afford (APC Lemma 6.2, Thm 5 cond. (3)),
        rounded up."""
        s = positive("sensitivity", sensitivity)
        return float(up_array(s * s / (2.0 * self.smallest), _PRICE_ULPS))

    def eps_for(self, sensitivity: float = 1.0) -> FloatArray:
        """The privacy level Δ/sqrt(t) of each time, rounded up (sqrt's u/2 and the quotient's u
        relative: 3 ulps)."""
        s = positive("sensitivity", sensitivity)
        return read_only(up_array(s / np.sqrt(self.array), _PRICE_ULPS))

    @classmethod
    def from_boundary(cls, boundary: HasTimeFor, levels: npt.ArrayLike) -> TimeGrid:
        """The times at which a privacy boundary ψ reaches the ex-post levels E1 < E2 < … .

        t_k = boundary.time_for(E_k), the smallest t with ψ(t) <= E_k, so stopping at t_k carries
        the ex-post bound E_k (BNR Cor 3.7, as corrected in THEORY §3). Rounding: the library's
        boundaries return times at which ψ, as computed (rounded up), is <= E_k, never below the
        exact smallest time.
        """
        if not isinstance(boundary, HasTimeFor):
            raise InvalidParameter("boundary", boundary, "must have a time_for(eps) method")
        e = positive_increasing("levels", levels)
        times = [boundary.time_for(float(x)) for x in e]
        try:
            return cls(times)
        except InvalidParameter as exc:
            raise InvalidParameter(
                "levels",
                levels,
                f"boundary.time_for maps them to {times!r}, which are not positive, finite "
                "and strictly decreasing",
            ) from exc
