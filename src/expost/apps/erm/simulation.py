"""BM vs LNR along one sequence of privacy levels, stopped by four accuracy checkers (BNR Sec. 6).

Vectorised over runs (whole paths at once) and one run at a time (interactive samplers), with
the ex-post loss each checker pays: E_N (public check), E_N + 0.5 (AboveThreshold, APC Lemma
B.1), 2E_N (ReducedAboveThreshold, BNR Thm 5.1, Cor 5.2), and for the private validation check
(`expost.apps.erm.validation`, THEORY §11) the ex-post RDP of mechanism and check together,
converted at delta = 1e-6 (`ExPostRDP.probabilistic`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Literal

import numpy as np
import numpy.typing as npt
from attrs import evolve, field, frozen

from expost._validation import as_float, generator, positive, positive_int, validator
from expost.apps.data import ERMData
from expost.apps.erm.tasks import (
    CELLS,
    ERMTask,
    FloatArray,
    IntArray,
    blocks,
)
from expost.apps.erm.validation import ValidationCheck, first_hits
from expost.boundaries import LinearPrivacyBoundary
from expost.errors import InvalidParameter
from expost.ex_post_rdp import DEFAULT_ORDERS, ExPostRDP
from expost.execution import Execution, children, chunk_sizes, map_chunks
from expost.filters.costs import BrownianCost
from expost.filters.rdp import ex_post_rdp_of
from expost.grids import TimeGrid
from expost.mechanisms.noise_reduction import BrownianNoiseReduction, LaplaceNoiseReduction
from expost.mechanisms.threshold import AboveThreshold, ReducedAboveThreshold
from expost.processes import (
    BrownianPath,
    LaplaceProcess,
    sample_brownian_grid_privacy_time,
    sample_laplace_grid,
)
from expost.rounding import sum_up, up, up_array
from expost.stopping import WhenPublicUtility

__all__ = [
    "ABOVE_THRESHOLD_EPS",
    "CHECKERS",
    "CHECK_SHARE",
    "CHECK_WINDOW",
    "DEFAULT_RUNS",
    "DELTA",
    "METHODS",
    "RUN_CHUNK",
    "TUNED_EPS",
    "Checker",
    "Mechanisms",
    "Method",
    "MethodResult",
    "TaskResult",
    "halts",
    "path_block",
    "privacy_levels",
    "run_task",
    "single_run",
    "task_chunks",
]

Method = Literal["BM", "LNR"]
Checker = Literal["public", "above_threshold", "reduced_above_threshold", "validation"]

DELTA = 1e-6
TUNED_EPS = 0.3
ABOVE_THRESHOLD_EPS = 0.5
METHODS: tuple[Method, ...] = ("BM", "LNR")
CHECKERS: tuple[Checker, ...] = (
    "public",
    "above_threshold",
    "reduced_above_threshold",
    "validation",
)
DEFAULT_RUNS = 1000
CHECK_SHARE = 1.0
"""The validation check's ρ at level k over BM's ex-post zCDP ρ = Δ2²/(2t_k) at that level."""
CHECK_WINDOW = 5
"""Increments the validation check's rule averages (`ValidationCheck.window`)."""


def privacy_levels(first: float = 0.16, last: float = 32.0, num: int = 60) -> FloatArray:
    """The shared target privacy levels E_1 < … < E_K, geometric from ``first`` to ``last``.

    ``first`` must exceed the asymptote Δa ≈ 0.149 of the linear boundary tuned at 0.3.
    """
    a, b = positive("first", first), positive("last", last)
    if b <= a:
        raise InvalidParameter("last", last, f"must be > first = {a!r}")
    if positive_int("num", num) < 2:
        raise InvalidParameter("num", num, "must be >= 2")
    return np.geomspace(a, b, num)


