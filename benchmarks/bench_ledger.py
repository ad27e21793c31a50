"""Admitted rounds per second on a shared budget: SQLite file vs PostgreSQL, 1, 4 and 16 clients.

Each client is a process with its own `PrivateSession` on the one ledger; a round is a Gaussian
release (reserve and settle: two durable commits, SQLite ``synchronous=EXTRA``, PostgreSQL
``synchronous_commit=on``). All clients start together and release for ``--seconds``; the
script prints each backend's aggregate rate, the PostgreSQL/SQLite ratio at each client count,
and the spread of the per-client rates (starvation: the slowest client against the mean).
PostgreSQL is a throwaway `pgserver` on this machine (unix socket), started here.

    python benchmarks/bench_ledger.py [--seconds 5] [--clients 1 4 16]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import expost as ep


def _client(target: str, start: float, seconds: float, out: Any) -> None:
    session = ep.PrivateSession(ep.ZCDPFilter(1e9), np.random.default_rng(), ledger=target)
    while time.time() < start:
        time.sleep(0.001)
    rounds, end = 0, start + seconds
    while time.time() < end:
        session.gaussian(1.0, 1.0, rho=1e-6)
        rounds += 1
    session.close()
    out.put(rounds)


def _run(target: str, clients: int, seconds: float) -> list[int]:
    ep.PrivateSession(ep.ZCDPFilter(1e9), np.random.default_rng(), ledger=target).close()
    out: Any = mp.get_context("fork").Queue()
    start = time.time() + 1.0 + 0.05 * clients  # every client connected before the start
    procs = [
        mp.get_context("fork").Process(target=_client, args=(target, start, seconds, out))
        for _ in range(clients)
    ]
    for p in procs:
        p.start()
    counts = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    import pgserver  # the postgres extra

    with tempfile.TemporaryDirectory() as tmp:
        server = pgserver.get_server(Path(tmp) / "pg", cleanup_mode="stop")
        uri = server.get_uri()
        rows = []
        for n in args.clients:
            sqlite = _run(str(Path(tmp) / f"bench-{n}.sqlite"), n, args.seconds)
            postgres = _run(f"{uri}{'&' if '?' in uri else '?'}ledger=bench_{n}", n, args.seconds)
            rows.append((n, sqlite, postgres))
        server.cleanup()
    print(f"{'clients':>7}  {'backend':<10} {'rounds/s':>9}  {'min/mean':>8}  {'max/mean':>8}")
    for n, sqlite, postgres in rows:
        for name, counts in (("sqlite", sqlite), ("postgresql", postgres)):
            c = np.array(counts, dtype=float)
            print(
                f"{n:>7}  {name:<10} {c.sum() / args.seconds:>9.1f}  "
                f"{c.min() / c.mean():>8.2f}  {c.max() / c.mean():>8.2f}"
            )
    for n, sqlite, postgres in rows:
        ratio = sum(postgres) / max(sum(sqlite), 1)
        print(f"ratio PostgreSQL/SQLite at {n} clients: {ratio:.2f}")


if __name__ == "__main__":
    main()
