"""APC Sec. 7: release as many counts as possible, each within relative error alpha (accuracy first).

Protocol (THEORY §6). Each round the exponential mechanism (Gumbel-max, eps_EM, monotone counts:
eps_EM²/8 zCDP; under gdp its bounded-range price mu(eps_EM/2)²) picks the top count among the
elements not picked yet; the count is then released
until the APC stopping condition holds (`RelativeError`), by

- **bm**: a Brownian mechanism on ``grid_size`` eps² levels from ``start_eps2`` up to the largest
  level the `UnifiedFilter` still admits (APC Thm 5, condition (3)), charged where it stopped;
- **doubling**: fresh Gaussian tries at eps² = start, 2·start, 4·start, …, every try charged,
  up to the longest schedule the budget admits (APC Sec. 7.1, Thm 1).

A release whose last level fails is discarded and paid. A trial ends when the budget cannot pay
the next exponential mechanism plus the cheapest release. Two engines run the same protocol:
`run_interactive`, one `PrivateSession` per trial (the reference), and `run_batch`, every trial at
once in lock-step rounds (`BatchBudget`, `ExponentialMechanism.run_batch`, `brownian_trials`,
`DoublingMethod.run_trials`). Data: a fresh Zipf data set per trial (the paper does not say;
its "1000 trials" then average over data and mechanism), or a user histogram held fixed.

This module is the experiment (`reproduce`, its rows and report); the protocol's settings and
one trial live in `expost.apps.relative_error_protocol`, the float engines in
`expost.apps.relative_error_engines`, the exact ones in `expost.apps.relative_error_exact`; their
public names are importable from here too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost._validation import positive_int
from expost.apps.data import zipf_counts
from expost.apps.relative_error_engines import run_batch, run_interactive
from expost.apps.relative_error_exact import run_exact
from expost.apps.relative_error_protocol import (
    ALL_METHODS,
    EXACT_METHODS,
    METHODS,
    Method,
    Settings,
    TrialResults,
    histograms,
    walk,
    within_alpha,
)
from expost.errors import InvalidParameter
from expost.execution import Execution, chunk_sizes, map_chunks

__all__ = [
    "ALL_METHODS",
    "DEFAULT_SIZES",
    "DEFAULT_TRIALS",
    "EXACT_METHODS",
    "METHODS",
    "TRIAL_CHUNK",
    "Method",
    "Report",
    "Row",
    "Settings",
    "TrialResults",
    "reproduce",
    "run_batch",
    "run_interactive",
    "summarise",
    "walk",
    "within_alpha",
]

FloatArray = npt.NDArray[np.float64]
DEFAULT_SIZES = (8_000, 16_000, 32_000, 64_000, 128_000)
DEFAULT_TRIALS = 1_000


@frozen
class Row:
    """One line of the table: a method at a data size, over ``trials`` trials."""

    n: int
    method: Method
    trials: int
    results_mean: float
    results_sd: float
    precision_mean: float
    precision_sd: float
    spend_mean: float
    unit: str = "rho"  # of spend_mean: "eps" (ex-post) for the skellam method


@frozen
class Report:
    """The rows, the seed, the wall time and the settings of a reproduction."""

    rows: tuple[Row, ...]
    seed: int
    seconds: float
    settings: Settings

    @property
    def rho(self) -> float:
        """The budget in rho units (`Settings.rho`)."""
        return self.settings.rho

    def to_json(self) -> dict[str, Any]:
        """``{"rows": [...], "seed", "seconds", "settings": {...}, "rho", "em_rho"}``
        (docs/apps/relative-error.md); ``conversion`` is None under gdp, where it does not apply."""
        s = self.settings
        settings = {
            "alpha": s.alpha,
            "eps_em": s.eps_em,
            "eps": s.eps,
            "delta": s.delta,
            "start_eps2": s.start_eps2,
            "grid_size": s.grid_size,
            "grid": s.grid,
            "stop_alpha": s.stop_alpha,
            "filter": s.accounting,
            "conversion": s.conversion if s.accounting == "zcdp" else None,
            "skellam_level": s.skellam_level,
        }
        rows = [
            {
                "n": r.n,
                "method": r.method,
                "trials": r.trials,
                "results_mean": r.results_mean,
                "results_sd": r.results_sd,
                "precision_mean": r.precision_mean,
                "precision_sd": r.precision_sd,
                "spend_mean": r.spend_mean,
                "unit": r.unit,
            }
            for r in self.rows
        ]
        return {
            "rows": rows,
            "seed": self.seed,
            "seconds": self.seconds,
            "settings": settings,
            "rho": s.rho,
            "em_rho": s.em_rho,
        }


def _sd(x: npt.NDArray[Any]) -> float:
    return float(np.std(x, ddof=1)) if x.size > 1 else 0.0


def summarise(n: int, method: Method, results: TrialResults) -> Row:
    """Mean and standard deviation over trials (APC Figure 2), and the mean spend (rho; ex-post
    eps for ``skellam``)."""
    p = results.precision
    return Row(
        n,
        method,
        int(results.returned.size),
        float(results.returned.mean()),
        _sd(results.returned),
        float(p.mean()),
        _sd(p),
        float(results.spent.mean()),
        "eps" if method == "skellam" else "rho",
    )


TRIAL_CHUNK = 1_000
"""Default trials per chunk of a size: with the paper's 1,000 trials, one chunk per size (a
batch of 1,000 trials keeps the engine's rounds vectorised); the sizes run in parallel."""


