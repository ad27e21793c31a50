"""Output events of a black-box audit and the families they are searched in (issue 15, point 3).

An event E is a set of outputs; the audit compares P(E | x) with P(E | x'). Families by output
type: intervals [lo, hi) of a real output (thresholds are intervals with an infinite end); for
vectors, intervals of a learned score, a logistic regression of "x or x'?" on the features
(z, z²) of the standardised output, in the spirit of DP-Sniper (Bichsel et al. 2021); for
discrete or hashable outputs, single values and the sets of the values with the largest
estimated ratio P(v | x)/P(v | x') (StatDP, Ding et al. 2018). Every family also offers the
complements of its events. Hit counts of a whole family are computed at once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost.audit.claims import CUT_LEVELS
from expost.errors import InvalidParameter

__all__ = [
    "Complement",
    "Family",
    "Interval",
    "LinearScore",
    "OutputEvent",
    "Outputs",
    "ValueSet",
    "as_outputs",
    "families",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

MAX_CATEGORIES = 64  # discrete families use at most this many of the most frequent values
_FIT_ROWS = 50_000  # rows per side used to fit the learned score


def _key(value: object) -> Hashable:
    """A hashable key for one output: lists and arrays become tuples."""
    if isinstance(value, np.ndarray | list | tuple):
        return tuple(_key(v) for v in np.asarray(value, dtype=object).ravel().tolist())
    if isinstance(value, np.generic):
        key: Hashable = value.item()
        return key
    if not isinstance(value, Hashable):
        raise InvalidParameter("mechanism", value, "must return numbers, arrays or hashables")
    return value


@frozen
class Outputs:
    """n outputs of a mechanism: ``real`` (n, d) floats when numeric, else ``keys`` (hashables).

    ``keys`` is also set for numeric outputs with few distinct values (integers, booleans): rows
    become tuples (scalars stay scalars), so the discrete family applies to them too.
    """

    n: int
    real: FloatArray | None = field(eq=False)
    keys: npt.NDArray[np.object_] | None = field(eq=False)


def _numeric(raw: object, n: int) -> FloatArray | None:
    try:
        arr = np.asarray(raw)
    except (TypeError, ValueError):
        return None
    if arr.dtype.kind not in "biuf" or arr.ndim == 0 or arr.shape[0] != n:
        return None
    real = arr.reshape(n, -1).astype(np.float64)
    if not np.all(np.isfinite(real)):
        raise InvalidParameter("mechanism", "non-finite output", "outputs must be finite")
    return real


def _object_keys(items: Sequence[Hashable]) -> npt.NDArray[np.object_]:
    keys = np.empty(len(items), dtype=object)
    keys[:] = items
    return keys


def as_outputs(raw: object, n: int) -> Outputs:
    """Normalise n outputs (an array with a leading axis n, or a sequence of n outputs)."""
    real = _numeric(raw, n)
    if real is None:
        items = list(raw) if isinstance(raw, Sequence | np.ndarray) else None
        if items is None or len(items) != n:
            raise InvalidParameter("mechanism", type(raw).__name__, f"must give {n} outputs")
        return Outputs(n, None, _object_keys([_key(v) for v in items]))
    if np.all(real == np.round(real)):
        rows = [tuple(r) for r in real.tolist()] if real.shape[1] > 1 else real[:, 0].tolist()
        return Outputs(n, real, _object_keys(rows))
    return Outputs(n, real, None)


class OutputEvent(Protocol):
    """A set of outputs: ``contains`` marks the outputs in it."""

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

    def __call__(self, real: FloatArray) -> FloatArray:
        result: FloatArray = _features(real, self.center, self.scale) @ self.weights
        return result

    @classmethod
    def fit(cls, a: FloatArray, b: FloatArray) -> LinearScore:
        """Ridge logistic regression (IRLS) of label 1 for rows of ``a``, 0 for ``b``."""
        a, b = a[:_FIT_ROWS], b[:_FIT_ROWS]
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


def _scalar(outputs: Outputs, score: LinearScore | None) -> FloatArray:
    if outputs.real is None:
        raise InvalidParameter("outputs", "hashable outputs", "an interval needs real outputs")
    if score is not None:
        return score(outputs.real)
    if outputs.real.shape[1] != 1:
        raise InvalidParameter("outputs", outputs.real.shape, "must be scalar without a score")
    return outputs.real[:, 0]


@frozen
class Interval:
    """{y : lo <= s(y) < hi}: s the output itself (scalar outputs) or a learned `LinearScore`."""

    lo: float
    hi: float
    score: LinearScore | None = None

    def contains(self, outputs: Outputs) -> BoolArray:
        s = _scalar(outputs, self.score)
        return np.asarray((s >= self.lo) & (s < self.hi))

    def describe(self) -> str:
        what = "learned score s(y)" if self.score is not None else "y"
        if self.lo == -np.inf:
            return f"{what} < {self.hi:.6g}"
        if self.hi == np.inf:
            return f"{what} >= {self.lo:.6g}"
        return f"{self.lo:.6g} <= {what} < {self.hi:.6g}"


@frozen
class ValueSet:
    """{y : y is one of ``values``} (vector outputs as tuples)."""

    values: frozenset[Hashable]

    def contains(self, outputs: Outputs) -> BoolArray:
        if outputs.keys is None:
            return np.zeros(outputs.n, dtype=bool)
        return np.fromiter((k in self.values for k in outputs.keys), dtype=bool, count=outputs.n)

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


def _intervals(sx: FloatArray, sxp: FloatArray, score: LinearScore | None) -> Family:
    """All [c_i, c_j), i < j, over quantile cuts of the pooled values and ±inf."""
    inner = np.unique(np.quantile(np.concatenate([sx, sxp]), CUT_LEVELS))
    cuts = np.concatenate([[-np.inf], inner, [np.inf]])
    below_x = np.searchsorted(np.sort(sx), cuts, side="left")
    below_xp = np.searchsorted(np.sort(sxp), cuts, side="left")
    i, j = np.triu_indices(cuts.size, k=1)
    keep = ~((i == 0) & (j == cuts.size - 1))  # drop the event "everything"
    i, j = i[keep], j[keep]

    def make(k: int) -> OutputEvent:
        return Interval(float(cuts[i[k]]), float(cuts[j[k]]), score)

    hx = (below_x[j] - below_x[i]).astype(np.int64)
    return Family(hx, (below_xp[j] - below_xp[i]).astype(np.int64), make)


def _value_sets(kx: npt.NDArray[np.object_], kxp: npt.NDArray[np.object_]) -> Family:
    """Single values and top-ratio sets over the most frequent values."""
    counts: dict[Hashable, list[int]] = {}
    for side, keys in enumerate((kx, kxp)):
        for k in keys:
            counts.setdefault(k, [0, 0])[side] += 1
    top = sorted(counts, key=lambda v: -sum(counts[v]))[:MAX_CATEGORIES]
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
    """The event families fitting the outputs' type, with complements (module docstring)."""
    found: list[Family] = []
    if x.real is not None and x_prime.real is not None:
        if x.real.shape[1] == 1:
            found.append(_intervals(x.real[:, 0], x_prime.real[:, 0], None))
        else:
            score = LinearScore.fit(x.real, x_prime.real)
            found.append(_intervals(score(x.real), score(x_prime.real), score))
    if x.keys is not None and x_prime.keys is not None:
        found.append(_value_sets(x.keys, x_prime.keys))
    if not found:
        raise InvalidParameter("mechanism", "mixed outputs", "must give one output type on x, x'")
    return [f.with_complements(x.n) for f in found]
