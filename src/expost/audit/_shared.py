"""Shared pieces of the paper audits: run counts, neighbouring values and exact losses.

The exact privacy loss of a release y with density p_x is ``L = log p_x(y)/p_x'(y)`` (APC
Def 2.2); the audits compute it from the released value and the neighbouring values f(x),
f(x'), never from the mechanism's own loss formulas.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost.audit.registry import QUICK
from expost.boundaries import LinearPrivacyBoundary, MixturePrivacyBoundary
from expost.filters import BrownianCost, PrivacyFilter
from expost.processes import sample_brownian_grid

if TYPE_CHECKING:
    from expost.backends import Draws
    from expost.filters import Cost
    from expost.odometers import BrownianOdometer

__all__ = [
    "MENU",
    "POINTS",
    "ROUNDS",
    "THM4_GAMMA",
    "THM4_TIME",
    "TUNED_AT",
    "VILLE_LAMBDAS",
    "Constant",
    "admitted",
    "brownian_round",
    "choice",
    "first_or_last",
    "gaussian_loss",
    "gaussian_loss_on",
    "grid_times",
    "laplace_loss",
    "log_e_values",
    "neighbours",
    "odometer_step",
    "preferred",
    "round_paths",
    "runs",
    "tuned_boundary",
    "ville_step",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]
F = TypeVar("F", bound=PrivacyFilter)

TUNED_AT = 1.0  # the ex-post level E the BM boundaries are tuned for
SPAN, POINTS = 100.0, 120  # BM grids: log-spaced over [τ/span, τ·span] around ψ's time for E
# Grids the analyst picks from after each BM of a sequence (by the last released value).
MENU = (
    tuple(np.geomspace(20.0, 0.5, 24)),
    tuple(np.geomspace(4.0, 0.05, 32)),
    tuple(np.geomspace(1.0, 0.2, 12)),
)
ROUNDS = 6
VILLE_LAMBDAS = (0.5, 1.0, 2.0)
THM4_TIME, THM4_GAMMA = 0.01, 1.0  # APC Thm 4 audits: one BM at t = 0.01; the odometers' gamma

# f(x) away from the origin and f(x') − f(x) along a direction that uses every coordinate.
_ORIGIN = np.array([0.3, -1.2, 2.0])
_DIRECTION = np.array([2.0, -1.0, 2.0]) / 3.0


def runs(suite: str, quick: int, paper: int) -> int:
    """The number of runs of an audit in ``suite``."""
    return quick if suite == QUICK else paper


def neighbours(distance: float, d: int, norm: int = 2) -> tuple[FloatArray, FloatArray]:
    """(f(x), f(x')) in R^d at ℓ_norm distance ``distance`` (norm 1 or 2)."""
    direction = _DIRECTION[:d] if d > 1 else np.ones(1)
    direction = direction / np.linalg.norm(direction, ord=norm)
    fx = _ORIGIN[:d].copy()
    return fx, fx + distance * direction


def gaussian_loss(
    y: FloatArray, variance: FloatArray | float, fx: FloatArray, fxp: FloatArray
) -> FloatArray:
    """``(‖y − f(x')‖² − ‖y − f(x)‖²)/(2·variance)``: the loss of y ~ N(f(x), variance·I).

    ``y`` has the coordinates on its last axis; ``variance`` broadcasts to ``y.shape[:-1]``.
    For a Brownian mechanism stopped at time t (variance t) it is the loss of the whole
    released sequence (APC Thm 3).
    """
    # ‖y − f(x')‖² − ‖y − f(x)‖² = 2⟨y, f(x) − f(x')⟩ + ‖f(x')‖² − ‖f(x)‖²: one matrix product.
    gap = y @ (2.0 * (fx - fxp)) + (fxp @ fxp - fx @ fx)
    loss: FloatArray = gap / (2.0 * np.asarray(variance))
    return loss


def gaussian_loss_on(y: Any, variance: Any, fx: FloatArray, fxp: FloatArray, draws: Draws) -> Any:
    """`gaussian_loss` of a backend array ``y`` (`expost.backends`), computed on its device."""
    gap = y @ draws.asarray(2.0 * (fx - fxp)) + float(fxp @ fxp - fx @ fx)
    return gap / (2.0 * variance)


def laplace_loss(
    y: FloatArray, scale: FloatArray | float, fx: FloatArray, fxp: FloatArray
) -> FloatArray:
    """``(‖y − f(x')‖₁ − ‖y − f(x)‖₁)/scale``: the loss of y ~ f(x) + Lap(scale) per coordinate."""
    gap = np.sum(np.abs(y - fxp), axis=-1) - np.sum(np.abs(y - fx), axis=-1)
    loss: FloatArray = gap / np.asarray(scale)
    return loss


def tuned_boundary(
    kind: str, sensitivity: float, delta: float
) -> MixturePrivacyBoundary | LinearPrivacyBoundary:
    """The ``mixture`` or ``linear`` privacy boundary tuned for E = `TUNED_AT` at ``delta``."""
    if kind == "mixture":
        return MixturePrivacyBoundary.tuned_for(TUNED_AT, delta, sensitivity)
    return LinearPrivacyBoundary.tuned_for(TUNED_AT, delta, sensitivity)


def grid_times(boundary: MixturePrivacyBoundary | LinearPrivacyBoundary) -> FloatArray:
    """`POINTS` decreasing times log-spaced over [τ/SPAN, τ·SPAN], τ = ψ's time for `TUNED_AT`."""
    centre = boundary.time_for(TUNED_AT)
    return np.geomspace(centre * SPAN, centre / SPAN, POINTS)


@frozen
class Constant:
    """The constant level E as a function of time (picklable)."""

    value: float

    def __call__(self, times: FloatArray) -> FloatArray:
        return np.full_like(times, self.value)


def log_e_values(
    b: FloatArray, times: FloatArray, lam: float | FloatArray, drift: float
) -> FloatArray:
    """``λB(t)/t − drift·λ²/t`` along the grid: log M(t) when drift = 1/2 (APC Lemma 6.1)."""
    result: FloatArray = lam * b / times - drift * lam * lam / times
    return result


def first_or_last(fired: BoolArray) -> IndexArray:
    """The first index where ``fired`` holds along the last axis, else the last index."""
    stop: IndexArray = np.where(fired.any(axis=-1), np.argmax(fired, axis=-1), fired.shape[-1] - 1)
    return stop


def choice(last: FloatArray, options: int) -> IndexArray:
    """The analyst's adaptive choice from the previous released value (deterministic)."""
    bins = np.floor(np.abs(last) * 3.0).astype(np.intp) + (last > 0)
    chosen: IndexArray = bins % options
    return chosen


def preferred(last: FloatArray, options: int) -> IndexArray:
    """The analyst's preferred menu entry from the previous released value (deterministic)."""
    bins = np.floor(np.abs(last) * 2.0).astype(np.intp) + (last > 0)
    chosen: IndexArray = bins % options
    return chosen


def admitted(
    filters: Sequence[PrivacyFilter], rows: IndexArray, costs: Sequence[Cost], want: IndexArray
) -> IndexArray:
    """Per row: the first menu entry at or after the preferred one that the filter admits (−1: none)."""
    out = np.full(rows.size, -1, dtype=np.intp)
    for j, (i, start) in enumerate(zip(rows, want, strict=True)):
        for g in range(int(start), len(costs)):
            if filters[i].admits(costs[g]):
                out[j] = g
                break
    return out


def brownian_round(
    filters: list[F],
    rows: IndexArray,
    grids: Sequence[FloatArray],
    state: tuple[FloatArray, FloatArray],
    target: float,
    rng: np.random.Generator,
    charge: float = 1.0,
) -> None:
    """A Brownian mechanism (APC Thm 3) for ``rows`` on the first `admitted` grid at or after
    the `preferred` one, stopped once the total loss exceeds ``target``; in place.

    Grid g (decreasing times) costs ``BrownianCost(charge·t_min)``; the release is f(x) + B(t)
    of `neighbours` (1.0, 1) and the realised cost ``BrownianCost(charge·t_stop)`` is recorded
    with ``spend``. ``state``: (total loss, last released value − f(x)) of every run.
    """
    loss, last = state
    fx, fxp = neighbours(1.0, 1)
    costs: list[Cost] = [BrownianCost(charge * float(g[-1])) for g in grids]
    choice = admitted(filters, rows, costs, preferred(last[rows], len(costs)))
    for g, times in enumerate(grids):
        mine = rows[choice == g]
        if mine.size == 0:
            continue
        y = fx + sample_brownian_grid(times, mine.size, 1, rng)
        running = loss[mine, None] + gaussian_loss(y, times, fx, fxp)
        stop = first_or_last(running > target)
        pick = np.arange(mine.size)
        loss[mine] = running[pick, stop]
        last[mine] = y[pick, stop, 0] - fx[0]
        for i, k in zip(mine, stop, strict=True):
            filters[i] = filters[i].spend(BrownianCost(charge * float(times[k])))


def round_paths(
    chosen: IndexArray, rng: np.random.Generator
) -> list[tuple[IndexArray, FloatArray, FloatArray]]:
    """For each `MENU` grid: (runs that chose it, its times, their B paths (runs, K))."""
    out = []
    for g, grid in enumerate(MENU):
        rows = np.flatnonzero(chosen == g)
        if rows.size:
            times = np.asarray(grid)
            out.append((rows, times, sample_brownian_grid(times, rows.size, 1, rng)[..., 0]))
    return out


def ville_step(
    state: tuple[FloatArray, FloatArray],
    path: tuple[IndexArray, FloatArray, FloatArray],
    lam: FloatArray,
    drift: float,
    log_target: float,
) -> None:
    """One BM of a Ville sequence (APC eq. 1) for the runs ``rows`` of ``path``, in place.

    ``state``: (log ∏M_i, last released value) of every run; ``path``: (rows, times, their B
    paths), walked from large t to small and stopped once the running log product reaches
    ``log_target`` (else at its end); ``lam``: every run's λ_i.
    """
    log_product, last = state
    rows, times, b = path
    log_m = log_product[rows, None] + log_e_values(b, times, lam[rows, None], drift)
    stop = first_or_last(log_m >= log_target)
    pick = np.arange(rows.size)
    log_product[rows] = log_m[pick, stop]
    last[rows] = b[pick, stop] / times[stop]


def odometer_step(
    odometer: BrownianOdometer,
    state: tuple[FloatArray, FloatArray, FloatArray],
    path: tuple[IndexArray, FloatArray, FloatArray],
) -> None:
    """One BM of an odometer sequence (APC eq. 1, sensitivity 1) for ``path``'s rows, in place.

    ``state``: (running loss Σ L_i, V = Σ 1/t_i, last released value) of every run; the BM's
    loss at t is 1/(2t) + B(t)/t (APC Thm 3) and it is stopped once the running loss reaches
    the odometer's bound at the running V (else at its end).
    """
    loss, volume, last = state
    rows, times, b = path
    running = loss[rows, None] + 0.5 / times + b / times
    v = volume[rows, None] + 1.0 / times
    stop = first_or_last(running >= odometer.bound_at(v))
    pick = np.arange(rows.size)
    loss[rows], volume[rows] = running[pick, stop], v[pick, stop]
    last[rows] = b[pick, stop] / times[stop]
