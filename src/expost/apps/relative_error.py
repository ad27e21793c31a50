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
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from attrs import converters, field, frozen, validators

from expost._validation import (
    as_float,
    generator,
    open_probability,
    positive,
    positive_int,
    validator,
)
from expost.apps.batch_budget import BatchBudget
from expost.apps.data import zipf_counts
from expost.errors import InvalidParameter
from expost.execution import Execution, chunk_sizes, map_chunks
from expost.filters import (
    BrownianCost,
    Conversion,
    Cost,
    GaussianCost,
    GaussianDPFilter,
    UnifiedFilter,
)
from expost.grids import OpenEpsilonGrid
from expost.mechanisms import DoublingMethod, ExponentialMechanism
from expost.mechanisms.trials import brownian_trials
from expost.session import PrivateSession
from expost.stopping import RelativeError

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
IntArray = npt.NDArray[np.intp]
Method = Literal["bm", "doubling", "doubling-exact", "skellam"]
METHODS: tuple[Method, ...] = ("bm", "doubling")
"""The paper's methods, float samplers, batch engine."""
EXACT_METHODS: tuple[Method, ...] = ("doubling-exact", "skellam")
"""Exact samplers, one secure session per trial (`expost.apps.relative_error_exact`)."""
ALL_METHODS: tuple[Method, ...] = METHODS + EXACT_METHODS
DEFAULT_SIZES = (8_000, 16_000, 32_000, 64_000, 128_000)
DEFAULT_TRIALS = 1_000
_DOUBLING_RATIO = 2.0  # eps² doubles each try (APC Sec. 7.1)
_CHUNK = 16  # grid points per lazy BM step: most releases stop within the first few levels


def _grid_shape(_name: str, value: object) -> None:
    if value not in ("linear", "geometric"):
        raise InvalidParameter("grid", value, "must be 'linear' or 'geometric'")


def _conversion(_name: str, value: object) -> None:
    if value not in ("bun-steinke", "cks"):
        raise InvalidParameter("conversion", value, "must be 'bun-steinke' or 'cks'")


def _accounting(_name: str, value: object) -> None:
    if value not in ("zcdp", "gdp"):
        raise InvalidParameter("accounting", value, "must be 'zcdp' or 'gdp'")


def _grid_size(name: str, value: object) -> None:
    if positive_int(name, value) < 2:
        raise InvalidParameter(name, value, "must be >= 2")


@frozen
class Settings:
    """The protocol's parameters; the defaults are APC Sec. 7's.

    ``grid`` "linear": ``grid_size`` equally spaced eps² from ``start_eps2`` to the budget's
    largest level, every round. "geometric": eps² = start·r^k with r fixed so that the whole
    budget spans ``grid_size`` points (later rounds, with less budget, walk fewer points).
    ``stop_alpha`` (default alpha): the relative error the stopping rule checks; below alpha it
    leaves a margin for the many looks of a noise reduction (its first passage favours noise
    that inflates ŷ), precision being still measured at alpha.
    ``conversion`` sets the budget rho from (eps, delta'') by Bun–Steinke (APC Lemma 2.1, the
    paper's) or Canonne–Kamath–Steinke.
    ``accounting`` "zcdp": the paper's `UnifiedFilter`; "gdp": a `GaussianDPFilter` for the same
    (eps, delta) (THEORY §9; Gaussian tries and BM rounds cost mu² = eps², the exponential
    mechanism its bounded-range price mu(eps_EM/2)²). Both methods run under the one chosen.
    Budgets and spends are in rho units either way (mu²/2 under gdp: a BM stopped at eps² costs
    eps²/2 in both).
    ``skellam_level``: the ex-post level the Skellam boundary is tuned for (the exact table's
    ``skellam`` method, `expost.apps.relative_error_exact`).
    """

    alpha: float = field(default=0.1, converter=as_float, validator=validator(positive))
    eps_em: float = field(default=0.1, converter=as_float, validator=validator(positive))
    eps: float = field(default=10.0, converter=as_float, validator=validator(positive))
    delta: float = field(default=1e-6, converter=as_float, validator=validator(open_probability))
    start_eps2: float = field(default=1e-4, converter=as_float, validator=validator(positive))
    grid_size: int = field(default=1_000, validator=validator(_grid_size))
    grid: Literal["linear", "geometric"] = field(default="linear", validator=validator(_grid_shape))
    conversion: Conversion = field(default="bun-steinke", validator=validator(_conversion))
    stop_alpha: float | None = field(
        default=None,
        converter=converters.optional(as_float),
        validator=validators.optional(validator(positive)),
    )
    accounting: Literal["zcdp", "gdp"] = field(default="zcdp", validator=validator(_accounting))
    skellam_level: float = field(default=1.0, converter=as_float, validator=validator(positive))
    _filter: UnifiedFilter | GaussianDPFilter = field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.accounting == "gdp" and self.conversion != "bun-steinke":
            raise InvalidParameter("conversion", self.conversion, "applies to zcdp accounting only")
        budget = (
            GaussianDPFilter.from_dp(self.eps, self.delta)
            if self.accounting == "gdp"
            else UnifiedFilter.from_dp(self.eps, self.delta, self.conversion)
        )
        object.__setattr__(self, "_filter", budget)  # solved once: from_dp is a root search
        if self.rho < self.start_eps2 / 2.0:
            raise InvalidParameter(
                "start_eps2", self.start_eps2, "costs more than the whole budget"
            )

    def filter(self) -> UnifiedFilter | GaussianDPFilter:
        """The budget: `UnifiedFilter.from_dp(eps, delta, conversion)` (APC Thm 5), or
        `GaussianDPFilter.from_dp(eps, delta)` under gdp (fresh: nothing spent)."""
        return self._filter

    @property
    def unit(self) -> float:
        """The filter's unit per rho unit: 1 (rho), 2 (mu² = 2·rho for Gaussian and BM rounds)."""
        return 2.0 if self.accounting == "gdp" else 1.0

    @property
    def rho(self) -> float:
        """The budget in rho units: rho, or mu²/2 (exact halving)."""
        return self.filter().budget / self.unit

    @property
    def em_rho(self) -> float:
        """The exponential mechanism's price in rho units (the filter's price / ``unit``)."""
        return self.filter().price(self.mechanism.cost())[0] / self.unit

    @property
    def mechanism(self) -> ExponentialMechanism:
        """The selection: Gumbel-max with eps_EM on monotone counts (eps_EM²/8 zCDP)."""
        return ExponentialMechanism(self.eps_em, monotone=True)

    @property
    def stop(self) -> RelativeError:
        """The APC stopping condition, checked at ``stop_alpha`` (default alpha)."""
        return RelativeError(self.alpha if self.stop_alpha is None else self.stop_alpha)

    @property
    def ratio(self) -> float:
        """The geometric grid's ratio: start·r^(grid_size − 1) = 2·rho (the whole budget)."""
        return float((2.0 * self.rho / self.start_eps2) ** (1.0 / (self.grid_size - 1)))

    def open_grid(self) -> OpenEpsilonGrid:
        """The BM grid before the budget closes it (`PrivateSession.brownian` clips it)."""
        if self.grid == "linear":
            return OpenEpsilonGrid.linear_in_eps2(self.start_eps2, self.grid_size)
        return OpenEpsilonGrid.geometric_in_eps2(self.start_eps2, self.ratio)

    def doubling(self, max_tries: int) -> DoublingMethod:
        """The doubling schedule with at most ``max_tries`` tries."""
        return DoublingMethod(
            1.0, self.start_eps2, _DOUBLING_RATIO, stop=self.stop, max_tries=max_tries
        )


