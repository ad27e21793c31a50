"""Accuracy-first DP-SGD and its three baselines, one run each, on one seed's split.

- ``accuracy-first``: DP-SGD at σ, a Brownian check after each checkpoint of the fixed
  schedule (charged to a check budget); stop at the first check that passes, or when the
  schedule or the check budget is spent. Reported: the grid of counting filters over (units,
  check budget) (`expost.apps.learning.accounting.CheckedGrid`), the route fixed before the
  run; the ex-post RDP route (ii) is recorded beside it (``eps_rdp``), never reported.
- ``fixed``: T steps at the σ calibrated to a pre-chosen ε; reported ε = the PLD's ε at δ.
- ``doubling``: attempts at ε0, 2ε0, 4ε0, … (each T steps from scratch at its calibrated σ,
  then the same check) until a check passes; every attempt made is paid, by the same counting
  grid over the fixed schedule of attempts (the tightest valid accounting of a data-dependent
  number of attempts).
- ``oracle``: fixed-budget training at each ε of a grid, smallest first; the first whose model
  meets the target *on the test rows* (hindsight; not private, a reference line).

Every run's model is an average of iterates (`Trainer.averaged`), and ``met_target`` is always
judged on the held-out test rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from attrs import asdict, frozen

from expost.apps.learning.accounting import Unit, calibrate_sigma, ex_post_rdp_eps, steps_eps
from expost.apps.learning.data import LabelledRows, Split
from expost.apps.learning.models import FloatArray, accuracy, model_for
from expost.apps.learning.setup import Setup, grid_of
from expost.apps.learning.sgd import BrownianCheck, Releases, Trainer
from expost.filters import ZCDPFilter
from expost.session import PrivateSession

__all__ = [
    "METHODS",
    "Method",
    "Run",
    "accuracy_first",
    "doubling",
    "fixed",
    "oracle",
    "train_until",
]

Method = Literal["accuracy-first", "fixed", "doubling", "oracle"]
METHODS: tuple[Method, ...] = ("accuracy-first", "fixed", "doubling", "oracle")
Stop = Literal["check", "budget", "schedule", "hindsight"]


@frozen
class Run:
    """One run's record (the JSON object of `expost reproduce dp-sgd`).

    ``segments``: (steps, σ) in the order run (one per doubling attempt); ``steps`` their total,
    ``sigma`` the smallest σ among them; ``checks`` count checks at noise ``check_sigma``;
    ``eps`` the reported ε at ``delta`` (the smaller of ``eps_grid`` and ``eps_rdp`` where both
    exist, ``route`` says which).
    """

    method: Method
    dataset: str
    target: float
    seed: int
    steps: int
    sampling_prob: float
    sigma: float
    segments: tuple[tuple[int, float], ...]
    checks: int
    check_sigma: float | None
    check_time: float
    eps: float
    eps_grid: float | None
    eps_rdp: float | None
    route: str
    delta: float
    test_accuracy: float
    met_target: bool
    stopped_by: Stop

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (tuples as lists)."""
        out = asdict(self)
        out["segments"] = [{"steps": s, "sigma": g} for s, g in self.segments]
        return out


def _session(
    units: Sequence[Unit], rng: np.random.Generator, check_time: float = 0.0
) -> PrivateSession:
    """A session whose filter admits the schedule and nothing more (a guard: the zCDP prices of
    its rounds, the Gaussian bound of `SubsampledGaussianCost`, s/2 for Brownian checks of total
    privacy time ``check_time``); the report is the grid's."""
    rho = sum(u.steps / (2.0 * u.sigma**2) for u in units) + check_time / 2.0
    rho += sum(1.0 / (2.0 * u.check_sigma**2) for u in units if u.check_sigma is not None)
    return PrivateSession(ZCDPFilter(rho * (1.0 + 1e-9)), rng)


def _record(
    method: Method, setup: Setup, split: Split, target: float, seed: int, **fields: Any
) -> Run:
    segments = fields.pop("segments")
    return Run(
        method=method,
        dataset=split.name,
        target=target,
        seed=seed,
        steps=sum(s for s, _ in segments),
        sampling_prob=setup.sampling_prob,
        sigma=min(g for _, g in segments),
        segments=tuple(segments),
        delta=setup.delta,
        met_target=fields["test_accuracy"] >= target,
        check_time=fields.pop("check_time", 0.0),
        **fields,
    )


