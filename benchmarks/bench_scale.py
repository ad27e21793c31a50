"""Scaling of the audits: executors (in process, local processes, Dask) and array backends.

Three parts, each printing ratios against a baseline measured in the same run:

1. ``executors``: a fixed subset of the paper suite (four audits at ``--runs`` runs each, chunks
   of 10,000) in process, on 2 local processes and on a 2-worker Dask `LocalCluster` (started
   before the clock); runs per second and parallel efficiency ``t_1 / (workers · t_w)``. The
   verdicts must be identical (the chunk layout fixes them); the script checks it.
2. ``paths``: Brownian paths per second on the bm-ex-post grid (120 times, d = 3): numpy
   (`sample_brownian_grid`, one core), torch on CPU, and torch/cupy on CUDA when available
   (skipped otherwise); then one bm-ex-post audit chunk end to end on each backend.
3. ``brute-force``: the bm-ex-post/mixture/uniform/sens-1/d-3 audit at ``--paths`` paths on
   ``--backend``/``--device`` (and ``--dask-local``/``--scheduler`` if given), printing the
   event rate, its Clopper–Pearson bounds and paths per second: the cross-check of the
   10⁹-path figure in docs/scale.md needs a GPU session (``--backend torch --device cuda``).

Run: ``python benchmarks/bench_scale.py [executors|paths|brute-force|all] [options]``.
"""

from __future__ import annotations

import argparse
import importlib
import time
from typing import Any

import attrs
import numpy as np
from timing import median_seconds  # benchmarks/timing.py, a sibling module

from expost.audit.core import Audit, run_audits
from expost.audit.paper.brownian import bm_ex_post
from expost.audit.registry import default_registry
from expost.audit.report import AuditReport
from expost.backends import ArrayBackend
from expost.confidence import clopper_pearson_lower, clopper_pearson_upper
from expost.execution import Execution
from expost.processes import sample_brownian_grid
from expost.processes.brownian import sample_brownian_grid_on

__all__ = ["main"]

SUBSET = (
    "bm-ex-post/mixture/uniform/sens-1/d-3",
    "gaussian-pdp-exact",
    "backward-martingale-stopped",
    "apc-eq1-ville",
)
BRUTE = "bm-ex-post/mixture/uniform/sens-1/d-3"


def _subset(runs: int) -> list[Audit]:
    paper = {a.name: a for a in default_registry().suite("paper")}
    return [attrs.evolve(paper[name], n=runs, chunk_size=10_000) for name in SUBSET]


def _verdicts(report: AuditReport) -> list[tuple[str, float, float]]:
    return [(r.name, r.verdict.observed, r.verdict.bound) for r in report.results]


def executors(runs: int) -> None:
    """Part 1: the same audits on three executors; efficiency against in-process."""
    audits = _subset(runs)
    total = runs * len(audits)
    start = time.perf_counter()
    base = run_audits(audits, seed=0)
    t1 = time.perf_counter() - start
    print(f"executors: {len(audits)} audits x {runs:,} runs (+ twins), chunks of 10,000")
    print(f"  in process          {t1:7.2f} s  {total / t1:10,.0f} runs/s  efficiency 1.00")
    start = time.perf_counter()
    pool = run_audits(audits, seed=0, workers=2)
    t2 = time.perf_counter() - start
    print(
        f"  2 local processes   {t2:7.2f} s  {total / t2:10,.0f} runs/s  efficiency {t1 / (2 * t2):.2f}"
    )
    try:  # the dask extra, untyped: Any
        local_cluster: Any = importlib.import_module("dask.distributed").LocalCluster
    except ImportError:
        print("  Dask LocalCluster    skipped (pip install 'expost[dask]')")
        same = _verdicts(base) == _verdicts(pool)
    else:
        with local_cluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            start = time.perf_counter()
            dask = run_audits(
                audits, seed=0, execution=Execution(scheduler=cluster.scheduler_address)
            )
            t3 = time.perf_counter() - start
        print(
            f"  Dask 2 workers      {t3:7.2f} s  {total / t3:10,.0f} runs/s  "
            f"efficiency {t1 / (2 * t3):.2f} (cluster started before the clock)"
        )
        same = _verdicts(base) == _verdicts(pool) == _verdicts(dask)
    print(f"  verdicts identical across executors: {same}")