@frozen(eq=False)
class TrialResults:
    """Per trial: counts returned, how many of them are within alpha, realised rho spent."""

    returned: IntArray
    precise: IntArray
    spent: FloatArray

    @property
    def precision(self) -> FloatArray:
        """precise / returned, and 1 where nothing was returned (APC Sec. 7.2)."""
        r = self.returned
        out: FloatArray = np.where(r > 0, self.precise / np.maximum(r, 1), 1.0)
        return out


def within_alpha(released: FloatArray, truth: FloatArray, alpha: float) -> npt.NDArray[np.bool_]:
    """|ŷ/y − 1| < alpha (APC Sec. 7.2's precision), written so that a true count of 0 is never
    precise."""
    result: npt.NDArray[np.bool_] = np.abs(released - truth) < alpha * truth
    return result


def _histograms(counts: npt.ArrayLike) -> FloatArray:
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] < 2 or not np.all(np.isfinite(c)) or np.any(c < 0.0):
        raise InvalidParameter("counts", c.shape, "must be (trials, m) finite counts >= 0, m >= 2")
    return c


def _method(value: object) -> Literal["bm", "doubling"]:
    if value not in METHODS:
        raise InvalidParameter("method", value, "must be 'bm' or 'doubling'")
    return "bm" if value == "bm" else "doubling"


# ----------------------------------------------------------------------------- interactive engine


def run_interactive(
    counts: npt.ArrayLike, method: str, settings: Settings, rng: np.random.Generator
) -> TrialResults:
    """The protocol through `PrivateSession`, one trial (row of ``counts``) at a time."""
    data, m, g = _histograms(counts), _method(method), generator(rng)
    rows = [_session_trial(row, m, settings, g) for row in data]
    returned, precise, spent = zip(*rows, strict=True)
    return TrialResults(
        np.array(returned, dtype=np.intp), np.array(precise, dtype=np.intp), np.array(spent)
    )


def walk(
    session: PrivateSession,
    counts: npt.NDArray[Any],
    alpha: float,
    selection: tuple[float, Cost],
    cheapest: Cost,
    release: Callable[[float], tuple[bool, float]],
) -> tuple[int, int]:
    """One trial of the protocol in ``session``: while the budget pays a selection (eps, cost)
    plus the ``cheapest`` release, pick the top count left and ``release`` it (stopped?, value).
    Returns (counts returned, how many of them within ``alpha``)."""
    eps, cost = selection
    left = np.ones(counts.size, dtype=np.bool_)
    returned = precise = 0
    while left.any():
        f = session.filter
        if not (f.admits(cost) and f.spend(cost).admits(cheapest)):
            break
        i = session.exponential_mechanism(counts, eps, monotone=True, candidates=left)
        left[i] = False
        y = float(counts[i])
        ok, value = release(y)
        if ok:
            returned += 1
            precise += bool(within_alpha(np.array(value), np.array(y), alpha))
    return returned, precise


