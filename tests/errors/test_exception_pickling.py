"""Every expost exception pickles with its type, message and fields (issue 41, item 5).

The subclasses' constructors take other arguments than the message, so ``Exception``'s default
pickling (``cls(*args)`` with the message) could not rebuild them: a `multiprocessing.Pool`
worker that raised one hung ``.get()`` forever, and `ProcessPoolExecutor` broke. Here each
class found by introspection round-trips through `pickle`, through a ``Pool`` (``.get()``
re-raises it) and through a ``ProcessPoolExecutor``, every wait bounded so that a regression
fails instead of hanging.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from expost import errors
from expost.errors import (
    BudgetExceeded,
    Described,
    ExpostError,
    InvalidParameter,
    LedgerCorrupted,
    LedgerError,
    LedgerMismatch,
    LedgerNotFound,
    LedgerRefused,
    NotAStoppingTime,
    NotCopyable,
)
from expost.symbolic.discovery import ProofLoadError

WAIT = 60.0  # seconds: a worker answers in well under a second; a hang fails here

EXAMPLES: dict[type[ExpostError], Callable[[], ExpostError]] = {
    ExpostError: lambda: ExpostError("something failed"),
    InvalidParameter: lambda: InvalidParameter("delta", 1.5, "must lie in [0, 1)"),
    BudgetExceeded: lambda: BudgetExceeded(0.25, 0.5, 0.75, "eps", detail="a note"),
    NotAStoppingTime: lambda: NotAStoppingTime("the rule asked for the future"),
    NotCopyable: lambda: NotCopyable("PrivateSession", "open a session per process"),
    LedgerError: lambda: LedgerError("locked too long"),
    LedgerMismatch: lambda: LedgerMismatch(Path("/tmp/l.db"), "a", "b", what="id", advice="x"),
    LedgerNotFound: lambda: LedgerNotFound(Path("/tmp/none.db"), "no such file"),
    LedgerCorrupted: lambda: LedgerCorrupted("/tmp/bad.db", "not a SQLite file"),
    LedgerRefused: lambda: LedgerRefused("the server refused the settle of round 3"),
    ProofLoadError: lambda: ProofLoadError("proof module p did not load"),
}


def _subclasses(cls: type[ExpostError]) -> set[type[ExpostError]]:
    found = {cls}
    for sub in cls.__subclasses__():
        found |= _subclasses(sub)
    return found


def _fields(err: BaseException) -> dict[str, Any]:
    return dict(vars(err))


def _same(a: BaseException, b: BaseException) -> None:
    assert type(a) is type(b)
    assert str(a) == str(b)
    assert a.args == b.args
    assert _fields(a) == _fields(b)


def test_every_exception_class_has_an_example() -> None:
    """A new exception class must be added to EXAMPLES (and so to the round trips below)."""
    in_module = {
        c
        for c in vars(errors).values()
        if isinstance(c, type) and issubclass(c, ExpostError) and c.__module__ == errors.__name__
    }
    assert in_module <= set(EXAMPLES)
    assert {c for c in _subclasses(ExpostError) if c.__module__.startswith("expost")} <= set(
        EXAMPLES
    )


@pytest.mark.parametrize("cls", list(EXAMPLES), ids=lambda c: c.__name__)
def test_round_trip_keeps_type_message_and_fields(cls: type[ExpostError]) -> None:
    err = EXAMPLES[cls]()
    assert type(err) is cls
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        _same(pickle.loads(pickle.dumps(err, protocol)), err)


def test_fields_survive_by_name() -> None:
    err = pickle.loads(pickle.dumps(BudgetExceeded(0.25, 0.5, 0.75, "eps", detail="d")))
    assert (err.spent, err.requested, err.remaining, err.unit, err.detail) == (
        0.25,
        0.5,
        0.75,
        "eps",
        "d",
    )
    bad = pickle.loads(pickle.dumps(InvalidParameter("delta", 1.5, "must lie in [0, 1)")))
    assert (bad.name, bad.value, bad.rule) == ("delta", 1.5, "must lie in [0, 1)")
    assert isinstance(bad, ValueError)


def test_a_field_that_cannot_be_pickled_is_kept_as_its_description() -> None:
    """A refused generator or lambda (any object may be refused) still pickles the error."""
    err = InvalidParameter("utilities", (u for u in [1.0]), "must be an iterable of numbers")
    copy = pickle.loads(pickle.dumps(err))
    assert str(copy) == str(err)
    assert copy.value == Described(err.value)


def test_a_private_value_is_not_in_the_pickle() -> None:
    """A refused private array is kept as its description: the pickle holds no value."""
    from expost import PrivateSession, ZCDPFilter

    session = PrivateSession(ZCDPFilter(1.0), np.random.default_rng(0))
    with pytest.raises(InvalidParameter) as info:
        session.gaussian(np.array([48213.731, 1171.377, np.inf]), 1.0, 0.1)
    data = pickle.dumps(info.value)
    assert np.float64(48213.731).tobytes() not in data
    assert b"48213" not in data


def _raise(cls_name: str) -> None:
    """Run in a worker: raise the example of the class named."""
    raise next(make() for c, make in EXAMPLES.items() if c.__name__ == cls_name)


@pytest.mark.parametrize("cls", list(EXAMPLES), ids=lambda c: c.__name__)
def test_a_pool_worker_reraises_the_same_error(cls: type[ExpostError]) -> None:
    with multiprocessing.get_context("fork").Pool(1) as pool:
        result = pool.apply_async(_raise, (cls.__name__,))
        with pytest.raises(cls) as info:
            result.get(timeout=WAIT)  # multiprocessing.TimeoutError (a failure) if it hangs
    _same(info.value, EXAMPLES[cls]())


def test_a_process_pool_executor_reraises_every_error() -> None:
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as pool:
        futures = {cls: pool.submit(_raise, cls.__name__) for cls in EXAMPLES}
        for cls, future in futures.items():
            err = future.exception(timeout=WAIT)  # TimeoutError (a failure) if it hangs
            assert err is not None
            _same(err, EXAMPLES[cls]())
        assert pool.submit(int, "7").result(timeout=WAIT) == 7  # the pool is not broken
