"""Noise-reduction mechanisms: Brownian, Laplace and Skellam (THEORY.md §3).

A run walks its noise levels from noisiest to least noisy, releases ``f(x) + noise`` at each, and
asks its stopping rule (a function of the released iterates only, APC Def 4.3, BNR Def 3.3) after
every release. Releasing iterates 1..k costs the loss of iterate k alone, also at a stopping time
(APC Lemma 4.1, BNR Lemma 3.2): a run pays for where it stopped, not for the whole grid.

``run`` is interactive (one path, drawn lazily); ``run_batch`` runs many independent trials at once
and has the same law. The private value is an argument of ``run``, never stored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    finite_array,
    float_tuple,
    generator,
    path_value,
    positive,
    positive_decreasing,
    positive_int,
    validator,
)
from expost.boundaries import PrivacyBoundary
from expost.errors import InvalidParameter
from expost.grids import (
    ClippedGrids,
    EpsilonGrid,
    OpenEpsilonGrid,
    TimeGrid,
)
from expost.guarantees import ZCDP, ExPost, PureDP
from expost.loss import BrownianLoss, LaplaceNoiseReductionLoss, SkellamLoss
from expost.mechanisms.transcript import BatchTranscript, Transcript
from expost.processes import (
    BrownianPath,
    LaplaceProcess,
    SkellamPath,
    sample_laplace_grid,
    sample_skellam_grid,
)
from expost.stopping import (
    BatchStoppingRule,
    MemorylessRule,
    Released,
    ReleasedBuffer,
    StoppingRule,
    first_stops,
    rule_or_never,
)

__all__ = [
    "BrownianNoiseReduction",
    "LaplaceNoiseReduction",
    "PrivacyBoundaryWithDelta",
    "SkellamNoiseReduction",
    "TimeFunction",
    "brownian_trials",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

TimeFunction = Callable[[Released], float | None]
"""An adaptive time function: the next, strictly smaller, Brownian time from the released
iterates, or None to end (BNR Def 3.1). It must be a public function of what it is shown."""

_CHUNK = 64


class PrivacyBoundaryWithDelta(PrivacyBoundary, Protocol):
    """A delta-privacy boundary ψ (BNR Def 3.5): ``P(∃n: L_n > ψ(T_n)) <= delta``."""

    @property
    def delta(self) -> float: ...


# TODO(lead, issue 12): remove once session.py uses expost._validation.path_value.
_value = path_value


def _batch_rule(rule: StoppingRule) -> BatchStoppingRule:
    if not isinstance(rule, BatchStoppingRule):
        raise InvalidParameter(
            "stop", rule, "run_batch needs a rule with a vectorised form (a BatchStoppingRule)"
        )
    return rule


def check_boundary(boundary: object, sensitivity: float) -> PrivacyBoundaryWithDelta | None:
    if boundary is None:
        return None
    if not (callable(boundary) and hasattr(boundary, "delta")):
        raise InvalidParameter("boundary", boundary, "must be a privacy boundary ψ with a delta")
    own = getattr(boundary, "sensitivity", sensitivity)
    if own != sensitivity:
        raise InvalidParameter(
            "boundary", boundary, f"has sensitivity {own!r}, the mechanism {sensitivity!r}"
        )
    return cast(PrivacyBoundaryWithDelta, boundary)


def _walk(
    value: FloatArray,
    first_time: float,
    next_time: Callable[[Released], float | None],
    draw: Callable[[float], npt.NDArray[np.float64] | npt.NDArray[np.int64]],
    rule: StoppingRule,
    sensitivity: float,
    rule_time: Callable[[float], float],
) -> tuple[ReleasedBuffer, bool]:
    """Release ``value + draw(t)`` at each time, noisiest first, until the rule fires or times end.

    The rule sees `Released` views whose ``times`` are ``rule_time(t)``.
    """
    iterates = ReleasedBuffer(value.size, sensitivity)
    t: float | None = first_time
    while t is not None:
        view = iterates.append(value + draw(t), t, rule_time(t))
        if rule(view):
            return iterates, True
        t = next_time(view)
    return iterates, False


def _grid_walker(times: FloatArray) -> Callable[[Released], float | None]:
    def next_time(view: Released) -> float | None:
        return float(times[view.count]) if view.count < times.size else None

    return next_time


def _stop_points(fired_at: IntArray, last: int) -> tuple[IntArray, npt.NDArray[np.bool_]]:
    """Stop index per trial (the last grid point where the rule never fired) and stopped flags."""
    stopped = fired_at >= 0
    index: IntArray = np.where(stopped, fired_at, last)
    return index, stopped


@frozen(init=False)
class BrownianNoiseReduction:
    """The Brownian mechanism: release ``f(x) + B(t_k)`` at times t1 > t2 > … (APC Def 4.4, BNR Def 3.1).

    Stopped at t it costs rho = Δ²/(2t) zCDP, its loss being Δ²/(2t) + (Δ/t)·W(t) (APC Thm 3,
    BNR Thm 3.4); with a delta-privacy boundary ψ it is (ψ(t_stop), delta)-ex-post private
    (BNR Thm 3.6, Cor 3.7). The worst case over the grid, ZCDP(Δ²/(2 t_min)), is what a filter
    must afford before the run (APC Lemma 6.2 (2), Thm 5 (3)).

    ``grid``: a `TimeGrid`, a closed `EpsilonGrid` (an `OpenEpsilonGrid` must be clipped to the
    budget first), or an adaptive `TimeFunction` with ``first_time`` and ``min_time``: every time
    it returns must lie in [min_time, previous time). ``sensitivity``: the ℓ2 sensitivity Δ
    (default: the EpsilonGrid's, else 1). ``stop``: a stopping rule (default `Never`).
    """

    grid: TimeGrid | EpsilonGrid | TimeFunction
    sensitivity: float
    stop: StoppingRule
    boundary: PrivacyBoundaryWithDelta | None
    first_time: float | None
    min_time: float | None

    def __init__(
        self,
        grid: TimeGrid | EpsilonGrid | TimeFunction,
        sensitivity: float | None = None,
        stop: object = None,
        boundary: object = None,
        *,
        first_time: float | None = None,
        min_time: float | None = None,
    ) -> None:
        s = _sensitivity(grid, sensitivity)
        first, smallest = _adaptive_range(grid, first_time, min_time)
        rule = rule_or_never(stop)
        psi = check_boundary(boundary, s)
        self.__attrs_init__(grid, s, rule, psi, first, smallest)

    @property
    def adaptive(self) -> bool:
        """Whether the times come from a time function rather than a grid."""
        return not isinstance(self.grid, TimeGrid | EpsilonGrid)

    @property
    def times(self) -> FloatArray:
        """The grid's times, decreasing (adaptive: InvalidParameter)."""
        return self._grid_arrays()[0]

    @property
    def smallest_time(self) -> float:
        """t_min: the least noisy time the run can reach."""
        if self.min_time is not None:
            return self.min_time
        return float(self.times[-1])

    def guarantee(self) -> ZCDP:
        """Worst case over the grid: rho = Δ²/(2 t_min) zCDP (APC Thm 3)."""
        if isinstance(self.grid, EpsilonGrid):
            return ZCDP(self.grid.max_rho)
        return ZCDP(self.sensitivity**2 / (2.0 * self.smallest_time))

    def loss(self, distance: float | None = None) -> BrownianLoss:
        """The loss at t_min for neighbours at ℓ2 distance ``distance`` (default Δ) (APC Thm 3)."""
        d = self.sensitivity if distance is None else positive("distance", distance)
        return BrownianLoss(self.smallest_time, d)

    def _grid_arrays(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """(times t, privacy times s = 1/t, eps, rho) along the grid, noisiest first."""
        g = self.grid
        if isinstance(g, EpsilonGrid):
            s = g.eps2 / self.sensitivity**2
            return g.times.array, s, g.eps, g.rho
        if isinstance(g, TimeGrid):
            return g.array, 1.0 / g.array, g.eps(self.sensitivity), g.rho(self.sensitivity)
        raise InvalidParameter("grid", g, "is an adaptive time function: it has no fixed times")

    def _next_time(self) -> tuple[float, Callable[[Released], float | None]]:
        function = self.grid
        if isinstance(function, TimeGrid | EpsilonGrid):
            times = self.times
            return float(times[0]), _grid_walker(times)
        assert self.first_time is not None  # both set with a time function
        assert self.min_time is not None
        smallest = self.min_time

        def next_time(view: Released) -> float | None:
            t = function(view)
            if t is None:
                return None
            t = positive("next_time", t)
            if not smallest <= t < view.times[-1]:
                raise InvalidParameter(
                    "next_time",
                    t,
                    f"must lie in [min_time, previous time) = [{smallest!r}, {view.times[-1]!r})",
                )
            return t

        return self.first_time, next_time

    def _ex_post(self, t: float) -> ExPost | None:
        if self.boundary is None:
            return None
        return ExPost(self.boundary(t), self.boundary.delta)

    def run(self, value: npt.ArrayLike, rng: np.random.Generator) -> Transcript:
        """One interactive run: a `BrownianPath` walked time by time (BNR appendix bridge)."""
        v = path_value(value)
        path = BrownianPath(v.size, generator(rng))
        first, next_time = self._next_time()
        iterates, stopped = _walk(
            v, first, next_time, path.next, self.stop, self.sensitivity, float
        )
        times = iterates.times
        t = float(times[-1])
        if self.adaptive:
            eps = self.sensitivity / np.sqrt(times)
            cost = self.sensitivity**2 / (2.0 * t)
        else:
            _, _, grid_eps, grid_rho = self._grid_arrays()
            eps, cost = grid_eps[: times.size], float(grid_rho[times.size - 1])
        return Transcript(iterates.values, times, eps, stopped, cost, self._ex_post(t))

    def run_batch(
        self, value: npt.ArrayLike, trials: int, rng: np.random.Generator, *, chunk: int = _CHUNK
    ) -> BatchTranscript:
        """``trials`` independent runs on a grid, walked lazily in privacy time (THEORY §3).

        With s = 1/t increasing along the grid, X(s) = s·B(1/s) is a standard BM with independent
        increments N(0, s_(k+1) − s_k) and iterate k is f(x) + X(s_k)/s_k. Grid points are walked
        ``chunk`` at a time and only trials that have not stopped are advanced, so a trial pays for
        the steps it walked. Rules other than the built-in memoryless ones see whole paths.
        """
        v = path_value(value)
        n = positive_int("trials", trials)
        rng = generator(rng)
        rule = _batch_rule(self.stop)
        step = positive_int("chunk", chunk) if isinstance(rule, MemorylessRule) else None
        times, s, eps, rho = self._grid_arrays()
        rows = np.broadcast_to(v, (n, v.size))
        columns = _shared_columns(times, s)
        index, stopped, values = _lazy_brownian(
            rows, rng, rule, columns, times.size, self.sensitivity, step
        )
        t = times[index]
        bound = None if self.boundary is None else np.asarray(self.boundary(t))
        delta = None if self.boundary is None else self.boundary.delta
        return BatchTranscript(index, values, t, eps[index], stopped, rho[index], bound, delta)


def _sensitivity(grid: object, sensitivity: float | None) -> float:
    if isinstance(grid, OpenEpsilonGrid):
        raise InvalidParameter(
            "grid", grid, "is open: close it at the budget's level first (OpenEpsilonGrid.clip)"
        )
    if not (isinstance(grid, TimeGrid | EpsilonGrid) or callable(grid)):
        raise InvalidParameter(
            "grid", grid, "must be a TimeGrid, an EpsilonGrid or an adaptive time function"
        )
    if isinstance(grid, EpsilonGrid):
        if sensitivity is None:
            return grid.sensitivity
        s = positive("sensitivity", sensitivity)
        if s != grid.sensitivity:
            raise InvalidParameter(
                "sensitivity",
                sensitivity,
                f"must equal the grid's sensitivity {grid.sensitivity!r}",
            )
        return s
    return 1.0 if sensitivity is None else positive("sensitivity", sensitivity)


def _adaptive_range(
    grid: object, first_time: float | None, min_time: float | None
) -> tuple[float | None, float | None]:
    if isinstance(grid, TimeGrid | EpsilonGrid):
        if first_time is not None or min_time is not None:
            raise InvalidParameter(
                "first_time", (first_time, min_time), "first_time and min_time need a time function"
            )
        return None, None
    if first_time is None or min_time is None:
        raise InvalidParameter(
            "min_time", (first_time, min_time), "a time function needs first_time and min_time"
        )
    first, smallest = positive("first_time", first_time), positive("min_time", min_time)
    if smallest > first:
        raise InvalidParameter("min_time", min_time, f"must be <= first_time = {first!r}")
    return first, smallest


Columns = Callable[[IntArray, int, int], tuple[FloatArray, FloatArray]]
"""(times t, privacy times s = 1/t) of grid points lo..hi−1 for the trials ``rows``: each
(hi − lo,) when every trial shares the grid, else (len(rows), hi − lo)."""


def _lazy_brownian(
    value: FloatArray,
    rng: np.random.Generator,
    rule: BatchStoppingRule,
    columns: Columns,
    K: int,
    sensitivity: float,
    chunk: int | None,
    grow: bool = False,
) -> tuple[IntArray, npt.NDArray[np.bool_], FloatArray]:
    """Walk X forward in privacy time s, ``chunk`` grid points at a time (None: all at once).

    ``value`` (trials, d); the grid's K points come from ``columns`` a block at a time, so
    per-trial grids are never built beyond the points walked. ``grow``: each block twice the
    last (few trials walk far, so fewer, larger blocks for them).
    """
    trials, d = value.shape
    width = K if chunk is None else chunk
    fires = rule._fires if isinstance(rule, MemorylessRule) else None  # grid checked already
    index: IntArray = np.full(trials, K - 1, dtype=np.intp)
    stopped = np.zeros(trials, dtype=np.bool_)
    values = np.empty((trials, d))
    position = np.zeros((trials, d))
    previous = np.zeros(trials)
    active = np.arange(trials)
    start = 0
    while start < K:
        end = min(start + width, K)
        seen, s = columns(active, start, end)
        block = np.broadcast_to(s, (active.size, end - start))
        steps = rng.standard_normal((active.size, end - start, d))
        steps *= np.sqrt(np.diff(block, axis=1, prepend=previous[active, None]))[..., None]
        steps[:, 0] += position[active]
        np.cumsum(steps, axis=1, out=steps)
        iterates = value[active, None, :] + steps / block[..., None]
        if fires is None:
            fired = np.asarray(rule.stops(iterates, seen, sensitivity, start=start), dtype=bool)
        else:
            fired = fires(iterates, seen, sensitivity, np.arange(start, end))
        first = np.argmax(fired, axis=1)
        hit = fired[np.arange(active.size), first]
        done = active[hit]
        index[done] = start + first[hit]
        stopped[done] = True
        values[done] = iterates[hit, first[hit]]
        going = ~hit
        active = active[going]
        if active.size == 0:
            break
        position[active] = steps[going, -1]
        previous[active] = block[going, -1]
        values[active] = iterates[going, -1]  # final unless a later block stops
        start, width = end, 2 * width if grow else width
    return index, stopped, values


def _shared_columns(times: FloatArray, s: FloatArray) -> Columns:
    return lambda _rows, lo, hi: (times[lo:hi], s[lo:hi])


def _level_columns(levels: Callable[[IntArray, int, int], FloatArray], d: float) -> Columns:
    def columns(rows: IntArray, lo: int, hi: int) -> tuple[FloatArray, FloatArray]:
        s = levels(rows, lo, hi)
        if d != 1.0:
            s = s / (d * d)
        return 1.0 / s, s

    return columns


def brownian_trials(
    values: npt.ArrayLike,
    grids: ClippedGrids | npt.ArrayLike,
    stop: object,
    rng: np.random.Generator,
    *,
    sensitivity: float = 1.0,
    chunk: int = _CHUNK,
) -> BatchTranscript:
    """Independent Brownian mechanisms, each trial with its own value and grid (APC Def 4.4, Sec. 7).

    ``values`` (trials,) or (trials, d). ``grids``: `ClippedGrids` (one open grid clipped at
    each trial's budget, APC Sec. 7) or an array (trials, K) of eps² per trial, noisiest first,
    positive and non-decreasing (a repeated level repeats the iterate: a zero Brownian
    increment). Times t = Δ²/eps². Walked lazily in privacy time like
    `BrownianNoiseReduction.run_batch`, in blocks of ``chunk`` points that double as the walk
    goes on (the few trials that walk far take few steps); stopped at eps² a trial costs
    rho = eps²/2 (APC Thm 3). ``stop`` must be a built-in (memoryless) rule; it sees each
    trial's own times. ``stop_index`` counts a padded row's repeats (a trial whose rule never
    fired ends at K − 1).
    """
    rule = rule_or_never(stop)
    if not isinstance(rule, MemorylessRule):
        raise InvalidParameter("stop", stop, "must be a built-in rule (e.g. RelativeError)")
    d = positive("sensitivity", sensitivity)
    step = positive_int("chunk", chunk)
    levels = grids if isinstance(grids, ClippedGrids) else _eps2_rows(grids)
    n, K = levels.trials, levels.length
    v = finite_array("values", values)
    v = v[:, None] if v.ndim == 1 else v
    if v.ndim != 2 or v.shape[0] != n or v.shape[1] == 0:
        raise InvalidParameter("values", v.shape, f"must have shape ({n},) or ({n}, d)")
    columns = _level_columns(levels.eps2, d)
    index, stopped, released = _lazy_brownian(
        v, generator(rng), rule, columns, K, d, step, grow=True
    )
    level = levels.at(index)
    return BatchTranscript(
        index, released, d * d / level, np.sqrt(level), stopped, level / 2.0, None, None
    )


@frozen(eq=False)
class _Eps2Rows:
    """Explicit per-trial eps² rows (trials, K), with the `ClippedGrids` access pattern."""

    array: FloatArray

    @property
    def trials(self) -> int:
        return int(self.array.shape[0])

    @property
    def length(self) -> int:
        return int(self.array.shape[1])

    def eps2(self, rows: IntArray | None = None, lo: int = 0, hi: int | None = None) -> FloatArray:
        picked = self.array if rows is None else self.array[rows]
        return picked[:, lo:hi]

    def at(self, index: IntArray) -> FloatArray:
        out: FloatArray = self.array[np.arange(self.trials), index]
        return out


def _eps2_rows(eps2: npt.ArrayLike) -> _Eps2Rows:
    e2 = finite_array("grids", eps2)
    if e2.ndim != 2 or e2.shape[0] == 0 or e2.shape[1] == 0:
        raise InvalidParameter("grids", e2.shape, "must have shape (trials, K), K >= 1")
    if np.any(e2 < np.finfo(np.float64).tiny) or np.any(np.diff(e2, axis=1) < 0.0):
        raise InvalidParameter("grids", e2.shape, "rows must be positive and non-decreasing")
    return _Eps2Rows(e2)


@frozen
class LaplaceNoiseReduction:
    """Laplace noise reduction: ``f(x) + Z(t_k)`` at scales t1 > t2 > … (BNR Sec. 4; Ligett et al.).

    One continuous Laplace process Z on [t_min, t_max] per run (BNR eq. 4, Z(t) ~ Lap(t)).
    Iterate k is Δ1/t_k-DP; stopped at scale t the run is (Δ1/t)-ex-post private (BNR Prop 4.2),
    its loss −(1/t)(|X| − |X − d|) (APC Lemma C.1). Worst case: PureDP(Δ1/t_min).
    Stopping rules see ``times = scale²``, so ``Released.eps`` is Δ1/scale.
    """

    scales: tuple[float, ...] = field(
        converter=float_tuple, validator=validator(positive_decreasing)
    )
    sensitivity: float = field(default=1.0, converter=as_float, validator=validator(positive))
    stop: StoppingRule = field(default=None, converter=rule_or_never)

    @property
    def array(self) -> FloatArray:
        """The scales, decreasing."""
        return np.array(self.scales)

    def guarantee(self) -> PureDP:
        """Worst case over the scales: (Δ1/t_min)-DP."""
        return PureDP(self.sensitivity / self.scales[-1])

    def loss(self, distance: float | None = None) -> LaplaceNoiseReductionLoss:
        """The loss at t_min for neighbours at ℓ1 distance ``distance`` (default Δ1)."""
        d = self.sensitivity if distance is None else positive("distance", distance)
        return LaplaceNoiseReductionLoss(self.scales[-1], d)

    def run(self, value: npt.ArrayLike, rng: np.random.Generator) -> Transcript:
        """One interactive run on one `LaplaceProcess` (η = t_min, T = t_max)."""
        v = path_value(value)
        rng = generator(rng)
        scales = self.array
        process = LaplaceProcess(scales[-1], scales[0], v.size, rng)
        iterates, stopped = _walk(
            v,
            float(scales[0]),
            _grid_walker(scales),
            process.next,
            self.stop,
            self.sensitivity,
            lambda t: t * t,
        )
        times = iterates.times
        eps = self.sensitivity / times
        bound = float(eps[-1])
        return Transcript(iterates.values, times, eps, stopped, bound, ExPost(bound))

    def run_batch(
        self, value: npt.ArrayLike, trials: int, rng: np.random.Generator
    ) -> BatchTranscript:
        """``trials`` independent runs: `sample_laplace_grid` paths and the rule's vectorised form."""
        v = path_value(value)
        n = positive_int("trials", trials)
        rng = generator(rng)
        rule = _batch_rule(self.stop)
        scales = self.array
        iterates = v + sample_laplace_grid(scales, n, v.size, rng)
        index, stopped = _stop_points(
            first_stops(rule, iterates, scales**2, self.sensitivity), scales.size - 1
        )
        eps = self.sensitivity / scales[index]
        values = iterates[np.arange(n), index]
        return BatchTranscript(index, values, scales[index], eps, stopped, eps, eps, 0.0)


def _integer_array(value: npt.ArrayLike) -> FloatArray:
    v = path_value(value)
    if np.any(v != np.round(v)) or np.any(np.abs(v) > 2.0**53):
        raise InvalidParameter("value", value, "must be integers (of magnitude below 2**53)")
    return v


@frozen
class SkellamNoiseReduction:
    """Skellam noise reduction: ``f(x) + X_t`` at times t1 > t2 > … (BNR App. E).

    X_t = P1(t) − P2(t) for independent Poisson processes of rate λ = ``rate``, so
    X_t ~ Skellam(λt, λt) with independent increments: a noise reduction, whose loss after
    stopping at t is that of the last iterate alone, the `SkellamLoss` at mean λt (``loss``).
    BNR App. E states no privacy guarantee for it, so this class offers none: ``cost`` and
    ``ex_post`` of its transcripts are None; use ``loss(time=...)`` (its ``renyi`` is the exact
    Rényi divergence of that pair). Values and sensitivity Δ1 are integers. Stopping rules see
    ``times = 2λt``, the noise variance.
    """

    times: tuple[float, ...] = field(
        converter=float_tuple, validator=validator(positive_decreasing)
    )
    rate: float = field(default=1.0, converter=as_float, validator=validator(positive))
    sensitivity: int = field(default=1, validator=validator(positive_int))
    stop: StoppingRule = field(default=None, converter=rule_or_never)

    @property
    def array(self) -> FloatArray:
        """The times, decreasing."""
        return np.array(self.times)

    def loss(self, distance: int | None = None, time: float | None = None) -> SkellamLoss:
        """The loss at ``time`` (default t_min) for an integer shift ``distance`` (default Δ1).

        The shift is in one coordinate; over several coordinates the losses add independently.
        """
        d = self.sensitivity if distance is None else positive_int("distance", distance)
        t = self.times[-1] if time is None else positive("time", time)
        return SkellamLoss(self.rate * t, d)

    def _rule_time(self, t: float) -> float:
        return 2.0 * self.rate * t

    def run(self, value: npt.ArrayLike, rng: np.random.Generator) -> Transcript:
        """One interactive run on one `SkellamPath` (Poisson thinning)."""
        v = _integer_array(value)
        path = SkellamPath(v.size, generator(rng), self.rate, self.rate)
        times = self.array
        iterates, stopped = _walk(
            v,
            float(times[0]),
            _grid_walker(times),
            path.next,
            self.stop,
            self.sensitivity,
            self._rule_time,
        )
        t = iterates.times
        eps = self.sensitivity / np.sqrt(self._rule_time(1.0) * t)
        released = np.rint(iterates.values).astype(np.int64)
        return Transcript(released, t, eps, stopped, None, None)

    def run_batch(
        self, value: npt.ArrayLike, trials: int, rng: np.random.Generator
    ) -> BatchTranscript:
        """``trials`` independent runs: `sample_skellam_grid` paths and the rule's vectorised form."""
        v = np.rint(_integer_array(value)).astype(np.int64)
        n = positive_int("trials", trials)
        rng = generator(rng)
        rule = _batch_rule(self.stop)
        times = self.array
        iterates = v + sample_skellam_grid(times, n, v.size, rng, rate1=self.rate, rate2=self.rate)
        fired = first_stops(
            rule, iterates.astype(np.float64), 2.0 * self.rate * times, self.sensitivity
        )
        index, stopped = _stop_points(fired, times.size - 1)
        eps = self.sensitivity / np.sqrt(self._rule_time(1.0) * times[index])
        values = iterates[np.arange(n), index]
        return BatchTranscript(index, values, times[index], eps, stopped, None, None, None)
