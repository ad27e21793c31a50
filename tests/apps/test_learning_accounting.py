"""What accuracy-first DP-SGD reports: the counting grid, the ex-post RDP route, the runs' JSON,
each checked against an independent accountant (dp-accounting), with planted under-reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from expost.apps.learning import setup as learning_setup
from expost.apps.learning.accounting import (
    DELTA,
    Unit,
    calibrate_sigma,
    checked_grid,
    counting_grid,
    ex_post_rdp_eps,
    steps_eps,
)
from expost.apps.learning.setup import Setup
from expost.cli import main
from expost.errors import InvalidParameter

dp_accounting = pytest.importorskip("dp_accounting")

TINY = Setup(
    "breast_cancer",
    (0.9,),
    sampling_prob=0.1,
    learning_rate=1.0,
    steps=24,
    sigma=2.0,
    checkpoints=(8, 16, 24),
    check_levels=(0.01, 0.04, 0.16),
    check_budgets=(0.08, 0.32),
    check_sigma=3.0,
    margins=(0.0,),
    fixed_eps=2.0,
    doubling_eps0=1.0,
    doubling_attempts=3,
    oracle_grid=(1.0, 2.0, 4.0, 8.0),
)


def independent_eps(
    run: dict[str, Any], delta: float = DELTA, check_budget: float | None = None
) -> float:
    """dp-accounting's PLD accountant (connect-the-dots, its default grid) on what the JSON
    says ran: each segment's steps at (q, σ), then ``checks`` Gaussian checks of σ_c, or (for
    Brownian checks) one Gaussian of μ² = ``check_budget``."""
    from dp_accounting import dp_event, pld

    accountant = pld.PLDAccountant()
    q = run["sampling_prob"]
    for seg in run["segments"]:
        event = dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(seg["sigma"]))
        accountant.compose(event, seg["steps"])
    if check_budget is not None:
        accountant.compose(dp_event.GaussianDpEvent(check_budget**-0.5))
    elif run["checks"]:
        accountant.compose(dp_event.GaussianDpEvent(run["check_sigma"]), run["checks"])
    return float(accountant.get_epsilon(delta))


def _af_independent(run: dict[str, Any], grid: Any) -> float:
    """The independent ε of the filter an accuracy-first run reports: its steps and the first
    check budget covering its check time, at the grid's per-filter δ."""
    budget = next(b for b in grid.budgets if run["check_time"] <= b)
    return independent_eps(run, grid.delta_each, budget)


def test_grid_is_above_the_independent_accountant_at_every_unit() -> None:
    """The grid of units with Gaussian checks (doubling's)."""
    units = tuple(Unit(8, TINY.sigma, TINY.sampling_prob, TINY.check_sigma) for _ in range(3))
    grid = counting_grid(units)
    assert sum(grid.deltas) <= DELTA
    assert list(grid.eps) == sorted(grid.eps)
    for j in range(1, len(units) + 1):
        run = {
            "sampling_prob": TINY.sampling_prob,
            "segments": [{"steps": TINY.checkpoints[j - 1], "sigma": TINY.sigma}],
            "checks": j,
            "check_sigma": TINY.check_sigma,
        }
        assert grid.reported(j) >= independent_eps(run)


def test_checked_grid_is_above_the_independent_accountant_at_every_filter() -> None:
    grid = checked_grid(TINY.units, TINY.check_budgets)
    assert len(TINY.units) * len(grid.budgets) * grid.delta_each <= DELTA
    for j in range(1, len(TINY.units) + 1):
        run = {
            "sampling_prob": TINY.sampling_prob,
            "segments": [{"steps": TINY.checkpoints[j - 1], "sigma": TINY.sigma}],
        }
        for m, budget in enumerate(grid.budgets):
            assert grid.eps[j - 1][m] >= independent_eps(run, grid.delta_each, budget)
            # the cheapest filter admitting (j, S) is (j, first budget >= S)
            assert grid.reported(j, budget) == grid.eps[j - 1][m]
        assert grid.reported(j, 0.0) == grid.eps[j - 1][0]
        assert list(grid.eps[j - 1]) == sorted(grid.eps[j - 1])


def test_checked_grid_refuses_bad_input() -> None:
    with pytest.raises(InvalidParameter, match="units"):
        checked_grid([Unit(3, 1.0, 0.1, 2.0)], (0.1,))
    with pytest.raises(InvalidParameter, match="budgets"):
        checked_grid([Unit(3, 1.0, 0.1)], (0.2, 0.1))
    grid = checked_grid([Unit(3, 1.0, 0.1)], (0.1,))
    with pytest.raises(InvalidParameter, match="spent"):
        grid.reported(1, 0.2)
    with pytest.raises(InvalidParameter, match="units"):
        grid.reported(2, 0.0)


