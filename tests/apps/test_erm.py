"""BNR Sec. 6 (expost.apps.erm, expost.apps.data): sensitivities, solvers, checkers, CLI.

The sensitivity tests replace one row of random small data sets (Hypothesis) and check the
released statistic moves by at most the stated ℓ2 / ℓ1 sensitivity; their twin is a replacement
that moves it by more than a too-small bound, caught by the same check. The law test compares the
vectorised experiment with one-run-at-a-time runs by the chi-square homogeneity test of
tests/stats.py at alpha = 1e-6, with a planted wrong twin (a different target) that must be
rejected.
"""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from expost.apps.data import (
    ERMData,
    load_bundled,
    normalise_rows,
    synthetic_classification,
    synthetic_regression,
)
from expost.apps.erm import (
    CHECKERS,
    METHODS,
    ERMTask,
    LogisticRegression,
    Mechanisms,
    RidgeRegression,
    privacy_levels,
    run_task,
    single_run,
)
from expost.apps.erm.simulation import halts
from expost.cli import main
from expost.errors import InvalidParameter
from tests import stats as st

FloatArray = npt.NDArray[np.float64]
SLACK = 1e-9


def _classification(n: int, d: int, seed: int) -> ERMData:
    rng = np.random.default_rng(seed)
    x = normalise_rows(rng.standard_normal((n, d))) * rng.uniform(0.2, 1.0, (n, 1))
    return ERMData(x, rng.choice([-1.0, 1.0], n), "random", "classification")


def _regression(n: int, d: int, seed: int) -> ERMData:
    rng = np.random.default_rng(seed)
    rows = normalise_rows(rng.standard_normal((n, d + 1))) * rng.uniform(0.2, 1.0, (n, 1))
    return ERMData(rows[:, :-1], rows[:, -1], "random", "regression")


def _replace_row(data: ERMData, seed: int) -> ERMData:
    """The neighbour with row 0 replaced by a fresh random row of the same kind."""
    other = (_classification if data.kind == "classification" else _regression)(2, data.d, seed)
    x, y = data.features.copy(), data.targets.copy()
    x[0], y[0] = other.features[0], other.targets[0]
    return ERMData(x, y, "neighbour", data.kind)


def moves_within(a: FloatArray, b: FloatArray, l2: float, l1: float) -> bool:
    diff = a - b
    return bool(
        np.linalg.norm(diff) <= l2 * (1.0 + SLACK) and np.abs(diff).sum() <= l1 * (1.0 + SLACK)
    )


sizes = hs.tuples(hs.integers(3, 25), hs.integers(1, 5), hs.integers(0, 2**31))


@settings(max_examples=25, deadline=None)
@given(sizes)
def test_logistic_minimiser_moves_at_most_its_sensitivity(case: tuple[int, int, int]) -> None:
    n, d, seed = case
    data = _classification(n, d, seed)
    task, neighbour = LogisticRegression(data), LogisticRegression(_replace_row(data, seed + 1))
    assert math.isclose(task.l2_sensitivity, 2.0 / (n * 0.05))
    assert math.isclose(task.l1_sensitivity, 2.0 * math.sqrt(d) / (n * 0.05))
    assert moves_within(task.value, neighbour.value, task.l2_sensitivity, task.l1_sensitivity)


@settings(max_examples=25, deadline=None)
@given(sizes)
def test_ridge_statistic_moves_at_most_its_sensitivity(case: tuple[int, int, int]) -> None:
    n, d, seed = case
    data = _regression(n, d, seed)
    task, neighbour = RidgeRegression(data), RidgeRegression(_replace_row(data, seed + 1))
    assert task.value.size == d * (d + 1) // 2 + d
    assert (task.l2_sensitivity, task.l1_sensitivity) == (2.0, 2.0 * d + 2.0 * math.sqrt(d))
    assert moves_within(task.value, neighbour.value, task.l2_sensitivity, task.l1_sensitivity)