def _chunk(
    settings: Settings,
    n: int,
    fixed: FloatArray | None,
    trials: int,
    ss: np.random.SeedSequence,
    methods: tuple[Method, ...],
) -> tuple[TrialResults, ...]:
    """``trials`` trials of each of ``methods`` at size n, from the chunk's stream ``ss``.

    The chunk's data (a Zipf data set per trial, or the fixed histogram) is shared by the
    methods (a paired comparison); each method has its own child stream, fixed by its place in
    `ALL_METHODS` (adding a method leaves the others' rows unchanged).
    """
    data_seed, *method_seeds = ss.spawn(1 + len(ALL_METHODS))
    data = (
        zipf_counts(np.random.default_rng(data_seed), n, trials)
        if fixed is None
        else np.broadcast_to(fixed, (trials, fixed.shape[1]))
    )
    return tuple(
        _engine(method)(data, method, settings, np.random.default_rng(seed))
        for method, seed in ((m, method_seeds[ALL_METHODS.index(m)]) for m in methods)
    )


def _engine(method: Method) -> Callable[..., TrialResults]:
    """The batch engine for the paper's methods; the exact ones run one session per trial."""
    return run_batch if method in METHODS else run_exact


def _methods(value: Sequence[str]) -> tuple[Method, ...]:
    chosen = tuple(m for m in ALL_METHODS if m in value)
    if not value or len(chosen) != len(set(value)):
        raise InvalidParameter("methods", value, f"must be a non-empty subset of {ALL_METHODS}")
    return chosen


def _joined(parts: Sequence[TrialResults]) -> TrialResults:
    return TrialResults(
        np.concatenate([p.returned for p in parts]),
        np.concatenate([p.precise for p in parts]),
        np.concatenate([p.spent for p in parts]),
    )


def reproduce(
    sizes: Sequence[int] = DEFAULT_SIZES,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    settings: Settings | None = None,
    counts: npt.ArrayLike | None = None,
    progress: Callable[[int, int], None] | None = None,
    execution: Execution | None = None,
    chunk: int = TRIAL_CHUNK,
    methods: Sequence[str] = METHODS,
) -> Report:
    """Run ``methods`` at each size (APC Figure 2): by default the paper's two, batch engine;
    `EXACT_METHODS` add the exact-sampler versions (`expost.apps.relative_error_exact`).

    Trial i at size n uses a fresh Zipf data set, the same for every method (a paired
    comparison); with ``counts`` the one histogram is used by every trial and n = its total.
    The trials of size n are cut into chunks of ``chunk`` with streams spawned from
    ``SeedSequence(seed, spawn_key=(n,))`` (`expost.execution`), so a row depends on the seed,
    n and ``chunk`` only: not on the other sizes, nor on ``execution`` (in process, local
    processes, Dask). ``progress(done, total)`` is told the chunks done.
    """
    s = Settings() if settings is None else settings
    chosen = _methods(methods)
    k = positive_int("trials", trials)
    width = positive_int("chunk", chunk)
    began = time.perf_counter()
    cells: list[tuple[int, FloatArray | None]]
    if counts is None:
        cells = [(positive_int("sizes", n), None) for n in sizes]
    else:
        user = histograms(np.asarray(counts, dtype=np.float64)[None, :])
        cells = [(round(float(user.sum())), user)]
    per_cell = chunk_sizes(k, width)
    chunks = [
        (s, n, fixed, size, ss, chosen)
        for n, fixed in cells
        for size, ss in zip(
            per_cell, np.random.SeedSequence(seed, spawn_key=(n,)).spawn(len(per_cell)), strict=True
        )
    ]
    with (Execution() if execution is None else execution).executor() as executor:
        parts = map_chunks(_chunk, chunks, executor, _counter(progress, len(chunks)))
    rows: list[Row] = []
    for c, (n, _) in enumerate(cells):
        mine = parts[c * len(per_cell) : (c + 1) * len(per_cell)]
        rows += [summarise(n, m, _joined([p[i] for p in mine])) for i, m in enumerate(chosen)]
    return Report(tuple(rows), seed, time.perf_counter() - began, s)


def _counter(progress: Callable[[int, int], None] | None, total: int) -> Callable[[], None]:
    count = 0

    def done() -> None:
        nonlocal count
        count += 1
        if progress is not None:
            progress(count, total)

    return done