def _train_fixed(
    setup: Setup, split: Split, sigma: float, session: Releases
) -> tuple[Trainer, np.ndarray]:
    """T steps at σ; the model is the mean of the iterates of the second half."""
    trainer = Trainer(model_for(split.train.classes), split.train, setup.config(sigma))
    trainer.run(session, setup.steps // 2)
    trainer.averaged()
    trainer.run(session, setup.steps - setup.steps // 2)
    return trainer, trainer.averaged()


def train_until(
    trainer: Trainer,
    units: Sequence[Unit],
    check: BrownianCheck,
    session: Releases,
    validation: LabelledRows,
    target: float,
    check_budget: float,
) -> tuple[int, int, FloatArray, Stop, float]:
    """Accuracy-first's loop: each unit's steps, then the Brownian check of the averaged iterate
    on what is left of ``check_budget``; stop at the first check that passes (``"check"``),
    after the last unit or when no check fits the budget (``"budget"``). Returns the units run,
    the checks made (one fewer than the units when the budget could not pay the last), the
    model, why it stopped and the checks' summed privacy time (exact sum of the levels, so it
    never exceeds ``check_budget``). Every release goes through ``session``."""
    params, spent = trainer.params, Fraction(0)
    for done, unit in enumerate(units, start=1):
        trainer.run(session, unit.steps)
        params = trainer.averaged()
        left = float(Fraction(check_budget) - spent)
        outcome = check.decide(session, trainer.model, params, validation, target, left)
        if outcome is None:
            return done, done - 1, params, "budget", float(spent)
        passed, time = outcome
        spent += Fraction(time)
        if passed:
            return done, done, params, "check", float(spent)
    return len(units), len(units), params, "budget", float(spent)


def accuracy_first(
    setup: Setup, split: Split, target: float, seed: int, rng: np.random.Generator
) -> Run:
    """Accuracy-first DP-SGD (module docstring)."""
    units, budget = setup.units, setup.check_budgets[-1]
    trainer = Trainer(model_for(split.train.classes), split.train, setup.config(setup.sigma))
    session = _session(units, rng, budget)
    check = setup.brownian_check(target)
    done, checks, params, stopped, spent = train_until(
        trainer, units, check, session, split.validation, target, budget
    )
    eps_grid = setup.grid.reported(done, spent)
    eps_rdp = ex_post_rdp_eps(units[:done], setup.delta, check_time=spent)
    return _record(
        "accuracy-first",
        setup,
        split,
        target,
        seed,
        segments=[(trainer.steps, setup.sigma)],
        checks=checks,
        check_sigma=None,
        check_time=spent,
        eps=eps_grid,
        eps_grid=eps_grid,
        eps_rdp=eps_rdp,
        route="counting-grid",
        test_accuracy=accuracy(trainer.model, params, split.test),
        stopped_by=stopped,
    )


def _doubling_units(setup: Setup) -> tuple[Unit, ...]:
    return tuple(
        Unit(
            setup.steps,
            calibrate_sigma(e, setup.steps, setup.sampling_prob, setup.delta),
            setup.sampling_prob,
            setup.check_sigma,
        )
        for e in setup.doubling_levels()
    )


def doubling(setup: Setup, split: Split, target: float, seed: int, rng: np.random.Generator) -> Run:
    """The doubling baseline (module docstring)."""
    units, check = _doubling_units(setup), setup.check(target)
    session = _session(units, rng)
    segments: list[tuple[int, float]] = []
    stopped: Stop = "budget"
    for unit in units:
        trainer, params = _train_fixed(setup, split, unit.sigma, session)
        segments.append((unit.steps, unit.sigma))
        if check.passes(session, trainer.model, params, split.validation, target):
            stopped = "check"
            break
    eps = grid_of(units, setup.delta).reported(len(segments))
    return _record(
        "doubling",
        setup,
        split,
        target,
        seed,
        segments=segments,
        checks=len(segments),
        check_sigma=setup.check_sigma,
        eps=eps,
        eps_grid=eps,
        eps_rdp=None,
        route="counting-grid",
        test_accuracy=accuracy(trainer.model, params, split.test),
        stopped_by=stopped,
    )


def _fixed_run(
    setup: Setup, split: Split, eps: float, rng: np.random.Generator
) -> tuple[float, float, float]:
    """(σ, reported ε, test accuracy) of T steps at the σ calibrated to ``eps``."""
    sigma = calibrate_sigma(eps, setup.steps, setup.sampling_prob, setup.delta)
    session = _session([Unit(setup.steps, sigma, setup.sampling_prob)], rng)
    trainer, params = _train_fixed(setup, split, sigma, session)
    spent = steps_eps(sigma, setup.sampling_prob, setup.steps, setup.delta)
    return sigma, spent, accuracy(trainer.model, params, split.test)


def _budget_record(
    method: Method,
    setup: Setup,
    split: Split,
    target: float,
    seed: int,
    trained: tuple[float, float, float],
    stopped: Stop,
) -> Run:
    """The record of a fixed-budget model (σ, ε, test accuracy) judged against ``target``."""
    sigma, eps, acc = trained
    return _record(
        method,
        setup,
        split,
        target,
        seed,
        segments=[(setup.steps, sigma)],
        checks=0,
        check_sigma=None,
        eps=eps,
        eps_grid=None,
        eps_rdp=None,
        route="pld",
        test_accuracy=acc,
        stopped_by=stopped,
    )


def fixed(
    setup: Setup, split: Split, targets: Sequence[float], seed: int, rng: np.random.Generator
) -> list[Run]:
    """The fixed-budget baseline: one model at ``setup.fixed_eps``, judged against each target."""
    trained = _fixed_run(setup, split, setup.fixed_eps, rng)
    return [_budget_record("fixed", setup, split, t, seed, trained, "schedule") for t in targets]


def oracle(
    setup: Setup, split: Split, targets: Sequence[float], seed: int, rng: np.random.Generator
) -> list[Run]:
    """The oracle: per target, the smallest ε of the grid whose fixed-budget model meets it on
    the test rows, found by bisection on the grid (it takes reaching the target to be monotone in
    ε; each grid point is trained at most once, shared by the targets)."""
    trained: dict[int, tuple[float, float, float]] = {}

    def at(k: int) -> tuple[float, float, float]:
        if k not in trained:
            trained[k] = _fixed_run(setup, split, setup.oracle_grid[k], rng)
        return trained[k]

    runs = []
    for t in targets:
        low, high = -1, len(setup.oracle_grid) - 1  # grid[high] meets t unless none does
        while high - low > 1:
            mid = (low + high) // 2
            if at(mid)[2] >= t:
                high = mid
            else:
                low = mid
        runs.append(_budget_record("oracle", setup, split, t, seed, at(high), "hindsight"))
    return runs