def _session_trial(
    counts: FloatArray, method: Method, settings: Settings, rng: np.random.Generator
) -> tuple[int, int, float]:
    session = PrivateSession(settings.filter(), rng)

    def release(y: float) -> tuple[bool, float]:
        if method == "bm":
            t = session.brownian(y, 1.0, settings.open_grid(), settings.stop)
            return t.stopped, float(t.value[0])
        d = session.doubling(y, 1.0, settings.start_eps2, _DOUBLING_RATIO, settings.stop)
        return d.stopped, float(d.value)

    cheapest = (
        BrownianCost.from_eps(math.sqrt(settings.start_eps2))
        if method == "bm"
        else GaussianCost(settings.start_eps2 / 2.0)
    )
    selection = (settings.eps_em, settings.mechanism.cost())
    returned, precise = walk(session, counts, settings.alpha, selection, cheapest, release)
    spent = session.spent
    assert isinstance(spent, float)  # both filters spend one additive unit
    return returned, precise, spent / settings.unit


# ----------------------------------------------------------------------------- batch engine


def run_batch(
    counts: npt.ArrayLike,
    method: str,
    settings: Settings,
    rng: np.random.Generator,
) -> TrialResults:
    """The protocol for every trial (row of ``counts``) at once, in lock-step rounds.

    Same law as `run_interactive`. The exponential mechanism's choices in successive rounds are
    drawn at once (`ExponentialMechanism.rank_batch`, the same law as one draw per round over
    the elements left) and revealed one round at a time; each round is charged ``em_rho``
    (eps_EM²/8 under zcdp, mu(eps_EM/2)²/2 under gdp: 0.0019633 rho units at eps_EM = 0.1).
    """
    data, m, g = _histograms(counts), _method(method), generator(rng)
    n = data.shape[0]
    budget = BatchBudget.start(settings.filter(), n)
    em = settings.mechanism
    em_rho = settings.em_rho
    cheapest = (
        float(BatchBudget.bm_cost(settings.start_eps2)) if m == "bm" else settings.start_eps2 / 2.0
    )
    # em + cheapest with room for the roundings of two separate spends (a few ulps of rho)
    entry = em_rho + cheapest + 16.0 * 2.0**-53 * budget.rho
    release = _bm_release if m == "bm" else _doubling_release
    order = em.rank_batch(data, n, g)  # round k's choice over the elements left: order[:, k]
    returned = np.zeros(n, dtype=np.intp)
    precise = np.zeros(n, dtype=np.intp)
    active = np.arange(n)
    for k in range(data.shape[1]):
        active = active[budget.admits(entry, active)]
        if active.size == 0:
            break
        choice = order[active, k]
        budget = budget.spend(em_rho, active)
        y = data[active, choice]
        budget, ok, value = release(budget, active, y, settings, g)
        returned[active] += ok
        precise[active] += ok & within_alpha(value, y, settings.alpha)
    return TrialResults(returned, precise, np.array(budget.spent))


Release = tuple[BatchBudget, npt.NDArray[np.bool_], FloatArray]


def _bm_release(
    budget: BatchBudget,
    active: IntArray,
    y: FloatArray,
    settings: Settings,
    rng: np.random.Generator,
) -> Release:
    grids = settings.open_grid().clip_each(budget.max_bm_eps(active))
    t = brownian_trials(y, grids, settings.stop, rng, chunk=_CHUNK)
    cost = BatchBudget.bm_cost(grids.at(t.end_index))
    return budget.spend(cost, active), t.stopped, t.value[:, 0]


@functools.lru_cache(maxsize=8)
def _schedule(settings: Settings) -> DoublingMethod:
    """The doubling schedule as long as the whole budget could pay for."""
    return settings.doubling(int(math.log2(2.0 * settings.rho / settings.start_eps2)) + 2)


def _doubling_release(
    budget: BatchBudget,
    active: IntArray,
    y: FloatArray,
    settings: Settings,
    rng: np.random.Generator,
) -> Release:
    longest = _schedule(settings)
    # tries are affordable in order: count, per trial, the cumulative costs the budget admits
    caps = budget.admits(longest.cumulative_cost[:, None], active).sum(axis=0)
    assert np.all(caps >= 1)  # the entry check kept room for the first try
    runs = longest.run_trials(y, rng, max_tries=caps)
    return budget.spend(runs.cost, active), runs.stopped, runs.value.reshape(-1)


# ----------------------------------------------------------------------------- the experiment


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
    if method in METHODS:
        return run_batch
    from expost.apps.relative_error_exact import run_exact  # imports this module

    return run_exact


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
        user = _histograms(np.asarray(counts, dtype=np.float64)[None, :])
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