def test_sensitivity_check_rejects_a_too_small_bound() -> None:
    """Twin: replacing x = e1 by e2 (y = 0) moves upper(XᵀX) by sqrt(2) > 1."""
    x = np.zeros((3, 2))
    x[:, 0] = 1.0
    data = ERMData(x, np.zeros(3), "e1", "regression")
    moved = ERMData(np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]]), np.zeros(3), "e2", "regression")
    a, b = RidgeRegression(data).value, RidgeRegression(moved).value
    assert math.isclose(float(np.linalg.norm(a - b)), math.sqrt(2.0))
    assert moves_within(a, b, 2.0, 2.0 * 2 + 2.0 * math.sqrt(2))
    assert not moves_within(a, b, 1.0, 100.0)


@settings(max_examples=25, deadline=None)
@given(sizes, hs.sampled_from(["classification", "regression"]))
def test_training_loss_moves_at_most_the_check_sensitivity(
    case: tuple[int, int, int], kind: str
) -> None:
    """The accuracy check's utility: |L(β; D) − L(β; D')| <= Δu for every released model."""
    n, d, seed = case
    data = (_classification if kind == "classification" else _regression)(n, d, seed)
    neighbour = _replace_row(data, seed + 1)
    make = LogisticRegression if kind == "classification" else RidgeRegression
    task, other = make(data), make(neighbour)
    rng = np.random.default_rng(seed)
    released = task.value + 50.0 * rng.standard_normal((20, task.value.size))
    models = task.models(released)
    assert np.all(np.linalg.norm(models, axis=1) <= task.radius * (1.0 + SLACK))
    gap = np.abs(task.model_loss(models) - other.model_loss(models))
    assert np.all(gap <= task.utility_sensitivity * (1.0 + SLACK))


def test_check_sensitivity_needs_the_projection() -> None:
    """Twin: a model outside the ball (not projected) moves the loss by more than Δu."""
    x = np.zeros((4, 2))
    x[:, 0] = 1.0
    data = ERMData(x, np.ones(4), "a", "classification")
    flipped = ERMData(x, np.array([-1.0, 1.0, 1.0, 1.0]), "b", "classification")
    task, other = LogisticRegression(data), LogisticRegression(flipped)
    far = np.array([[100.0, 0.0]])
    assert abs(task.model_loss(far)[0] - other.model_loss(far)[0]) > task.utility_sensitivity
    near = task.models(far)
    assert abs(task.model_loss(near)[0] - other.model_loss(near)[0]) <= task.utility_sensitivity


def test_ridge_solver_is_the_closed_form() -> None:
    data = synthetic_regression(np.random.default_rng(1), n=300, d=6)
    task = RidgeRegression(data)
    x, y = data.features, data.targets
    closed = np.linalg.solve(x.T @ x + 300 * 0.05 * np.eye(6), x.T @ y)
    np.testing.assert_allclose(task.models(task.value), closed, rtol=1e-12, atol=1e-14)
    direct = 0.5 * np.mean((x @ closed - y) ** 2) + 0.025 * closed @ closed
    np.testing.assert_allclose(task.model_loss(closed), direct, rtol=1e-12)


def test_logistic_solver_finds_the_minimiser() -> None:
    data = synthetic_classification(np.random.default_rng(2), n=500, d=5)
    task = LogisticRegression(data)
    x, y, beta = data.features, data.targets, task.value
    gradient = -(x.T @ (y / (1.0 + np.exp(y * (x @ beta))))) / 500 + 0.05 * beta
    assert np.linalg.norm(gradient) < 1e-8
    nearby = beta + 1e-3 * np.random.default_rng(3).standard_normal((50, 5))
    assert np.all(task.model_loss(nearby) > task.model_loss(beta))
    direct = np.mean(np.log1p(np.exp(-y * (x @ beta)))) + 0.025 * beta @ beta
    np.testing.assert_allclose(task.model_loss(beta), direct, rtol=1e-12)


