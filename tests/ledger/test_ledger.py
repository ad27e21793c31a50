"""The persistent budget ledger: resume, refusal, corruption, locking and crash safety.

Multi-process tests run tests/ledger_worker.py as real subprocesses on real files.
"""

from __future__ import annotations

import functools
import json
import math
import os
import signal
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from expost.errors import (
    BudgetExceeded,
    ExpostError,
    InvalidParameter,
    LedgerCorrupted,
    LedgerError,
    LedgerMismatch,
)
from expost.ledger import Ledger, LedgerEntry, open_ledger
from expost.ledger.sqlite import _create
from tests.ledger_worker import CONFIG, budget_decide, spent
from tests.workers import Workers

WORKER = Path(__file__).parents[1] / "ledger_worker.py"


def _round(cost: float = 1.0) -> Callable[[tuple[LedgerEntry, ...]], Mapping[str, object]]:
    return lambda entries: {"cost": cost, "seen": len(entries)}


def _constant(record: object) -> Callable[[tuple[LedgerEntry, ...]], Mapping[str, object]]:
    return lambda entries: record  # type: ignore[return-value]


@functools.cache
def _ledger_bytes(n: int) -> bytes:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "l"
        with Ledger.open(path, CONFIG, create=True) as ledger:
            for _ in range(n):
                ledger.append("round", lambda entries: {"cost": 0.5, "pad": "x" * 1500})
        return path.read_bytes()


def _filled(path: Path, n: int) -> Path:
    """A copy of a real ledger holding ``n`` rounds."""
    path.write_bytes(_ledger_bytes(n))
    return path


