"""Opening a long-lived SQLite ledger: from its latest checkpoint against the naive full replay.

Builds a ledger of ``--rounds`` DP-SGD steps (default 10⁶; each a ``reserve`` and a ``settle`` of
`SubsampledGaussianCost.from_sigma(1.0, 0.01)` on a `ZCDPFilter`) by a bulk path whose records
are exactly what the library writes — each round's text is checked against `record_text` of the
session's record, and each checkpoint (one every `CHECKPOINT_EVERY` settled rounds, as a session
writes them) against the library's own `Replay.state()` for the first two and the last — then
times ``PrivateSession(budget, rng, ledger=path)`` (median of 3) against the naive replay of every
entry (``Replay(budget).update(ledger.entries())``), measured on the first ``--naive`` rounds and
scaled linearly (the replay costs the same per round all along), and prints the ratio.

    python benchmarks/bench_ledger_open.py [--rounds 1000000] [--naive 100000] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import expost as ep
from expost.filters import SubsampledGaussianCost
from expost.ledger import Ledger, init_ledger
from expost.ledger.base import canonical, record_text
from expost.ledger.checkpoints import CHECKPOINT_EVERY
from expost.ledger.records import describe, encode
from expost.ledger.replay import Replay

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


def build(path: Path, rounds: int) -> None:
    init_ledger(path, BUDGET)
    for k in (0, 1, rounds - 1):  # the bulk texts are the library's
        assert _texts(k) == (
            record_text({"round": k, "mechanism": "subsampled_gaussian", "cost": encode(STEP)}),
            record_text({"round": k, "cost": encode(STEP)}),
        )
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
    with Ledger.open(path, Ledger.stored_config(path)) as ledger:  # the library's own states
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10**6)
    parser.add_argument("--naive", type=int, default=10**5)
    parser.add_argument("--dir", default=None, help="where to build the ledger (a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "long.sqlite"
        start = time.perf_counter()
        build(path, args.rounds)
        print(f"built {args.rounds:,} rounds in {time.perf_counter() - start:.1f} s")
        opens = []
        for _ in range(3):
            start = time.perf_counter()
            session = ep.PrivateSession(BUDGET, np.random.default_rng(0), ledger=path)
            opens.append(time.perf_counter() - start)
            assert session.spent == STEP.of.rho * args.rounds
            session.close()
        opened = sorted(opens)[1]
        start = time.perf_counter()
        with Ledger.open(path, Ledger.stored_config(path), lazy=True) as ledger:
            naive = Replay(BUDGET, path).update(ledger.read(0, 2 * args.naive))
        measured = time.perf_counter() - start
        assert naive.spent == STEP.of.rho * args.naive
        scaled = measured * args.rounds / args.naive
        print(f"open from the latest checkpoint: {opened:.2f} s (median of 3)")
        print(
            f"naive full replay: {measured:.2f} s for the first {args.naive:,} rounds, "
            f"{scaled:.1f} s scaled to {args.rounds:,}"
        )
        print(f"ratio naive/checkpoint: {scaled / opened:.0f}x")


if __name__ == "__main__":
    main()
