"""FAC Thm 3 odometers at deployment deltas, importance-sampled by per-round loss tilting.

The interaction of the paper suite's odometer audits (`expost.audit.paper.composition`): round n is
a Laplace release or randomized response (the exponential mechanism on two candidates with
monotone scores), chosen from the previous output, at eps_n in (0.1, 0.2, 0.35, 0.5) chosen
from past outputs; event: the running loss reaches the odometer, ``L_(1:n) >= u(V_n)`` for some
n, V_n = Σ eps_m². At deploy deltas the paper's 40 rounds cannot reach the odometer (the
losses are bounded by eps_n), so the deploy interaction has `ROUNDS` rounds.

Proposal: a uniform mixture of K loss tilts θ_j (`expost.audit.tilting`; for randomized
response the tilted law ``q_k ∝ p_k^(1+θ)·p'_k^(−θ)`` of the two outcomes): a run draws j, then
every round is tilted by θ_j until the first crossing τ. ``dQ/dP = mean_j Z_j`` with
``log Z_j = Σ_(m<=τ) θ_j·L_m − log M_m(θ_j)``, tracked for every j on the same path. With
``log M_m(θ) <= θ(θ+1)·eps_m²/2`` (eps-DP rounds, Bun–Steinke Prop 3.3) and ``L_(1:τ) >= u(V_τ)``:

    W_τ = 1/mean_j Z_j <= 1/mean_j exp(θ_j·u(V_τ) − θ_j(θ_j+1)·V_τ/2).

Every V_τ is a multiple of 0.0025 (each eps_m² is 4, 16, 49 or 100 of them) in
[0, 0.25·ROUNDS], and a crossing needs u(V_τ) <= L_(1:τ) <= Σ eps_m <= min(V_τ/0.1,
sqrt(ROUNDS·V_τ)); so the maximum of the right side over the lattice points where that holds
(times `ROUNDING_MARGIN` for float sums) is a valid weight bound B (`lattice_bound`). θ_j are the
Chernoff tilts u(V)/V − 1/2 at K = 12 spread-out reachable V (`mixture_tilts`).

Twin: the odometer at a third of its value, one tilt θ = 0.1. (Half the odometer, the paper
suite's twin, is crossed with probability about 1e-4 at delta'' = 1e-12 for this analyst; the
betting bound then needs far more than 10⁴ runs to see it above delta.)
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import numpy.typing as npt

from expost.audit._shared import laplace_loss, neighbours, preferred
from expost.audit.core import Audit
from expost.audit.registry import DEPLOY, DEPLOY_QUICK, register_at_deltas
from expost.audit.tilting import (
    ROUNDING_MARGIN,
    ImportanceCase,
    in_suite,
    laplace_log_mgf,
    tilted_laplace,
)
from expost.mechanisms.additive import LaplaceMechanism
from expost.mechanisms.exponential import ExponentialMechanism
from expost.odometers import FilterOdometer, MixtureOdometer, StitchedOdometer

__all__ = [
    "ROUNDS",
    "cases",
    "deploy_odometer_audits",
    "lattice_bound",
    "mixture_tilts",
    "tilted_odometer_run",
]

FloatArray = npt.NDArray[np.float64]
Odometer = FilterOdometer | MixtureOdometer | StitchedOdometer

ROUNDS = 400
EPS_MENU = (0.1, 0.2, 0.35, 0.5)
_QUANTUM = 0.0025  # every eps_m² is a multiple of it
_HIGH, _LOW = np.array([1.0, 0.0]), np.array([0.0, 0.0])  # monotone scores under x and x'
_COMPONENTS = 12
_TWIN_SCALE, _TWIN_TILT = 1.0 / 3.0, (0.1,)


def _lattice(odometer: Odometer, scale: float) -> tuple[FloatArray, FloatArray]:
    """The V lattice points where a crossing is possible, and scale·u there (module doc)."""
    v = np.arange(0, round(0.25 * ROUNDS / _QUANTUM) + 1) * _QUANTUM
    u = scale * odometer.bound_at(v)
    reachable = np.minimum(v / min(EPS_MENU), np.sqrt(ROUNDS * v)) >= u  # L <= Σ eps_m
    return v[reachable], u[reachable]


def lattice_bound(odometer: Odometer, scale: float, thetas: tuple[float, ...]) -> float:
    """``max over the reachable lattice of 1/mean_j exp(θ_j·u(V) − θ_j(θ_j+1)·V/2)`` (doc)."""
    v, u = _lattice(odometer, scale)
    t = np.asarray(thetas, dtype=np.float64)[:, None]
    log_mean = np.logaddexp.reduce(t * u - t * (t + 1.0) * v / 2.0, axis=0) - math.log(t.size)
    return math.exp(-float(log_mean.min())) * ROUNDING_MARGIN


def mixture_tilts(odometer: Odometer, scale: float) -> tuple[tuple[float, ...], float]:
    """(θ_1..θ_K, B): the Chernoff tilts ``u(V)/V − 1/2`` at K spread-out reachable V, and
    their `lattice_bound`."""
    v, u = _lattice(odometer, scale)
    picks = np.unique(np.geomspace(v[0], v[-1], _COMPONENTS).round(4))
    at = np.searchsorted(v, picks).clip(0, v.size - 1)
    thetas = tuple(float(x) for x in np.maximum(u[at] / v[at] - 0.5, 0.01))
    return thetas, lattice_bound(odometer, scale, thetas)


def _rr_law(eps: float) -> FloatArray:
    """log P(outcome 0), log P(outcome 1) of randomized response under x (row 0) and x' (row 1)."""
    em = ExponentialMechanism(eps, monotone=True)
    law: FloatArray = np.log(em.selection_probabilities(np.stack([_HIGH, _LOW])))
    return law