@frozen(eq=False)
class Mechanisms:
    """BM and LNR for one task along the shared levels, the ex-post bound of each level, the
    private validation check on ``validation`` and what each checker costs at each level."""

    bm: BrownianNoiseReduction
    lnr: LaplaceNoiseReduction
    boundary: LinearPrivacyBoundary
    bounds: dict[str, FloatArray]
    validation: ERMData | None
    check: ValidationCheck
    check_rho: FloatArray
    costs: dict[Method, dict[Checker, FloatArray]]

    @classmethod
    def build(
        cls,
        task: ERMTask,
        levels: npt.ArrayLike,
        validation: ERMData | None = None,
        share: float = CHECK_SHARE,
        window: int | None = CHECK_WINDOW,
    ) -> Mechanisms:
        """BM on TimeGrid.from_boundary(ψ tuned at 0.3, levels); LNR on scales Δ1/levels; the
        validation check (default: on the training data) at ρ_k = share·Δ2²/(2t_k), its rule
        averaging the last ``window`` increments."""
        e = np.asarray(levels, dtype=np.float64)
        boundary = LinearPrivacyBoundary.tuned_for(TUNED_EPS, DELTA, task.l2_sensitivity)
        grid = TimeGrid.from_boundary(boundary, e)
        bm = BrownianNoiseReduction(grid, task.l2_sensitivity, boundary=boundary)
        lnr = LaplaceNoiseReduction(task.l1_sensitivity / e, task.l1_sensitivity)
        bounds = {"BM": np.asarray(boundary(bm.times)), "LNR": lnr.ex_post_bounds()}
        sensitivity = (
            task.utility_sensitivity if validation is None else task.loss_range / validation.n
        )
        times = bm.times * (sensitivity / task.l2_sensitivity) ** 2 / positive("share", share)
        check = ValidationCheck(times, sensitivity, 0.0, window=window)  # target: per run
        check_rho = np.array([check.rho(k) for k in range(times.size)])
        costs = {m: _level_costs(m, bm, bounds[m], check) for m in METHODS}
        return cls(bm, lnr, boundary, bounds, validation, check, check_rho, costs)


def _level_costs(
    method: Method, bm: BrownianNoiseReduction, bounds: FloatArray, check: ValidationCheck
) -> dict[Checker, FloatArray]:
    """Each checker's ex-post loss when stopped at each level (`_COST`; validation: module
    docstring). BM and check are both ex-post zCDP, so their ρ add; LNR is pure ex-post E_k, so
    ε_α = E_k + α·ρ_check at `DEFAULT_ORDERS`; either is converted at DELTA (THEORY §11)."""
    out: dict[Checker, FloatArray] = {c: _COST[c](bounds) for c in _COST}
    eps = []
    for k, level in enumerate(bounds.tolist()):
        charge = check.charge(k)
        if method == "BM":
            own = ex_post_rdp_of(BrownianCost(float(bm.times[k]), bm.sensitivity))
            assert own is not None  # BM is ex-post zCDP
            assert own.rho is not None
            total = ExPostRDP.of_rho(sum_up([own.rho, charge.rho or 0.0]))
        else:
            pairs = {a: sum_up([level, charge.eps(a)]) for a in DEFAULT_ORDERS}
            total = ExPostRDP.of_orders(pairs)
        eps.append(total.probabilistic(DELTA).bound)
    out["validation"] = np.array(eps)
    return out


