"""Checkpoints of a session ledger (SQLite or PostgreSQL): written by a session, restored by an open.

Once `CHECKPOINT_EVERY` more rounds are settled, a session writes the state of its replay
(`Replay.state`: the filter after the settled prefix, its exact sums, and every later round)
under the write lock; an open restores the latest checkpoint that fits the ledger and reads only
the entries after it (`opened`); `verify_checkpoints` checks each against a replay of every entry
(`expost ledger show`). On PostgreSQL the server stores one only once it confirmed it
(`expost.ledger.pg_checkpoints`). docs/session.md, "Checkpoints: long-lived ledgers", says what an open
trusts.
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, Final

from expost.errors import LedgerError
from expost.filters import ConcurrentFilter, ExPostCost, PrivacyFilter
from expost.ledger.base import LedgerBackend, LedgerEntry, canonical
from expost.ledger.limits import STALE_ROUNDS
from expost.ledger.postgres import PostgresLedger
from expost.ledger.records import decode
from expost.ledger.replay import Replay, Settled, settle_record, sums_of
from expost.ledger.sqlite import Ledger

__all__ = ["CHECKPOINT_EVERY", "checkpoint", "opened", "settle_stale", "verify_checkpoints"]

_TAIL_WINDOW: Final = 8  # entries read back per round of a checkpoint's tail (and one more)
_KNOWN: Final = 8  # the most settled costs an open matches as text (the rest: json_extract)
CHECKPOINT_EVERY: Final = STALE_ROUNDS
"""A session writes a checkpoint once this many more rounds are settled, and first settles at
its request a round left open while this many later ones were reserved (a stale round, which the
PostgreSQL server lets any client settle so)."""


def opened(ledger: LedgerBackend, initial: PrivacyFilter) -> tuple[Replay, int]:
    """The replay of a just opened ledger, and how many settled rounds its checkpoint covers:
    from the latest checkpoint of a ledger opened lazily, reading only the entries after it,
    when the checkpoint is sound — its filter is ``initial``'s (a `PLDFilter`'s mechanism the
    first reservation's), its rounds are the reservations before it, and its sums are at least
    what the entries it covers charge (`_confirmed`: SQL-side on SQLite; on PostgreSQL the server
    confirmed it before storing it) — else from the start."""
    if isinstance(ledger, Ledger | PostgresLedger):
        with contextlib.suppress(LookupError, ValueError, TypeError, LedgerError):  # not sound
            latest = ledger.checkpoints(latest=True)
            if latest:
                entry, state = latest[0]
                first = decode(ledger.read(0, 1)[0].record["cost"], ledger.path)
                replay = Replay.restore(initial, ledger.path, entry, state, first)
                if _reserved_before(ledger, entry) == replay.rounds and (
                    not isinstance(ledger, Ledger)
                    or _confirmed(ledger, entry, state, replay.current())
                ):
                    ledger.start_at(entry)
                    return replay, replay.settled_prefix
    return Replay(initial, ledger.path), 0


def _proven(ledger: Ledger, entry: int, f: PrivacyFilter, known: Sequence[str]) -> bool:
    """Whether ``f`` (a checkpoint's filter, its open rounds charged) has exact sums at least
    what the settle entries before ``entry`` charge: each distinct settled cost priced once by
    the filter, times how many settle at it (`_settle_costs`, ``known`` its likely
    costs), in exact rationals."""
    proven: dict[str, list[Fraction]] = {}
    counted = _settle_costs(ledger, entry, known)
    if counted is None:
        return False
    for text, n in counted:
        cost = decode(json.loads(text), ledger.path)
        part, priced = "", f
        if isinstance(f, ConcurrentFilter):  # its parts' sums, each in its unit
            part, priced = (
                ("ex_post", f.ex_post) if isinstance(cost, ExPostCost) else ("zcdp", f.zcdp)
            )
        sums = proven.setdefault(part, [Fraction(0)] * 2)
        for i, x in enumerate(priced.price(cost)):
            sums[i] += n * Fraction(x)
    claimed = sums_of(f)
    if claimed is None:
        return False
    for part, (amount, delta) in proven.items():
        held = claimed[part] if part else claimed
        if _exact(held["amounts"]) < amount or _exact(held["deltas"]) < delta:
            return False
    return True


def _settle_costs(ledger: Ledger, stop: int, known: Sequence[str]) -> list[tuple[str, int]] | None:
    """Each cost (JSON) of the settle entries before ``stop``, with how many settle at it,
    counted by SQLite (None if a record is not JSON). A ``known`` cost (canonical JSON) is
    matched as the library writes it (``{"cost":C,"round":N}``), no JSON parsed; any other
    settle is read by ``json_extract``."""
    marks = [f'{{"cost":{c},"round":' for c in known]
    # starts with the mark (in [mark, the mark with its last character the next one): no copy
    # is made) and leaves room for a round number only (no further key)
    match = [f"(length(record) <= {len(m) + 10} AND record >= ? AND record < ?)" for m in marks]
    bounds = [b for m in marks for b in (m, m[:-1] + chr(ord(m[-1]) + 1))]
    where = "FROM rounds WHERE id < ? AND kind = 'settle'"
    conn = ledger._connection()
    try:
        sums = "".join(f", coalesce(sum({m}), 0)" for m in match)
        total, *counts = conn.execute(f"SELECT count(*){sums} {where}", (*bounds, stop)).fetchone()
        found = [(c, int(n)) for c, n in zip(known, counts, strict=True) if n]
        if total > sum(counts):  # settles of another cost, or written otherwise
            rest = f" AND NOT ({' OR '.join(match)})" if match else ""
            rows = conn.execute(
                f"SELECT json_extract(record, '$.cost'), count(*) {where}{rest} GROUP BY 1",
                (stop, *bounds),
            )
            found += [(str(cost), int(n)) for cost, n in rows]
    except sqlite3.Error:  # a record that is not JSON: the entries decide
        return None
    return found


def _confirmed(ledger: Ledger, entry: int, state: Mapping[str, Any], f: PrivacyFilter) -> bool:
    """What an open checks of a SQLite checkpoint beyond its shape: its tail is the ledger's
    (`_tail_fits`), and its sums, the tail charged, cover the settles it covers (`_proven`,
    the costs of the last settles read as the likely ones)."""
    window = ledger.read(max(0, entry - _TAIL_WINDOW * (len(state["tail"]) + 1)), entry)
    known = {canonical("cost", e.record["cost"]) for e in window if e.kind == "settle"}
    return _tail_fits(window, state) and _proven(ledger, entry, f, sorted(known)[:_KNOWN])


def _tail_fits(window: Sequence[LedgerEntry], state: Mapping[str, Any]) -> bool:
    """Whether each round of a checkpoint's tail is the ledger's: its reservation and its
    first settle (or none) among the entries ``window`` read before it (at most `_TAIL_WINDOW`
    per tail round: an older reservation is not confirmed)."""
    first, tail = int(state["rounds"]), state["tail"]
    found: dict[int, list[Any]] = {}
    for e in window:
        key = e.record.get("round")
        if isinstance(key, int) and first <= key < first + len(tail):
            seen = found.setdefault(key, [None, None])
            i = 0 if e.kind == "reserve" else 1
            if seen[i] is None:
                seen[i] = json.loads(canonical("cost", e.record["cost"]))
    return all(
        found.get(k) == [request, settled] for k, (request, settled) in enumerate(tail, first)
    )


def _exact(partials: Sequence[float]) -> Fraction:
    return sum(map(Fraction, partials), Fraction(0))


def _at_least(sums: Mapping[str, Any], earlier: Mapping[str, Any]) -> bool:
    """Whether every exact sum of a checkpoint is at least an earlier checkpoint's."""
    if "amounts" not in sums:
        return all(_at_least(sums[part], earlier[part]) for part in sums)
    return all(
        math.fsum([*sums[k], *(-x for x in earlier[k])]) >= 0.0 for k in ("amounts", "deltas")
    ) and int(sums["rounds"]) >= int(earlier["rounds"])


def _same(state: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Whether two checkpoint states are equal, their sums as exact values (not partials)."""
    keys = ("format", "rounds", "filter", "tail")
    return all(state.get(k) == other.get(k) for k in keys) and _equal(state["sums"], other["sums"])


def _equal(sums: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    if "amounts" not in sums:
        return sums.keys() == other.keys() and all(_equal(sums[p], other[p]) for p in sums)
    return _at_least(sums, other) and _at_least(other, sums)


def verify_checkpoints(
    initial: PrivacyFilter,
    path: Path | str,
    entries: Sequence[LedgerEntry],
    checkpoints: Sequence[tuple[int, Mapping[str, Any]]],
) -> tuple[str, ...]:
    """Replay ``entries`` (all of a ledger's) from the start and compare each checkpoint with
    the replay's own state at its entry: one line per checkpoint that does not match."""
    replay, wrong = Replay(initial, path), []
    for entry, state in checkpoints:
        replay.update(entries[:entry])
        own = replay.state()
        try:
            sound = own is not None and _same(json.loads(json.dumps(own)), state)
        except (LookupError, TypeError, ValueError):
            sound = False
        if not sound:
            wrong.append(f"checkpoint of entry {entry}: does not match the entries before it")
    return tuple(wrong)


def _reserved_before(ledger: Ledger | PostgresLedger, entry: int) -> int | None:
    """How many rounds the entries before ``entry`` reserve: the last reservation's key + 1
    (None if none is among the last 4,096 entries)."""
    stop = entry
    while stop > max(0, entry - 4096):
        for e in reversed(ledger.read(max(0, stop - 64), stop)):
            if e.kind == "reserve" and isinstance(e.record.get("round"), int):
                return int(e.record["round"]) + 1
        stop -= 64
    return 0 if entry == 0 else None


def settle_stale(ledger: LedgerBackend, replay: Replay) -> bool:
    """Settle at its request every round left open while `CHECKPOINT_EVERY` (`STALE_ROUNDS`)
    later ones were reserved (a killed process's, or a very long round's: its owner, if alive, finds it settled
    and returns its result), so that no reservation meets `MAX_OPEN_ROUNDS`; whether any was."""
    stale = replay.stale(CHECKPOINT_EVERY)
    for key, request in stale:
        with contextlib.suppress(Settled, LedgerError):
            ledger.append("settle", settle_record(replay, key, request))
    return bool(stale)


def checkpoint(ledger: LedgerBackend, replay: Replay, done: int) -> int:
    """Write a checkpoint of ``replay`` if `CHECKPOINT_EVERY` rounds were settled since the
    latest (``done`` rounds, or another session's); the rounds the latest one covers. First,
    stale rounds are settled at their requests (`settle_stale`).
    A write that fails (or that the PostgreSQL server does not confirm) is left for later."""
    if not isinstance(ledger, Ledger | PostgresLedger):
        return done
    stale = settle_stale(ledger, replay)
    if replay.settled_prefix < done + CHECKPOINT_EVERY and not stale:
        return done
    if replay.settled_prefix < done + CHECKPOINT_EVERY:
        return done

    def decide(entries: tuple[LedgerEntry, ...]) -> dict[str, Any] | None:
        nonlocal done
        replay.update(entries)
        latest = ledger.checkpoints(latest=True)
        done = max(done, int(latest[0][1].get("rounds", 0)) if latest else 0)
        if replay.settled_prefix < done + CHECKPOINT_EVERY:
            return None
        state = replay.state()
        if state is not None:
            done = replay.settled_prefix
        return state

    with contextlib.suppress(LedgerError):
        ledger._write_checkpoint(decide)
    return done
