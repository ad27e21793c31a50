"""Per-round accounting overhead of `PrivateSession`, OpenDP's privacy filter, boundary throughput.

(a) `PrivateSession` accounting (admit + spend + bookkeeping; no sampling: the round runs a
    no-op in place of the mechanism, through the same `_round` path as ``session.gaussian``) at
    10, 100, 1,000 and 10,000 recorded rounds; each value is the median over a window of rounds
    starting there. It must stay flat.
(b) OpenDP's ``make_privacy_filter`` over ``make_fully_adaptive_composition`` (zCDP, Gaussian,
    ``contrib``): the filter's per-query cost minus the bare odometer's, at 10, 100 and 1,000
    rounds, when ``opendp`` is importable (``pip install opendp``); skipped otherwise.
(c) Boundary evaluation on 10^6 values, vectorised vs per-value scalar (`bench_boundaries`).

Run: ``python benchmarks/bench_filters.py [--repeats N] [--ledger]``; the ratios come last.
``--ledger`` also times rounds through a SQLite ledger in a temporary directory (two durable
commits per round, so disk sync time dominates).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_boundaries  # a sibling script, reused rather than duplicated

from expost import PrivateSession, ZCDPCost, ZCDPFilter
from expost.rounds import fixed

__all__ = ["main", "opendp_overhead", "session_overhead"]

ROUNDS = (10, 100, 1_000, 10_000)
OPENDP_ROUNDS = (10, 100, 1_000)
WINDOW = 64
COST = ZCDPCost(1e-6)


def _accounting_round(session: PrivateSession) -> None:
    """One round through the session's protocol with a no-op in place of the mechanism."""
    session._release(fixed("gaussian", COST, lambda: None))


def _timed(step: Callable[[], object], count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def session_overhead(rounds: int, ledger: Path | None = None, window: int = WINDOW) -> float:
    """Median seconds of one accounting round over ``window`` rounds after ``rounds`` rounds."""
    path = None if ledger is None else ledger / f"ledger-{rounds}.sqlite"
    session = PrivateSession(ZCDPFilter(1e9), np.random.default_rng(0), ledger=path, create=True)
    try:
        for _ in range(rounds):
            _accounting_round(session)
        return statistics.median(_timed(lambda: _accounting_round(session), window))
    finally:
        session.close()


def _opendp() -> Any | None:
    try:
        return importlib.import_module("opendp.prelude")
    except ImportError:
        return None


def opendp_overhead(dp: Any, rounds: int, window: int = WINDOW) -> float:
    """Median seconds of OpenDP's filter per query minus the bare odometer's, after ``rounds``."""
    domain, metric = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    odometer = dp.c.make_fully_adaptive_composition(
        domain, metric, dp.zero_concentrated_divergence()
    )
    privacy_filter = dp.c.make_privacy_filter(odometer, d_in=1.0, d_out=1e9)
    gaussian = dp.m.make_gaussian(domain, metric, scale=1.0)
    filtered, bare = privacy_filter(0.0), odometer(0.0)
    for _ in range(rounds):
        filtered(gaussian)
        bare(gaussian)
    with_filter = _timed(lambda: filtered(gaussian), window)
    without = _timed(lambda: bare(gaussian), window)
    return statistics.median(with_filter) - statistics.median(without)


def _print_row(label: str, values: dict[int, float]) -> None:
    cells = " ".join(f"{values[n] * 1e6:>10.1f}" if n in values else f"{'-':>10}" for n in ROUNDS)
    print(f"{label:<34} {cells}")


def main(repeats: int = 5, with_ledger: bool = False) -> dict[str, float]:
    """Print the three benchmarks and return the ratios (printed last)."""
    print("(a)/(b) per-round accounting overhead, µs (median of a window of rounds)")
    print(f"{'rounds already recorded':<34} " + " ".join(f"{n:>10,}" for n in ROUNDS))
    ours = {n: session_overhead(n) for n in ROUNDS}
    _print_row("expost PrivateSession", ours)
    if with_ledger:
        with tempfile.TemporaryDirectory() as directory:
            ledger = {n: session_overhead(n, Path(directory), 16) for n in ROUNDS[:2]}
        _print_row("expost PrivateSession + ledger", ledger)
    dp = _opendp()
    theirs: dict[int, float] = {}
    if dp is None:
        print("(b) skipped: opendp is not installed (pip install opendp)")
    else:
        dp.enable_features("contrib")
        theirs = {n: opendp_overhead(dp, n) for n in OPENDP_ROUNDS}
        _print_row("OpenDP filter minus odometer", theirs)
    print()
    print("(c) boundary evaluation")
    boundary_speedup = bench_boundaries.main(repeats)
    print()
    ratios = {"flatness": ours[10_000] / ours[10]}
    print(f"expost accounting per round at 10,000 vs 10 rounds: {ratios['flatness']:.2f}x")
    if theirs:
        ratios["opendp"] = theirs[1_000] / ours[1_000]
        print(f"OpenDP filter overhead / expost at 1,000 rounds: {ratios['opendp']:.0f}x")
    ratios["boundaries"] = boundary_speedup
    print(f"boundary evaluation, vectorised vs per-value scalar: {boundary_speedup:.0f}x")
    return ratios


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ledger", action="store_true", help="also time rounds with a ledger")
    arguments = parser.parse_args()
    main(arguments.repeats, arguments.ledger)
