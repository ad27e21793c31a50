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
from expost.apps.learning.data import Split
from expost.apps.learning.models import accuracy, model_for
from expost.apps.learning.setup import Setup, grid_of
from expost.apps.learning.sgd import Releases, Trainer
from expost.filters import ZCDPFilter
from expost.session import PrivateSession

__all__ = ["METHODS", "Method", "Run", "accuracy_first", "doubling", "fixed", "oracle"]

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


def _session(units: Sequence[Unit], setup: Setup, rng: np.random.Generator) -> PrivateSession:
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


def accuracy_first(
    setup: Setup, split: Split, target: float, seed: int, rng: np.random.Generator
) -> Run:
    """Accuracy-first DP-SGD (module docstring)."""
    units, check = setup.units, setup.check
    session = _session(units, setup, rng)
    trainer = Trainer(model_for(split.train.classes), split.train, setup.config(setup.sigma))
    stopped: Stop = "budget"
    done = 0
    for unit in units:
        trainer.run(session, unit.steps)
        params = trainer.averaged()
        done += 1
        if check.passes(check.noisy_accuracy(session, trainer.model, params, split.validation), target):
            stopped = "check"
            break
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
        Unit(setup.steps, calibrate_sigma(e, setup.steps, setup.sampling_prob, setup.delta),
             setup.sampling_prob, setup.check_sigma)
        for e in setup.doubling_eps()
    )


def doubling(setup: Setup, split: Split, target: float, seed: int, rng: np.random.Generator) -> Run:
    """The doubling baseline (module docstring)."""
    units, check = _doubling_units(setup), setup.check
    session = _session(units, setup, rng)
    segments: list[tuple[int, float]] = []
    stopped: Stop = "budget"
    for unit in units:
        trainer, params = _train_fixed(setup, split, unit.sigma, session)
        segments.append((unit.steps, unit.sigma))
        if check.passes(check.noisy_accuracy(session, trainer.model, params, split.validation), target):
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
    method: Method, setup: Setup, split: Split, eps: float, seed: int, rng: np.random.Generator
) -> tuple[float, float, float]:
    """(σ, reported ε, test accuracy) of T steps at the σ calibrated to ``eps``."""
    sigma = calibrate_sigma(eps, setup.steps, setup.sampling_prob, setup.delta)
    session = _session([Unit(setup.steps, sigma, setup.sampling_prob)], setup, rng)
    trainer, params = _train_fixed(setup, split, sigma, session)
    spent = steps_eps(sigma, setup.sampling_prob, setup.steps, setup.delta)
    return sigma, spent, accuracy(trainer.model, params, split.test)


def fixed(
    setup: Setup, split: Split, targets: Sequence[float], seed: int, rng: np.random.Generator
) -> list[Run]:
    """The fixed-budget baseline: one model at ``setup.fixed_eps``, judged against each target."""
    sigma, eps, acc = _fixed_run("fixed", setup, split, setup.fixed_eps, seed, rng)
    return [
        _record(
            "fixed", setup, split, t, seed, segments=[(setup.steps, sigma)], checks=0,
            check_sigma=None, eps=eps, eps_grid=None, eps_rdp=None, route="pld",
            test_accuracy=acc, stopped_by="schedule",
        )
        for t in targets
    ]


def oracle(
    setup: Setup, split: Split, targets: Sequence[float], seed: int, rng: np.random.Generator
) -> list[Run]:
    """The oracle: per target, the smallest ε of the grid whose fixed-budget model meets it on
    the test rows (models trained smallest ε first, until every target is met)."""
    found: dict[float, tuple[float, float, float]] = {}
    last = (0.0, 0.0, 0.0)
    for eps in setup.oracle_grid:
        last = _fixed_run("oracle", setup, split, eps, seed, rng)
        for t in targets:
            if t not in found and last[2] >= t:
                found[t] = last
        if len(found) == len(targets):
            break
    runs = []
    for t in targets:
        sigma, eps, acc = found.get(t, last)
        runs.append(
            _record(
                "oracle", setup, split, t, seed, segments=[(setup.steps, sigma)], checks=0,
                check_sigma=None, eps=eps, eps_grid=None, eps_rdp=None, route="pld",
                test_accuracy=acc, stopped_by="hindsight",
            )
        )
    return runs
