"""What every ledger backend shares: the entry, the decide callback, the canonical records.

A backend (`expost.ledger.sqlite.Ledger`, `expost.ledger.postgres.PostgresLedger`) stores an
append-only sequence of rounds under one configuration and offers `LedgerBackend`'s four
operations with one contract: `append` re-reads every committed round and decides the next
under one lock that no other writer can hold at the same time, and returns only once the
round is durable. Records are canonical JSON (sorted keys, floats by repr), so a ledger copied
between backends holds the same text, round for round.
"""

from __future__ import annotations

import contextlib
import json
import math
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from attrs import field, frozen

from expost.errors import InvalidParameter, LedgerCorrupted
from expost.ledger.limits import (
    MAX_CONFIG_CHARS,
    MAX_NAME_CHARS,
    MAX_RECORD_CHARS,
    check_cost,
    check_text,
)
from expost.ledger.pg_checks import part_fault

__all__ = [
    "ClosesOnExit",
    "Decide",
    "LedgerBackend",
    "LedgerEntry",
    "canonical",
    "config_text",
    "entry_from_row",
    "frozen_json",
    "ledger_id_value",
    "parse_object",
    "record_text",
    "valid_kind",
]


@frozen
class LedgerEntry:
    """One committed round: its position ``index`` (0, 1, …), ``kind``, JSON ``record``, time.

    The record is deeply immutable (JSON objects as read-only mappings, arrays as tuples),
    so entries can be shared and handed to ``decide`` without copying.
    """

    index: int
    kind: str
    record: Mapping[str, Any] = field(hash=False)
    created: float


Decide = Callable[[tuple[LedgerEntry, ...]], Mapping[str, object]]
"""``decide(entries) -> record``: the next record given every committed round, or raise."""


def _plain(name: str, value: object) -> object:
    """``value`` as plain JSON data (dicts, lists), or InvalidParameter if it is not JSON."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidParameter(name, value, "must not contain NaN or infinity")
        return value
    if isinstance(value, list | tuple):
        return [_plain(name, item) for item in value]
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise InvalidParameter(name, value, "mapping keys must be strings")
        return {key: _plain(name, item) for key, item in value.items()}
    raise InvalidParameter(name, value, "must be JSON: None, bool, int, float, str, list, dict")


def canonical(name: str, value: object) -> str:
    """Canonical JSON of a str-keyed mapping: sorted keys, no spaces, floats by repr."""
    if not isinstance(value, Mapping):
        raise InvalidParameter(name, value, "must be a mapping with string keys")
    return json.dumps(
        _plain(name, value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def record_text(record: object) -> str:
    """A round's record as canonical JSON, within `MAX_RECORD_CHARS` and, for a session round's
    ``cost``, within the number limits (`expost.ledger.limits`: what the server accepts)."""
    text = check_text("record", canonical("record", record), MAX_RECORD_CHARS)
    if isinstance(record, Mapping):
        check_cost(record.get("cost"))
    return text


def config_text(config: object) -> str:
    """A ledger's configuration as canonical JSON, within `MAX_CONFIG_CHARS`, its filter
    without a part no client could build (`expost.ledger.pg_checks.part_fault`)."""
    text = check_text("config", canonical("config", config), MAX_CONFIG_CHARS)
    described = config.get("filter") if isinstance(config, Mapping) else None
    if (fault := part_fault(described)) is not None:
        kind = described.get("type") if isinstance(described, Mapping) else None
        raise InvalidParameter("filter", kind, fault)
    return text


def valid_kind(kind: object) -> str:
    """An entry's kind: a non-empty string of at most `MAX_NAME_CHARS` characters."""
    if not isinstance(kind, str) or not kind:
        raise InvalidParameter("kind", kind, "must be a non-empty string")
    return check_text("kind", kind, MAX_NAME_CHARS)


def frozen_json(value: Any) -> Any:
    """Parsed JSON made immutable: objects become read-only mappings, arrays tuples."""
    if isinstance(value, dict):
        return MappingProxyType({key: frozen_json(item) for key, item in value.items()})
    if isinstance(value, list):
        return tuple(frozen_json(item) for item in value)
    return value


def ledger_id_value(value: object) -> str:
    """A ledger id as its canonical text (a UUID, lower case), or InvalidParameter."""
    if isinstance(value, str | uuid.UUID):
        with contextlib.suppress(ValueError):  # not a UUID: refused below
            return str(uuid.UUID(str(value)))
    raise InvalidParameter("ledger_id", value, "must be a ledger id (a UUID)")


def _reject_constant(token: str) -> None:
    raise ValueError(f"non-finite number {token}")


def parse_object(path: Path | str, what: str, text: object) -> dict[str, Any]:
    if not isinstance(text, str):
        raise LedgerCorrupted(path, f"{what} is missing or not text ({text!r})")
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise LedgerCorrupted(path, f"{what} is not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise LedgerCorrupted(path, f"{what} is not a JSON object")
    return value


def entry_from_row(path: Path | str, row: tuple[object, ...]) -> LedgerEntry:
    index, kind, text, created = row
    if not isinstance(index, int) or not isinstance(kind, str):
        raise LedgerCorrupted(path, f"round {index!r} has a malformed id or kind")
    if not isinstance(created, float):
        raise LedgerCorrupted(path, f"round {index} has a malformed timestamp {created!r}")
    record = frozen_json(parse_object(path, f"the record of round {index}", text))
    return LedgerEntry(index, kind, record, created)


class ClosesOnExit(ABC):
    """``with ledger:`` closes it on the way out, whatever the backend."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection (idempotent)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class StartsAt:
    """A ledger that may open from a checkpoint: its entries are read from ``_base`` on."""

    _base: int
    _entries: tuple[LedgerEntry, ...]

    def start_at(self, index: int) -> None:
        """Read entries from ``index`` on only (before any is read: a lazy open); `entries`
        then holds those, each with its own ``index``."""
        if self._entries or index < 0:
            raise InvalidParameter("index", index, "must be >= 0, before any entry is read")
        self._base = index


@runtime_checkable
class LedgerBackend(Protocol):
    """An open ledger of either backend, as `expost.PrivateSession` uses it."""

    @property
    def path(self) -> Path | str:
        """Where the ledger lives: a file path, or a database URL without its password."""
        ...

    @property
    def config(self) -> Mapping[str, Any]:
        """The configuration the ledger was created for (deeply read-only)."""
        ...

    @property
    def ledger_id(self) -> str | None:
        """The id the ledger was given at its creation (None: made before ledger ids)."""
        ...

    def entries(self) -> tuple[LedgerEntry, ...]:
        """Every committed round, in order, including those of other writers."""
        ...

    def append(self, kind: str, decide: Decide) -> LedgerEntry:
        """Under the ledger's lock: re-read, ``record = decide(entries)``, commit durably."""
        ...

    def close(self) -> None:
        """Close the connection (idempotent)."""
        ...
