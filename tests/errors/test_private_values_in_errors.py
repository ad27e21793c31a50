"""No private value in a message, a repr, a warning or the ledger (issue 41, item 3).

Sentinel records (48213.731, 1171.377 and integer twins) with one fault each — NaN, inf, out of
range, ragged, a wrong type, a wrong shape, a non-integer in the secure mode — go through every
`PrivateSession` release method (the contract table of tests/session/test_session_contract.py, which
fails when a method is added without an entry), in the float and the secure mode, with a SQLite
ledger; the refusal's message, repr, fields, its whole printed chain, the warnings and the
ledger's text are searched for the sentinels' digits. Every refusal must still say which
argument, and where and what the fault is. Accepted releases of sentinel values are searched
too (their repr, the session's history, the ledger). `expost.testing`'s entry points that take
datasets are fed the same sentinels. A planted twin (a check printing its value) is caught.
"""

from __future__ import annotations

import pickle
import sqlite3
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from expost import PrivateSession, ZCDPFilter
from expost.errors import ExpostError, InvalidParameter
from expost.testing import audit_mechanism
from tests.session.test_session_contract import NOT_EXACT_METHODS, TABLE, _call, _session

A, B = 48213.731, 1171.377
SENTINELS = ("48213", "1171")
# full-precision twins: a noisy release never prints these digits unless it stored the input
EXACT_A, EXACT_B = 48213.7310429, 1171.3770583
STORED = (repr(EXACT_A), repr(EXACT_B))

VECTOR_FAULTS: dict[str, Any] = {
    "NaN": [A, B, np.nan],
    "inf": np.array([A, B, np.inf]),
    "-inf": (A, B, -np.inf),
    "range": [A, B, 1e302],
    "ragged": [[A], [B, 1.0]],
    "type": [A, B, "x"],
    "2-d": [[A, B]],
    "non-integer": [48213, 1171, 0.5],
    "object": np.array([A, B, None], dtype=object),
}
SCALAR_FAULTS: dict[str, Any] = {
    "NaN": np.nan,
    "inf": np.inf,
    "range": 4.8213731e302,
    "non-integer": A,
    "vector": [48213, 1171],
    "huge int": 48213 * 10**400 + 1171,
}
RECORD_FAULTS: dict[str, Any] = {
    "NaN": [[A, B], [np.nan, 1.0]],
    "inf": np.array([[A, B], [1.0, np.inf]]),
    "range": [[A, B], [1e302, 1.0]],
    "ragged": [[A, B], [1.0]],
    "type": [[A, B], ["x", 1.0]],
    "3-d": [[[A, B]]],
}
#: method -> private argument -> faults
PRIVATE: dict[str, dict[str, dict[str, Any]]] = {
    "gaussian": {"value": VECTOR_FAULTS},
    "laplace": {"value": VECTOR_FAULTS},
    "doubling": {"value": VECTOR_FAULTS},
    "brownian": {"value": VECTOR_FAULTS},
    "laplace_noise_reduction": {"value": VECTOR_FAULTS},
    "skellam": {"value": {**VECTOR_FAULTS, **SCALAR_FAULTS}},
    "subsampled_gaussian": {"records": RECORD_FAULTS},
    "exponential_mechanism": {"scores": VECTOR_FAULTS, "candidates": {"ints": [48213, 1171, 1]}},
    "above_threshold": {"utilities": VECTOR_FAULTS, "threshold": SCALAR_FAULTS},
    "reduced_above_threshold": {"value": VECTOR_FAULTS, "threshold": SCALAR_FAULTS},
    "release": {},  # the caller's own draw holds the data: the library sees only the cost
}


def test_every_release_method_is_fed_sentinels() -> None:
    assert set(PRIVATE) == set(TABLE)


def _texts(err: BaseException) -> list[str]:
    """Everything a log could show of an error: its printed chain, the repr and fields of each."""
    texts = ["".join(traceback.format_exception(err))]
    seen: BaseException | None = err
    while seen is not None:
        texts += [str(seen), repr(seen), repr(vars(seen)), repr(seen.args)]
        texts.append(repr(pickle.loads(pickle.dumps(seen))))
        seen = seen.__cause__ or seen.__context__
    return texts


