"""The limits a ledger holds its records to, in one place: the PostgreSQL server's functions
(`expost.ledger.pg_schema`, which formats these numbers into its SQL) and the Python side
(`check_text`, both backends) enforce the same ones (issue 37).

Why each: a record is read back by every client, so one oversized or unpriceable record would
make the ledger unusable for all of them. Sizes bound what a client can make the server parse
and every other client download; the numbers are what the Python replay decodes to finite,
nonzero doubles (at most 17 significant digits, the most a double's shortest repr has) and
prices in bounded time (`expost.rounding.up_ratio`).
"""

from __future__ import annotations

import sys
from typing import Final

from expost.errors import InvalidParameter

__all__ = [
    "HOLD_LIMIT_S",
    "LARGEST_NUMBER",
    "MAX_CONFIG_CHARS",
    "MAX_DIGITS",
    "MAX_NAME_CHARS",
    "MAX_RECORD_CHARS",
    "SMALLEST_NUMBER",
    "check_text",
]

MAX_RECORD_CHARS: Final = 4096
"""Characters of one round's record (a session's records are below 400)."""

MAX_CONFIG_CHARS: Final = 16384
"""Characters of a ledger's configuration (a filter's description)."""

MAX_NAME_CHARS: Final = 64
"""Characters of an entry's kind and of a reservation's mechanism name."""

MAX_DIGITS: Final = 17
"""Significant digits of a number in a session record (a double's repr has at most 17)."""

SMALLEST_NUMBER: Final = 1e-300
"""The smallest positive number a session record may hold (a decimal below the doubles' range
would decode to 0.0, which no cost accepts)."""

LARGEST_NUMBER: Final = sys.float_info.max
"""The largest number a session record may hold (a larger one decodes to inf)."""

HOLD_LIMIT_S: Final = 10
"""Seconds a transaction may hold a PostgreSQL ledger's lock before the next client waiting for
it ends that transaction (the server's default; an administrator may change it per database)."""


def check_text(name: str, text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else `InvalidParameter` (nothing is
    written)."""
    if len(text) > limit:
        raise InvalidParameter(name, f"{text[:60]}… ({len(text)} characters)", f"at most {limit}")
    return text
