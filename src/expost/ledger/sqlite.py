"""A crash-safe, append-only budget ledger in one SQLite file (standard library only).

Every admitted round is committed durably before `Ledger.append` returns, so a crash
(even SIGKILL or power loss) never loses a round whose result was handed out. The admit
decision and the write happen under one cross-process write lock (``BEGIN IMMEDIATE``),
so processes sharing a file cannot jointly overspend. The ledger knows nothing about
privacy: the caller's ``decide`` turns the entries read under the lock into the next
record, or raises (e.g. `BudgetExceeded`) to write nothing.

Durability: rollback journal (``journal_mode=DELETE``) with ``synchronous=EXTRA``. At rest
the ledger is one self-contained file (WAL would keep committed rounds in ``-wal``/``-shm``
side files that can be separated from it on copy, and needs shared memory, which network
filesystems lack). In DELETE mode the commit point is the unlink of the journal, and only
EXTRA also fsyncs the directory after that unlink: with FULL, a power cut right after a
commit could resurrect the journal and roll the admitted round back.

A ledger is created explicitly (`Ledger.init`, or ``create=True``) with a random ledger id in
its metadata; `Ledger.open` of a missing file raises `LedgerNotFound` and creates nothing, so a
typo or another working directory never starts a fresh budget, and ``ledger_id=`` pins the
id, so a file re-created under the same name is refused. A file that is not a valid ledger
raises `LedgerCorrupted` and is never reset or overwritten. A `Ledger` owns one connection and is not thread-safe: use one per thread
(the file lock serialises them as it does processes). The lock is not fair: a writer that
appends in a tight loop can keep others waiting, up to their ``timeout``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from expost._validation import flag, positive
from expost.errors import (
    InvalidParameter,
    LedgerCorrupted,
    LedgerError,
    LedgerMismatch,
    LedgerNotFound,
)
from expost.ledger.base import (
    ClosesOnExit,
    Decide,
    LedgerEntry,
    StartsAt,
    canonical,
    config_text,
    entry_from_row,
    frozen_json,
    ledger_id_value,
    parse_object,
    record_text,
    valid_kind,
)
from expost.spendable import Spendable

__all__ = ["Ledger"]

SCHEMA_VERSION: Final = 1
_FORMAT: Final = "expost-ledger"
_SQLITE_MAGIC: Final = b"SQLite format 3\x00"
_COLUMNS: Final = {
    "meta": ("key", "value"),
    "rounds": ("id", "kind", "record", "created"),
}
_SCHEMA: Final = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    (
        "CREATE TABLE rounds (id INTEGER PRIMARY KEY, kind TEXT NOT NULL,"
        " record TEXT NOT NULL, created REAL NOT NULL)"
    ),
    *(
        f"CREATE TRIGGER rounds_no_{op.lower()} BEFORE {op} ON rounds"
        " BEGIN SELECT RAISE(ABORT, 'expost ledger rounds are append-only'); END"
        for op in ("UPDATE", "DELETE")
    ),
)
_CHECKPOINTS: Final = (  # made by the first checkpoint; a file without one is read as before
    "CREATE TABLE IF NOT EXISTS checkpoints (entry INTEGER PRIMARY KEY, state TEXT NOT NULL)",
    *(
        f"CREATE TRIGGER IF NOT EXISTS checkpoints_no_{op.lower()} BEFORE {op} ON checkpoints"
        " BEGIN SELECT RAISE(ABORT, 'expost ledger checkpoints are append-only'); END"
        for op in ("UPDATE", "DELETE")
    ),
)
# Failures of access or locking, not of content: they never make a file "corrupted".
_ACCESS_CODES: Final = frozenset(
    {
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_NOMEM,
        sqlite3.SQLITE_AUTH,
    }
)
_LOCK_CODES: Final = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_ADVICE: Final = "use another file"


def _ledger_path(path: object) -> Path:
    if not isinstance(path, str | os.PathLike) or os.fspath(path) in ("", b""):
        raise InvalidParameter("path", path, "must be a non-empty file path")
    p = Path(os.fsdecode(os.fspath(path))).absolute()
    if p.is_dir():
        raise InvalidParameter("path", path, "is a directory, not a ledger file")
    if p.exists() and not p.is_file():
        raise InvalidParameter("path", path, "must be a regular file")
    if not p.parent.is_dir():
        raise InvalidParameter("path", path, "its directory does not exist")
    return p


def _sqlite_error(path: Path, exc: sqlite3.Error, *, corrupt: bool) -> LedgerError:
    """Map an sqlite3 error: lock and access failures are `LedgerError`, content ones corrupt."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code in _LOCK_CODES:
        return LedgerError(
            f"could not obtain the lock on ledger {str(path)!r} before the timeout: another "
            f"process holds it ({exc})"
        )
    if corrupt and code not in _ACCESS_CODES:
        return LedgerCorrupted(path, f"SQLite reports: {exc}")
    return LedgerError(f"ledger {str(path)!r} could not be used: {exc}")


