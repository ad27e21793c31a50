"""Opening a long-lived ledger (SQLite or PostgreSQL): from its latest checkpoint against the naive
full replay.

Builds a ledger of ``--rounds`` DP-SGD steps (default 10⁶; each a ``reserve`` and a ``settle`` of
`SubsampledGaussianCost.from_sigma(1.0, 0.01)` on a `ZCDPFilter`) by a bulk path whose records
are exactly what the library writes — each round's text is checked against `record_text` of the
session's record, and each checkpoint (one every `CHECKPOINT_EVERY` settled rounds, as a session
writes them) against the library's own `Replay.state()` for the first two and the last — then
times ``PrivateSession(budget, rng, ledger=path)`` (median of 3) against the naive replay of every
entry (``Replay(budget).update(ledger.entries())``), measured on the first ``--naive`` rounds and
scaled linearly (the replay costs the same per round all along), and prints the ratio.

``--backend postgres`` builds the same ledger in a throwaway PostgreSQL (pgserver: the
``postgres`` extra) with the server's own columns (each round's running totals, the reservations'
settle tokens) and the checkpoints in ``expost.checkpoints``, the latest one written through
``expost.write_checkpoint`` as a client writes it (so the server confirms it; its time is
printed). ``--flood N`` then adds N reservations never settled after the latest checkpoint (a
flood of open rounds: the entries an open must read beyond it) and times the open again.

    python benchmarks/bench_ledger_open.py [--rounds 1000000] [--naive 100000] [--dir /tmp]
        [--backend sqlite|postgres] [--flood 0]
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import expost as ep
from expost.filters import SubsampledGaussianCost
from expost.ledger import init_ledger
from expost.ledger.base import canonical, record_text
from expost.ledger.checkpoints import CHECKPOINT_EVERY
from expost.ledger.records import describe, encode
from expost.ledger.replay import Replay
from expost.ledger.targets import open_ledger, stored_config

BUDGET = ep.ZCDPFilter(1e7)
STEP = SubsampledGaussianCost.from_sigma(1.0, 0.01)


def _texts(k: int) -> tuple[str, str]:
    """Round ``k``'s reserve and settle records, as the session writes them."""
    cost = canonical("cost", encode(STEP))
    reserve = f'{{"cost":{cost},"mechanism":"subsampled_gaussian","round":{k}}}'
    return reserve, f'{{"cost":{cost},"round":{k}}}'


def _state(rounds: int) -> dict[str, Any]:
    """The checkpoint a session writes once ``rounds`` steps are settled (none open)."""
    return {
        "format": "expost-checkpoint/1",
        "rounds": rounds,
        "filter": describe(BUDGET),
        "sums": {"amounts": [STEP.of.rho * rounds], "deltas": [0.0], "rounds": rounds},
        "tail": [],
    }


def _check_texts(rounds: int) -> None:
    for k in (0, 1, rounds - 1):  # the bulk texts are the library's
        assert _texts(k) == (
            record_text({"round": k, "mechanism": "subsampled_gaussian", "cost": encode(STEP)}),
            record_text({"round": k, "cost": encode(STEP)}),
        )


def build(path: Path, rounds: int) -> None:
    init_ledger(path, BUDGET)
    _check_texts(rounds)
    now = time.time()
    marks = range(CHECKPOINT_EVERY, rounds + 1, CHECKPOINT_EVERY)
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO rounds VALUES (?, ?, ?, ?)",
            (
                row
                for k in range(rounds)
                for row in zip(
                    (2 * k, 2 * k + 1), ("reserve", "settle"), _texts(k), (now, now), strict=True
                )
            ),
        )
        conn.execute("CREATE TABLE checkpoints (entry INTEGER PRIMARY KEY, state TEXT NOT NULL)")
        conn.executemany(
            "INSERT INTO checkpoints VALUES (?, ?)",
            ((2 * m, canonical("s", _state(m))) for m in marks),
        )
    _check_states(str(path), marks)


def _check_states(target: str, marks: range) -> None:
    """The first two checkpoints and the last are the library's own states of their entries."""
    with open_ledger(target, stored_config(target)) as ledger:
        path = ledger.path
        entries = ledger.entries()
        chunks = [(0, marks[0]), (marks[0], marks[1]), (marks[-2], marks[-1])]
        for start, stop in chunks:
            if start == 0:
                replay = Replay(BUDGET, path)
            else:
                first = STEP
                replay = Replay.restore(BUDGET, path, 2 * start, _state(start), first)
            replay.update(entries[2 * start : 2 * stop])
            assert replay.state() == _state(stop), (replay.state(), _state(stop))


_COLUMNS = (
    "ledger, id, kind, record, created, round, token,"
    " spent_rho, spent_delta, spent_eps, spent_eps_delta"
)