class SpyTask(ERMTask):
    """A task whose data cannot be read: every access to the data goes through ``loss``."""

    __slots__ = ("_inner", "calls")

    def __init__(self, inner: ERMTask) -> None:
        self._inner = inner
        self.calls: list[FloatArray] = []

    name = "spy"

    @property
    def data(self) -> ERMData:  # type: ignore[override]  # the data is deliberately unreadable
        raise AssertionError("the private data was read outside the utility")

    @property
    def value(self) -> FloatArray:
        return self._inner.value

    @property
    def l2_sensitivity(self) -> float:
        return self._inner.l2_sensitivity

    @property
    def l1_sensitivity(self) -> float:
        return self._inner.l1_sensitivity

    @property
    def radius(self) -> float:
        return self._inner.radius

    @property
    def loss_range(self) -> float:
        return self._inner.loss_range

    @property
    def utility_sensitivity(self) -> float:
        return self._inner.utility_sensitivity

    def loss_on(self, data: ERMData, models: npt.ArrayLike) -> FloatArray:
        raise AssertionError("the spy has no validation set: the check must use loss")

    def models(self, released: npt.ArrayLike) -> FloatArray:
        return self._inner.models(released)

    def model_loss(self, models: npt.ArrayLike) -> FloatArray:
        return self._inner.model_loss(models)

    def loss(self, released: npt.ArrayLike) -> FloatArray:
        self.calls.append(np.array(released))
        return self._inner.loss(released)


@pytest.fixture(scope="module")
def small_logistic() -> LogisticRegression:
    return LogisticRegression(synthetic_classification(np.random.default_rng(4), n=400, d=4))


LEVELS = privacy_levels(0.16, 8.0, 12)


def test_reduced_above_threshold_reads_data_only_through_the_utility(
    small_logistic: LogisticRegression,
) -> None:
    spy = SpyTask(small_logistic)
    with pytest.raises(AssertionError):
        _ = spy.data  # the guard works: reading the data outside the utility fails
    mechanisms = Mechanisms.build(spy, LEVELS)
    target = float(small_logistic.model_loss(small_logistic.value)) + 0.02
    for method in METHODS:
        spy.calls.clear()
        cost, _ = single_run(
            spy, mechanisms, method, "reduced_above_threshold", target, np.random.default_rng(5)
        )
        assert 1 <= len(spy.calls) <= LEVELS.size
        assert all(call.shape == (4,) for call in spy.calls)
        assert cost in 2.0 * mechanisms.bounds[method]
        spy.calls.clear()
        cost, _ = single_run(
            spy, mechanisms, method, "validation", target, np.random.default_rng(5)
        )
        assert 1 <= len(spy.calls) <= LEVELS.size
        assert cost in mechanisms.costs[method]["validation"]
    losses = np.random.default_rng(6).uniform(0.0, 1.0, (50, LEVELS.size))
    check = (mechanisms.check, losses)
    same = [halts(losses, LEVELS, 0.5, 0.01, np.random.default_rng(7), check) for _ in range(2)]
    for checker in CHECKERS:
        np.testing.assert_array_equal(same[0][checker], same[1][checker])


def _vector_and_single(
    task: ERMTask, method: str, checker: str, target: float, single_target: float, runs: int
) -> tuple[FloatArray, FloatArray]:
    result = run_task(task, LEVELS, runs, np.random.SeedSequence(8), target=target)
    mechanisms = Mechanisms.build(task, LEVELS)
    rng = np.random.default_rng(9)
    single = np.array(
        [
            single_run(task, mechanisms, method, checker, single_target, rng)[0]  # type: ignore[arg-type]
            for _ in range(runs)
        ]
    )
    vector = result.methods[method].ex_post[checker]  # type: ignore[index]
    return np.round(vector, 9), np.round(single, 9)


@pytest.mark.parametrize(
    ("method", "checker"),
    [
        ("BM", "public"),
        ("BM", "reduced_above_threshold"),
        ("LNR", "above_threshold"),
        ("BM", "validation"),
    ],
)
def test_vectorised_runs_match_single_runs(
    small_logistic: LogisticRegression, method: str, checker: str
) -> None:
    target = float(small_logistic.model_loss(small_logistic.value)) + 0.02
    vector, single = _vector_and_single(small_logistic, method, checker, target, target, 300)
    assert st.same_discrete_law(vector, single)


