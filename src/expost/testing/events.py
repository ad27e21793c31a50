"""Output events of a black-box audit and the families they are searched in (issue 15, point 3).

An event E is a set of outputs; the audit compares P(E | x) with P(E | x'). Whether an output is
in E depends on that output alone, never on the others drawn with it: that is what makes the
final test valid. Every output y is read the same way: when it is a real number or an array of
real numbers, all finite, it is a *real output* of size d (arrays flattened); anything else
(None, a string, NaN, ±inf, an array holding one, …) is a *discrete output*. Every output also
has a value key (`output_key`): its float, its tuple of floats, or itself, NaN being one value.

Families: intervals [lo, hi) of real outputs of size 1 (thresholds are intervals with an
infinite end); for size d > 1, intervals of a learned score, a logistic regression of "x or x'?"
on the features (z, z²) of the standardised output, in the spirit of DP-Sniper (Bichsel et al.
2021), computed for each output by itself; outputs of another size and discrete outputs lie
outside every interval. Cuts lie between the distinct values seen, never on one. Value sets: single
values and the sets of the values with the largest estimated ratio P(v | x)/P(v | x') (StatDP,
Ding et al. 2018), over discrete outputs and the real values seen more than once. Every family
also offers the complements of its events. Hit counts of a whole family are computed at once.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Protocol

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost.audit.claims import CUT_LEVELS
from expost.errors import Described, InvalidParameter, shown

__all__ = [
    "NAN",
    "Complement",
    "Family",
    "Interval",
    "LinearScore",
    "OutputEvent",
    "Outputs",
    "RealBlock",
    "ValueSet",
    "as_outputs",
    "families",
    "output_key",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
ObjectArray = npt.NDArray[np.object_]

MAX_CATEGORIES = 64  # value sets use at most this many of the most frequent values
MAX_SIZES = 3  # interval families for at most this many output sizes, the most frequent
_FIT_ROWS = 50_000  # rows per side used to fit the learned score, at most
_FIT_FLOATS = 2**22  # and at most this many feature entries per side (bounded memory)
_CHUNK = 2**20  # output entries scored at once (bounded memory)
NAN = math.nan  # the key of every NaN output (one object, so sets and dicts find it)


def _plain(value: object) -> Hashable:
    """The key of a discrete output: arrays, lists and tuples become tuples, NaN becomes `NAN`."""
    if isinstance(value, np.ndarray | list | tuple):
        return tuple(_plain(v) for v in np.asarray(value, dtype=object).ravel().tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return NAN
    try:
        hash(value)
    except TypeError:
        raise TypeError(type(value).__name__) from None
    return value


def _row_key(row: list[float]) -> Hashable:
    """The key of a numeric output from its flattened values: a float, or a tuple of floats."""
    values = tuple(NAN if math.isnan(v) else v for v in row)
    return values[0] if len(values) == 1 else values


def _real(value: object) -> FloatArray | None:
    """The output's flattened values when it is numeric (finite or not), else None."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if arr.dtype.kind not in "biuf" or arr.size == 0:
        return None
    return arr.astype(np.float64).ravel()


def output_key(value: object) -> Hashable:
    """The value key of one output (module docstring); raises TypeError when it has none."""
    flat = _real(value)
    return _plain(value) if flat is None else _row_key(flat.tolist())


@frozen(eq=False)  # arrays: equal only to itself
class RealBlock:
    """The real outputs of one size d: their positions ``rows`` and ``values`` (one row each)."""

    rows: IntArray
    values: FloatArray

    @property
    def size(self) -> int:
        """d: the number of reals in each output."""
        return int(self.values.shape[1])

    def isin(self, values: frozenset[Hashable]) -> BoolArray:
        """For each row: is its key one of ``values``?"""
        if self.size == 1:
            floats = [v for v in values if isinstance(v, float)]
            return np.isin(self.values[:, 0], floats)
        keys = [v for v in values if isinstance(v, tuple) and len(v) == self.size]
        found = np.zeros(self.rows.size, dtype=bool)
        firsts = [v[0] for v in keys if isinstance(v[0], float)]
        maybe = np.flatnonzero(np.isin(self.values[:, 0], firsts))
        found[maybe] = [tuple(r) in values for r in self.values[maybe].tolist()]
        return found

    def counts(self) -> dict[Hashable, int]:
        """How often each value occurs (for sizes > 1, among the rows of integers only)."""
        if self.size == 1:
            seen, counts = np.unique(self.values[:, 0], return_counts=True)
            return dict(zip(seen.tolist(), counts.tolist(), strict=True))
        whole = self.values[np.all(self.values == np.round(self.values), axis=1)]
        seen, counts = np.unique(whole, axis=0, return_counts=True)
        return {tuple(row): c for row, c in zip(seen.tolist(), counts.tolist(), strict=True)}


