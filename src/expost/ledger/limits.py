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
from collections.abc import Mapping
from typing import Final

from expost.errors import InvalidParameter

__all__ = [
    "BELOW",
    "HOLD_LIMIT_S",
    "LARGEST_NUMBER",
    "MAX_CONFIG_CHARS",
    "MAX_DIGITS",
    "MAX_NAME_CHARS",
    "MAX_OPEN_ROUNDS",
    "MAX_RECORD_CHARS",
    "POSITIVE_FIELDS",
    "SMALLEST_NUMBER",
    "STALE_ROUNDS",
    "check_cost",
    "check_text",
    "number_fault",
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

POSITIVE_FIELDS: Final = ("rho", "eps", "time", "sensitivity", "eps_max", "sampling_prob")
"""Cost fields that are never 0 (a zero would make a price infinite or a round free)."""

BELOW: Final = {"delta": (1.0, True), "sampling_prob": (1.0, False)}
"""Cost fields with an upper bound below `LARGEST_NUMBER`: (the bound, whether it is excluded)."""

STALE_ROUNDS: Final = 1024
"""A round left open while this many later rounds were reserved is *stale*: any session may
settle it at exactly its reservation (its charge unchanged), on PostgreSQL without its token.
`expost.ledger.checkpoints` does so before a checkpoint, so a killed process's round cannot hold
checkpoints back."""

MAX_OPEN_ROUNDS: Final = 2 * STALE_ROUNDS
"""A reservation of round r is refused while round r − `MAX_OPEN_ROUNDS` is open (stale: any
client may settle it at its reservation), so at most this many rounds are ever open and a flood
of reservations cannot lengthen what an open reads (the PostgreSQL server checks it; a session
settles stale rounds before it reserves)."""

HOLD_LIMIT_S: Final = 10
"""Seconds a transaction may hold a PostgreSQL ledger's lock before the next client waiting for
it ends that transaction (the server's default; an administrator may change it per database)."""


def number_fault(field: str, value: object) -> str | None:
    """Why the number ``value`` of a cost's ``field`` is one no record may hold (the same rules
    as the server's ``expost.check_cost``, generated from these constants), or None; a
    non-number is the cost class's concern."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    bound, excluded = BELOW.get(field, (LARGEST_NUMBER, False))
    if value == 0:
        return "must not be 0" if field in POSITIVE_FIELDS else None
    if not SMALLEST_NUMBER <= value <= bound or (excluded and value == bound):
        top = f"{bound!r})" if excluded else f"{bound!r}]"
        return f"a ledger records 0 or numbers in [{SMALLEST_NUMBER!r}, {top}"
    if isinstance(value, int) and len(str(value).strip("0")) > MAX_DIGITS:  # a float's repr fits
        return f"a ledger records numbers of at most {MAX_DIGITS} significant digits"
    return None


def check_cost(cost: object) -> None:
    """`InvalidParameter` for a recorded cost (a mapping with a ``type``) holding a number that
    `number_fault` refuses: refused before it is written, on either backend, so a ledger copied
    between them never meets a refusal there."""
    if not isinstance(cost, Mapping):
        return
    for field, value in cost.items():
        if (fault := number_fault(field, value)) is not None:
            rule = f"{fault}; nothing was recorded, so nothing was spent"
            raise InvalidParameter(f"{cost.get('type')}.{field}", value, rule)


def check_text(name: str, text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else `InvalidParameter` (nothing is
    written)."""
    if len(text) > limit:
        raise InvalidParameter(name, f"{text[:60]}… ({len(text)} characters)", f"at most {limit}")
    return text