def test_law_comparison_rejects_a_wrong_target(small_logistic: LogisticRegression) -> None:
    """Twin: single runs aiming at a looser target stop earlier, and the test sees it."""
    base = float(small_logistic.model_loss(small_logistic.value))
    vector, single = _vector_and_single(
        small_logistic, "BM", "public", base + 0.02, base + 0.06, 300
    )
    assert not st.same_discrete_law(vector, single)


def test_run_task_is_seeded_and_reports_every_checker(small_logistic: LogisticRegression) -> None:
    target = float(small_logistic.model_loss(small_logistic.value)) + 0.02
    a, b, c = (
        run_task(small_logistic, LEVELS, 20, np.random.SeedSequence(s), target=target)
        for s in (10, 10, 11)
    )
    reused = np.random.SeedSequence(10)
    run_task(small_logistic, LEVELS, 20, reused, target=target)
    again = run_task(small_logistic, LEVELS, 20, reused, target=target)  # same object, same runs
    for method in METHODS:
        for checker in CHECKERS:
            np.testing.assert_array_equal(
                a.methods[method].ex_post[checker], b.methods[method].ex_post[checker]
            )
        np.testing.assert_array_equal(
            a.methods[method].curve["mean"], b.methods[method].curve["mean"]
        )
        assert not np.array_equal(a.methods[method].curve["mean"], c.methods[method].curve["mean"])
        np.testing.assert_array_equal(
            again.methods[method].curve["mean"], a.methods[method].curve["mean"]
        )
        curve = a.methods[method].curve
        assert np.all(curve["low"] <= curve["mean"])
        assert np.all(curve["mean"] <= curve["high"])


def test_synthetic_data_have_the_paper_sizes_and_reachable_targets() -> None:
    cls = synthetic_classification(np.random.default_rng(0))
    reg = synthetic_regression(np.random.default_rng(0))
    assert (cls.n, cls.d, reg.n, reg.d) == (10_000, 38, 10_000, 77)
    np.testing.assert_allclose(np.linalg.norm(cls.features, axis=1), 1.0)
    np.testing.assert_allclose(np.hypot(np.linalg.norm(reg.features, axis=1), reg.targets), 1.0)
    assert 0.39 < LogisticRegression(cls).model_loss(LogisticRegression(cls).value) < 0.41
    ridge = RidgeRegression(reg)
    assert 0.005 < ridge.model_loss(ridge.models(ridge.value)) < 0.025


@pytest.mark.parametrize(
    ("features", "targets", "kind"),
    [
        (np.ones((3, 2)), np.ones(3), "classification"),  # rows of norm sqrt(2)
        (np.zeros((3, 2)), np.array([1.0, 0.0, 1.0]), "classification"),  # label 0
        (np.zeros((3, 2)), np.ones(4), "regression"),  # shape
        (np.full((3, 2), np.nan), np.zeros(3), "regression"),
        (np.zeros((3, 2)), np.zeros(3), "clustering"),
    ],
)
def test_bad_data_is_rejected(features: FloatArray, targets: FloatArray, kind: str) -> None:
    with pytest.raises(InvalidParameter):
        ERMData(features, targets, "bad", kind)  # type: ignore[arg-type]


def test_bad_parameters_are_rejected(small_logistic: LogisticRegression) -> None:
    with pytest.raises(InvalidParameter):
        RidgeRegression(small_logistic.data)
    with pytest.raises(InvalidParameter):
        small_logistic.models(np.zeros(5))
    with pytest.raises(InvalidParameter):
        privacy_levels(1.0, 0.5)
    with pytest.raises(InvalidParameter):
        run_task(small_logistic, LEVELS, 1, np.random.SeedSequence(0), target=0.4)
    with pytest.raises(InvalidParameter):
        load_bundled("iris")


