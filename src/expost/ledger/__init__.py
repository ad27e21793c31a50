"""The crash-safe, append-only budget ledger: one interface, two backends.

`open_ledger(target, config)` picks the backend from the target: a file path opens the SQLite
ledger (`Ledger`, embedded, standard library only: processes on one machine), a
``postgresql://…?ledger=NAME`` URL the PostgreSQL ledger (`PostgresLedger`, the optional extra
``expost[postgres]``: clients on many machines). Both keep the contract of
`expost.ledger.base.LedgerBackend`: every admitted round is committed durably before `append`
returns, and the admit decision is made on the rounds read under the same lock as the write.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from expost.ledger.base import Decide, LedgerBackend, LedgerEntry
from expost.ledger.postgres import PostgresLedger, is_postgres_url
from expost.ledger.sqlite import Ledger

__all__ = [
    "Decide",
    "Ledger",
    "LedgerBackend",
    "LedgerEntry",
    "PostgresLedger",
    "is_postgres_url",
    "open_ledger",
    "stored_config",
]


def open_ledger(
    target: str | os.PathLike[str], config: Mapping[str, object], *, timeout: float = 30.0
) -> Ledger | PostgresLedger:
    """Open (or create) the ledger at ``target`` for ``config``: a ``postgresql://`` URL is a
    `PostgresLedger`, anything else a path to a SQLite `Ledger` file."""
    if is_postgres_url(target):
        assert isinstance(target, str)  # is_postgres_url checks it
        return PostgresLedger.open(target, config, timeout=timeout)
    return Ledger.open(target, config, timeout=timeout)


def stored_config(target: str | os.PathLike[str]) -> Mapping[str, Any]:
    """The configuration of the existing ledger at ``target`` (either backend; creates nothing)."""
    if is_postgres_url(target):
        assert isinstance(target, str)  # is_postgres_url checks it
        return PostgresLedger.stored_config(target)
    return Ledger.stored_config(target)