def _thaw(value: object) -> object:
    if isinstance(value, Mapping):
        return {key: _thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    return value


def _execute(path: Path, *statements: str) -> None:
    """Tamper with a file behind the ledger's back."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


# ----------------------------------------------------------------------------- basics


def test_create_then_reopen_resumes_entries(tmp_path: Path) -> None:
    path = tmp_path / "budget.sqlite"
    with Ledger.open(path, CONFIG, create=True) as ledger:
        assert ledger.entries() == ()
        first = ledger.append("round", _round(0.25))
        second = ledger.append("other", _round(0.5))
    assert (first.index, second.index) == (0, 1)
    assert second.record == {"cost": 0.5, "seen": 1}
    with Ledger.open(str(path), dict(CONFIG), create=True) as again:
        assert again.entries() == (first, second)
        assert again.config == CONFIG
        assert again.append("round", _round()).index == 2
    assert sorted(os.listdir(tmp_path)) == ["budget.sqlite"]


def test_entries_are_deeply_immutable(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l", CONFIG, create=True) as ledger:
        entry = ledger.append("round", lambda entries: {"cost": 1.0, "tags": ["a"], "m": {}})
        with pytest.raises(TypeError):
            entry.record["cost"] = 0.0  # type: ignore[index]
        with pytest.raises(TypeError):
            entry.record["m"]["k"] = 1
        assert entry.record["tags"] == ("a",)
        with pytest.raises(AttributeError):
            entry.index = 5  # type: ignore[misc]
        copied = ledger.append("copy", lambda entries: {"of": entries[0].record})
        assert _thaw(copied.record) == {"of": {"cost": 1.0, "tags": ["a"], "m": {}}}
        assert ledger.entries() == (entry, copied)
        assert hash(ledger.entries()[0]) == hash(entry)


_JSON_SCALARS = hs.one_of(
    hs.none(),
    hs.booleans(),
    hs.integers(-(2**70), 2**70),
    hs.floats(allow_nan=False, allow_infinity=False),
    hs.text(max_size=10),
)


@settings(max_examples=40, deadline=None)
@given(
    record=hs.dictionaries(
        hs.text(max_size=5),
        hs.one_of(_JSON_SCALARS, hs.lists(_JSON_SCALARS, max_size=3)),
        max_size=4,
    )
)
def test_records_round_trip_exactly(
    tmp_path_factory: pytest.TempPathFactory, record: dict[str, object]
) -> None:
    path = tmp_path_factory.getbasetemp() / "round_trip.sqlite"
    with Ledger.open(path, CONFIG, create=True) as writer:
        index = writer.append("round", _constant(record)).index
    with Ledger.open(path, CONFIG, create=True) as reader:
        stored = _thaw(reader.entries()[index].record)
    assert stored == record
    assert json.dumps(stored, sort_keys=True) == json.dumps(record, sort_keys=True)


def test_append_rereads_rounds_of_other_ledger_objects(tmp_path: Path) -> None:
    path = tmp_path / "l"
    with Ledger.open(path, CONFIG, create=True) as a, Ledger.open(path, CONFIG, create=True) as b:
        a.append("round", _round())
        entry = b.append("round", _round())
        assert (entry.index, entry.record["seen"]) == (1, 1)
        assert len(a.entries()) == 2


def test_closed_ledger_raises_and_close_is_idempotent(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l", CONFIG, create=True) as ledger:
        pass
    ledger.close()
    with pytest.raises(LedgerError, match="closed"):
        ledger.entries()
    with pytest.raises(LedgerError, match="closed"):
        ledger.append("round", _round())


def test_error_hierarchy() -> None:
    assert issubclass(LedgerMismatch, LedgerError)
    assert issubclass(LedgerCorrupted, LedgerError)
    assert issubclass(LedgerError, ExpostError)


# ---------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize("path", ["", "."])
def test_empty_path_or_directory_is_invalid(path: str) -> None:
    with pytest.raises(InvalidParameter, match="path"):
        Ledger.open(path, CONFIG, create=True)


def test_missing_directory_is_invalid(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameter, match="directory does not exist"):
        Ledger.open(tmp_path / "nope" / "l", CONFIG, create=True)
    assert not (tmp_path / "nope").exists()


@pytest.mark.parametrize(
    "config",
    [
        {"rho": math.nan},
        {"rho": math.inf},
        {"grid": {1, 2}},
        {"nested": {1: "int key"}},
        {"x": np.int64(3)},
        [("rho", 1.0)],
    ],
)
def test_non_json_config_is_invalid_and_creates_nothing(tmp_path: Path, config: object) -> None:
    with pytest.raises(InvalidParameter, match="config"):
        Ledger.open(tmp_path / "l", config, create=True)  # type: ignore[arg-type]
    assert os.listdir(tmp_path) == []


def test_bad_timeout_and_kind_are_invalid(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameter, match="timeout"):
        Ledger.open(tmp_path / "l", CONFIG, timeout=0.0, create=True)
    with Ledger.open(tmp_path / "l", CONFIG, create=True) as ledger:
        for kind in ("", None):
            with pytest.raises(InvalidParameter, match="kind"):
                ledger.append(kind, _round())  # type: ignore[arg-type]
        assert ledger.entries() == ()


# ------------------------------------------------------------------ config mismatch


def test_config_is_compared_as_canonical_json(tmp_path: Path) -> None:
    path = tmp_path / "l"
    Ledger.open(path, {"b": [1.5, {"y": 2, "x": None}], "a": 0.1}, create=True).close()
    Ledger.open(path, {"a": 0.1, "b": (1.5, {"x": None, "y": 2})}, create=True).close()
    before = path.read_bytes()
    for other in (
        {"a": 0.1},
        {"a": 0.1, "b": [1.5, {"y": 2.0, "x": None}]},
        {"a": math.nextafter(0.1, 1.0), "b": [1.5, {"y": 2, "x": None}]},
    ):
        with pytest.raises(LedgerMismatch) as info:
            Ledger.open(path, other, create=True)
        assert '"a":0.1,"b":[1.5,{"x":null,"y":2}]' in str(info.value)
        assert info.value.given in str(info.value)
    assert path.read_bytes() == before


def test_losing_a_creation_race_keeps_the_winners_file(tmp_path: Path) -> None:
    path = _filled(tmp_path / "l", 3)
    before = path.read_bytes()
    _create(path, '{"other":1}', 1.0)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["l"]
    with pytest.raises(LedgerMismatch):
        Ledger.open(path, {"other": 1}, create=True)
    assert len(Ledger.open(path, CONFIG, create=True).entries()) == 3


# -------------------------------------------------------------------------- corruption


def _random_bytes(path: Path) -> str:
    path.write_bytes(np.random.default_rng(7).bytes(8192))
    return "wrong file header"


def _empty(path: Path) -> str:
    path.write_bytes(b"")
    return "empty"


def _truncated_half(path: Path) -> str:
    _filled(path, 30)
    data = path.read_bytes()
    assert len(data) >= 8 * 4096
    path.write_bytes(data[: len(data) // 2])
    return "malformed|truncated"


def _zeroed_page(path: Path) -> str:
    _filled(path, 30)
    data = bytearray(path.read_bytes())
    data[4 * 4096 : 5 * 4096] = bytes(4096)
    path.write_bytes(bytes(data))
    return "malformed|integrity"


def _foreign_sqlite(path: Path) -> str:
    _execute(path, "CREATE TABLE rounds (x INTEGER)")
    return "columns"


def _wrong_schema_version(path: Path) -> str:
    _filled(path, 2)
    _execute(path, "UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    return "schema version '2'"


def _unparsable_config(path: Path) -> str:
    _filled(path, 2)
    _execute(path, "UPDATE meta SET value = '{\"purpose\": ' WHERE key = 'config'")
    return "stored config is not valid JSON"


def _unparsable_record(path: Path) -> str:
    _filled(path, 2)
    _execute(path, "INSERT INTO rounds VALUES (2, 'round', '{\"cost\": NaN}', 0.0)")
    return "record of round 2 is not valid JSON"


def _missing_round(path: Path) -> str:
    _filled(path, 2)
    _execute(path, "INSERT INTO rounds VALUES (5, 'round', '{}', 0.0)")
    return "round 2 is missing"


@pytest.mark.parametrize(
    "corrupt",
    [
        _random_bytes,
        _empty,
        _truncated_half,
        _zeroed_page,
        _foreign_sqlite,
        _wrong_schema_version,
        _unparsable_config,
        _unparsable_record,
        _missing_round,
    ],
)
def test_corrupted_file_raises_and_is_left_unchanged(
    tmp_path: Path, corrupt: Callable[[Path], str]
) -> None:
    path = tmp_path / "l"
    expected = corrupt(path)
    before = path.read_bytes()
    for _ in range(2):
        with pytest.raises(LedgerCorrupted, match=expected) as info:
            Ledger.open(path, CONFIG, create=True)
        assert info.value.path == path
        assert str(path) in str(info.value)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["l"]


def test_rounds_are_append_only_in_the_file(tmp_path: Path) -> None:
    path = _filled(tmp_path / "l", 2)
    for statement in ("DELETE FROM rounds", "UPDATE rounds SET record = '{}'"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            _execute(path, statement)
    assert len(Ledger.open(path, CONFIG, create=True).entries()) == 2


# --------------------------------------------------------------------------- decide


def test_decide_raising_writes_nothing(tmp_path: Path) -> None:
    path = _filled(tmp_path / "l", 3)
    before = path.read_bytes()
    refusal = BudgetExceeded(1.5, 1.0, 0.0)

    def refuse(entries: tuple[LedgerEntry, ...]) -> Mapping[str, object]:
        assert len(entries) == 3
        raise refusal

    with Ledger.open(path, CONFIG, create=True) as ledger:
        old = ledger.entries()
        with pytest.raises(BudgetExceeded) as info:
            ledger.append("round", refuse)
        assert info.value is refusal
        assert ledger.entries() == old
        assert path.read_bytes() == before
        assert ledger.append("round", _round()).index == 3


@pytest.mark.parametrize("record", [{"cost": math.nan}, {"cost": {1.0}}, [("cost", 1.0)]])
def test_decide_returning_non_json_writes_nothing(tmp_path: Path, record: object) -> None:
    with Ledger.open(tmp_path / "l", CONFIG, create=True) as ledger:
        with pytest.raises(InvalidParameter, match="record"):
            ledger.append("round", _constant(record))
        assert ledger.entries() == ()


def test_budget_decide_admits_exactly_floor_budget_over_cost(tmp_path: Path) -> None:
    budget, cost = 3.1, 0.25
    with Ledger.open(tmp_path / "l", CONFIG, create=True) as ledger:
        decide = budget_decide(budget, cost, "main")
        for _ in range(math.floor(budget / cost)):
            ledger.append("round", decide)
        with pytest.raises(BudgetExceeded):
            ledger.append("round", decide)
        assert spent(ledger.entries()) == 12 * cost


def test_planted_check_then_append_outside_the_lock_overspends(tmp_path: Path) -> None:
    """Twin of the multi-process test: deciding on entries read before the lock overspends."""
    budget, cost = 1.0, 0.5
    path = tmp_path / "l"
    with Ledger.open(path, CONFIG, create=True) as a, Ledger.open(path, CONFIG, create=True) as b:
        a.append("round", budget_decide(budget, cost, "a"))
        stale_a, stale_b = a.entries(), b.entries()
        for ledger, stale in ((a, stale_a), (b, stale_b)):
            ledger.append("round", _constant(budget_decide(budget, cost, "naive")(stale)))
        assert spent(a.entries()) > budget
    with (
        Ledger.open(tmp_path / "m", CONFIG, create=True) as a,
        Ledger.open(tmp_path / "m", CONFIG, create=True) as b,
    ):
        a.append("round", budget_decide(budget, cost, "a"))
        a.append("round", budget_decide(budget, cost, "a"))
        with pytest.raises(BudgetExceeded):
            b.append("round", budget_decide(budget, cost, "b"))
        assert spent(b.entries()) == budget


# ------------------------------------------------------------------ real processes


@pytest.fixture
def workers() -> Iterator[Workers]:
    pool = Workers(WORKER)
    yield pool
    pool.stop()


def test_processes_cannot_jointly_overspend(tmp_path: Path, workers: Workers) -> None:
    """Writers race for every round: each step, all are told to go at once (lockstep), so they
    interleave by construction however loaded the machine, and never overspend together."""
    budget, cost, n = 6.1, 0.25, 3
    path = tmp_path / "shared.sqlite"
    live = {f"w{k}": workers.start("lockstep", path, budget, cost, f"w{k}") for k in range(n)}
    for proc in live.values():
        assert workers.line(proc) == "ready"
    admitted: dict[int, str] = {}
    steps = 0
    while live:
        steps += 1
        for proc in live.values():
            workers.send(proc)
        for name, proc in list(live.items()):
            if (text := workers.line(proc)) == "done":
                assert proc.wait() == 0
                del live[name]
            else:
                assert int(text) not in admitted
                admitted[int(text)] = name
    with Ledger.open(path, CONFIG, create=True) as ledger:
        entries = ledger.entries()
    assert spent(entries) <= budget
    assert len(entries) == math.floor(budget / cost) == len(admitted)
    assert {e.index: e.record["worker"] for e in entries} == admitted
    # they interleaved: each wrote one round in every step until the budget ran out
    rounds = [admitted[i] for i in sorted(admitted)]
    full_steps = len(rounds) // n
    for step in range(full_steps):
        assert sorted(rounds[step * n : (step + 1) * n]) == sorted(f"w{k}" for k in range(n))
    assert steps == full_steps + 1 + (len(rounds) % n > 0)


def test_write_lock_is_held_across_processes_during_decide(
    tmp_path: Path, workers: Workers
) -> None:
    path = tmp_path / "l"
    Ledger.open(path, CONFIG, create=True).close()
    holder, waiter = workers.start("hold", path), workers.start("hold", path)
    for proc in (holder, waiter):
        assert workers.line(proc) == "ready"
    workers.send(holder)
    assert workers.line(holder) == "locked 0"
    with Ledger.open(path, CONFIG, timeout=0.3, create=True) as ledger:
        with pytest.raises(LedgerError, match="could not obtain the lock"):
            ledger.append("round", _round())
        assert ledger.entries() == ()
        workers.send(waiter)
        workers.send(holder)
        assert workers.line(holder) == "0"
        assert workers.line(waiter) == "locked 1"
        workers.send(waiter)
        assert workers.line(waiter) == "1"
        assert [e.record["seen"] for e in ledger.entries()] == [0, 1]


def test_sigkill_inside_decide_writes_nothing_and_frees_the_lock(
    tmp_path: Path, workers: Workers
) -> None:
    path = _filled(tmp_path / "l", 2)
    before = path.read_bytes()
    holder = workers.start("hold", path)
    assert workers.line(holder) == "ready"
    workers.send(holder)
    assert workers.line(holder) == "locked 2"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert path.read_bytes() == before
    with Ledger.open(path, CONFIG, timeout=5.0, create=True) as ledger:
        assert len(ledger.entries()) == 2
        assert ledger.append("round", _round()).index == 2


def test_sigkill_mid_run_loses_no_committed_round(ledger_target: str, workers: Workers) -> None:
    """On both backends (the `ledger_target` fixture: SQLite file, PostgreSQL ledger)."""
    path = ledger_target
    printed: list[int] = []
    for _ in range(2):
        proc = workers.start("loop", path)
        target = len(printed) + 40
        while len(printed) < target:
            printed.append(int(workers.line(proc)))
        proc.send_signal(signal.SIGKILL)
        rest, _ = workers.finish(proc)
        printed += [int(line) for line in rest.splitlines(keepends=True) if line.endswith("\n")]
        assert proc.returncode == -signal.SIGKILL
        with open_ledger(path, CONFIG, create=True) as ledger:
            indices = [e.index for e in ledger.entries()]
        assert printed == list(range(len(printed)))
        assert indices[: len(printed)] == printed
        assert len(indices) - len(printed) in (0, 1)
        printed[:] = indices
