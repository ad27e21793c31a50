"""Noise-reduction mechanisms: Brownian and Laplace (THEORY.md §3); Skellam in
`expost.mechanisms.skellam_noise_reduction`, on the walk (`walk`, `grid_walker`) defined here.

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
from expost.filters._exact import rho_of_brownian
from expost.filters.costs import BrownianCost, ExPostCost
from expost.grids import (
    EpsilonGrid,
    OpenEpsilonGrid,
    TimeGrid,
)
from expost.guarantees import ZCDP, ExPost, PureDP
from expost.loss import BrownianLoss, LaplaceNoiseReductionLoss
from expost.mechanisms.transcript import BatchTranscript, Transcript
from expost.processes import (
    BrownianPath,
    LaplaceProcess,
    sample_laplace_grid,
)
from expost.processes.privacy_time import CHUNK, lazy_brownian_walk, shared_columns
from expost.rounding import up_array
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
    "TimeFunction",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

TimeFunction = Callable[[Released], float | None]
"""An adaptive time function: the next, strictly smaller, Brownian time from the released
iterates, or None to end (BNR Def 3.1). It must be a public function of what it is shown."""


class PrivacyBoundaryWithDelta(PrivacyBoundary, Protocol):
    """A delta-privacy boundary ψ (BNR Def 3.5): ``P(∃n: L_n > ψ(T_n)) <= delta``."""

    @property
    def delta(self) -> float: ...


def batch_rule(rule: StoppingRule) -> BatchStoppingRule:
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


def walk(
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


def grid_walker(times: FloatArray) -> Callable[[Released], float | None]:
    def next_time(view: Released) -> float | None:
        return float(times[view.count]) if view.count < times.size else None

    return next_time


def stop_points(fired_at: IntArray, last: int) -> tuple[IntArray, npt.NDArray[np.bool_]]:
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
        """Worst case over the grid: rho = Δ²/(2 t_min) zCDP (APC Thm 3), rounded up (an
        `EpsilonGrid`'s eps²/2 is exact)."""
        if isinstance(self.grid, EpsilonGrid):
            return ZCDP(self.grid.max_rho)
        return ZCDP(rho_of_brownian(self.smallest_time, self.sensitivity))

    def cost_at(self, time: float) -> BrownianCost:
        """The run stopped at ``time``: Δ²/(2t)-zCDP (APC Thm 3/5), with a boundary ψ also
        (ψ(t), delta)-ex-post private (BNR Thm 3.6)."""
        t = positive("time", time)
        psi = self.boundary
        if psi is None:
            return BrownianCost(t, self.sensitivity)
        return BrownianCost(t, self.sensitivity, float(psi(t)), psi.delta)

    def cost(self) -> BrownianCost:
        """The worst case, ``cost_at(smallest_time)``: what a filter must afford before the run
        (APC Lemma 6.2 (2), Thm 5 (3))."""
        return self.cost_at(self.smallest_time)

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
            return g.array, 1.0 / g.array, g.eps_for(self.sensitivity), g.rho_for(self.sensitivity)
        raise InvalidParameter("grid", g, "is an adaptive time function: it has no fixed times")

    def _next_time(self) -> tuple[float, Callable[[Released], float | None]]:
        function = self.grid
        if isinstance(function, TimeGrid | EpsilonGrid):
            times = self.times
            return float(times[0]), grid_walker(times)
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
        iterates, stopped = walk(v, first, next_time, path.next, self.stop, self.sensitivity, float)
        times = iterates.times
        t = float(times[-1])
        if self.adaptive:
            eps = TimeGrid(times).eps_for(self.sensitivity)  # rounded up, as a grid's
        else:
            eps = self._grid_arrays()[2][: times.size]
        return Transcript(iterates.values, times, eps, stopped, self.cost_at(t), self._ex_post(t))

    def run_batch(
        self, value: npt.ArrayLike, trials: int, rng: np.random.Generator, *, chunk: int = CHUNK
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
        rule = batch_rule(self.stop)
        step = positive_int("chunk", chunk) if isinstance(rule, MemorylessRule) else None
        times, s, eps, rho = self._grid_arrays()
        rows = np.broadcast_to(v, (n, v.size))
        columns = shared_columns(times, s)
        index, stopped, values = lazy_brownian_walk(
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
        """Worst case over the scales: (Δ1/t_min)-DP, rounded up."""
        return PureDP(float(self._eps(np.array(self.scales[-1]))))

    def _eps(self, scales: FloatArray) -> FloatArray:
        """Δ1/scale rounded up: one division errs by < 1/2 ulp, so 1 ulp up is above it."""
        return up_array(self.sensitivity / scales, 1)

    def ex_post_bounds(self) -> FloatArray:
        """The ex-post bound Δ1/t of stopping at each scale t, rounded up (BNR Prop 4.2)."""
        return self._eps(self.array)

    def cost_at(self, scale: float) -> ExPostCost:
        """The run stopped at ``scale``: (Δ1/scale)-ex-post private, and (Δ1/t_min)-DP whatever
        the stop (BNR Prop 4.2); both rounded up."""
        t = positive("scale", scale)
        return ExPostCost(float(self._eps(np.array(t))), 0.0, eps_max=self.guarantee().eps)

    def cost(self) -> ExPostCost:
        """The worst case, ``cost_at(t_min)``."""
        return self.cost_at(self.scales[-1])

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
        iterates, stopped = walk(
            v,
            float(scales[0]),
            grid_walker(scales),
            process.next,
            self.stop,
            self.sensitivity,
            lambda t: t * t,
        )
        times = iterates.times
        eps = self._eps(times)
        cost = self.cost_at(float(times[-1]))
        return Transcript(iterates.values, times, eps, stopped, cost, ExPost(cost.bound))

    def run_batch(
        self, value: npt.ArrayLike, trials: int, rng: np.random.Generator
    ) -> BatchTranscript:
        """``trials`` independent runs: `sample_laplace_grid` paths and the rule's vectorised form."""
        v = path_value(value)
        n = positive_int("trials", trials)
        rng = generator(rng)
        rule = batch_rule(self.stop)
        scales = self.array
        iterates = v + sample_laplace_grid(scales, n, v.size, rng)
        index, stopped = stop_points(
            first_stops(rule, iterates, scales**2, self.sensitivity), scales.size - 1
        )
        eps = self._eps(scales[index])
        values = iterates[np.arange(n), index]
        return BatchTranscript(index, values, scales[index], eps, stopped, eps, eps, 0.0)