def test_loader_says_how_to_get_scikit_learn(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def no_sklearn(name: str, package: str | None = None) -> ModuleType:
        if name.startswith("sklearn"):
            raise ImportError("No module named 'sklearn'")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", no_sklearn)
    with pytest.raises(ImportError, match=r"expost\[erm\]"):
        load_bundled("breast_cancer")
    assert main(["reproduce", "erm", "--data", "diabetes", "--runs", "2"]) == 2


def _sklearn_available() -> bool:
    try:
        importlib.import_module("sklearn.datasets")
    except ImportError:
        return False
    return True


def test_cli_writes_figures_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, summary_path = tmp_path / "figs", tmp_path / "summary.json"
    code = main(["reproduce", "erm", "--runs", "3", "--out", str(out), "--json", str(summary_path)])
    assert code == 0
    assert (out / "figure2.png").stat().st_size > 0
    assert (out / "figure3.png").stat().st_size > 0
    summary = json.loads(summary_path.read_text())
    assert summary["runs"] == 3
    assert set(summary["tasks"]) == {"logistic", "ridge"}
    for task in summary["tasks"].values():
        assert len(task["levels"]) == len(task["loss_curve"]["BM"]["mean"])
        for method in METHODS:
            for checker in CHECKERS:
                entry = task["ex_post_loss"][method][checker]
                assert entry["q25"] <= entry["median"] <= entry["q75"]
                assert 0.0 <= entry["target_met_fraction"] <= entry["stopped_fraction"] <= 1.0
                assert ("median_check_rho" in entry) == (checker == "validation")
        assert task["validation_set"] == "held out, n = 10000"
    printed = capsys.readouterr().out
    assert "reduced_above_threshold" in printed
    assert "validation check on held out" in printed


def test_cli_is_seeded_and_checks_its_arguments(tmp_path: Path) -> None:
    """Same seed, same summary (up to timings); the real data when scikit-learn is there."""
    data = "breast_cancer" if _sklearn_available() else "synthetic"
    runs = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.json"
        args = ["reproduce", "erm", "--task", "logistic", "--data", data, "--runs", "4"]
        assert main([*args, "--seed", "3", "--out", str(tmp_path / name), "--json", str(path)]) == 0
        summary = json.loads(path.read_text())
        for task in summary["tasks"].values():
            task.pop("seconds")
        runs.append(summary)
    assert runs[0] == runs[1]
    assert main(["reproduce", "erm", "--task", "ridge", "--data", "breast_cancer"]) == 2
    assert main(["reproduce", "erm", "--runs", "1"]) == 2


def test_printed_ex_post_losses_are_upper_bounds(small_logistic: LogisticRegression) -> None:
    """Issue 21: the LNR bounds Δ1/t and the AboveThreshold sums E_N + 0.5 are rounded up, never
    below the exact rationals; each round-to-nearest twin falls below somewhere."""
    from fractions import Fraction

    from expost.apps.erm.simulation import _COST
    from expost.mechanisms.noise_reduction import LaplaceNoiseReduction

    mechanisms = Mechanisms.build(small_logistic, LEVELS)
    np.testing.assert_array_equal(mechanisms.bounds["LNR"], mechanisms.lnr.ex_post_bounds())
    scales = np.geomspace(100.0, 0.01, 2000)
    exact = [Fraction(3.0) / Fraction(t) for t in scales.tolist()]
    bounds = LaplaceNoiseReduction(scales, 3.0).ex_post_bounds().tolist()
    assert all(Fraction(b) >= q for b, q in zip(bounds, exact, strict=True))
    nearest = (3.0 / scales).tolist()
    assert any(Fraction(b) < q for b, q in zip(nearest, exact, strict=True))
    levels = np.geomspace(0.01, 50.0, 2000)
    want = [Fraction(x) + Fraction(0.5) for x in levels.tolist()]
    sums = _COST["above_threshold"](levels).tolist()
    assert all(Fraction(s) >= w for s, w in zip(sums, want, strict=True))
    assert any(Fraction(s) < w for s, w in zip((levels + 0.5).tolist(), want, strict=True))