def _ledger_text(path: Path) -> str:
    """The ledger's text: every table dumped, the rounds' timestamps and the random ledger id
    left out (digits that could match a sentinel by chance: 1.79584867202782511716e+09,
    4511718b-…)."""
    with sqlite3.connect(path) as db:
        dump = [
            line
            for line in db.iterdump()
            if not line.startswith(
                ('INSERT INTO "rounds"', "INSERT INTO \"meta\" VALUES('ledger_id'")
            )
        ]
        rounds = db.execute("SELECT id, kind, record FROM rounds").fetchall()
    return "\n".join([*dump, *map(repr, rounds)])


def _assert_clean(texts: list[str], sentinels: tuple[str, ...] = SENTINELS) -> None:
    for text in texts:
        for s in sentinels:
            assert s not in text, f"{s!r} in {text[:400]!r}"


def _run(call: Callable[[], object]) -> tuple[BaseException | None, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
        except BaseException as err:  # noqa: BLE001  # every refusal is searched
            return err, [str(w.message) for w in caught]
    return None, [str(w.message) for w in caught]


def _cases() -> list[tuple[str, str, str]]:
    return [
        (m, arg, fault) for m, args in PRIVATE.items() for arg, f in args.items() for fault in f
    ]


@pytest.mark.parametrize("exact", [False, True], ids=["float", "secure"])
@pytest.mark.parametrize(("method", "arg", "fault"), _cases())
def test_a_refusal_describes_the_fault_and_prints_no_value(
    method: str, arg: str, fault: str, exact: bool, tmp_path: Path
) -> None:
    ledger = tmp_path / "l.db"
    s = _session(method, exact, ledger)
    kw = {**TABLE[method]["good"](exact), arg: PRIVATE[method][arg][fault]}
    err, caught = _run(lambda: _call(s, method, kw))
    s.close()
    if err is None:  # a fault one mode accepts (an integer vector in float mode, say)
        _assert_clean([_ledger_text(ledger), *caught])
        return
    assert isinstance(err, ExpostError), repr(err)
    _assert_clean([*_texts(err), _ledger_text(ledger), *caught])
    if exact and method in NOT_EXACT_METHODS:
        return  # refused for the mode, before the value is read
    assert isinstance(err, InvalidParameter)
    assert err.name == arg, str(err)  # the argument the caller passed
    assert str(err).startswith(f"{arg}=<"), str(err)  # described: type, shape, dtype


@pytest.mark.parametrize(
    ("fault", "where"),
    [
        ("NaN", "entry 2 is NaN"),
        ("inf", "entry 2 is inf"),
        ("-inf", "entry 2 is -inf"),
        ("range", "entry 2 is above"),
        ("ragged", "entry 1 is ragged"),
        ("type", "entry 2 is a str"),
        ("2-d", "shape (1, 2)"),
    ],
)
def test_the_refusal_names_the_index_and_kind_of_the_fault(fault: str, where: str) -> None:
    s = PrivateSession(ZCDPFilter(1.0), np.random.default_rng(0))
    with pytest.raises(InvalidParameter) as info:
        s.gaussian(VECTOR_FAULTS[fault], 1.0, 0.1)
    assert where in str(info.value)
    assert str(info.value).startswith("value=<")


def test_the_issue_example_and_a_nan_gradient_row() -> None:
    s = PrivateSession(ZCDPFilter(1.0), np.random.default_rng(0))
    with pytest.raises(InvalidParameter) as info:
        s.gaussian(np.array([48213.0, 1171.0, np.inf]), 1.0, rho=0.1)
    assert str(info.value) == (
        "value=<a float64 array of shape (3,)> is invalid: must contain only finite numbers: "
        "entry 2 is inf; nothing was spent"
    )
    rows = np.array([[A, B], [0.5, np.nan]])
    with pytest.raises(InvalidParameter) as info:
        s.subsampled_gaussian(rows, 1.0, 1.0, 0.1)
    assert "records=<a float64 array of shape (2, 2)>" in str(info.value)
    assert "entry (1, 1) is NaN" in str(info.value)
    _assert_clean(_texts(info.value))
    assert s.spent == 0.0


def _sentinel_release(method: str, exact: bool) -> dict[str, Any]:
    """Good arguments with sentinel values in the private ones (and noise wide enough)."""
    kw = dict(TABLE[method]["good"](exact))
    if "value" in kw:
        kw["value"] = (
            EXACT_A if method in {"doubling", "skellam"} or np.ndim(kw["value"]) == 0 else [EXACT_A]
        )
    if method == "skellam":
        kw["value"] = 48213
    for name in ("records", "scores", "utilities"):
        if name in kw:
            kw[name] = [[EXACT_A, EXACT_B], [1.0, 2.0]] if name == "records" else [EXACT_A, EXACT_B]
    if "threshold" in kw:
        kw["threshold"] = EXACT_B
    return kw


@pytest.mark.parametrize("method", sorted(set(TABLE) - {"skellam"}))
def test_an_accepted_release_keeps_no_input(method: str, tmp_path: Path) -> None:
    """Float mode: the result, the history and the ledger hold no input (the released values
    are noisy: their digits differ from the sentinels' 13 significant digits)."""
    ledger = tmp_path / "l.db"
    s = _session(method, False, ledger)
    err, caught = _run(lambda: _call(s, method, _sentinel_release(method, False)))
    assert err is None, repr(err)
    texts = [repr(s.history), str(s.history), *caught, _ledger_text(ledger)]
    s.close()
    _assert_clean(texts, STORED)
    _assert_clean([_ledger_text(ledger)])  # the ledger holds costs only: no digit of a sentinel


@pytest.mark.parametrize("method", sorted(set(TABLE) - NOT_EXACT_METHODS))
def test_a_secure_release_writes_no_input_to_the_ledger(method: str, tmp_path: Path) -> None:
    ledger = tmp_path / "l.db"
    s = _session(method, True, ledger)
    kw = {
        k: (48213 if k in {"value", "threshold"} else [48213, 1171])
        if k in {"value", "scores", "utilities", "threshold"}
        else v
        for k, v in TABLE[method]["good"](True).items()
    }
    err, caught = _run(lambda: _call(s, method, kw))
    s.close()
    assert err is None, repr(err)
    _assert_clean([_ledger_text(ledger), *caught])


# ----------------------------------------------------------------------------- expost.testing


def _mean(x: Any, rng: np.random.Generator) -> float:
    return float(np.mean(x)) + rng.laplace()


class Short:
    """A mechanism whose batch gives one output too few."""

    def batch(self, x: Any, n: int, rng: np.random.Generator) -> Any:
        return np.zeros(n - 1)

    def __call__(self, x: Any, rng: np.random.Generator) -> float:
        return 0.0


@pytest.mark.parametrize(
    "call",
    [
        lambda: audit_mechanism(_mean, pairs=[([A, B, 1.0], [A, B])], samples=999),
        lambda: audit_mechanism(_mean, pairs=[([A, B, 1.0],)], samples=1_000),  # type: ignore[list-item]
        lambda: audit_mechanism(_mean, pairs=[[A, B, 1.0]], samples=1_000),  # type: ignore[list-item]
        lambda: audit_mechanism(_mean, datasets=A, samples=1_000),
        lambda: audit_mechanism(_mean, datasets=[[A, B]], neighbours=lambda x: A),  # type: ignore[arg-type,return-value]
        lambda: audit_mechanism(_mean, datasets=[[A, B]], neighbours=lambda x: [A]),
        lambda: audit_mechanism(
            lambda x, rng: {"a": 1} if len(x) == 2 else 0.0, pairs=[([A, B, 1.0], [A, B])]
        ),
        lambda: audit_mechanism(Short(), pairs=[([A, B, 1.0], [A, B])], samples=1_000),
    ],
    ids=[
        "samples",
        "short pair",
        "pair not 2-tuple",
        "not datasets",
        "neighbours scalar",
        "neighbours unlike x",
        "unhashable output",
        "too few outputs",
    ],
)
def test_testing_refusals_describe_the_datasets(call: Callable[[], object]) -> None:
    """Bad arguments (some deliberately of the wrong type) around sentinel datasets."""
    err, caught = _run(call)
    if err is None:
        pytest.fail("the audit should refuse these arguments")
    assert isinstance(err, InvalidParameter), repr(err)
    _assert_clean([*_texts(err), *caught])


# ----------------------------------------------------------------------------- planted twin


def test_the_search_catches_a_check_that_prints_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the value check quoting the value again (as before issue 41)."""
    import expost._validation as validation

    def leaky(name: str, value: object, rule: str) -> InvalidParameter:
        return InvalidParameter(name, value, rule)

    monkeypatch.setattr(validation, "refused", leaky)
    s = PrivateSession(ZCDPFilter(1.0), np.random.default_rng(0))
    err, _ = _run(lambda: s.gaussian([A, B, np.nan], 1.0, 0.1))
    assert isinstance(err, InvalidParameter)
    with pytest.raises(AssertionError):
        _assert_clean(_texts(err))
