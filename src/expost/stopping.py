"""Stopping rules for noise reduction: decisions made from the released iterates only.

A stopping function must be a stopping time with respect to the released iterates (APC Def 4.3,
BNR Def 3.3); then releasing iterates 1..T costs the loss of iterate T alone (APC Lemma 4.1,
BNR Lemma 3.2). A rule is called with a `Released` view of the iterates released so far and
answers True to stop. A rule that needs the private data is not a stopping function: use
ReducedAboveThreshold (BNR Algorithm 1) for that.

Threat model. `Released` holds nothing but released values, their noise levels and the
(public) sensitivity, and refuses other attribute requests with `NotAStoppingTime`, so a rule
cannot reach the private value or future iterates through its public attributes (underscored
names are private by convention only, as everywhere in Python). `as_stopping_rule` rejects
callables that ask for more than that one argument. What cannot be detected in general is a
rule that reaches private data some other way: a closure, a default argument, a global. Such a
rule breaks the guarantee; keeping private data out of rules is the caller's duty.

Rules that depend on the path only through the current iterate and its index (the built-ins)
also offer a vectorised form ``stops(values (..., K, d), times (K,), sensitivity) -> (..., K)``
used by batch runs; their scalar form evaluates the same code at the latest iterate.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    finite,
    finite_array,
    flag,
    positive,
    positive_decreasing,
    read_only,
    validator,
)
from expost.errors import InvalidParameter, NotAStoppingTime

__all__ = [
    "AtIndex",
    "BatchStoppingRule",
    "MemorylessRule",
    "Never",
    "RelativeError",
    "Released",
    "ReleasedBuffer",
    "StoppingRule",
    "WhenPublicUtility",
    "as_stopping_rule",
    "first_stops",
    "rule_or_never",
    "run_rule_on_path",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]


def _times(times: npt.ArrayLike) -> FloatArray:
    return positive_decreasing("times", times)


def _values(values: npt.ArrayLike, steps: int, *, min_ndim: int) -> FloatArray:
    v = finite_array("values", values)
    if v.ndim == 1 and min_ndim == 1:
        v = v[:, np.newaxis]
    if v.ndim < 2 or v.shape[-2] != steps or v.shape[-1] == 0:
        raise InvalidParameter(
            "values", v.shape, f"must have shape (..., K, d), d >= 1, with K = len(times) = {steps}"
        )
    return v


class Released:
    """The iterates released so far, noisiest first: everything a stopping rule may look at.

    ``values`` (k, d), ``times`` (k,) (noise variances), ``eps`` (k,) = Δ/sqrt(t), ``last`` (d,),
    ``count`` = k and the public ``sensitivity`` Δ. The arrays are fresh read-only copies.
    Any other attribute raises `NotAStoppingTime` (APC Def 4.3, BNR Def 3.3).
    """

    __slots__ = ("_count", "_sensitivity", "_times", "_values")

    _values: FloatArray
    _times: FloatArray
    _sensitivity: float
    _count: int

    def __init__(
        self, values: npt.ArrayLike, times: npt.ArrayLike, sensitivity: float = 1.0
    ) -> None:
        t = _times(times)
        v = _values(values, t.size, min_ndim=1)
        if v.ndim != 2:
            raise InvalidParameter("values", v.shape, "must have shape (k,) or (k, d)")
        self._fill(v.copy(), t.copy(), positive("sensitivity", sensitivity), t.size)

    @classmethod
    def _prefix(
        cls, values: FloatArray, times: FloatArray, sensitivity: float, count: int
    ) -> Released:
        """The first ``count`` iterates of a checked path, without copying it."""
        view = object.__new__(cls)
        view._fill(values[:count], times[:count], sensitivity, count)
        return view

    def _fill(self, values: FloatArray, times: FloatArray, sensitivity: float, count: int) -> None:
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_times", times)
        object.__setattr__(self, "_sensitivity", sensitivity)
        object.__setattr__(self, "_count", count)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Released is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Released is read-only")

    if not TYPE_CHECKING:  # keep mypy's attribute checks: only the real names type-check

        def __getattr__(self, name: str) -> NoReturn:
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            raise NotAStoppingTime(
                f"a stopping rule may only look at released iterates; it asked for {name!r} "
                "(available: values, times, eps, last, count, sensitivity)"
            )

    def __repr__(self) -> str:
        return f"Released(count={self._count}, last={self.last.tolist()!r})"

    @property
    def values(self) -> FloatArray:
        """The released iterates, shape (k, d), noisiest first."""
        return read_only(self._values[: self._count])

    @property
    def times(self) -> FloatArray:
        """Their noise variances t1 > … > tk."""
        return read_only(self._times[: self._count])

    @property
    def eps(self) -> FloatArray:
        """Their privacy levels Δ/sqrt(t)."""
        return read_only(self._sensitivity / np.sqrt(self._times[: self._count]))

    @property
    def last(self) -> FloatArray:
        """The latest iterate, shape (d,)."""
        return read_only(self._values[self._count - 1])

    @property
    def count(self) -> int:
        """How many iterates have been released."""
        return self._count

    @property
    def sensitivity(self) -> float:
        """The sensitivity Δ of the released statistic (public)."""
        return self._sensitivity


class ReleasedBuffer:
    """A run's released iterates in growing buffers; ``append`` returns the rule's `Released` view.

    The view shares the buffers (no copy); the rule sees times ``rule_time`` as appended.
    """

    __slots__ = ("_count", "_rule_times", "_sensitivity", "_times", "_values")

    def __init__(self, d: int, sensitivity: float) -> None:
        self._values = np.empty((16, d))
        self._times = np.empty(16)
        self._rule_times = np.empty(16)
        self._sensitivity = sensitivity
        self._count = 0

    def append(self, y: FloatArray, t: float, rule_time: float) -> Released:
        """Record iterate ``y`` at noise level ``t`` and return the view of all so far."""
        if self._count == self._times.size:
            grow = 2 * self._count
            self._values = np.concatenate([self._values, np.empty_like(self._values)])[:grow]
            self._times = np.concatenate([self._times, np.empty(self._count)])
            self._rule_times = np.concatenate([self._rule_times, np.empty(self._count)])
        k = self._count
        self._values[k], self._times[k], self._rule_times[k] = y, t, rule_time
        self._count = k + 1
        return Released._prefix(self._values, self._rule_times, self._sensitivity, k + 1)

    @property
    def values(self) -> FloatArray:
        """The iterates so far (a copy)."""
        return self._values[: self._count].copy()

    @property
    def times(self) -> FloatArray:
        """Their noise levels (a copy)."""
        return self._times[: self._count].copy()


@runtime_checkable
class StoppingRule(Protocol):
    """A function of the released iterates: True means stop here (APC Def 4.3, BNR Def 3.3)."""

    def __call__(self, released: Released) -> bool: ...


@runtime_checkable
class BatchStoppingRule(StoppingRule, Protocol):
    """A stopping rule with a vectorised form over trials: ``stops(values (..., K, d), times (K,),
    sensitivity, start=0) -> bool (..., K)``, entry k saying whether the rule stops at the
    iterate with 0-based index ``start + k`` (``start`` lets a lazy walk pass one chunk at a time)."""

    def stops(
        self, values: FloatArray, times: FloatArray, sensitivity: float, start: int = 0
    ) -> BoolArray: ...


class MemorylessRule(ABC):
    """A rule decided by the current iterate, its time and its index; one code path for both forms.

    Subclass it and implement ``_fires(values (..., K, d), times (K,), sensitivity, index (K,))``
    to get the scalar ``__call__`` and the vectorised ``stops`` (which lazy batch walks use
    chunk by chunk) from one piece of code.
    """

    __slots__ = ()

    @abstractmethod
    def _fires(
        self, values: FloatArray, times: FloatArray, sensitivity: float, index: IndexArray
    ) -> BoolArray:
        """Stop at each iterate? values (..., K, d), times (K,), index (K,) -> (..., K)."""

    def check_dimension(self, d: int) -> None:  # noqa: B027  # a hook: any d unless overridden
        """Refuse (`InvalidParameter`) iterates of dimension ``d`` the rule cannot judge, before
        a round is reserved (docs/session.md, "The round protocol"); any d by default."""

    def fires(
        self, values: FloatArray, times: FloatArray, sensitivity: float, index: IndexArray
    ) -> BoolArray:
        """``stops`` without its checks, for walks that checked their grid once (times may be
        per trial, (..., K)): values (..., K, d), index (K,) -> (..., K)."""
        return self._fires(values, times, sensitivity, index)

    def stops(
        self, values: npt.ArrayLike, times: npt.ArrayLike, sensitivity: float = 1.0, start: int = 0
    ) -> BoolArray:
        """For each trial and grid point, whether the rule stops at that iterate.

        The iterates given are those with 0-based indices ``start, start + 1, …``.
        """
        t = _times(times)
        v = _values(values, t.size, min_ndim=2)
        s = positive("sensitivity", sensitivity)
        first = _nonnegative_int("start", start)
        return self._fires(read_only(v), t, s, np.arange(first, first + t.size))

    def __call__(self, released: Released) -> bool:
        if not isinstance(released, Released):
            raise InvalidParameter("released", released, "must be a Released view")
        k = released.count
        fired = self._fires(
            released.last[np.newaxis, :],
            released.times[k - 1 :],
            released.sensitivity,
            np.array([k - 1]),
        )
        return bool(fired[0])


def _nonnegative_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise InvalidParameter(name, value, "must be an integer >= 0")
    return int(value)


def _is_callable(name: str, value: object) -> None:
    if not callable(value):
        raise InvalidParameter(name, value, "must be callable")


@frozen
class RelativeError(MemorylessRule):
    """Stop once the latest scalar iterate ŷ looks within relative error alpha (APC Sec. 7).

    With sd = sqrt(t) (= 1/eps for sensitivity 1): stop iff |ŷ| > sd and
    1 − alpha < |(ŷ + sd)/(ŷ − sd)| <= 1 + alpha. Needs d = 1.
    """

    alpha: float = field(converter=as_float, validator=validator(positive))

    def check_dimension(self, d: int) -> None:
        """Only scalar iterates (d = 1)."""
        if d != 1:
            raise InvalidParameter("stop", self, f"RelativeError needs a scalar value, not d = {d}")

    def _fires(
        self, values: FloatArray, times: FloatArray, sensitivity: float, index: IndexArray
    ) -> BoolArray:
        if values.shape[-1] != 1:
            raise InvalidParameter(
                "values", values.shape, "RelativeError needs scalar iterates (d = 1)"
            )
        y = values[..., 0]
        sd = np.sqrt(times)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.abs((y + sd) / (y - sd))
        result: BoolArray = (
            (np.abs(y) > sd) & (1.0 - self.alpha < ratio) & (ratio <= 1.0 + self.alpha)
        )
        return result


@frozen
class AtIndex(MemorylessRule):
    """Stop at the iterate with 0-based index ``k``, never before (a fixed-time rule)."""

    k: int = field(validator=validator(_nonnegative_int))

    def _fires(
        self, values: FloatArray, times: FloatArray, sensitivity: float, index: IndexArray
    ) -> BoolArray:
        return np.array(np.broadcast_to(index == self.k, values.shape[:-1]))


@frozen
class Never(MemorylessRule):
    """Never stop: walk the whole grid."""

    def _fires(
        self, values: FloatArray, times: FloatArray, sensitivity: float, index: IndexArray
    ) -> BoolArray:
        return np.zeros(values.shape[:-1], dtype=np.bool_)


@frozen
class WhenPublicUtility(MemorylessRule):
    """Stop once ``utility(latest iterate) >= threshold`` (``<=`` when ``at_least=False``).

    ``utility`` maps one released iterate (d,) to a real number using public information only,
    e.g. a loss on public data (BNR Sec. 6 checks the loss "as if public"). With ``batched=True``
    it maps an array (..., d) to (...) at once.
    """

    utility: Callable[[FloatArray], object] = field(validator=validator(_is_callable))
    threshold: float = field(converter=as_float, validator=validator(finite))
    at_least: bool = field(default=True, validator=validator(flag))
    batched: bool = field(default=False, kw_only=True, validator=validator(flag))

    def _utilities(self, values: FloatArray) -> FloatArray:
        shape = values.shape[:-1]
        if self.batched:
            u = np.asarray(self.utility(values), dtype=np.float64)
            if u.shape != shape:
                raise InvalidParameter(
                    "utility", self.utility, f"returned shape {u.shape}, expected {shape}"
                )
        else:
            rows = values.reshape(-1, values.shape[-1])
            u = np.fromiter(
                (cast(float, self.utility(read_only(row))) for row in rows),
                dtype=np.float64,
                count=rows.shape[0],
            ).reshape(shape)
        if np.any(np.isnan(u)):
            raise InvalidParameter("utility", self.utility, "returned NaN")
        return u

    def _fires(
        self, values: FloatArray, times: FloatArray, sensitivity: float, index: IndexArray
    ) -> BoolArray:
        u = self._utilities(values)
        result: BoolArray = u >= self.threshold if self.at_least else u <= self.threshold
        return result


@frozen
class _CallableRule:
    """A plain function of the released iterates, checked to return a bool."""

    function: Callable[[Released], object]

    def __call__(self, released: Released) -> bool:
        answer = self.function(released)
        if not isinstance(answer, bool | np.bool_):
            raise NotAStoppingTime(
                f"a stopping rule must return True (stop) or False; {self.function!r} "
                f"returned {answer!r}"
            )
        return bool(answer)


def _check_signature(rule: Callable[..., object]) -> None:
    try:
        signature = inspect.signature(rule)
    except (TypeError, ValueError) as exc:
        raise NotAStoppingTime(
            f"cannot read the signature of {rule!r}; wrap it in a function of one argument, "
            "the released iterates"
        ) from exc
    try:
        signature.bind(None)
    except TypeError as exc:
        raise NotAStoppingTime(
            f"a stopping rule takes exactly one argument, the released iterates; {rule!r} has "
            f"signature {signature} ({exc}). A rule that needs more (e.g. the data) is not a "
            "stopping time (APC Def 4.3); use ReducedAboveThreshold to stop on private data"
        ) from exc


def as_stopping_rule(rule: object) -> StoppingRule:
    """``rule`` as a `StoppingRule`, refusing callables that ask for more than the released view.

    Built-in rules pass through. A plain callable must be callable with one positional
    argument (the `Released` view) and nothing else required; it is wrapped so that it must
    return a bool. A closure or default argument over private data cannot be detected.
    """
    if isinstance(rule, MemorylessRule | _CallableRule):
        return rule
    if not callable(rule):
        raise NotAStoppingTime(
            f"{rule!r} is not a stopping rule: expected a function of the released iterates"
        )
    _check_signature(rule)
    if isinstance(rule, BatchStoppingRule):
        return rule
    return _CallableRule(rule)


def first_stops(
    rule: BatchStoppingRule, values: npt.ArrayLike, times: npt.ArrayLike, sensitivity: float = 1.0
) -> IndexArray:
    """For each trial in ``values`` (..., K, d), the index where the rule first stops, or −1."""
    fired = np.asarray(rule.stops(np.asarray(values), np.asarray(times), sensitivity), dtype=bool)
    first = np.argmax(fired, axis=-1)
    result: IndexArray = np.where(fired.any(axis=-1), first, -1)
    return result


def run_rule_on_path(
    rule: object, values: npt.ArrayLike, times: npt.ArrayLike, sensitivity: float = 1.0
) -> int | None:
    """The index at which ``rule`` first stops on one released path, or None if it never does.

    ``values`` (K,) or (K, d) are the iterates at ``times`` (K,), noisiest first. Batch rules are
    evaluated in one vectorised call; other rules see growing `Released` views.
    """
    r = as_stopping_rule(rule)
    t = _times(times)
    v = _values(values, t.size, min_ndim=1)
    if v.ndim != 2:
        raise InvalidParameter("values", v.shape, "must have shape (K,) or (K, d)")
    s = positive("sensitivity", sensitivity)
    if isinstance(r, BatchStoppingRule):
        index = int(first_stops(r, v, t, s))
        return None if index < 0 else index
    for k in range(1, t.size + 1):
        if r(Released._prefix(v, t, s, k)):
            return k - 1
    return None


def rule_or_never(stop: object) -> StoppingRule:
    """``as_stopping_rule(stop)``, with None meaning `Never`."""
    return Never() if stop is None else as_stopping_rule(stop)