def _log_mgf(eps: float, use_rr: bool, thetas: FloatArray) -> FloatArray:
    """log M(θ) of the round for every θ: exact for randomized response and Laplace."""
    if use_rr:
        law = _rr_law(eps)
        tilted = law[0][None, :] + thetas[:, None] * (law[0] - law[1])[None, :]
        out: FloatArray = np.logaddexp.reduce(tilted, axis=1)
        return out
    return laplace_log_mgf(eps, thetas)


def _round(
    eps: float, use_rr: bool, theta: FloatArray, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray]:
    """Tilted draws of the round, one per entry of θ: (the analyst's signal, the exact loss)."""
    fx, fxp = neighbours(1.0, 1)
    if use_rr:
        law = _rr_law(eps)
        loss = law[0] - law[1]
        first = 1.0 / (1.0 + np.exp(law[0, 1] - law[0, 0] + theta * (loss[1] - loss[0])))  # q_0
        picked = (rng.random(theta.size) >= first).astype(np.intp)
        return picked.astype(np.float64), loss[picked]
    lap = LaplaceMechanism(1.0, eps)
    y = tilted_laplace(fx, fxp, float(lap.scale), theta, theta.size, rng)
    return y[:, 0] - fx[0], laplace_loss(y, float(lap.scale), fx, fxp)


def tilted_odometer_run(
    odometer: Odometer, scale: float, thetas: tuple[float, ...], n: int, rng: np.random.Generator
) -> FloatArray:
    """``w·1{∃n: L_(1:n) >= scale·u(V_n)}`` for n runs, each tilted by a θ_j drawn uniformly.

    The proposal is the uniform mixture of the tilts: ``dQ/dP = mean_j Z_j`` with
    ``log Z_j = Σ_m θ_j·L_m − log M_m(θ_j)``, tracked for every j; ``thetas = (0.0,)`` is
    plain Monte Carlo.
    """
    grid = np.asarray(thetas, dtype=np.float64)
    theta = grid[rng.integers(0, grid.size, n)]
    log_m = {(e, rr): _log_mgf(e, rr, grid) for e in EPS_MENU for rr in (False, True)}
    loss, v, last, total = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    log_z = np.zeros((n, grid.size))
    rr = np.zeros(n, dtype=np.bool_)
    live = np.ones(n, dtype=np.bool_)
    crossed = np.zeros(n, dtype=np.bool_)
    for _ in range(ROUNDS):
        choice = preferred(last + total, len(EPS_MENU))
        for g, e in enumerate(EPS_MENU):
            for use_rr in (False, True):
                rows = np.flatnonzero(live & (choice == g) & (rr == use_rr))
                if rows.size == 0:
                    continue
                out, step = _round(e, use_rr, theta[rows], rng)
                log_z[rows] += grid * step[:, None] - log_m[e, use_rr]
                loss[rows] += step
                v[rows] += e * e
                last[rows] = out
                total[rows] += step
        rr = (np.floor(np.abs(last) * 4.0) % 2).astype(np.bool_)
        crossed |= live & (loss >= scale * odometer.bound_at(v))
        live &= ~crossed
        if not live.any():
            break
    log_w = math.log(grid.size) - np.logaddexp.reduce(log_z, axis=1)
    weights: FloatArray = np.where(crossed, np.exp(log_w), 0.0)
    return weights


def _odometers(delta: float) -> list[tuple[str, Odometer]]:
    return [
        ("filter", FilterOdometer(10.0, 0.0, delta)),
        ("mixture", MixtureOdometer(1.0, 0.0, delta)),
        ("stitched", StitchedOdometer(0.5, 0.0, delta)),
    ]


def _proposal(thetas: tuple[float, ...]) -> str:
    return (
        f"uniform mixture of {len(thetas)} loss tilts, theta in [{min(thetas):.3g}, "
        f"{max(thetas):.3g}], until the first crossing; weight <= max over reachable V of "
        "1/mean_j exp(theta_j u(V) - theta_j(theta_j+1) V/2)"
    )


def cases(delta: float) -> list[ImportanceCase]:
    """The three FAC Thm 3 odometers at delta'' = ``delta``, each with its third-of-it twin."""
    out = []
    for label, odometer in _odometers(delta):
        thetas, weight_bound = mixture_tilts(odometer, 1.0)
        twin_bound = lattice_bound(odometer, _TWIN_SCALE, _TWIN_TILT)
        name = f"fac-thm3-odometer/{label}"
        out.append(
            ImportanceCase(
                delta=delta,
                name=name,
                source="FAC Thm 3",
                statement=(
                    f"{type(odometer).__name__}, {ROUNDS} Laplace / randomized-response rounds "
                    f"with eps_n in {EPS_MENU} from past outputs: P(exists n: L_(1:n) >= u_n) "
                    f"<= {delta:g}"
                ),
                proposal=_proposal(thetas),
                weight_bound=weight_bound,
                simulate=partial(tilted_odometer_run, odometer, 1.0, thetas),
                twin_name=f"{name}/a-third-of-the-odometer",
                twin_proposal=_proposal(_TWIN_TILT),
                twin_bound=twin_bound,
                twin_simulate=partial(tilted_odometer_run, odometer, _TWIN_SCALE, _TWIN_TILT),
            )
        )
    return out


_QUICK = ("fac-thm3-odometer/mixture",)


@register_at_deltas(DEPLOY, DEPLOY_QUICK)
def deploy_odometer_audits(suite: str, delta: float) -> list[Audit]:
    """The cases at ``delta`` (deploy-quick: "fac-thm3-odometer/mixture")."""
    n = 10_000 if suite == DEPLOY else 4_000
    return [c.audit(n, 5_000) for c in in_suite(cases(delta), suite, _QUICK)]
