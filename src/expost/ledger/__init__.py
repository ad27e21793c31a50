"""The crash-safe, append-only budget ledger: one interface, two backends.

`open_ledger(target, config)` picks the backend from the target: a file path opens the SQLite
ledger (`Ledger`, embedded, standard library only: processes on one machine), a
``postgresql://…?ledger=NAME`` URL the PostgreSQL ledger (`PostgresLedger`, the optional extra
``expost[postgres]``: clients on many machines). Both keep the contract of
`expost.ledger.base.LedgerBackend`: every admitted round is committed durably before `append`
returns, and the admit decision is made on the rounds read under the same lock as the write.
A ledger is created once (`init_ledger`, ``expost ledger init``) and then only opened: a
missing ledger is `LedgerNotFound` unless ``create=True``.
"""

from __future__ import annotations

from expost.ledger.base import Decide, LedgerBackend, LedgerEntry
from expost.ledger.postgres import PostgresLedger, is_postgres_url
from expost.ledger.records import init_ledger
from expost.ledger.sqlite import Ledger
from expost.ledger.targets import open_ledger, stored_config

__all__ = [
    "Decide",
    "Ledger",
    "LedgerBackend",
    "LedgerEntry",
    "PostgresLedger",
    "init_ledger",
    "is_postgres_url",
    "open_ledger",
    "stored_config",
]
