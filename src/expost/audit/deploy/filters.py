"""Filter interactions at deployment deltas, importance-sampled by per-round loss tilting.

The interactions have the shape of the paper suite's filter audits (`expost.audit.paper.composition`):
round sizes (and, for the unified filter, kinds) chosen from the previous released value, a
round runs only if the library's filter admits it, and the analyst stops a Brownian mechanism
as soon as the total loss exceeds the claimed eps. Event: ``Σ L_n > eps`` with eps the
filter's DP statement at delta'' = the deploy delta.

Proposal: every round is drawn from its loss-tilted law given the past, with one θ
(`expost.audit.tilting`): Gaussian rounds and Brownian mechanisms shifted by θ·(f(x) − f(x')),
Laplace rounds by `tilted_laplace`, exponential-mechanism rounds (kind "gdp", for the Gaussian-DP
filter's audit `expost.audit.deploy.gaussian_dp`) by their exact two-point tilt. The weight of a run is
``exp(−θ·Σ L_n + Σ log M_n(θ))`` with ``log M_n(θ) <= θ(θ+1)·rho_n`` (rho_n the round's true
zCDP cost; eps_n²/2 for a Laplace round), so on the event it is at most
``B = exp(−θ·eps + θ(θ+1)·rho)`` whenever the filter keeps Σ rho_n <= rho on every path.
With θ = (eps − rho)/(2rho), B = exp(−(eps − rho)²/(4rho)) = delta'' for Lemma 2.1's eps: the
claim fails exactly when a filter lets a path spend more than its budget (a weight above B).

Twins (refuted at the same delta): the same filter charged half of each round's true cost
(Laplace rounds recorded at eps_n/sqrt(2)), so
the true Σ rho_n reaches 2·rho; its bound is B with 2·rho, and its θ is tuned for 2·rho.

A filter's decisions depend on its realised costs only through their sums (FAC Thm 1, 2;
APC Lemma 6.2, Thm 5), so runs that spent the same multiset of costs share one filter object
(`_States`): the library's filter is called once per distinct state, not once per run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Literal

import numpy as np
import numpy.typing as npt

from expost.audit._shared import gaussian_loss, laplace_loss, neighbours, preferred
from expost.audit.core import Audit
from expost.audit.registry import DEPLOY, DEPLOY_QUICK, register_at_deltas
from expost.audit.tilting import (
    ImportanceCase,
    chernoff_tilt,
    gaussian_log_weight,
    in_suite,
    laplace_log_mgf,
    shift,
    tilted_laplace,
)
from expost.filters import (
    ApproxDPFilter,
    BoundedRangeCost,
    BrownianCost,
    BrownianFilter,
    Cost,
    DPCost,
    GaussianCost,
    GaussianDPFilter,
    UnifiedFilter,
    ZCDPFilter,
)
from expost.guarantees import ZCDP, zcdp_to_dp
from expost.mechanisms.additive import GaussianMechanism, LaplaceMechanism
from expost.mechanisms.exponential import ExponentialMechanism
from expost.processes import sample_brownian_grid

__all__ = [
    "SIZING",
    "Kind",
    "budget_of",
    "cases",
    "claim_tilt",
    "deploy_filter_audits",
    "em_range",
    "tilted_filter_run",
    "tilted_losses",
]

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]
Kind = Literal["gaussian", "laplace", "brownian", "mixed", "gdp"]
AnyFilter = ZCDPFilter | UnifiedFilter | BrownianFilter | ApproxDPFilter | GaussianDPFilter

ROUNDS = 8
SHARES = (0.5, 0.25, 0.125, 0.0625)  # Gaussian / Brownian round sizes, shares of rho
LAPLACE_SHARES = (1 / 64, 1 / 256)  # Laplace rounds: eps_n² = 2·share·rho (bounded losses
LAPLACE_ROUNDS = 1100  # need many small rounds to reach eps at small delta)
EM_SHARES = (0.25, 0.0625)  # exponential-mechanism rounds (kind "gdp"): GDP price ≈ share·mu²
_HIGH, _LOW = np.array([1.0, 0.0]), np.array([0.0, 0.0])  # monotone EM scores under x and x'
_GRID_POINTS, _GRID_SPAN = 24, 16.0
SIZING = 1.0 - 1e-9
"""Rounds are sized as shares of SIZING × the budget: shares that add up to the whole budget then
fit although each price is rounded up, and runs spend all of it but 1e-9 at every delta."""


def budget_of(filt: AnyFilter) -> float:
    """The filter's rho budget (rho*, for the (eps, delta)-DP filter; mu²/2 for the GDP filter,
    whose rounds of price mu_n² have rho_n = mu_n²/2)."""
    if isinstance(filt, GaussianDPFilter):
        return filt.budget / 2.0
    return filt.rho_budget if isinstance(filt, ApproxDPFilter) else filt.rho


class _States:
    """The library filter after each multiset of realised costs, built on demand (module doc)."""

    def __init__(self, start: AnyFilter, costs: Sequence[Cost]) -> None:
        self.costs = costs
        self._filters: list[AnyFilter] = [start]
        self._keys: list[tuple[int, ...]] = [()]
        self._ids: dict[tuple[int, ...], int] = {(): 0}
        self._admits: dict[tuple[int, int], bool] = {}

    def admits(self, state: int, cost: int) -> bool:
        key = (state, cost)
        if key not in self._admits:
            self._admits[key] = self._filters[state].admits(self.costs[cost])
        return self._admits[key]

    def spend(self, states: IndexArray, spent: IndexArray) -> IndexArray:
        """The states after each run spends its cost (one library call per distinct pair)."""
        pairs, back = np.unique(np.stack([states, spent]), axis=1, return_inverse=True)
        after = np.empty(pairs.shape[1], dtype=np.intp)
        for j, (state, cost) in enumerate(pairs.T.tolist()):
            key = tuple(sorted((*self._keys[state], cost)))
            if key not in self._ids:
                self._ids[key] = len(self._filters)
                self._keys.append(key)
                self._filters.append(self._filters[state].spend(self.costs[cost]))
            after[j] = self._ids[key]
        out: IndexArray = after[np.ravel(back)]
        return out

    def choose(self, states: IndexArray, menu: Sequence[int], want: IndexArray) -> IndexArray:
        """Per run: the first menu entry at or after ``want`` that its filter admits (−1: none)."""
        distinct, back = np.unique(states, return_inverse=True)
        table = np.array(
            [[self.admits(s, c) for c in menu] for s in distinct.tolist()], dtype=np.bool_
        ).reshape(distinct.size, len(menu))
        ok = table[np.ravel(back)] & (np.arange(len(menu))[None, :] >= want[:, None])
        choice: IndexArray = np.where(ok.any(axis=1), np.argmax(ok, axis=1), -1)
        return choice


class _Runs:
    """The running totals of n simulated interactions."""

    def __init__(self, n: int) -> None:
        self.loss = np.zeros(n)
        self.log_weight = np.zeros(n)
        self.last = np.zeros(n)
        self.state = np.zeros(n, dtype=np.intp)


def _one_shot_round(
    states: _States,
    runs: _Runs,
    rows: IndexArray,
    setup: tuple[Kind, float, float],
    rng: np.random.Generator,
) -> int:
    """A Gaussian or Laplace round of an admitted size for ``rows``; returns how many ran."""
    kind, theta, budget = setup
    fx, fxp = neighbours(1.0, 1)
    laplace = kind == "laplace"
    shares = LAPLACE_SHARES if laplace else SHARES
    first = len(SHARES) * _GRID_POINTS  # the one-shot menu follows the BM grid points
    menu = [first + g for g in range(len(shares))]
    choice = states.choose(runs.state[rows], menu, preferred(runs.last[rows], len(shares)))
    moved = shift(fx, fxp, theta)
    for g, share in enumerate(shares):
        mine = rows[choice == g]
        if mine.size == 0:
            continue
        if laplace:
            lap = LaplaceMechanism(1.0, math.sqrt(2.0 * share * budget))
            y = tilted_laplace(fx, fxp, float(lap.scale), theta, mine.size, rng)
            loss = laplace_loss(y, float(lap.scale), fx, fxp)
            gap = np.abs(fxp - fx) / float(lap.scale)
            runs.log_weight[mine] += float(laplace_log_mgf(gap, theta).sum()) - theta * loss
        else:
            gauss = GaussianMechanism(1.0, share * budget)
            y = gauss.run_batch(fx + moved, mine.size, rng)
            loss = gaussian_loss(y, gauss.sigma**2, fx, fxp)
            runs.log_weight[mine] += gaussian_log_weight(y, gauss.sigma**2, fx, moved)
        runs.loss[mine] += loss
        runs.last[mine] = y[:, 0] - fx[0]
        runs.state[mine] = states.spend(runs.state[mine], np.full(mine.size, first + g))
    return int(np.count_nonzero(choice >= 0))


def em_range(share: float, budget: float) -> float:
    """The EM range e whose GDP price mu(e/2)² ≈ (π/8)·e² is share·mu² = 2·share·rho."""
    return math.sqrt(16.0 * share * budget / math.pi)


def _em_round(
    states: _States,
    runs: _Runs,
    rows: IndexArray,
    setup: tuple[float, float],
    rng: np.random.Generator,
) -> None:
    """An exponential mechanism on two candidates with monotone scores, tilted exactly.

    Candidate c has loss ℓ_c = log p_c − log p'_c; the tilted law is q_c ∝ p_c·e^(θℓ_c), so
    ``log dP/dQ = log M(θ) − θ·ℓ_c`` with ``M(θ) = Σ_c p_c·e^(θℓ_c)``.
    """
    theta, budget = setup
    first = len(SHARES) * (_GRID_POINTS + 1)  # after the BM grid points and the Gaussian menu
    menu = [first + g for g in range(len(EM_SHARES))]
    choice = states.choose(runs.state[rows], menu, preferred(runs.last[rows], len(EM_SHARES)))
    for g, share in enumerate(EM_SHARES):
        mine = rows[choice == g]
        if mine.size == 0:
            continue
        em = ExponentialMechanism(em_range(share, budget), monotone=True)
        law = np.log(em.selection_probabilities(np.stack([_HIGH, _LOW])))
        loss = law[0] - law[1]
        tilted = law[0] + theta * loss
        log_m = float(np.logaddexp.reduce(tilted))
        picked = (rng.random(mine.size) < np.exp(tilted[1] - log_m)).astype(np.intp)
        runs.loss[mine] += loss[picked]
        runs.log_weight[mine] += log_m - theta * loss[picked]
        runs.last[mine] = picked - 0.5
        runs.state[mine] = states.spend(runs.state[mine], np.full(mine.size, menu[g]))


def _grids(budget: float) -> list[FloatArray]:
    return [
        np.geomspace(_GRID_SPAN, 1.0, _GRID_POINTS) / (2.0 * share * budget) for share in SHARES
    ]


def _brownian_round(
    states: _States,
    runs: _Runs,
    rows: IndexArray,
    setup: tuple[float, float, float],
    rng: np.random.Generator,
) -> None:
    """A BM on an admitted grid, tilted, stopped once the total loss exceeds the target."""
    theta, budget, target = setup
    fx, fxp = neighbours(1.0, 1)
    moved = shift(fx, fxp, theta)
    menu = [g * _GRID_POINTS + _GRID_POINTS - 1 for g in range(len(SHARES))]  # grid g, point k
    choice = states.choose(runs.state[rows], menu, preferred(runs.last[rows], len(SHARES)))
    for g, times in enumerate(_grids(budget)):
        mine = rows[choice == g]
        if mine.size == 0:
            continue
        y = fx + moved + sample_brownian_grid(times, mine.size, 1, rng)
        running = runs.loss[mine, None] + gaussian_loss(y, times, fx, fxp)
        crossed = running > target
        stop = np.where(crossed.any(axis=1), np.argmax(crossed, axis=1), times.size - 1)
        pick = np.arange(mine.size)
        runs.loss[mine] = running[pick, stop]
        runs.log_weight[mine] += gaussian_log_weight(y[pick, stop], times[stop], fx, moved)
        runs.last[mine] = y[pick, stop, 0] - fx[0]
        runs.state[mine] = states.spend(runs.state[mine], g * _GRID_POINTS + stop)


def _costs(kind: Kind, budget: float, charge: float) -> list[Cost]:
    """Every cost a run can request or realise: the BM grid points (grid g, point k at index
    g·K + k), then the one-shot menu.

    ``charge`` < 1 is the twins' bug: the filter is told ``charge`` × the round's true cost.
    """
    costs: list[Cost]
    if kind == "laplace":
        costs = [DPCost(math.sqrt(2.0 * s * budget * charge)) for s in LAPLACE_SHARES]
    else:
        costs = [GaussianCost(s * budget * charge) for s in SHARES]
    if kind == "gdp":
        costs += [BoundedRangeCost(em_range(s, budget * charge)) for s in EM_SHARES]
    times = np.concatenate(_grids(budget))
    return [BrownianCost(float(t) / charge) for t in times] + costs


def _round_kinds(kind: Kind, r: int, last: FloatArray) -> IndexArray:
    """What each run plays now: 0 a Gaussian or Laplace round, 1 a Brownian mechanism, 2 an
    exponential mechanism (the mixed analysts cycle on the output's sign)."""
    if kind in ("brownian", "mixed", "gdp"):
        cycle = {"brownian": 1, "mixed": 2, "gdp": 3}[kind]
        plays: IndexArray = np.asarray((r + (last > 0)) % cycle, dtype=np.intp)
        return plays if kind != "brownian" else plays + 1
    return np.zeros(last.size, dtype=np.intp)


def tilted_losses(
    filt: AnyFilter,
    kind: Kind,
    stop: float,
    tilt: tuple[float, float],
    n: int,
    rng: np.random.Generator,
) -> tuple[FloatArray, FloatArray]:
    """(total loss L, log w) of n interactions under ``filt``, drawn under the tilt.

    ``tilt = (theta, charge)``: θ of every round's tilt (0: plain Monte Carlo, w = 1) and the
    share of each round's true cost the filter is told (1, or the twins' 0.5). A run plays no
    more rounds, and a BM stops, once its total loss exceeds ``stop``.
    """
    theta, charge = tilt
    budget = budget_of(filt) * SIZING
    states = _States(filt, _costs(kind, budget, charge))
    runs = _Runs(n)
    rounds = LAPLACE_ROUNDS if kind == "laplace" else ROUNDS
    for r in range(rounds):
        active = runs.loss <= stop
        plays = _round_kinds(kind, r, runs.last)
        setup: tuple[Kind, float, float] = (kind, theta, budget)
        ran = _one_shot_round(states, runs, np.flatnonzero(active & (plays == 0)), setup, rng)
        _brownian_round(
            states, runs, np.flatnonzero(active & (plays == 1)), (theta, budget, stop), rng
        )
        _em_round(states, runs, np.flatnonzero(active & (plays == 2)), (theta, budget), rng)
        if kind == "laplace" and ran == 0:
            break
    return runs.loss, runs.log_weight


def tilted_filter_run(
    filt: AnyFilter,
    kind: Kind,
    target: float,
    tilt: tuple[float, float],
    n: int,
    rng: np.random.Generator,
) -> FloatArray:
    """``w·1{Σ L_n > target}`` for n interactions under ``filt`` (`tilted_losses`, stop at
    ``target``)."""
    loss, log_weight = tilted_losses(filt, kind, target, tilt, n, rng)
    out: FloatArray = np.where(loss > target, np.exp(log_weight), 0.0)
    return out


def claim_tilt(eps: float, filt: AnyFilter, charge: float) -> tuple[float, float]:
    """θ tuned for the true budget rho/charge (module doc) and the weight bound it gives."""
    rho = budget_of(filt) / charge
    theta = chernoff_tilt(eps, rho)
    return theta, math.exp(-theta * eps + theta * (theta + 1.0) * rho)


_RHO = 0.5
_WORDS = {
    "gaussian": f"{ROUNDS} Gaussian rounds",
    "laplace": f"up to {LAPLACE_ROUNDS} Laplace rounds (eps_n^2 = 2 rho/64 or 2 rho/256)",
    "brownian": f"{ROUNDS} Brownian mechanisms on adaptive grids",
    "mixed": f"{ROUNDS} Gaussian and Brownian rounds mixed",
}
_TWINS = {
    "gaussian": "charges-half-of-each-round",
    "laplace": "charges-eps-over-sqrt2",
    "brownian": "charges-half-of-each-bm",
    "mixed": "charges-half-of-each-round",
}


def _filters(delta: float) -> list[tuple[str, str, AnyFilter, Kind, float]]:
    """(name, source, filter, kind, claimed eps) of the paper suite's four filters at delta''."""
    zcdp_eps = zcdp_to_dp(ZCDP(_RHO), delta).eps
    dp = ApproxDPFilter(zcdp_eps, 0.0, delta)
    bm = BrownianFilter(_RHO, delta)
    return [
        (
            "fac-thm1-zcdp-filter",
            "FAC Thm 1 (+ APC Lemma 2.1)",
            ZCDPFilter(_RHO),
            "gaussian",
            zcdp_eps,
        ),
        ("fac-thm2-dp-filter", "FAC Thm 2", dp, "laplace", dp.guarantee().eps),
        ("apc-lemma6.2-brownian-filter", "APC Lemma 6.2", bm, "brownian", bm.guarantee().eps),
        (
            "apc-thm5-unified-filter",
            "APC Thm 5 (+ Lemma 2.1)",
            UnifiedFilter(_RHO, 0.0, delta),
            "mixed",
            zcdp_eps,
        ),
    ]


def _proposal(theta: float, budget: str) -> str:
    return (
        f"every round's loss tilted given the past, theta={theta:.4g}; weight <= "
        f"exp(-theta eps + theta(theta+1) {budget}) on the event (true sum of rho_n <= {budget})"
    )


def cases(delta: float) -> list[ImportanceCase]:
    """The four filter interactions at delta'' = ``delta``, each with its half-charging twin."""
    out = []
    for name, source, filt, kind, eps in _filters(delta):
        theta, weight_bound = claim_tilt(eps, filt, 1.0)
        twin_theta, twin_bound = claim_tilt(eps, filt, 0.5)
        out.append(
            ImportanceCase(
                delta=delta,
                name=name,
                source=source,
                statement=(
                    f"{type(filt).__name__} at rho={budget_of(filt):.4g}, {_WORDS[kind]} sized "
                    f"from past outputs, adversarial stop: P(total loss > eps={eps:.4g}) <= "
                    f"{delta:g}"
                ),
                proposal=_proposal(theta, "rho"),
                weight_bound=weight_bound,
                simulate=partial(tilted_filter_run, filt, kind, eps, (theta, 1.0)),
                twin_name=f"{name}/{_TWINS[kind]}",
                twin_proposal=_proposal(twin_theta, "2 rho"),
                twin_bound=twin_bound,
                twin_simulate=partial(tilted_filter_run, filt, kind, eps, (twin_theta, 0.5)),
            )
        )
    return out


_QUICK = ("fac-thm1-zcdp-filter", "apc-thm5-unified-filter")


@register_at_deltas(DEPLOY, DEPLOY_QUICK)
def deploy_filter_audits(suite: str, delta: float) -> list[Audit]:
    """The cases at ``delta`` (deploy-quick: "fac-thm1-zcdp-filter", "apc-thm5-unified-filter")."""
    return [c.audit(20_000, 5_000) for c in in_suite(cases(delta), suite, _QUICK)]
