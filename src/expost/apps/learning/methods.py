"""Accuracy-first DP-SGD and its three baselines, one run each, on one seed's split.

- ``accuracy-first``: DP-SGD at σ, a private count check after each checkpoint of the fixed
  schedule; stop at the first check that passes, or when the schedule (the budget) is spent.
  Reported: counting filters on a grid of budgets (`expost.apps.learning.accounting`, (i)), the
  ex-post RDP report (ii) beside it; the table uses the smaller.
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
from typing import Any, Literal

import numpy as np
from attrs import asdict, frozen

from expost.apps.learning.accounting import Unit, calibrate_sigma, ex_post_rdp_eps, steps_eps
from expost.apps.learning.data import LabelledRows, Split
from expost.apps.learning.models import FloatArray, accuracy, model_for
from expost.apps.learning.setup import Setup, grid_of
from expost.apps.learning.sgd import CountCheck, Releases, Trainer
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


def _session(units: Sequence[Unit], rng: np.random.Generator) -> PrivateSession:
    """A session whose filter admits the schedule and nothing more (a guard: the zCDP prices of
    its rounds, the Gaussian bound of `SubsampledGaussianCost`); the report is the grid's."""
    rho = sum(u.steps / (2.0 * u.sigma**2) for u in units)
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
    check: CountCheck,
    session: Releases,
    validation: LabelledRows,
    target: float,
) -> tuple[int, FloatArray, Stop]:
    """Accuracy-first's loop: each unit's steps, then the check of the averaged iterate; stop at
    the first check that passes (``"check"``) or after the last unit (``"budget"``). Returns the
    units run, the model and why it stopped. Every release goes through ``session``."""
    params = trainer.params
    for done, unit in enumerate(units, start=1):
        trainer.run(session, unit.steps)
        params = trainer.averaged()
        released = check.noisy_accuracy(session, trainer.model, params, validation)
        if check.passes(released, target):
            return done, params, "check"
    return len(units), params, "budget"


def accuracy_first(
    setup: Setup, split: Split, target: float, seed: int, rng: np.random.Generator
) -> Run:
    """Accuracy-first DP-SGD (module docstring)."""
    units = setup.units
    trainer = Trainer(model_for(split.train.classes), split.train, setup.config(setup.sigma))
    session = _session(units, rng)
    done, params, stopped = train_until(
        trainer, units, setup.check, session, split.validation, target
    )
    eps_grid = setup.grid.reported(done)
    eps_rdp = ex_post_rdp_eps(units[:done], setup.delta)
    return _record(
        "accuracy-first",
        setup,
        split,
        target,
        seed,
        segments=[(trainer.steps, setup.sigma)],
        checks=done,
        check_sigma=setup.check_sigma,
        eps=min(eps_grid, eps_rdp),
        eps_grid=eps_grid,
        eps_rdp=eps_rdp,
        route="counting-grid" if eps_grid <= eps_rdp else "ex-post-rdp",
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
    units, check = _doubling_units(setup), setup.check
    session = _session(units, rng)
    segments: list[tuple[int, float]] = []
    stopped: Stop = "budget"
    for unit in units:
        trainer, params = _train_fixed(setup, split, unit.sigma, session)
        segments.append((unit.steps, unit.sigma))
        if check.passes(
            check.noisy_accuracy(session, trainer.model, params, split.validation), target
        ):
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
