"""Privacy-level grids eps1 < eps2 < … with t = Δ²/eps² (APC Sec. 7): closed, open and clipped.

`EpsilonGrid` stores eps² exactly, so the paper's shapes (linear or doubling in eps²) end exactly
where they are told to; `OpenEpsilonGrid` records a shape whose end the budget sets later
(`clip`, exact: the largest float <= max_eps²); `ClippedGrids` is one open grid clipped at a
different level per trial (the batch engines).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Literal

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    finite,
    positive,
    positive_increasing,
    positive_int,
    read_only,
    validator,
)
from expost.errors import InvalidParameter
from expost.grids.time_grid import TimeGrid, summary

__all__ = ["ClippedGrids", "EpsilonGrid", "OpenEpsilonGrid"]

FloatArray = npt.NDArray[np.float64]

_MAX_POINTS = 10_000_000
_TINY = float(np.finfo(np.float64).tiny)
_SPLIT = 2.0**27 + 1.0  # Veltkamp's splitter for float64
_SMALL = 2.0**-450  # below it x is scaled up by _SCALE (exactly) so that the split cannot underflow
_SCALE = 2.0**600


def _square_down(x: npt.ArrayLike) -> FloatArray:
    """The largest float <= x² (x > 0, x² finite), elementwise: the clipping level of a grid.

    Rounding: down (a budget's "largest admissible" level). x·x = p + e exactly with p = fl(x·x)
    and e from Dekker's product over Veltkamp's split; p is kept iff e >= 0, else moved down one
    ulp. Small x is scaled by a power of two first and back after (exact while x² is normal; a
    subnormal x² is moved down one more ulp).
    """
    v = np.asarray(x, dtype=np.float64)
    scale = np.where(v < _SMALL, _SCALE, 1.0)
    w = v * scale
    p = w * w
    c = _SPLIT * w
    hi = c - (c - w)
    lo = w - hi
    err = ((hi * hi - p) + 2.0 * hi * lo) + lo * lo
    out: FloatArray = np.where(err >= 0.0, p, np.nextafter(p, 0.0)) / scale / scale
    return np.where(out < _TINY, np.nextafter(out, 0.0), out)


def _times_of(eps2: FloatArray, sensitivity: float) -> FloatArray:
    with np.errstate(over="ignore"):
        result: FloatArray = np.square(np.float64(sensitivity)) / eps2
    return result


def _keep_distinct(eps2: FloatArray, sensitivity: float) -> FloatArray:
    """Drop points of a non-decreasing eps² sequence that tie with their predecessor once rounded.

    eps², eps = sqrt(eps²) and t = Δ²/eps² are monotone in eps², so ties are runs of neighbours
    and dropping each tied point leaves all three strictly monotone.
    """
    eps, times = np.sqrt(eps2), _times_of(eps2, sensitivity)
    keep = np.ones(eps2.size, dtype=bool)
    keep[1:] = (np.diff(eps2) > 0.0) & (np.diff(eps) > 0.0) & (np.diff(times) < 0.0)
    return eps2[keep]


def _check_eps2(name: str, value: object, eps2: FloatArray, sensitivity: float) -> None:
    if eps2.size == 0:
        raise InvalidParameter(name, value, "leaves no grid point")
    if not (np.all(np.isfinite(eps2)) and np.all(eps2 >= _TINY)):
        raise InvalidParameter(
            name,
            value,
            "gives eps² that is not a finite normal float (need 1.5e-154 < eps < 1.3e154)",
        )
    times = _times_of(eps2, sensitivity)
    if not (np.all(np.isfinite(times)) and np.all(times > 0.0)):
        raise InvalidParameter(name, value, "gives times Δ²/eps² that are not finite and > 0")
    if np.any(np.diff(times) >= 0.0) or np.any(np.diff(np.sqrt(eps2)) <= 0.0):
        raise InvalidParameter(
            name, value, "has points so close that eps or Δ²/eps² coincide in floating point"
        )


def _sensitivity(value: float) -> float:
    return positive("sensitivity", value)


@frozen(init=False, repr=False)
class EpsilonGrid:
    """Privacy levels eps1 < eps2 < … (noisiest first) with Brownian times t = Δ²/eps² (APC Sec. 7).

    Stopping at eps costs rho = eps²/2 whatever Δ (APC Thm 3 with t = Δ²/eps²). eps² is stored
    exactly: ``EpsilonGrid(eps)`` squares eps (and sqrt gives eps back exactly), the eps²
    constructors keep the values they compute.
    """

    _eps2: tuple[float, ...]
    sensitivity: float

    def __init__(self, eps: npt.ArrayLike, sensitivity: float = 1.0) -> None:
        e = positive_increasing("eps", eps)
        s = _sensitivity(sensitivity)
        with np.errstate(over="ignore"):
            eps2 = e * e
        _check_eps2("eps", eps, eps2, s)
        self.__attrs_init__(tuple(eps2.tolist()), s)

    @classmethod
    def from_eps2(cls, eps2: npt.ArrayLike, sensitivity: float = 1.0) -> EpsilonGrid:
        """The grid with the given squared levels eps1² < eps2² < …, kept exactly."""
        e2 = positive_increasing("eps2", eps2)
        s = _sensitivity(sensitivity)
        _check_eps2("eps2", eps2, e2, s)
        grid = cls.__new__(cls)
        grid.__attrs_init__(tuple(e2.tolist()), s)
        return grid

    @classmethod
    def linear_in_eps2(
        cls, start: float, stop: float, num: int, sensitivity: float = 1.0
    ) -> EpsilonGrid:
        """``num`` equally spaced eps² from ``start`` to ``stop`` inclusive (APC Sec. 7).

        The last point is exactly ``stop``. A grid that runs to whatever the budget allows is
        `OpenEpsilonGrid.linear_in_eps2`.
        """
        a = positive("start", start)
        n = _num(num)
        s = _sensitivity(sensitivity)
        b = _stop(stop, a)
        if n == 1 and b != a:
            raise InvalidParameter("num", num, "must be >= 2 when stop > start")
        if n > 1 and b == a:
            raise InvalidParameter("stop", stop, "must be > start when num > 1")
        return cls._build(_linear(a, b, n), s, "start", start)

    @classmethod
    def geometric_in_eps2(
        cls, start: float, stop: float, ratio: float = 2.0, sensitivity: float = 1.0
    ) -> EpsilonGrid:
        """eps² = start·ratio^k for k = 0, 1, … while <= ``stop`` (doubling: APC Sec. 7.1).

        A grid that runs to whatever the budget allows is `OpenEpsilonGrid.geometric_in_eps2`.
        """
        a = positive("start", start)
        r = _ratio(ratio)
        s = _sensitivity(sensitivity)
        return cls._build(_geometric(a, _stop(stop, a), r), s, "start", start)

    @classmethod
    def _build(cls, eps2: FloatArray, sensitivity: float, name: str, value: object) -> EpsilonGrid:
        e2 = _keep_distinct(eps2, sensitivity)
        _check_eps2(name, value, e2, sensitivity)
        grid = cls.__new__(cls)
        grid.__attrs_init__(tuple(e2.tolist()), sensitivity)
        return grid

    def __repr__(self) -> str:
        return f"EpsilonGrid.from_eps2({summary(self._eps2)}, sensitivity={self.sensitivity!r})"

    def __len__(self) -> int:
        return len(self._eps2)

    def __iter__(self) -> Iterator[float]:
        return iter(self.eps.tolist())

    @property
    def eps2(self) -> FloatArray:
        """The squared levels eps², increasing (read-only)."""
        return read_only(self._eps2)

    @property
    def eps(self) -> FloatArray:
        """The levels eps, increasing (read-only)."""
        return read_only(np.sqrt(self.eps2))

    @property
    def times(self) -> TimeGrid:
        """The Brownian times t = Δ²/eps², decreasing."""
        return TimeGrid(_times_of(self.eps2, self.sensitivity))

    @property
    def first_eps(self) -> float:
        """The cheapest (noisiest) level."""
        return math.sqrt(self._eps2[0])

    @property
    def last_eps(self) -> float:
        """The largest level, which fixes the worst-case cost."""
        return math.sqrt(self._eps2[-1])

    @property
    def rho(self) -> FloatArray:
        """The cost eps²/2 of stopping at each point (APC Thm 3)."""
        return read_only(self.eps2 / 2.0)

    @property
    def max_rho(self) -> float:
        """The worst-case cost eps_last²/2 a filter must afford (APC Thm 5 condition (3))."""
        return self._eps2[-1] / 2.0

    def clip(self, max_eps: float) -> EpsilonGrid:
        """The points with eps <= ``max_eps``: what a budget admitting ``max_eps`` allows.

        Rounding: a point is kept iff its stored eps² <= max_eps² exactly (never one whose
        price eps²/2 exceeds max_eps²/2; a rounded sqrt(eps²) <= max_eps could admit one).
        """
        m = positive("max_eps", max_eps)
        keep = self.eps2 <= _square_down(m)
        if not keep[0]:
            raise InvalidParameter(
                "max_eps",
                max_eps,
                f"is below the grid's first point eps = {self.first_eps!r}: "
                "the budget does not allow even the cheapest point",
            )
        return self._build(self.eps2[keep], self.sensitivity, "max_eps", max_eps)


def _num(value: object) -> int:
    n = positive_int("num", value)
    if n > _MAX_POINTS:
        raise InvalidParameter("num", value, f"must be at most {_MAX_POINTS}")
    return n


def _ratio(value: object) -> float:
    r = finite("ratio", value)
    if r <= 1.0:
        raise InvalidParameter("ratio", value, "must be > 1")
    return r


def _stop(value: object, start: float) -> float:
    b = positive("stop", value)
    if b < start:
        raise InvalidParameter("stop", value, f"must be >= start = {start!r}")
    return b


def _linear(start: float, stop: float, num: int) -> FloatArray:
    if num == 1:
        return np.array([start])
    # linspace ends exactly at stop; the minimum guards interior points against rounding past it.
    return np.minimum(np.linspace(start, stop, num), stop)


def _geometric(start: float, stop: float, ratio: float) -> FloatArray:
    count = math.floor((math.log(stop) - math.log(start)) / math.log(ratio)) + 2
    if count > _MAX_POINTS:
        raise InvalidParameter("ratio", ratio, f"gives more than {_MAX_POINTS} points")
    points: FloatArray = start * ratio ** np.arange(count, dtype=np.float64)
    return points[points <= stop]


@frozen
class OpenEpsilonGrid:
    """A grid shape whose end is set later by the budget: linear or geometric in eps² (APC Sec. 7).

    ``clip(max_eps)`` closes it: linear → ``num`` equally spaced eps² from ``start`` to max_eps²;
    geometric → start·ratio^k <= max_eps².
    """

    shape: Literal["linear", "geometric"] = field()
    start: float = field(converter=as_float, validator=validator(positive))
    num: int | None = field(default=None, kw_only=True)
    ratio: float | None = field(default=None, kw_only=True)
    sensitivity: float = field(
        default=1.0, kw_only=True, converter=as_float, validator=validator(positive)
    )

    @shape.validator
    def _check_shape(self, _attribute: object, value: object) -> None:
        if value not in ("linear", "geometric"):
            raise InvalidParameter("shape", value, "must be 'linear' or 'geometric'")

    def __attrs_post_init__(self) -> None:
        if self.shape == "linear":
            if self.ratio is not None:
                raise InvalidParameter("ratio", self.ratio, "must be None for a linear grid")
            _num(self.num)
        else:
            if self.num is not None:
                raise InvalidParameter("num", self.num, "must be None for a geometric grid")
            _ratio(self.ratio)

    @classmethod
    def linear_in_eps2(cls, start: float, num: int, sensitivity: float = 1.0) -> OpenEpsilonGrid:
        """``num`` equally spaced eps² from ``start`` to the budget's max_eps² (APC Sec. 7 uses
        ``(1e-4, 1000)``)."""
        a = positive("start", start)
        n = _num(num)
        return cls("linear", a, num=n, sensitivity=_sensitivity(sensitivity))

    @classmethod
    def geometric_in_eps2(
        cls, start: float, ratio: float = 2.0, sensitivity: float = 1.0
    ) -> OpenEpsilonGrid:
        """eps² = start·ratio^k up to the budget's max_eps² (doubling: APC Sec. 7.1)."""
        a = positive("start", start)
        r = _ratio(ratio)
        return cls("geometric", a, ratio=r, sensitivity=_sensitivity(sensitivity))

    @property
    def first_eps(self) -> float:
        """The cheapest (noisiest) level sqrt(start)."""
        return math.sqrt(self.start)

    def clip(self, max_eps: float) -> EpsilonGrid:
        """Close the grid at the largest level ``max_eps`` the budget allows.

        Rounding: the grid ends at the largest float <= max_eps² (exactly), so no point's price
        eps²/2 exceeds max_eps²/2.
        """
        m = positive("max_eps", max_eps)
        if not math.isfinite(m * m):
            raise InvalidParameter("max_eps", max_eps, "is too large: max_eps² overflows")
        top = float(_square_down(m))
        if top < self.start:
            raise InvalidParameter(
                "max_eps",
                max_eps,
                f"gives max_eps² = {top!r} < start = {self.start!r}: "
                "the budget does not allow even the first point",
            )
        if self.shape == "linear":
            assert self.num is not None  # checked at construction
            eps2 = _linear(self.start, top, 1 if top == self.start else self.num)
        else:
            assert self.ratio is not None  # checked at construction
            eps2 = _geometric(self.start, top, self.ratio)
        return EpsilonGrid._build(eps2, self.sensitivity, "max_eps", max_eps)

    def clip_each(self, max_eps: npt.ArrayLike) -> ClippedGrids:
        """``clip`` at a different level per trial, as rows of one common length (`ClippedGrids`).

        Rounding: as `clip`, row i ends at the largest float <= max_eps[i]² (exactly).
        """
        m = np.asarray(max_eps, dtype=np.float64)
        if m.ndim != 1 or m.size == 0 or not np.all(np.isfinite(m * m)) or np.any(m <= 0.0):
            raise InvalidParameter("max_eps", m.shape, "must be a non-empty 1-d array of eps > 0")
        top = _square_down(m)
        if np.any(top < self.start):
            raise InvalidParameter(
                "max_eps", max_eps, f"gives max_eps² < start = {self.start!r} for some trial"
            )
        if self.shape == "linear":
            assert self.num is not None  # checked at construction
            return ClippedGrids(self, top, np.full(top.size, self.num - 1, dtype=np.intp))
        assert self.ratio is not None  # checked at construction
        points = _geometric(self.start, float(top.max()), self.ratio)
        last = np.searchsorted(points, top, side="right") - 1
        return ClippedGrids(self, top, last.astype(np.intp), points)


