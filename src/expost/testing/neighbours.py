"""Neighbouring dataset pairs for black-box audits (issue 15, point 3).

A dataset is a sequence of records (list, tuple or 1-d array). Neighbours: "add-remove" (one
record removed or added) or "replace-one" (one record changed), or any callable
``x -> iterable of neighbours``. Candidates come from the given datasets and from structured
ones in the spirit of StatDP (Ding et al. 2018): all records at the smallest seen value, all at
the largest, increasing, decreasing and half-and-half, each with its neighbours at the extreme
positions and values (where a sensitivity is attained). Structured datasets and neighbours reuse
the record values seen, never new ones (a DP claim covers only the mechanism's domain: a
mechanism DP on bits may do anything on 0.5), in the container and dtype of a given dataset.
`statdp_pairs` gives StatDP's own patterns for mechanisms whose input is a vector of
sensitivity-1 query answers.
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from expost.errors import Described, InvalidParameter, refused, shown

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = [
    "NEIGHBOURS",
    "Neighbours",
    "candidate_pairs",
    "collect_datasets",
    "difference",
    "neighbours_of",
    "show",
    "statdp_pairs",
]

NEIGHBOURS = ("add-remove", "replace-one")
MAX_PAIRS = 48  # candidate pairs searched at most (the first ones, in the order built)
_EXAMPLES = 5  # datasets drawn from a Hypothesis strategy

Dataset = Any
Neighbours = str | Callable[[Dataset], Iterable[Dataset]]
Pair = tuple[Dataset, Dataset]


def statdp_pairs(length: int = 5) -> list[Pair]:
    """StatDP's input patterns (Ding et al. 2018, Table 2) for ``length`` query answers.

    Each pair differs by at most 1 in every answer: neighbours for mechanisms of sensitivity-1
    queries answered together (sparse vector, noisy max, histograms).
    """
    if isinstance(length, bool) or not isinstance(length, int) or length < 2:
        raise InvalidParameter("length", length, "must be an integer >= 2")
    one = np.ones(length)
    half = length // 2
    patterns = [
        np.r_[2.0, one[1:]],  # one above
        np.r_[0.0, one[1:]],  # one below
        np.r_[2.0, np.zeros(length - 1)],  # one above, rest below
        np.r_[0.0, 2.0 * one[1:]],  # one below, rest above
        np.r_[np.zeros(half), 2.0 * one[half:]],  # half half
        2.0 * one,  # all above
    ]
    x_shape = (np.r_[one[:half], np.zeros(length - half)], np.r_[np.zeros(half), one[half:]])
    return [(one.copy(), p) for p in patterns] + [x_shape]


def _records(name: str, x: object) -> list[Any]:
    if isinstance(x, str | bytes) or not isinstance(x, Sequence | np.ndarray):
        raise refused(name, x, "must be a sequence of records (list, tuple or array)")
    return list(np.asarray(x).tolist()) if isinstance(x, np.ndarray) else list(x)


def _like(x: Dataset, records: list[Any]) -> Dataset:
    """The records in x's container; for an array, in x's dtype unless that would change a record
    (one seen in a dataset of another dtype, say 0.5 added to an integer array)."""
    if not isinstance(x, np.ndarray):
        return tuple(records) if isinstance(x, tuple) else records
    try:
        out = np.asarray(records, dtype=x.dtype)
    except OverflowError:  # a record out of the range of x's dtype
        return np.asarray(records)
    if out.dtype.kind in "biufc":
        own = np.asarray(records)
        if not np.array_equal(out, own, equal_nan=own.dtype.kind in "fc"):
            return own
    return out


def _number(r: object) -> bool:
    """A real number (Python's or numpy's), not a boolean."""
    return isinstance(r, numbers.Real) and not isinstance(r, bool)


def _all_records(datasets: Sequence[Dataset]) -> list[Any]:
    """Every record of every dataset, in order."""
    return [r for x in datasets for r in _records("datasets", x)]


def _extremes(datasets: Sequence[Dataset]) -> list[Any]:
    """The smallest and largest record seen (numbers), else the first two distinct records."""
    records = _all_records(datasets)
    if records and all(_number(r) for r in records):
        return sorted({min(records), max(records)})
    distinct: list[Any] = []
    for r in records:
        if r not in distinct:
            distinct.append(r)
    return distinct[:2]


def _positions(records: list[Any]) -> list[int]:
    """Where a change moves a sum or a mean the most: ends, smallest and largest record."""
    ends = [0, len(records) - 1]
    with contextlib.suppress(TypeError, ValueError):  # records without an order
        ends += [int(np.argmin(records)), int(np.argmax(records))]
    return sorted({i for i in ends if 0 <= i < len(records)})


def neighbours_of(x: Dataset, neighbours: Neighbours, values: Sequence[Any]) -> list[Dataset]:
    """Neighbours of x at the extreme positions, adding or writing the record ``values``."""
    if callable(neighbours):
        return _called(x, neighbours)
    records = _records("datasets", x)
    out: list[list[Any]] = []
    if neighbours == "add-remove":
        out += [records[:i] + records[i + 1 :] for i in _positions(records)]
        out += [[*records, v] for v in values]
    else:
        for i in _positions(records):
            out += [[*records[:i], v, *records[i + 1 :]] for v in values if v != records[i]]
    return [_like(x, r) for r in out]


def _ndim(record: Any) -> int | None:
    with contextlib.suppress(TypeError, ValueError):  # ragged records: no shape to compare
        return int(np.ndim(record))
    return None


def _like_x(x: Dataset, x_prime: object) -> bool:
    """Is x_prime a dataset like x: a sequence whose records have x's dimension (when x is a
    sequence of records), else an object of x's type?"""
    if isinstance(x, str | bytes) or not isinstance(x, Sequence | np.ndarray):
        return isinstance(x_prime, type(x))
    if isinstance(x_prime, str | bytes) or not isinstance(x_prime, Sequence | np.ndarray):
        return False
    mine, theirs = _records("datasets", x), _records("neighbours", x_prime)
    return not (mine and theirs) or _ndim(mine[0]) == _ndim(theirs[0])