def _configure(conn: sqlite3.Connection) -> None:
    """Durable commits (see the module docstring); set only once the file is known sound."""
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("PRAGMA synchronous=EXTRA")


def _fsync_directory(directory: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _create(path: Path, text: str, timeout: float) -> bool:
    """Build the ledger (a new random id) beside ``path`` and hard-link it into place, never
    replacing a file; whether this call's file was linked.

    The link is atomic, so any file found at ``path`` is a complete ledger or not a ledger
    at all; if another process links first, its file is kept and verified by the caller.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.new")
    try:
        conn = sqlite3.connect(tmp, timeout=timeout, isolation_level=None)
        try:
            _configure(conn)
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [
                    ("format", _FORMAT),
                    ("schema_version", str(SCHEMA_VERSION)),
                    ("config", text),
                    ("ledger_id", str(uuid.uuid4())),
                ],
            )
            conn.execute("COMMIT")
        finally:
            conn.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        _fsync_directory(path.parent)
        return True
    except (sqlite3.Error, OSError) as exc:
        raise LedgerError(f"could not create ledger {str(path)!r}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


def _check_header(path: Path) -> None:
    try:
        with path.open("rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise LedgerError(f"ledger {str(path)!r} could not be read: {exc}") from exc
    if not head:
        raise LedgerCorrupted(path, "the file is empty (0 bytes)")
    if head != _SQLITE_MAGIC:
        raise LedgerCorrupted(path, "not an SQLite database (wrong file header)")


def _verify(conn: sqlite3.Connection, path: Path) -> tuple[str, str | None]:
    """Check the open file is a sound ledger (inside a read transaction); return its config
    and its ledger id (None for a file made before ledger ids)."""
    problems = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
    if problems != ["ok"]:
        raise LedgerCorrupted(path, "integrity check failed: " + "; ".join(problems[:5]))
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    size = path.stat().st_size
    if size != pages * page_size:
        raise LedgerCorrupted(
            path, f"file has {size} bytes but {pages} pages of {page_size} bytes (truncated?)"
        )
    for table, columns in _COLUMNS.items():
        found = tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
        if found != columns:
            raise LedgerCorrupted(path, f"table {table!r} has columns {found}, expected {columns}")
    found = tuple(row[1] for row in conn.execute("PRAGMA table_info(checkpoints)"))
    if found not in ((), ("entry", "state")):
        raise LedgerCorrupted(path, f"table 'checkpoints' has columns {found}")
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("format") != _FORMAT:
        raise LedgerCorrupted(path, f"meta format is {meta.get('format')!r}, not {_FORMAT!r}")
    if meta.get("schema_version") != str(SCHEMA_VERSION):
        raise LedgerCorrupted(
            path,
            f"schema version {meta.get('schema_version')!r}, this library reads {SCHEMA_VERSION}",
        )
    config = canonical("stored config", parse_object(path, "the stored config", meta.get("config")))
    stored_id = meta.get("ledger_id")
    if stored_id is not None and ledger_id_value(stored_id) != stored_id:
        raise LedgerCorrupted(path, f"meta ledger_id {stored_id!r} is not a UUID")
    return config, stored_id


class Ledger(ClosesOnExit, StartsAt, Spendable):
    """An open ledger file; create it with `Ledger.open`, use as a context manager."""

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        config: Mapping[str, Any],
        ledger_id: str | None = None,
    ) -> None:
        """Internal: wrap an already verified connection. Use `Ledger.open`."""
        self._path = path
        self._id = ledger_id
        self._conn: sqlite3.Connection | None = conn
        self._config = config
        self._entries: tuple[LedgerEntry, ...] = ()
        self._base = 0  # the index of the first entry read (`start_at`: a checkpoint's)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        config: Mapping[str, object],
        *,
        create: bool = False,
        ledger_id: str | None = None,
        timeout: float = 30.0,
        lazy: bool = False,
    ) -> Ledger:
        """Open the existing ledger at ``path`` for ``config`` (with ``create=True``: creating
        it if there is no file); ``lazy``: read no round yet (`start_at`, then `entries`).

        A missing file is `LedgerNotFound` (nothing created); an existing file must hold
        exactly this config (canonical JSON; note 1 and 1.0 differ), else `LedgerMismatch`,
        and, if ``ledger_id`` is given, that id, else `LedgerMismatch` (``what="id"``); a file
        that is not a sound ledger raises `LedgerCorrupted` and is left untouched.
        ``timeout`` (seconds) bounds every wait for another process's lock.
        """
        p = _ledger_path(path)
        text = config_text(config)
        wait = positive("timeout", timeout)
        pinned = None if ledger_id is None else ledger_id_value(ledger_id)
        flag("create", create)
        if not p.exists():
            if not create:
                raise LedgerNotFound(
                    p,
                    "no such file (a typo, or another working directory?); create it with "
                    "`expost ledger init` or `create=True`",
                )
            _create(p, text, wait)
        _check_header(p)
        try:
            conn = sqlite3.connect(  # threads of one session share it under the session's lock
                p.as_uri() + "?mode=rw",
                timeout=wait,
                isolation_level=None,
                uri=True,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise _sqlite_error(p, exc, corrupt=True) from exc
        try:
            conn.execute("BEGIN")
            stored, stored_id = _verify(conn, p)
            conn.execute("COMMIT")
            if pinned is not None and stored_id != pinned:
                raise LedgerMismatch(p, str(stored_id), pinned, what="id", advice=_ADVICE)
            if stored != text:
                raise LedgerMismatch(p, stored, text, advice=_ADVICE)
            _configure(conn)
            ledger = cls(p, conn, frozen_json(json.loads(text)), stored_id)
            if not lazy:
                ledger._refresh()
        except sqlite3.Error as exc:
            conn.close()
            raise _sqlite_error(p, exc, corrupt=True) from exc
        except BaseException:
            conn.close()
            raise
        return ledger

    @classmethod
    def init(
        cls, path: str | os.PathLike[str], config: Mapping[str, object], *, timeout: float = 30.0
    ) -> str:
        """Create a new ledger file at ``path`` for ``config``; its ledger id. An existing file
        is refused (`LedgerError`) and left as it is."""
        p = _ledger_path(path)
        text = config_text(config)
        wait = positive("timeout", timeout)
        if p.exists() or not _create(p, text, wait):
            raise LedgerError(f"ledger {str(p)!r} already exists: it was left as it is")
        with cls.open(p, config, timeout=wait) as ledger:
            assert ledger.ledger_id is not None  # every new file has one
            return ledger.ledger_id

    @classmethod
    def stored_config(cls, path: str | os.PathLike[str]) -> Mapping[str, Any]:
        """The configuration an existing ledger file was created for (creates nothing)."""
        p = _ledger_path(path)
        if not p.exists():
            raise LedgerNotFound(p, "no such file")
        _check_header(p)
        try:
            conn = sqlite3.connect(p.as_uri() + "?mode=ro", isolation_level=None, uri=True)
            try:
                conn.execute("BEGIN")
                text, _ = _verify(conn, p)
                conn.execute("COMMIT")
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise _sqlite_error(p, exc, corrupt=True) from exc
        config: Mapping[str, Any] = frozen_json(json.loads(text))
        return config

    @property
    def path(self) -> Path:
        """The absolute path of the ledger file."""
        return self._path

    @property
    def config(self) -> Mapping[str, Any]:
        """The configuration this ledger was created for (deeply read-only)."""
        return self._config

    @property
    def ledger_id(self) -> str | None:
        """The id given to the ledger at its creation (None: made before ledger ids)."""
        return self._id

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise LedgerError(f"ledger {str(self._path)!r} is closed")
        return self._conn

    def read(self, start: int, stop: int) -> tuple[LedgerEntry, ...]:
        """The committed entries with ``start <= index < stop`` (kept nowhere)."""
        rows = (
            self._connection()
            .execute(
                "SELECT id, kind, record, created FROM rounds WHERE id >= ? AND id < ? ORDER BY id",
                (start, stop),
            )
            .fetchall()
        )
        return tuple(entry_from_row(self._path, row) for row in rows)

    def checkpoints(self, latest: bool = False) -> tuple[tuple[int, dict[str, Any]], ...]:
        """Every checkpoint (``latest``: the last only) as (the number of entries it covers,
        its state), oldest first."""
        conn = self._connection()
        if not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'"
        ).fetchone():
            return ()
        limit = " DESC LIMIT 1" if latest else ""
        rows = conn.execute(f"SELECT entry, state FROM checkpoints ORDER BY entry{limit}")
        return tuple(
            (int(e), parse_object(self._path, f"checkpoint {e}", state)) for e, state in rows
        )

    def _write_checkpoint(self, decide: Callable[[tuple[LedgerEntry, ...]], object]) -> None:
        """Under the write lock: re-read, ``state = decide(entries)`` (None: none), then store it
        as the checkpoint of every entry read. Not part of the backend contract: only a session
        (`expost.ledger.replay`) writes them, from a replay of the entries they cover."""
        with self._writing() as (conn, entries):
            state = decide(entries)
            if state is not None:
                for statement in _CHECKPOINTS:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO checkpoints (entry, state) VALUES (?, ?)",
                    (self._base + len(entries), canonical("checkpoint", state)),
                )

    @contextlib.contextmanager
    def _writing(self) -> Iterator[tuple[sqlite3.Connection, tuple[LedgerEntry, ...]]]:
        """The cross-process write lock: the connection and every committed entry (re-read),
        committed on exit, rolled back if the body raises (its exception propagates; a SQLite
        error as `LedgerError`)."""
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn, self._refresh()
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise _sqlite_error(self._path, exc, corrupt=False) from exc

    def _refresh(self) -> tuple[LedgerEntry, ...]:
        """Read the rounds committed since the last read (the table is append-only)."""
        start = self._base + len(self._entries)
        rows = (
            self._connection()
            .execute(
                "SELECT id, kind, record, created FROM rounds WHERE id >= ? ORDER BY id", (start,)
            )
            .fetchall()
        )
        new = tuple(entry_from_row(self._path, row) for row in rows)
        for expected, entry in enumerate(new, start):
            if entry.index != expected:
                raise LedgerCorrupted(self._path, f"round {expected} is missing")
        self._entries += new
        return self._entries

    def entries(self) -> tuple[LedgerEntry, ...]:
        """All committed rounds, in order, including those appended by other processes."""
        try:
            return self._refresh()
        except sqlite3.Error as exc:
            raise _sqlite_error(self._path, exc, corrupt=True) from exc

    def append(self, kind: str, decide: Decide) -> LedgerEntry:
        """Under the cross-process write lock: re-read, ``record = decide(entries)``, commit.

        The round is durably committed before this returns. If ``decide`` raises, nothing
        is written and its exception propagates; no other writer can interleave between
        the read and the write, so a budget check inside ``decide`` cannot be overspent.
        """
        valid_kind(kind)
        with self._writing() as (conn, entries):
            text = record_text(decide(entries))
            row = (self._base + len(entries), kind, text, time.time())
            conn.execute("INSERT INTO rounds (id, kind, record, created) VALUES (?, ?, ?, ?)", row)
        entry = entry_from_row(self._path, row)
        self._entries += (entry,)
        return entry

    def close(self) -> None:
        """Close the connection (idempotent); committed rounds are already on disk."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else f"{len(self._entries)} rounds read"
        return f"Ledger({str(self._path)!r}, {state})"