@frozen(eq=False)
class Outputs:
    """n outputs of a mechanism: the real ones by size (``blocks``) and the discrete ones
    (positions ``other_rows``, keys ``other_keys``)."""

    n: int
    blocks: tuple[RealBlock, ...]
    other_rows: IntArray
    other_keys: ObjectArray

    def real(self, size: int) -> RealBlock:
        """The real outputs of this size (possibly none)."""
        for block in self.blocks:
            if block.size == size:
                return block
        return RealBlock(np.zeros(0, dtype=np.int64), np.zeros((0, size)))

    def isin(self, values: frozenset[Hashable]) -> BoolArray:
        """For each output: is its key one of ``values``?"""
        found = np.zeros(self.n, dtype=bool)
        for block in self.blocks:
            found[block.rows] = block.isin(values)
        found[self.other_rows] = [k in values for k in self.other_keys]
        return found

    def counts(self) -> tuple[dict[Hashable, int], dict[Hashable, int]]:
        """How often each key occurs: among real outputs, among discrete ones."""
        real: dict[Hashable, int] = {}
        for block in self.blocks:
            real.update(block.counts())
        return real, dict(Counter(self.other_keys.tolist()))


def _object_array(items: list[Hashable]) -> ObjectArray:
    keys = np.empty(len(items), dtype=object)
    keys[:] = items
    return keys


def _numeric(raw: object, n: int) -> FloatArray | None:
    """All n outputs as an (n, d) float array, when they are numeric arrays of one shape."""
    if not isinstance(raw, np.ndarray | list | tuple):
        return None
    try:
        arr = np.asarray(raw)
    except (TypeError, ValueError, OverflowError):
        return None
    if arr.dtype.kind not in "biuf" or arr.ndim == 0 or arr.shape[0] != n or arr.size == 0:
        return None
    return arr.reshape(n, -1).astype(np.float64)


def _data(dataset: object) -> str:
    """A dataset as an error shows it: its type and size, never its records."""
    return shown(Described(dataset))


def as_outputs(raw: object, n: int, dataset: object = None) -> Outputs:
    """Read n outputs (an array with a leading axis n, or a sequence of n outputs) drawn on
    ``dataset`` (named in errors)."""
    table = _numeric(raw, n)
    if table is not None:
        finite = np.all(np.isfinite(table), axis=1)
        rows = np.flatnonzero(finite)
        blocks = (RealBlock(rows, table if rows.size == n else table[finite]),) if rows.size else ()
        others = np.flatnonzero(~finite)
        keys = [_row_key(r) for r in table[others].tolist()]
        return Outputs(n, blocks, others, _object_array(keys))
    if not isinstance(raw, np.ndarray | list | tuple) or getattr(raw, "ndim", 1) == 0:
        got = type(raw).__name__
        raise InvalidParameter("mechanism", got, f"must give {n} outputs on x = {_data(dataset)}")
    if len(raw) != n:
        raise InvalidParameter(
            "mechanism", f"{len(raw)} outputs", f"must give {n} outputs on x = {_data(dataset)}"
        )
    return _read(raw, n, dataset)


def _read(items: Iterable[object], n: int, dataset: object) -> Outputs:
    """Outputs one by one (some are not numeric, or their shapes differ)."""
    sized: dict[int, tuple[list[int], list[FloatArray]]] = {}
    other_rows: list[int] = []
    other_keys: list[Hashable] = []
    for i, y in enumerate(items):
        flat = _real(y)
        if flat is not None and np.all(np.isfinite(flat)):
            rows, values = sized.setdefault(flat.size, ([], []))
            rows.append(i)
            values.append(flat)
            continue
        try:
            other_keys.append(output_key(y))
        except TypeError:
            rule = f"must return numbers, arrays or hashables; this came on x = {_data(dataset)}"
            raise InvalidParameter("mechanism", y, rule) from None
        other_rows.append(i)
    blocks = tuple(
        RealBlock(np.array(rows, dtype=np.int64), np.vstack(values))
        for rows, values in sized.values()
    )
    return Outputs(n, blocks, np.array(other_rows, dtype=np.int64), _object_array(other_keys))