def _called(x: Dataset, neighbours: Callable[[Dataset], Iterable[Dataset]]) -> list[Dataset]:
    """The callable's neighbours of x, checked to be an iterable of datasets like x."""
    found = neighbours(x)
    rule = "must return an iterable of datasets like x"
    if isinstance(found, str | bytes) or not isinstance(found, Iterable):
        got = f"got {shown(Described(found))} for x = {shown(Described(x))}"
        raise InvalidParameter("neighbours", neighbours, f"{rule}; {got}")
    found = list(found)
    for x_prime in found:
        if not _like_x(x, x_prime):
            got = (
                f"got {shown(Described(x_prime))} among the neighbours of x = {shown(Described(x))}"
            )
            raise InvalidParameter("neighbours", neighbours, f"{rule}; {got}")
    return found


def show(x: Dataset, width: int = 60) -> str:
    """A dataset in at most about ``width`` characters, with its length."""
    text = repr(np.asarray(x).tolist()) if isinstance(x, np.ndarray) else repr(x)
    text = text if len(text) <= width else text[: width - 1] + "…"
    if isinstance(x, str | bytes) or not isinstance(x, Sequence | np.ndarray) or np.ndim(x) == 0:
        return text
    return f"{text} ({len(x)} records)"


def _same(a: object, b: object) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays: elementwise ==
        return bool(np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)))


def _same_records(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b, strict=True))


def difference(x: Dataset, x_prime: Dataset) -> str:
    """Where x' differs from x: a record removed, added or changed, or the first difference."""
    try:
        a, b = _records("x", x), _records("x_prime", x_prime)
    except InvalidParameter:
        return "x' differs from x"
    i = next((k for k, (u, v) in enumerate(zip(a, b, strict=False)) if not _same(u, v)), None)
    i = min(len(a), len(b)) if i is None else i
    if len(b) == len(a) - 1 and _same_records(a[:i] + a[i + 1 :], b):
        return f"x' is x without record {i} ({a[i]!r})"
    if len(a) == len(b) - 1 and _same_records(b[:i] + b[i + 1 :], a):
        return f"x' is x with {b[i]!r} added at position {i}"
    if len(a) == len(b) and i == len(a):
        return "x' equals x"
    if len(a) == len(b) and _same_records(a[i + 1 :], b[i + 1 :]):
        return f"x' is x with record {i} changed from {a[i]!r} to {b[i]!r}"
    return f"x and x' first differ at record {i}"


def _ramp(seen: list[Any], n: int) -> list[Any]:
    """n of the sorted ``seen`` values, from the first to the last at evenly spaced ranks."""
    if n == 1:
        return [seen[0]]
    k = len(seen) - 1
    return [seen[(2 * i * k + n - 1) // (2 * (n - 1))] for i in range(n)]  # rank round(i·k/(n−1))


def _structured(datasets: Sequence[Dataset]) -> list[Dataset]:
    """All-low, all-high, increasing, decreasing and half-half datasets of the seen lengths, made
    of the record values seen, each like the first given dataset of its length (`_like`)."""
    records = _all_records(datasets)
    if not all(_number(r) for r in records) or len(seen := sorted(set(records))) < 2:
        return []
    lo, hi = seen[0], seen[-1]
    like: dict[int, Dataset] = {}
    for x in datasets:
        like.setdefault(len(_records("datasets", x)), x)
    out: list[Dataset] = []
    for n, x in sorted(like.items()):
        if n == 0:
            continue
        ramp, half = _ramp(seen, n), n // 2
        shapes = [[lo] * n, [hi] * n, ramp, ramp[::-1], [lo] * half + [hi] * (n - half)]
        out += [_like(x, r) for r in shapes]
    return out


def _key(x: Dataset) -> str:
    return repr(np.asarray(x, dtype=object).tolist()) if isinstance(x, np.ndarray) else repr(x)


def candidate_pairs(datasets: Sequence[Dataset], neighbours: Neighbours) -> list[Pair]:
    """Pairs (x, x') for x among the datasets and the structured ones, x' a neighbour of x."""
    values = [] if callable(neighbours) else _extremes(datasets)
    bases = list(datasets) + ([] if callable(neighbours) else _structured(datasets))
    seen: set[tuple[str, str]] = set()
    pairs: list[Pair] = []
    for x in bases:
        for x_prime in neighbours_of(x, neighbours, values):
            key = (_key(x), _key(x_prime))
            if key not in seen:
                seen.add(key)
                pairs.append((x, x_prime))
    if not pairs:
        raise refused("datasets", datasets, "must give at least one neighbouring pair")
    return pairs[:MAX_PAIRS]


def collect_datasets(strategy: SearchStrategy[Dataset]) -> list[Dataset]:
    """A few datasets drawn from a Hypothesis strategy, the same on every run (derandomized)."""
    from hypothesis import HealthCheck, Phase, given, settings

    drawn: list[Dataset] = []

    @settings(
        max_examples=_EXAMPLES,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(x: Dataset) -> None:
        drawn.append(x)

    collect()
    return drawn