def path_block(task: ERMTask, levels: int) -> int:
    return max(1, CELLS // (levels * task.value.size))


def _path_losses(
    task: ERMTask,
    mechanisms: Mechanisms,
    method: Method,
    runs: int,
    rng: np.random.Generator,
) -> tuple[FloatArray, FloatArray]:
    """Training and validation loss of every iterate of ``runs`` whole paths, (runs, K) each.

    Each block of runs is ``value + path`` with paths drawn as `BrownianNoiseReduction` /
    `LaplaceNoiseReduction.run_batch` draw them (privacy-time BM, continuous Laplace process).
    """
    m = task.value.size
    if method == "BM":
        times = mechanisms.bm.times
        draw: Callable[[int], FloatArray] = lambda k: sample_brownian_grid_privacy_time(
            times, k, m, rng
        )
    else:
        scales = mechanisms.lnr.array
        draw = lambda k: sample_laplace_grid(scales, k, m, rng)
    K = mechanisms.bounds[method].size
    out, held_out = np.empty((runs, K)), np.empty((runs, K))
    for block in blocks(runs, path_block(task, K)):
        models = task.models(task.value + draw(block.stop - block.start))
        out[block] = task.model_loss(models)
        if mechanisms.validation is not None:
            held_out[block] = task.loss_on(mechanisms.validation, models)
    return out, out if mechanisms.validation is None else held_out


_COST: dict[Checker, Callable[[FloatArray], FloatArray]] = {
    "public": lambda level: level,
    "above_threshold": lambda level: up_array(level + ABOVE_THRESHOLD_EPS),  # a sum: 1 ulp up
    "reduced_above_threshold": lambda level: 2.0 * level,
}
"""Ex-post loss of each checker stopped at level E_N: E_N (the mechanism alone), E_N + 0.5
(basic composition with AboveThreshold, APC Lemma B.1), 2E_N (BNR Thm 5.1, Cor 5.2); rounded up
(E_N is already an upper bound, the sum is moved 1 ulp up, doubling is exact)."""


def halts(
    losses: FloatArray,
    level_bounds: FloatArray,
    target: float,
    sensitivity: float,
    rng: np.random.Generator,
    validation: tuple[ValidationCheck, FloatArray] | None = None,
) -> dict[Checker, IntArray]:
    """Halting index (−1: never) of each checker on the losses of whole paths.

    (a) the first iterate whose training loss, treated as public, is <= target (the rule of
    `WhenPublicUtility`); (b) AboveThreshold at eps = 0.5 and (c) ReducedAboveThreshold at the
    levels E_n, both on the utility −loss of sensitivity ``sensitivity``; (d) with
    ``validation`` = (check, validation losses), the check stopped at the first released
    estimate <= target. The data enter only through the losses. (d)'s noise is drawn last, so
    (a)–(c) do not depend on whether it runs.
    """
    public = first_hits(losses <= target)
    at = AboveThreshold(ABOVE_THRESHOLD_EPS, -target, sensitivity)
    rat = ReducedAboveThreshold(-target, float(level_bounds[-1]), sensitivity)
    out: dict[Checker, IntArray] = {
        "public": public,
        "above_threshold": at.run_batch(-losses, rng),
        "reduced_above_threshold": rat.run_batch(-losses, level_bounds, rng),
    }
    if validation is not None:
        check, held_out = validation
        out["validation"] = evolve(check, target=target).run_batch(held_out, rng)
    return out


def _curve(losses: FloatArray) -> dict[str, FloatArray]:
    """Mean loss per level with a pointwise 95% t-interval over runs."""
    from scipy import stats  # lazy: keeps the `expost` command fast

    runs = losses.shape[0]
    mean = losses.mean(axis=0)
    half = stats.t.ppf(0.975, runs - 1) * losses.std(axis=0, ddof=1) / math.sqrt(runs)
    return {"mean": mean, "low": mean - half, "high": mean + half}


@frozen(eq=False)
class MethodResult:
    """One mechanism on one task: the Figure 2 curve and, per checker, for each run the ex-post
    loss at its stop, whether it stopped, and whether the model it stopped at meets the target
    (a run that never stops is charged at the last level; Figure 3); ``check_rho``: the
    validation check's own ex-post zCDP ρ at its stop."""

    curve: dict[str, FloatArray]
    ex_post: dict[Checker, FloatArray]
    stopped: dict[Checker, npt.NDArray[np.bool_]]
    met: dict[Checker, npt.NDArray[np.bool_]]
    stop_loss: dict[Checker, FloatArray]
    check_rho: FloatArray

    @classmethod
    def from_halts(
        cls,
        losses: FloatArray,
        halts: dict[Checker, IntArray],
        costs: dict[Checker, FloatArray],
        target: float,
        check_rho: FloatArray,
    ) -> MethodResult:
        """Costs (``costs[checker][k]``: stopped at level k) and accuracy at the halting
        indices (−1: charged at the last level)."""
        rows = np.arange(losses.shape[0])
        ex_post, stopped, met, stop_loss = {}, {}, {}, {}
        for checker in CHECKERS:
            index = halts[checker]
            stop = np.where(index >= 0, index, losses.shape[1] - 1)
            ex_post[checker] = costs[checker][stop]
            stopped[checker] = index >= 0
            stop_loss[checker] = losses[rows, stop]
            met[checker] = (index >= 0) & (stop_loss[checker] <= target)
        last = losses.shape[1] - 1
        rho = check_rho[np.where(halts["validation"] >= 0, halts["validation"], last)]
        return cls(_curve(losses), ex_post, stopped, met, stop_loss, rho)


@frozen(eq=False)
class TaskResult:
    """Everything measured on one task."""

    task: str
    data: str
    n: int
    d: int
    target: float = field(converter=as_float, validator=validator(positive))
    non_private_loss: float
    levels: FloatArray
    sensitivities: dict[str, float]
    methods: dict[Method, MethodResult]
    seconds: float
    validation: str = "training data"


RUN_CHUNK = 100
"""Runs per chunk of a (task, method): the chunk layout, so it fixes the results for a seed."""


def _chunk(
    task: ERMTask,
    mechanisms: Mechanisms,
    method: Method,
    target: float,
    runs: int,
    seed: np.random.SeedSequence,
) -> tuple[FloatArray, dict[Checker, IntArray]]:
    """The path losses and each checker's halting index of ``runs`` runs, from one stream."""
    rng = np.random.default_rng(seed)
    losses, held_out = _path_losses(task, mechanisms, method, runs, rng)
    bounds = mechanisms.bounds[method]
    check = (mechanisms.check, held_out)
    return losses, halts(losses, bounds, target, task.utility_sensitivity, rng, check)


def task_chunks(runs: int) -> int:
    """How many chunks `run_task` cuts each method's ``runs`` into."""
    return len(chunk_sizes(runs, RUN_CHUNK))


def run_task(
    task: ERMTask,
    levels: npt.ArrayLike,
    runs: int,
    seed: np.random.SeedSequence,
    *,
    target: float,
    tick: Callable[[], None] = lambda: None,
    execution: Execution | None = None,
    validation: ERMData | None = None,
    check: tuple[float, int | None] = (CHECK_SHARE, CHECK_WINDOW),
) -> TaskResult:
    """BNR Sec. 6 on one task, vectorised over runs: Figure 2 curves and Figure 3 ex-post losses.

    The validation check runs on ``validation`` (default: the training data, still private:
    the check's ex-post RDP is added to the mechanism's, which holds for any data it reads);
    ``check`` = (share, window) of `Mechanisms.build`.

    Each method's runs are cut into chunks of `RUN_CHUNK` drawn from streams spawned from
    ``seed`` (`expost.execution.children`: the same seed object gives the same result however
    often it is used), so the result does not depend on ``execution`` (in process,
    local processes, Dask). ``tick()`` is called after every chunk.
    """
    start = time.perf_counter()
    n_runs = positive_int("runs", runs)
    if n_runs < 2:
        raise InvalidParameter("runs", runs, "must be >= 2 (confidence bands)")
    if not isinstance(seed, np.random.SeedSequence):
        raise InvalidParameter("seed", seed, "must be a numpy.random.SeedSequence")
    goal = positive("target", target)
    mechanisms = Mechanisms.build(task, levels, validation, *check)
    methods: dict[Method, MethodResult] = {}
    sizes = chunk_sizes(n_runs, RUN_CHUNK)
    with (Execution() if execution is None else execution).executor() as executor:
        for method, method_seed in zip(METHODS, children(seed, len(METHODS)), strict=True):
            chunks = [
                (task, mechanisms, method, goal, size, ss)
                for size, ss in zip(sizes, children(method_seed, len(sizes)), strict=True)
            ]
            parts = map_chunks(_chunk, chunks, executor, tick)
            losses = np.concatenate([p[0] for p in parts])
            stops = {c: np.concatenate([p[1][c] for p in parts]) for c in CHECKERS}
            methods[method] = MethodResult.from_halts(
                losses, stops, mechanisms.costs[method], goal, mechanisms.check_rho
            )
    return TaskResult(
        task=task.name,
        data=task.data.name,
        n=task.data.n,
        d=task.data.d,
        target=goal,
        non_private_loss=float(task.model_loss(task.models(task.value))),
        levels=np.asarray(levels, dtype=np.float64),
        sensitivities={
            "l2": task.l2_sensitivity,
            "l1": task.l1_sensitivity,
            "utility": task.utility_sensitivity,
            "validation": mechanisms.check.sensitivity,
        },
        methods=methods,
        seconds=time.perf_counter() - start,
        validation="training data" if validation is None else f"held out, n = {validation.n}",
    )


def _iterates(
    task: ERMTask, mechanisms: Mechanisms, method: Method, rng: np.random.Generator
) -> Iterator[FloatArray]:
    """One path's iterates drawn lazily, noisiest first (BrownianPath / LaplaceProcess)."""
    m = task.value.size
    if method == "BM":
        path = BrownianPath(m, rng)
        for t in mechanisms.bm.times:
            yield task.value + path.next(float(t))
    else:
        scales = mechanisms.lnr.array
        process = LaplaceProcess(float(scales[-1]), float(scales[0]), m, rng)
        for s in scales:
            yield task.value + process.next(float(s))


def single_run(
    task: ERMTask,
    mechanisms: Mechanisms,
    method: Method,
    checker: Checker,
    target: float,
    rng: np.random.Generator,
) -> tuple[float, bool]:
    """One run, one at a time (interactive samplers): (ex-post loss at the stop, stopped?).

    The reference for the vectorised `run_task`, with the same laws.
    """
    rng = generator(rng)
    bounds = mechanisms.bounds[method]
    last = bounds.size - 1
    if checker == "public":
        rule = WhenPublicUtility(lambda v: float(task.loss(v)), target, at_least=False)
        if method == "BM":
            bm = BrownianNoiseReduction(
                mechanisms.bm.grid, task.l2_sensitivity, stop=rule, boundary=mechanisms.boundary
            )
            run = bm.run(task.value, rng)
        else:
            run = LaplaceNoiseReduction(mechanisms.lnr.scales, task.l1_sensitivity, rule).run(
                task.value, rng
            )
        assert run.ex_post is not None  # both mechanisms carry ex-post bounds
        return run.ex_post.bound, run.stopped
    if checker == "validation":
        data = mechanisms.validation
        iterates = _iterates(task, mechanisms, method, rng)
        scores = (
            float(task.loss(y) if data is None else task.loss_on(data, task.models(y)))
            for y in iterates
        )
        check = evolve(mechanisms.check, target=target).run(scores, rng)
        stop = last if check.stop_index is None else check.stop_index
        return float(mechanisms.costs[method]["validation"][stop]), check.stop_index is not None
    utilities = (-float(task.loss(y)) for y in _iterates(task, mechanisms, method, rng))
    if checker == "above_threshold":
        at = AboveThreshold(ABOVE_THRESHOLD_EPS, -target, task.utility_sensitivity)
        index = at.run(utilities, rng).stop_index
        stop = last if index is None else index
        return up(float(bounds[stop]) + ABOVE_THRESHOLD_EPS), index is not None
    rat = ReducedAboveThreshold(-target, float(bounds[-1]), task.utility_sensitivity)
    if method == "BM":
        result = rat.run_with_brownian(
            mechanisms.bm, task.value, lambda y: -float(task.loss(y)), rng
        )
        if result.ex_post is None:
            return 2.0 * float(bounds[-1]), False
        return result.ex_post.bound, True
    reduced = rat.run(utilities, bounds, rng)
    stop = last if reduced.stop_index is None else reduced.stop_index
    return 2.0 * float(bounds[stop]), reduced.stop_index is not None