def _backends() -> list[ArrayBackend]:
    out = [ArrayBackend("numpy")]
    try:
        import torch
    except ImportError:
        print("  torch: not installed (pip install 'expost[gpu]')")
        return out
    out.append(ArrayBackend("torch", "cpu"))
    if torch.cuda.is_available():
        out.append(ArrayBackend("torch", "cuda"))
    else:
        print("  torch cuda: no CUDA device here (pending a GPU session)")
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        out.append(ArrayBackend("cupy"))
    except Exception:  # noqa: BLE001  # cupy missing or no CUDA: skip it, whatever the reason
        print("  cupy: not available (pending a GPU session)")
    return out


def _sync(backend: ArrayBackend) -> None:
    if backend.device.startswith("cuda") and backend.name == "torch":
        import torch

        torch.cuda.synchronize()
    if backend.name == "cupy":
        import cupy

        cupy.cuda.Device().synchronize()


def paths(trials: int, repeats: int, only: ArrayBackend | None = None) -> None:
    """Part 2: Brownian paths per second and one audit chunk per backend."""
    audit = next(a for a in bm_ex_post("paper") if a.name == BRUTE)
    grid = audit.simulate.args[0].times  # type: ignore[attr-defined]  # a partial of the bm
    print(f"paths: {trials:,} paths x {grid.size} times x d = 3, median of {repeats}")
    base = None
    for backend in [only] if only is not None else _backends():
        draws = backend.draws(np.random.SeedSequence(0))

        def draw(b: ArrayBackend = backend, d: Any = draws) -> None:
            if b.name == "numpy":
                sample_brownian_grid(grid, trials, 3, np.random.default_rng(0))
            else:
                sample_brownian_grid_on(grid, trials, 3, d)
                _sync(b)

        def chunk(b: ArrayBackend = backend, d: Any = draws) -> None:
            assert audit.on_backend is not None
            if b.name == "numpy":
                audit.simulate(trials, np.random.default_rng(0))
            else:
                ArrayBackend.to_numpy(audit.on_backend(trials, d))

        seconds = median_seconds(draw, repeats)
        audit_seconds = median_seconds(chunk, repeats)
        rate = trials / seconds
        base = rate if base is None else base
        label = f"{backend.name}/{backend.device}" if backend.name == "torch" else backend.name
        print(
            f"  {label:<12} paths {rate:12,.0f}/s (x{rate / base:5.2f} numpy)   "
            f"bm-ex-post chunk {trials / audit_seconds:12,.0f} runs/s"
        )


def brute_force(total: int, backend: ArrayBackend, execution: Execution) -> None:
    """Part 3: one bm-ex-post audit at ``total`` paths; rate, bounds and paths per second."""
    audit = next(a for a in bm_ex_post("paper") if a.name == BRUTE)
    big = attrs.evolve(audit, n=total, chunk_size=min(total, 250_000), twin=None)
    start = time.perf_counter()
    report = run_audits([big], seed=0, execution=execution, backend=backend)
    seconds = time.perf_counter() - start
    v = report.results[0].verdict
    hits = round(v.observed * v.n)
    print(f"brute force: {BRUTE} on {backend.name}/{backend.device}, {execution.describe()}")
    print(
        f"  {v.n:,} paths in {seconds:.1f} s ({v.n / seconds:,.0f} paths/s): rate {v.observed:.6g}, "
        f"1e-6 bounds [{clopper_pearson_lower(hits, v.n, 1e-6):.6g}, "
        f"{clopper_pearson_upper(hits, v.n, 1e-6):.6g}], claimed <= {v.claimed:g}: {v.word}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "part", nargs="?", default="all", choices=("executors", "paths", "brute-force", "all")
    )
    parser.add_argument("--runs", type=int, default=40_000, help="runs per audit (executors)")
    parser.add_argument("--trials", type=int, default=20_000, help="paths per timing (paths)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paths", type=int, default=200_000, help="paths (brute-force)")
    parser.add_argument("--backend", choices=("numpy", "torch", "cupy"), default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dask-local", type=int, default=None)
    parser.add_argument("--scheduler", default=None)
    args = parser.parse_args()
    only = None if args.backend is None else ArrayBackend(args.backend, args.device).check()
    if args.part in ("executors", "all"):
        executors(args.runs)
    if args.part in ("paths", "all"):
        paths(args.trials, args.repeats, only)
    if args.part in ("brute-force", "all"):
        execution = Execution(scheduler=args.scheduler, dask_local=args.dask_local).check()
        brute_force(args.paths, only or ArrayBackend(), execution)


if __name__ == "__main__":
    main()