@frozen(eq=False)
class ClippedGrids:
    """An `OpenEpsilonGrid` closed at its own level in each trial (`OpenEpsilonGrid.clip_each`).

    Row i holds the eps² of ``grid.clip(max_eps[i])`` (``top[i]`` = max_eps[i]²), then repeats
    of its last point up to the common ``length``: a repeated level repeats the Brownian iterate
    at no cost, so walking a row is walking trial i's clipped grid. Points are computed on demand.
    """

    grid: OpenEpsilonGrid
    top: FloatArray
    last: npt.NDArray[np.intp]
    points: FloatArray | None = None  # geometric: the shared points, each row a prefix

    @property
    def trials(self) -> int:
        """How many rows."""
        return int(self.top.size)

    @property
    def length(self) -> int:
        """The common row length K."""
        return int(self.last.max()) + 1

    def eps2(
        self, rows: npt.NDArray[np.intp] | None = None, lo: int = 0, hi: int | None = None
    ) -> FloatArray:
        """The eps² of points lo..hi−1 for the trials ``rows`` (default all): (len(rows), hi − lo)."""
        top = self.top if rows is None else self.top[rows]
        k = np.arange(lo, self.length if hi is None else hi)
        if self.points is None:  # linear: every row has all num points, no repeats
            return self._linear(top, k[None, :])
        last = self.last if rows is None else self.last[rows]
        out: FloatArray = self.points[np.minimum(k[None, :], last[:, None])]
        return out

    def at(self, index: npt.NDArray[np.intp]) -> FloatArray:
        """The eps² of point ``index[i]`` of every trial i: shape (trials,)."""
        k = np.minimum(np.asarray(index, dtype=np.intp), self.last)
        if self.points is None:
            return self._linear(self.top, k[:, None])[:, 0]
        out: FloatArray = self.points[k]
        return out

    def _linear(self, top: FloatArray, k: npt.NDArray[np.intp]) -> FloatArray:
        """As `_linear`: linspace's start + k·step, none beyond top, the last point exactly top."""
        g = self.grid
        assert g.num is not None  # linear: checked at construction
        step = (top - g.start) / max(g.num - 1, 1)
        points: FloatArray = np.minimum(g.start + k * step[:, None], top[:, None])
        if k.max() < g.num - 1:
            return points
        result: FloatArray = np.where(k == g.num - 1, top[:, None], points)
        return result