class OutputEvent(Protocol):
    """A set of outputs: ``contains`` marks the outputs in it, each by itself."""

    def contains(self, outputs: Outputs) -> BoolArray:
        """True for each output in the event."""
        ...

    def describe(self) -> str:
        """The event in words."""
        ...


def _features(real: FloatArray, center: FloatArray, scale: FloatArray) -> FloatArray:
    z = (real - center) / scale
    return np.hstack([np.ones((z.shape[0], 1)), z, z * z - 1.0])


@frozen(eq=False)  # arrays: equal only to itself
class LinearScore:
    """s(y) = w · (1, z, z² − 1) with z = (y − center)/scale: a learned log-odds of x vs x'."""

    center: FloatArray
    scale: FloatArray
    weights: FloatArray

    @property
    def size(self) -> int:
        """d: the size of the outputs it scores."""
        return int(self.center.size)

    def __call__(self, real: FloatArray) -> FloatArray:
        """s of each row by itself: the elementwise products, made C-contiguous, summed along
        each row, which numpy does row by row, pairwise (`numpy.sum` notes: pairwise along the
        fast axis; a column-major array is summed across rows, in another order). Not
        ``features @ weights``: its BLAS kernel can round a row differently by its position."""
        step = max(1, _CHUNK // self.size)
        parts = [
            np.ascontiguousarray(
                _features(real[i : i + step], self.center, self.scale) * self.weights
            ).sum(axis=1)
            for i in range(0, real.shape[0], step)
        ]
        result: FloatArray = np.concatenate(parts) if parts else np.zeros(0)
        return result

    @classmethod
    def fit(cls, a: FloatArray, b: FloatArray) -> LinearScore:
        """Ridge logistic regression (IRLS) of label 1 for rows of ``a``, 0 for ``b``."""
        rows = max(1, min(_FIT_ROWS, _FIT_FLOATS // (2 * a.shape[1] + 1)))
        a, b = a[:rows], b[:rows]
        pooled = np.vstack([a, b])
        center = pooled.mean(axis=0)
        scale = np.where(pooled.std(axis=0) > 0, pooled.std(axis=0), 1.0)
        x = _features(pooled, center, scale)
        y = np.concatenate([np.ones(a.shape[0]), np.zeros(b.shape[0])])
        w = np.zeros(x.shape[1])
        ridge = 1e-3 * x.shape[0]
        for _ in range(25):
            p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
            hessian = (x * (p * (1 - p))[:, None]).T @ x + ridge * np.eye(x.shape[1])
            step = np.linalg.solve(hessian, x.T @ (y - p) - ridge * w)
            w = w + step
            if np.max(np.abs(step)) < 1e-8:
                break
        return cls(center, scale, w)


@frozen
class Interval:
    """{y : y is real of the score's size and lo <= s(y) < hi}: s the output itself (size 1)
    or a learned `LinearScore`. Other outputs are outside."""

    lo: float
    hi: float
    score: LinearScore | None = None

    def contains(self, outputs: Outputs) -> BoolArray:
        block = outputs.real(1 if self.score is None else self.score.size)
        s = block.values[:, 0] if self.score is None else self.score(block.values)
        found = np.zeros(outputs.n, dtype=bool)
        found[block.rows] = (s >= self.lo) & (s < self.hi)
        return found

    def describe(self) -> str:
        if self.score is None:
            what, real = "y", "y is a finite real"
        else:
            what = f"learned score s(y) of y in R^{self.score.size}"
            real = f"y is {self.score.size} finite reals"
        if self.lo == -np.inf and self.hi == np.inf:
            return real
        if self.lo == -np.inf:
            return f"{what} < {self.hi:.6g}"
        if self.hi == np.inf:
            return f"{what} >= {self.lo:.6g}"
        return f"{self.lo:.6g} <= {what} < {self.hi:.6g}"


@frozen
class ValueSet:
    """{y : the key of y (`output_key`) is one of ``values``}."""

    values: frozenset[Hashable]

    def contains(self, outputs: Outputs) -> BoolArray:
        return outputs.isin(self.values)

    def describe(self) -> str:
        shown = sorted(map(repr, self.values))
        more = f", … ({len(shown)} values)" if len(shown) > 6 else ""
        return "y in {" + ", ".join(shown[:6]) + more + "}"


@frozen
class Complement:
    """The outputs not in ``event``."""

    event: OutputEvent

    def contains(self, outputs: Outputs) -> BoolArray:
        return ~self.event.contains(outputs)

    def describe(self) -> str:
        return f"not ({self.event.describe()})"


@frozen
class Family:
    """Candidate events with their hit counts on the search outputs under x and x'."""

    hits_x: IntArray
    hits_x_prime: IntArray
    make: Callable[[int], OutputEvent]

    def with_complements(self, n: int) -> Family:
        """The events and their complements (n outputs per side)."""
        k = self.hits_x.size

        def make(i: int) -> OutputEvent:
            return self.make(i) if i < k else Complement(self.make(i - k))

        hx = np.concatenate([self.hits_x, n - self.hits_x])
        return Family(hx, np.concatenate([self.hits_x_prime, n - self.hits_x_prime]), make)


def _between(pooled: FloatArray) -> FloatArray:
    """Cuts at the quantiles (CUT_LEVELS) of the pooled values, each moved into the middle of the
    gap between the distinct values around it: the same values on each side, and no value seen,
    however often, sits on a cut."""
    distinct = np.unique(pooled)
    k = np.unique(np.searchsorted(distinct, np.quantile(pooled, CUT_LEVELS), side="left"))
    k = k[(k > 0) & (k < distinct.size)]  # distinct[k - 1] < quantile <= distinct[k]
    below, above = distinct[k - 1], distinct[k]
    mid = below / 2 + above / 2  # halves: no overflow
    cuts: FloatArray = np.where(mid > below, mid, above)  # adjacent floats: the upper one
    return cuts


def _intervals(sx: FloatArray, sxp: FloatArray, score: LinearScore | None) -> Family:
    """All [c_i, c_j), i < j, over the cuts between pooled values (`_between`) and ±inf."""
    cuts = np.concatenate([[-np.inf], _between(np.concatenate([sx, sxp])), [np.inf]])
    below_x = np.searchsorted(np.sort(sx), cuts, side="left")
    below_xp = np.searchsorted(np.sort(sxp), cuts, side="left")
    i, j = np.triu_indices(cuts.size, k=1)

    def make(k: int) -> OutputEvent:
        return Interval(float(cuts[i[k]]), float(cuts[j[k]]), score)

    hx = (below_x[j] - below_x[i]).astype(np.int64)
    return Family(hx, (below_xp[j] - below_xp[i]).astype(np.int64), make)


def _value_sets(x: Outputs, x_prime: Outputs) -> Family | None:
    """Single values and top-ratio sets over the most frequent values: discrete ones, and real
    ones seen at least twice (a continuous output has none)."""
    (real_x, other_x), (real_xp, other_xp) = x.counts(), x_prime.counts()
    counts: dict[Hashable, list[int]] = {}
    for side, found in ((0, real_x), (1, real_xp), (0, other_x), (1, other_xp)):
        for v, c in found.items():
            counts.setdefault(v, [0, 0])[side] += c
    kept = [v for v, (a, b) in counts.items() if a + b >= 2 or v in other_x or v in other_xp]
    if not kept:
        return None
    top = sorted(kept, key=lambda v: -sum(counts[v]))[:MAX_CATEGORIES]
    cx = np.array([counts[v][0] for v in top], dtype=np.int64)
    cxp = np.array([counts[v][1] for v in top], dtype=np.int64)
    order = np.argsort(-(cx + 0.5) / (cxp + 0.5), kind="stable")
    k = len(top)

    def make(i: int) -> OutputEvent:
        if i < k:
            return ValueSet(frozenset([top[i]]))
        return ValueSet(frozenset(top[m] for m in order[: i - k + 1]))

    hx = np.concatenate([cx, np.cumsum(cx[order])])
    return Family(hx, np.concatenate([cxp, np.cumsum(cxp[order])]), make)


def families(x: Outputs, x_prime: Outputs) -> list[Family]:
    """The event families fitting the outputs seen, with complements (module docstring)."""
    sizes: Counter[int] = Counter()
    for block in (*x.blocks, *x_prime.blocks):
        sizes[block.size] += block.rows.size
    found: list[Family] = []
    for size, _ in sizes.most_common(MAX_SIZES):
        a, b = x.real(size).values, x_prime.real(size).values
        if size == 1:
            found.append(_intervals(a[:, 0], b[:, 0], None))
        else:
            score = LinearScore.fit(a, b)
            found.append(_intervals(score(a), score(b), score))
    values = _value_sets(x, x_prime)
    if values is not None:
        found.append(values)
    return [f.with_complements(x.n) for f in found]