def _pg_rows(name: str, rounds: range, *, settled: bool = True) -> Iterator[tuple[Any, ...]]:
    """The rows ``expost.append_round`` writes for ``rounds`` (their reserves and, if
    ``settled``, settles): the round, a reservation's token, the running total (rho 0.5 a
    round: the server prices the wrapper as the Gaussian it wraps)."""
    now, step = time.time(), 2 if settled else 1
    for k in rounds:
        reserve, settle = _texts(k)
        first = 2 * k if settled else 2 * rounds[0] + (k - rounds[0])
        total = STEP.of.rho * (k + 1)
        yield (name, first, "reserve", reserve, now, k, uuid.uuid4(), total, 0, 0, 0)
        if step == 2:
            yield (name, first + 1, "settle", settle, now, k, None, total, 0, 0, 0)


def _copy(url: str, rows: Iterator[tuple[Any, ...]], table: str, columns: str) -> None:
    import psycopg

    with (
        psycopg.connect(url.split("&ledger=")[0]) as conn,
        conn.cursor() as cur,
        cur.copy(f"COPY expost.{table} ({columns}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(row)


def build_postgres(url: str, rounds: int) -> float:
    """The same ledger in PostgreSQL (bulk, as the server writes it); the seconds the server
    took to confirm the latest checkpoint (``expost.write_checkpoint``)."""
    import psycopg

    lid = init_ledger(url, BUDGET)
    _check_texts(rounds)
    name = url.rsplit("ledger=", 1)[1]
    marks = range(CHECKPOINT_EVERY, rounds + 1, CHECKPOINT_EVERY)
    _copy(url, _pg_rows(name, range(marks[-1])), "rounds", _COLUMNS)
    states = ((name, 2 * m, canonical("s", _state(m))) for m in marks[:-1])
    _copy(url, states, "checkpoints", "ledger, entry, state")
    with psycopg.connect(url.split("&ledger=")[0]) as conn:
        start = time.perf_counter()
        conn.execute(
            "SELECT expost.write_checkpoint(%s, %s, %s, %s)",
            (name, lid, 2 * marks[-1], canonical("checkpoint", _state(marks[-1]))),
        )
        confirmed = time.perf_counter() - start
    _copy(url, _pg_rows(name, range(marks[-1], rounds)), "rounds", _COLUMNS)
    _check_states(url, marks)
    return confirmed


def flood(target: str, rounds: int, n: int) -> None:
    """``n`` reservations after the ledger's ``rounds`` settled ones, never settled."""
    if target.startswith("postgresql://"):
        name = target.rsplit("ledger=", 1)[1]
        rows = _pg_rows(name, range(rounds, rounds + n), settled=False)
        _copy(target, rows, "rounds", _COLUMNS)
        return
    with sqlite3.connect(target) as conn:
        now = time.time()
        conn.executemany(
            "INSERT INTO rounds VALUES (?, 'reserve', ?, ?)",
            ((2 * rounds + j, _texts(rounds + j)[0], now) for j in range(n)),
        )


def _time_opens(target: str, spent: float) -> float:
    """The median of 3 opens of a session on ``target``, each checked against ``spent``."""
    opens = []
    for _ in range(3):
        start = time.perf_counter()
        session = ep.PrivateSession(BUDGET, np.random.default_rng(0), ledger=target)
        opens.append(time.perf_counter() - start)
        assert session.spent == spent, (session.spent, spent)
        session.close()
    return sorted(opens)[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10**6)
    parser.add_argument("--naive", type=int, default=10**5)
    parser.add_argument("--dir", default=None, help="where to build the ledger (a temp dir)")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--flood", type=int, default=0, help="open reservations added after")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        server = None
        start = time.perf_counter()
        if args.backend == "postgres":
            pgserver: Any = importlib.import_module("pgserver")  # the postgres extra
            server = pgserver.get_server(Path(tmp) / "pg", cleanup_mode="stop")
            target = f"{server.get_uri()}&ledger=long"
            confirmed = build_postgres(target, args.rounds)
        else:
            target = str(Path(tmp) / "long.sqlite")
            build(Path(target), args.rounds)
        print(
            f"built {args.rounds:,} rounds ({args.backend}) in {time.perf_counter() - start:.1f} s"
        )
        if server is not None:
            print(f"the server confirmed the latest checkpoint in {confirmed:.3f} s")
        opened = _time_opens(target, STEP.of.rho * args.rounds)
        start = time.perf_counter()
        with open_ledger(target, stored_config(target), lazy=True) as ledger:
            naive = Replay(BUDGET, ledger.path).update(ledger.read(0, 2 * args.naive))
        measured = time.perf_counter() - start
        assert naive.spent == STEP.of.rho * args.naive
        scaled = measured * args.rounds / args.naive
        print(f"open from the latest checkpoint: {opened:.2f} s (median of 3)")
        print(
            f"naive full replay: {measured:.2f} s for the first {args.naive:,} rounds, "
            f"{scaled:.1f} s scaled to {args.rounds:,}"
        )
        print(f"ratio naive/checkpoint: {scaled / opened:.0f}x")
        if args.flood:
            flood(target, args.rounds, args.flood)
            flooded = _time_opens(target, STEP.of.rho * (args.rounds + args.flood))
            print(f"open after a flood of {args.flood:,} open reservations: {flooded:.2f} s")
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