def test_ex_post_rdp_route_is_looser_than_the_grid_but_valid() -> None:
    units = (Unit(8, 2.0, 0.1, 3.0),) * 3
    rdp = ex_post_rdp_eps(units)
    run = {
        "sampling_prob": 0.1,
        "segments": [{"steps": 24, "sigma": 2.0}],
        "checks": 3,
        "check_sigma": 3.0,
    }
    assert rdp >= independent_eps(run)
    assert rdp > counting_grid(units).reported(3)
    brownian = ex_post_rdp_eps(TINY.units, check_time=3 / 9.0)  # the same checks as privacy time
    assert brownian == pytest.approx(rdp, rel=1e-9)


def test_calibrated_sigma_spends_at_most_its_budget() -> None:
    sigma = calibrate_sigma(1.5, 24, 0.1)
    assert steps_eps(sigma, 0.1, 24) <= 1.5
    assert steps_eps(sigma * 0.95, 0.1, 24) > 1.5  # and not far above the smallest such σ


def test_grid_refuses_bad_input() -> None:
    with pytest.raises(InvalidParameter, match="units"):
        counting_grid([])
    with pytest.raises(InvalidParameter, match="weights"):
        counting_grid([Unit(3, 1.0, 0.1)], weights=[1.0, 1.0])
    with pytest.raises(InvalidParameter, match="segments"):
        counting_grid([Unit(3, 1.0, 0.1)]).reported(2)


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`expost reproduce dp-sgd --quick --seeds 1` with the tiny setup in place of the real one."""
    pytest.importorskip("sklearn")
    out = tmp_path_factory.mktemp("dp-sgd")
    saved = learning_setup.SETUPS["breast_cancer"]
    learning_setup.SETUPS["breast_cancer"] = TINY
    try:
        code = main(["reproduce", "dp-sgd", "--quick", "--seeds", "1", "--out", str(out)])
    finally:
        learning_setup.SETUPS["breast_cancer"] = saved
    assert code == 0
    assert (out / "dp_sgd.png").stat().st_size > 0
    document: dict[str, Any] = json.loads(Path(out / "dp_sgd.json").read_text())
    return document


def test_quick_reproduction_writes_the_schema(tiny_runs: dict[str, Any]) -> None:
    runs = tiny_runs["runs"]
    assert sorted(r["method"] for r in runs) == ["accuracy-first", "doubling", "fixed", "oracle"]
    for r in runs:
        assert isinstance(r["steps"], int)
        assert r["steps"] == sum(s["steps"] for s in r["segments"])
        assert 0.0 < r["sampling_prob"] <= 1.0
        assert r["sigma"] > 0.0
        assert isinstance(r["checks"], int)
        assert r["checks"] >= 0
        assert r["eps"] > 0.0
        assert isinstance(r["met_target"], bool)
    first = next(r for r in runs if r["method"] == "accuracy-first")
    assert first["eps"] == first["eps_grid"]  # one route, fixed before the run
    assert first["route"] == "counting-grid"
    assert {row["method"] for row in tiny_runs["summary"]} == {
        "accuracy-first",
        "doubling",
        "fixed",
        "oracle",
    }


def test_every_reported_eps_is_above_the_independent_accountant(tiny_runs: dict[str, Any]) -> None:
    grid = TINY.grid
    for r in tiny_runs["runs"]:
        if r["method"] == "accuracy-first":
            assert r["eps"] >= _af_independent(r, grid)
        else:
            assert r["eps"] >= independent_eps(r), r["method"]


def test_an_under_reporting_run_is_caught(tiny_runs: dict[str, Any]) -> None:
    """Twin: a run that reports the ε of its steps alone (its checks left out) is caught."""
    grid = TINY.grid
    run = dict(next(r for r in tiny_runs["runs"] if r["method"] == "accuracy-first"))
    run["eps"] = steps_eps(TINY.sigma, TINY.sampling_prob, run["steps"], grid.delta_each)
    assert run["eps"] < _af_independent(run, grid)


def test_counts_in_json_match_the_schedule(tiny_runs: dict[str, Any]) -> None:
    first = next(r for r in tiny_runs["runs"] if r["method"] == "accuracy-first")
    assert first["steps"] == TINY.checkpoints[first["checks"] - 1]
    assert 0.0 < first["check_time"] <= TINY.check_budgets[-1]
    reported = TINY.grid.reported(first["checks"], first["check_time"])
    assert np.isclose(first["eps_grid"], reported)
