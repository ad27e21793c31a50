"""A separate process for the ledger tests: ``python ledger_worker.py MODE PATH [ARGS]``.

Modes (each prints one line per event, flushed, and only AFTER the event happened):

PATH is a SQLite file or a ``postgresql://…?ledger=NAME`` URL (`expost.ledger.open_ledger`).

- ``spend PATH BUDGET COST NAME``: print ``ready``, wait for a line on stdin, then append
  rounds of cost COST while the total stays <= BUDGET, printing each admitted index; print
  ``done`` at the first refusal.
- ``lockstep PATH BUDGET COST NAME``: print ``ready``; then for each line on stdin append one
  round of cost COST if the total stays <= BUDGET and print its index, or print ``done`` at
  the first refusal and end. The test sends the line to every worker at once, so each step is
  a race of all of them for the write lock, whatever the machine's load.
- ``loop PATH``: append rounds forever, printing each committed index (killed by the test).
- ``hold PATH``: print ``ready``, wait for a line on stdin, then append one round whose
  decide prints ``locked N`` (N: the entries it saw) and waits for another line while
  holding the write lock; then print the committed index.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping

from expost.errors import BudgetExceeded
from expost.ledger import LedgerBackend, LedgerEntry, open_ledger

__all__ = ["CONFIG", "budget_decide", "spent"]

CONFIG: Mapping[str, object] = {"purpose": "expost ledger tests", "unit": "rho"}


def spent(entries: tuple[LedgerEntry, ...]) -> float:
    """Total cost recorded in the entries."""
    return sum(float(e.record["cost"]) for e in entries)


def budget_decide(
    budget: float, cost: float, name: str
) -> Callable[[tuple[LedgerEntry, ...]], Mapping[str, object]]:
    """Admit a round of ``cost`` only if the recorded total stays <= ``budget``."""

    def decide(entries: tuple[LedgerEntry, ...]) -> Mapping[str, object]:
        total = spent(entries)
        if total + cost > budget:
            raise BudgetExceeded(total, cost, budget - total)
        return {"cost": cost, "worker": name}

    return decide


def _say(line: object) -> None:
    print(line, flush=True)


def _spend(ledger: LedgerBackend, budget: str, cost: str, name: str) -> None:
    decide = budget_decide(float(budget), float(cost), name)
    _say("ready")
    sys.stdin.readline()
    while True:
        try:
            _say(ledger.append("round", decide).index)
        except BudgetExceeded:
            _say("done")
            return
        # SQLite's lock is not fair: without a pause one worker would win every round.
        time.sleep(0.005)


def _lockstep(ledger: LedgerBackend, budget: str, cost: str, name: str) -> None:
    decide = budget_decide(float(budget), float(cost), name)
    _say("ready")
    while sys.stdin.readline():
        try:
            _say(ledger.append("round", decide).index)
        except BudgetExceeded:
            _say("done")
            return


def _loop(ledger: LedgerBackend) -> None:
    while True:
        _say(ledger.append("round", lambda entries: {"cost": 1.0, "seen": len(entries)}).index)


def _hold(ledger: LedgerBackend) -> None:
    def decide(entries: tuple[LedgerEntry, ...]) -> Mapping[str, object]:
        _say(f"locked {len(entries)}")
        sys.stdin.readline()
        return {"cost": 1.0, "seen": len(entries)}

    _say("ready")
    sys.stdin.readline()
    _say(ledger.append("round", decide).index)


def main(argv: list[str]) -> None:
    mode, path, *args = argv
    with open_ledger(path, CONFIG, create=True) as ledger:
        if mode == "spend":
            _spend(ledger, *args)
        elif mode == "lockstep":
            _lockstep(ledger, *args)
        elif mode == "loop":
            _loop(ledger)
        elif mode == "hold":
            _hold(ledger)
        else:
            raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
