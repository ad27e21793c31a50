"""Admitted rounds per second on a shared budget: SQLite file vs PostgreSQL, 1, 4 and 16 clients.

Each client is a process with its own `PrivateSession` on the one ledger; a round is a Gaussian
release (reserve and settle: two durable commits, SQLite ``synchronous=EXTRA``, PostgreSQL
``synchronous_commit=on`` through the server-side functions ``expost.lock_ledger``,
``read_rounds`` and ``append_round``, as a client role with only the documented grants). All
clients start together and release for ``--seconds``; the script prints each backend's
aggregate rate, the PostgreSQL/SQLite ratio at each client count, the spread of the per-client
rates (starvation: the slowest client against the mean), and beside them the fsync rate of the
disk both ledgers live on (4 KiB write + fsync, repeated for one second): a durable commit costs
at least one fsync, so that rate bounds what either backend can do. PostgreSQL is a throwaway
`pgserver` on this machine (unix socket), started here, its data on the same disk.

    python benchmarks/bench_ledger.py [--seconds 4] [--clients 1 4 16]
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import expost as ep
from expost.ledger import init_ledger
from expost.ledger.pg_schema import client_grants

CLIENT = "bench_client"


BUDGET = ep.ZCDPFilter(1e9)


def fsync_rate(directory: Path, seconds: float = 1.0) -> float:
    """fsyncs per second of a 4 KiB overwrite in ``directory`` (the disk's durable-write rate)."""
    path = directory / "fsync.probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    count, end = 0, time.perf_counter() + seconds
    try:
        while time.perf_counter() < end:
            os.pwrite(fd, os.urandom(4096), 0)
            os.fsync(fd)
            count += 1
    finally:
        os.close(fd)
        path.unlink()
    return count / seconds


def _client(target: str, start: float, seconds: float, out: Any) -> None:
    session = ep.PrivateSession(BUDGET, np.random.default_rng(), ledger=target)
    while time.time() < start:
        time.sleep(0.001)
    rounds, end = 0, start + seconds
    while time.time() < end:
        session.gaussian(1.0, 1.0, rho=1e-6)
        rounds += 1
    session.close()
    out.put(rounds)


def _run(target: str, clients: int, seconds: float) -> list[int]:
    init_ledger(target.replace(f"{CLIENT}@", "postgres@", 1), BUDGET)  # the administrator
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


def _client_uri(server: Any) -> str:
    """The server's URL as a client role with only the documented grants."""
    import psycopg

    uri: str = server.get_uri()
    init_ledger(f"{uri}&ledger=installed", BUDGET)  # installs the schema
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {CLIENT} LOGIN")
        for grant in client_grants(CLIENT):
            conn.execute(grant)
    return uri.replace("postgres:@", f"{CLIENT}@", 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="release time per run")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16], help="client counts")
    args = parser.parse_args()
    pgserver: Any = importlib.import_module("pgserver")  # the postgres extra, untyped

    with tempfile.TemporaryDirectory() as tmp:
        fsyncs = fsync_rate(Path(tmp))
        server = pgserver.get_server(Path(tmp) / "pg", cleanup_mode="stop")
        uri = _client_uri(server)
        rows = []
        for n in args.clients:
            sqlite_counts = _run(str(Path(tmp) / f"bench-{n}.sqlite"), n, args.seconds)
            postgres = _run(f"{uri}&ledger=bench_{n}", n, args.seconds)
            rows.append((n, sqlite_counts, postgres))
        server.cleanup()
    print(f"disk: {fsyncs:.0f} fsync/s (4 KiB write + fsync); {os.cpu_count()} CPUs")
    print(f"{'clients':>7}  {'backend':<10} {'rounds/s':>9}  {'min/mean':>8}  {'max/mean':>8}")
    for n, sqlite_counts, postgres in rows:
        for name, counts in (("sqlite", sqlite_counts), ("postgresql", postgres)):
            c = np.array(counts, dtype=float)
            print(
                f"{n:>7}  {name:<10} {c.sum() / args.seconds:>9.1f}  "
                f"{c.min() / c.mean():>8.2f}  {c.max() / c.mean():>8.2f}"
            )
    for n, sqlite_counts, postgres in rows:
        ratio = sum(postgres) / max(sum(sqlite_counts), 1)
        print(f"ratio PostgreSQL/SQLite at {n} clients: {ratio:.2f} (disk {fsyncs:.0f} fsync/s)")


if __name__ == "__main__":
    main()
