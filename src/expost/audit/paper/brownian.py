"""Audits of the Brownian mechanism's ex-post privacy (BNR Thm 3.6, Cor 3.7; APC Thm 4).

- ``bm-ex-post/...`` (BNR Thm 3.6, Cor 3.7): ``P(∃n: L_n > ψ(T_n)) <= delta`` for the mixture and
  linear boundaries, sensitivities {0.5, 1, 3}, dimensions {1, 3}. The ``uniform`` rule is the
  adversary that knows x and x' and stops at the first released time where the loss exceeds ψ,
  so its event is the claim's whole event; ``z-score`` and ``fixed`` audit the bound at other
  stopping times. Twin: ψ with log(1/delta) replaced by log(1/delta)/4, claimed at delta.
- ``bnr-cor3.7-time-map/...``: a run claims (E, delta)-ex-post privacy and walks the grid down to
  the time its map gives for E; the adversary stops as soon as the loss exceeds E. Corrected map
  (smallest t with ψ(t) <= E): holds. Printed map (inf{t : ψ(t) >= E}: on a grid, its least noisy
  time): refuted.
- ``apc-thm4-...``: one BM at t = 0.01; ``P(L >= 1/(2t) + ψ(1/t; 1, delta)) <= delta`` holds, the
  printed form without the drift 1/(2t) is refuted (THEORY §5).

The backward martingale and sequences of BMs (APC Lemma 6.1, eq. 1) are in
`expost.audit.paper.martingale`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost.audit._shared import (
    POINTS,
    THM4_GAMMA,
    THM4_TIME,
    TUNED_AT,
    Constant,
    gaussian_loss,
    gaussian_loss_on,
    grid_times,
    neighbours,
    runs,
    tuned_boundary,
)
from expost.audit.claims import ProbabilityClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, QUICK, register
from expost.boundaries import LinearPrivacyBoundary, MixturePrivacyBoundary
from expost.errors import InvalidParameter
from expost.grids import TimeGrid
from expost.mechanisms.noise_reduction import BrownianNoiseReduction
from expost.odometers import BrownianOdometer
from expost.processes.brownian import sample_brownian_grid_on
from expost.stopping import AtIndex, MemorylessRule, StoppingRule

if TYPE_CHECKING:
    from expost.backends import Draws

__all__ = [
    "Displaced",
    "LossAbove",
    "apc_thm4",
    "bm_ex_post",
    "bnr_cor37_time_map",
    "ex_post_exceeds",
    "ex_post_exceeds_on",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]
Boundary = MixturePrivacyBoundary | LinearPrivacyBoundary

_DELTA = 0.05


def _vector(values: tuple[float, ...]) -> FloatArray:
    return np.asarray(values, dtype=np.float64)


@frozen
class LossAbove(MemorylessRule):
    """The adversary for neighbours (f(x), f(x')): stop once ``L(y, t) > level(t)``.

    ``level`` is a privacy boundary ψ (or a constant level). Its stopped runs are exactly the
    runs whose loss exceeds the level at some released time, so the event of a uniform claim
    ``P(∃n: L_n > ψ(T_n)) <= delta`` is "this rule stopped".
    """

    level: Callable[[FloatArray], FloatArray]
    fx: tuple[float, ...] = field(converter=tuple)
    fxp: tuple[float, ...] = field(converter=tuple)

    def _fires(
        self, values: FloatArray, times: FloatArray, sensitivity: float, index: IndexArray
    ) -> BoolArray:
        loss = gaussian_loss(values, times, _vector(self.fx), _vector(self.fxp))
        fired: BoolArray = loss > self.level(times)
        return fired


@frozen
class Displaced(MemorylessRule):
    """Stop once the iterate is ``z`` noise sds from f(x) in the direction that raises the loss."""

    fx: tuple[float, ...] = field(converter=tuple)
    fxp: tuple[float, ...] = field(converter=tuple)
    z: float

    def _fires(
        self, values: FloatArray, times: FloatArray, sensitivity: float, index: IndexArray
    ) -> BoolArray:
        fx, fxp = _vector(self.fx), _vector(self.fxp)
        direction = (fx - fxp) / np.linalg.norm(fx - fxp)
        fired: BoolArray = (values - fx) @ direction >= self.z * np.sqrt(times)
        return fired


@frozen
class _Nominal:
    """ψ at ``factor`` times the actual time: the claim of a BM that adds less noise than it says."""

    boundary: Boundary
    factor: float

    def __call__(self, times: FloatArray) -> FloatArray:
        return np.asarray(self.boundary(self.factor * times))


def ex_post_exceeds(
    bm: BrownianNoiseReduction,
    fx: FloatArray,
    fxp: FloatArray,
    claimed: Callable[[FloatArray], FloatArray] | None,
    n: int,
    rng: np.random.Generator,
) -> BoolArray:
    """Runs of ``bm`` on f(x): does the exact loss at the stop exceed the claimed bound?

    The claimed bound is ``claimed(T)`` if given, else the run's own ex-post bound ψ(T).
    """
    tr = bm.run_batch(fx, n, rng)
    loss = gaussian_loss(tr.value, tr.times, fx, fxp)
    bound = tr.ex_post_bound if claimed is None else claimed(tr.times)
    assert bound is not None  # a bm without a boundary is given a claimed level
    return np.asarray(loss > bound)


def _fired_on(rule: StoppingRule, b: Any, loss: Any, times: FloatArray, draws: Draws) -> Any:
    """(runs, K) booleans on the backend: does ``rule`` fire at each grid point of each run?"""
    xp = draws.xp
    if isinstance(rule, LossAbove):
        return loss > draws.asarray(rule.level(times))
    if isinstance(rule, Displaced):
        fx, fxp = _vector(rule.fx), _vector(rule.fxp)
        direction = draws.asarray((fx - fxp) / np.linalg.norm(fx - fxp))
        return b @ direction >= rule.z * xp.sqrt(draws.asarray(times))
    if isinstance(rule, AtIndex):
        index = np.arange(times.size) == rule.k
        return xp.broadcast_to(draws.asarray(index) > 0.0, loss.shape)
    raise InvalidParameter("rule", rule, "has no backend version (LossAbove, Displaced, AtIndex)")


def _at(values: Any, stop: Any, draws: Draws) -> Any:
    """``values[i, stop[i]]`` for every run i, without fancy indexing (array API)."""
    xp = draws.xp
    points = draws.asarray(np.arange(values.shape[1]))
    onehot = xp.reshape(xp.astype(stop, xp.float64), (-1, 1)) == points
    return xp.sum(xp.where(onehot, values, xp.zeros_like(values)), axis=1)


def ex_post_exceeds_on(
    bm: BrownianNoiseReduction,
    fx: FloatArray,
    fxp: FloatArray,
    claimed: Callable[[FloatArray], FloatArray] | None,
    n: int,
    draws: Draws,
) -> Any:
    """`ex_post_exceeds` on an array backend (`expost.backends`): whole paths on the grid.

    The path B is drawn at every grid time (`sample_brownian_grid_on`); the rule's stop is its
    first firing point (else the last), as in the lazy walk of ``bm.run_batch`` — the same law.
    Supports the audits' memoryless rules `LossAbove`, `Displaced` and `AtIndex`.
    """
    xp = draws.xp
    times = np.asarray(bm.times, dtype=np.float64)
    b = sample_brownian_grid_on(times, n, fx.size, draws)
    loss = gaussian_loss_on(b + draws.asarray(fx), draws.asarray(times), fx, fxp, draws)
    fired = _fired_on(bm.stop, b, loss, times, draws)
    first = xp.argmax(xp.astype(fired, xp.int8), axis=1)
    stop = xp.where(xp.any(fired, axis=1), first, xp.full_like(first, times.size - 1))
    if claimed is None:
        assert bm.boundary is not None  # a bm without a boundary is given a claimed level
        level = np.asarray(bm.boundary(times))
    else:
        level = claimed(times)
    bound = xp.broadcast_to(draws.asarray(level), loss.shape)
    return _at(loss, stop, draws) > _at(bound, stop, draws)


def _boundary(kind: str, sensitivity: float, delta: float = _DELTA) -> Boundary:
    return tuned_boundary(kind, sensitivity, delta)


def _quartered(boundary: Boundary) -> Boundary:
    """The planted bug: the same boundary with log(1/delta) replaced by log(1/delta)/4."""
    weak = boundary.delta**0.25
    if isinstance(boundary, MixturePrivacyBoundary):
        return MixturePrivacyBoundary(boundary.r, weak, boundary.sensitivity)
    return LinearPrivacyBoundary.from_delta(boundary.a, weak, boundary.sensitivity)


def _grid(boundary: Boundary) -> TimeGrid:
    return TimeGrid(grid_times(boundary))


def _rule(name: str, boundary: Boundary, fx: FloatArray, fxp: FloatArray) -> StoppingRule:
    if name == "uniform":
        return LossAbove(boundary, tuple(fx), tuple(fxp))
    if name == "z-score":
        return Displaced(tuple(fx), tuple(fxp), 2.0)
    return AtIndex(POINTS // 2)


def _ex_post_audit(suite: str, kind: str, rule: str, sensitivity: float, d: int) -> Audit:
    psi = _boundary(kind, sensitivity)
    wrong = _quartered(psi)
    fx, fxp = neighbours(sensitivity, d)
    grid = _grid(psi)
    name = f"bm-ex-post/{kind}/{rule}/sens-{sensitivity:g}/d-{d}"

    def bm_for(boundary: Boundary) -> BrownianNoiseReduction:
        return BrownianNoiseReduction(grid, sensitivity, _rule(rule, boundary, fx, fxp), boundary)

    if rule == "fixed":
        # At one fixed time the quartered boundary is still rarely crossed; the planted bug is
        # a BM that adds a quarter of the noise variance it claims (half the noise sd).
        quiet = TimeGrid(grid.array / 4.0)
        bm = BrownianNoiseReduction(quiet, sensitivity, _rule(rule, psi, fx, fxp))
        twin = Twin(
            f"{name}/half-the-noise",
            ProbabilityClaim(_DELTA),
            partial(ex_post_exceeds, bm, fx, fxp, _Nominal(psi, 4.0)),
            partial(ex_post_exceeds_on, bm, fx, fxp, _Nominal(psi, 4.0)),
        )
    else:
        twin = Twin(
            f"{name}/log-1-over-delta-quartered",
            ProbabilityClaim(_DELTA),
            partial(ex_post_exceeds, bm_for(wrong), fx, fxp, None),
            partial(ex_post_exceeds_on, bm_for(wrong), fx, fxp, None),
        )

    what = {
        "uniform": "at ANY grid time (adversary stops when L > psi)",
        "z-score": "at the first time the iterate is 2 sd from f(x) towards f(x) - f(x')",
        "fixed": f"at the fixed grid index {POINTS // 2}",
    }[rule]
    return Audit(
        name=name,
        source="BNR Thm 3.6, Cor 3.7",
        statement=(
            f"BM, {kind} boundary tuned at E={TUNED_AT:g}, sensitivity {sensitivity:g}, d={d}, "
            f"{POINTS} log-spaced times: P(L > psi(T)) <= {_DELTA:g} {what}"
        ),
        claim=ProbabilityClaim(_DELTA),
        simulate=partial(ex_post_exceeds, bm_for(psi), fx, fxp, None),
        n=runs(suite, 20_000, 400_000),
        twin=twin,
        chunk_size=25_000,
        on_backend=partial(ex_post_exceeds_on, bm_for(psi), fx, fxp, None),
    )


_CONFIGS = [(0.5, 1), (1.0, 3), (3.0, 1), (0.5, 3), (1.0, 1), (3.0, 3)]


@register(QUICK, PAPER)
def bm_ex_post(suite: str) -> list[Audit]:
    """Ex-post privacy of the BM under the uniform and adversarial rules (BNR Thm 3.6)."""
    if suite == QUICK:
        return [_ex_post_audit(suite, kind, "uniform", 1.0, 3) for kind in ("mixture", "linear")]
    audits = [
        _ex_post_audit(suite, kind, "uniform", s, d)
        for kind in ("mixture", "linear")
        for s, d in _CONFIGS
    ]
    audits += [_ex_post_audit(suite, kind, "z-score", 1.0, 3) for kind in ("mixture", "linear")]
    audits += [_ex_post_audit(suite, kind, "fixed", 3.0, 1) for kind in ("mixture", "linear")]
    return audits


# --- BNR Cor 3.7: the time map ---------------------------------------------------------------


def _printed_time(boundary: Boundary, grid: FloatArray, level: float) -> float:
    """BNR Cor 3.7 as printed on a grid: inf{t : ψ(t) >= E}, i.e. the least noisy such time."""
    return float(grid[boundary(grid) >= level].min())


def _map_simulator(
    boundary: Boundary, t_stop: float, level: float, on_backend: bool = False
) -> partial[Any]:
    """Runs walking the grid down to ``t_stop``, stopped once L > level (numpy or a backend)."""
    fx, fxp = neighbours(boundary.sensitivity, 1)
    full = _grid(boundary).array
    grid = TimeGrid(full[full >= t_stop])
    bm = BrownianNoiseReduction(grid, boundary.sensitivity, LossAbove(Constant(level), fx, fxp))
    return partial(
        ex_post_exceeds_on if on_backend else ex_post_exceeds, bm, fx, fxp, Constant(level)
    )


@register(QUICK, PAPER)
def bnr_cor37_time_map(suite: str) -> list[Audit]:
    """Corrected vs printed time map of BNR Cor 3.7, linear boundary, sensitivity 1."""
    psi = _boundary("linear", 1.0)
    wrong = _quartered(psi)
    level = TUNED_AT
    grid = _grid(psi).array
    corrected, printed = psi.time_for(level), _printed_time(psi, grid, level)
    n = runs(suite, 20_000, 400_000)
    common = (
        f"BM, linear boundary (delta={_DELTA:g}), target E={level:g}: the run walks the grid down "
        "to the map's time and claims (E, delta)-ex-post privacy; the adversary stops once L > E. "
    )
    return [
        Audit(
            name="bnr-cor3.7-time-map/corrected",
            source="BNR Cor 3.7 (corrected, THEORY §3)",
            statement=common
            + f"Map: smallest t with psi(t) <= E (t={corrected:.4g}). P(L > E) <= {_DELTA:g}",
            claim=ProbabilityClaim(_DELTA),
            simulate=_map_simulator(psi, corrected, level),
            n=n,
            twin=Twin(
                "bnr-cor3.7-time-map/corrected/log-1-over-delta-quartered",
                ProbabilityClaim(_DELTA),
                _map_simulator(psi, wrong.time_for(level), level),
                _map_simulator(psi, wrong.time_for(level), level, on_backend=True),
            ),
            chunk_size=25_000,
            on_backend=_map_simulator(psi, corrected, level, on_backend=True),
        ),
        Audit(
            name="bnr-cor3.7-time-map/printed",
            source="BNR Cor 3.7 (as printed)",
            statement=common
            + "Map as printed: inf{t : psi(t) >= E}, on a grid its least noisy time "
            + f"(t={printed:.4g}, psi={float(psi(printed)):.3g}). P(L > E) <= {_DELTA:g}",
            claim=ProbabilityClaim(_DELTA),
            simulate=_map_simulator(psi, printed, level),
            on_backend=_map_simulator(psi, printed, level, on_backend=True),
            n=n,
            twin=Twin("bnr-cor3.7-time-map/printed/claimed-at-delta-0.5", ProbabilityClaim(0.5)),
            expected="refuted",
            chunk_size=25_000,
        ),
    ]


# --- APC Thm 4: one BM, printed vs corrected ------------------------------------------------


def odometer_exceeds(
    odometer: BrownianOdometer, time: float, n: int, rng: np.random.Generator
) -> BoolArray:
    """One BM stopped at ``time`` (sensitivity 1, d = 1): is its loss >= the odometer's bound?"""
    fx, fxp = neighbours(1.0, 1)
    bm = BrownianNoiseReduction(TimeGrid([time]))
    tr = bm.run_batch(fx, n, rng)
    loss = gaussian_loss(tr.value, tr.times, fx, fxp)
    return np.asarray(loss >= odometer.bound_from_times(tr.times[:, None])[:, 0])


@register(QUICK, PAPER)
def apc_thm4(suite: str) -> list[Audit]:
    """APC Thm 4 with the drift (holds) and as printed without it (refuted) at V = 100."""
    corrected = BrownianOdometer(THM4_GAMMA, _DELTA)
    printed = BrownianOdometer(THM4_GAMMA, _DELTA, printed_apc_thm4=True)
    n = runs(suite, 20_000, 400_000)
    setting = f"one BM at t={THM4_TIME:g} (V=1/t={1 / THM4_TIME:g}), gamma={THM4_GAMMA:g}"
    return [
        Audit(
            name="apc-thm4/corrected",
            source="APC Lemma 6.1, eq. 1 (Thm 4 with drift, THEORY §5)",
            statement=f"{setting}: P(L >= 1/(2t) + psi(V)) <= {_DELTA:g}",
            claim=ProbabilityClaim(_DELTA),
            simulate=partial(odometer_exceeds, corrected, THM4_TIME),
            n=n,
            twin=Twin(
                "apc-thm4/corrected/printed-bound-without-drift",
                ProbabilityClaim(_DELTA),
                partial(odometer_exceeds, printed, THM4_TIME),
            ),
        ),
        Audit(
            name="apc-thm4/printed",
            source="APC Thm 4 (as printed)",
            statement=f"{setting}: P(L >= psi(V)) <= {_DELTA:g} (no drift term)",
            claim=ProbabilityClaim(_DELTA),
            simulate=partial(odometer_exceeds, printed, THM4_TIME),
            n=n,
            twin=Twin("apc-thm4/printed/claimed-at-delta-0.5", ProbabilityClaim(0.5)),
            expected="refuted",
        ),
    ]
