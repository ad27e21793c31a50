"""A process that spends a shared budget through `PrivateSession`, for tests/session/test_session.py.

``python session_worker.py MODE LEDGER RHO [COST]`` opens a session on ``ZCDPFilter(RHO)``
with the ledger file LEDGER and prints one flushed line per event:

- ``loop``: prints ``ready``, waits for a line on stdin, then runs ``gaussian(…, rho=COST)``
  until `BudgetExceeded`, printing each admitted round's index after the call returns, then
  ``done``;
- ``hang``: runs one Brownian round whose stopping rule prints ``stopping`` and then sleeps,
  so that the test can kill the process between its reservation and its settlement.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from expost import BudgetExceeded, PrivateSession, TimeGrid, ZCDPFilter
from expost.stopping import Released

__all__ = ["HANG_GRID", "main"]

HANG_GRID = TimeGrid([100.0, 10.0, 4.0])


def _say(line: object) -> None:
    print(line, flush=True)


def _loop(session: PrivateSession, cost: float) -> None:
    _say("ready")
    sys.stdin.readline()
    while True:
        try:
            session.gaussian(0.0, 1.0, cost)
        except BudgetExceeded:
            _say("done")
            return
        _say(session.history[-1].index)
        # SQLite's lock is not fair: without a pause one worker would win every round.
        time.sleep(0.002)


def _hang(session: PrivateSession) -> None:
    def rule(released: Released) -> bool:
        _say("stopping")
        time.sleep(60.0)
        return True

    session.brownian(0.0, 1.0, HANG_GRID, stop=rule)


def main(argv: list[str]) -> None:
    mode, path, rho, *rest = argv
    session = PrivateSession(
        ZCDPFilter(float(rho)), np.random.default_rng(), ledger=path, create=True
    )
    try:
        if mode == "loop":
            _loop(session, float(rest[0]))
        elif mode == "hang":
            _hang(session)
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    finally:
        session.close()


if __name__ == "__main__":
    main(sys.argv[1:])
