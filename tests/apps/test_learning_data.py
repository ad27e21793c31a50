"""Accuracy-first DP-SGD's data: public preprocessing (row by row), the large synthetic set, and
results that do not depend on the number of processes."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from expost.apps.learning import setup as learning_setup
from expost.apps.learning.data import RANGES, load_rows, synthetic_rows
from expost.apps.learning.experiment import run_all
from expost.apps.learning.setup import DOCUMENTED_ROWS, Setup


@pytest.mark.parametrize("name", ["breast_cancer", "wine", "digits"])
def test_preprocessing_is_row_by_row(name: str) -> None:
    """A row's prepared features do not depend on the other rows: the first 7 rows prepared
    alone equal the same rows prepared with the whole set (no column statistic is used)."""
    sklearn = pytest.importorskip("sklearn.datasets")
    from expost.apps.learning import data

    x, _ = getattr(sklearn, f"load_{name}")(return_X_y=True)
    full = load_rows(name).features[:7]
    if name == "digits":
        pooled = x[:7].reshape(-1, 4, 2, 4, 2).sum(axis=(2, 4)).reshape(-1, 16) / 64.0
        alone = data._prepared(pooled - pooled.mean(axis=1, keepdims=True))
    else:
        alone = data._prepared(data._log_range(x[:7], RANGES[name]))
    np.testing.assert_allclose(full, alone, rtol=0, atol=0)
    norms = np.linalg.norm(full[:, :-1], axis=1)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-12)


def test_documented_ranges_cover_every_column_and_row() -> None:
    """The documented ranges have one (min, max) per column; they are rounded to about three
    digits, so a published value may lie just outside, by less than 1 % of the range's width (the
    clipping to [−1, 1] then moves it by less than that)."""
    sklearn = pytest.importorskip("sklearn.datasets")
    for name in ("breast_cancer", "wine"):
        x, _ = getattr(sklearn, f"load_{name}")(return_X_y=True)
        low, high = np.array(RANGES[name]).T
        assert low.size == x.shape[1]
        slack = 0.01 * (high - low)
        assert np.all(x >= low - slack)
        assert np.all(x <= high + slack)
        assert not np.all(x >= low)  # the check is not vacuous: rounding does bind somewhere


def test_documented_row_counts_are_the_published_sizes() -> None:
    pytest.importorskip("sklearn")
    for name, n in DOCUMENTED_ROWS.items():
        if name != "synthetic_large":
            assert load_rows(name).n == n
    large = synthetic_rows(200_000, 20, 20_261_128)
    assert large.n == DOCUMENTED_ROWS["synthetic_large"]
    assert np.array_equal(large.labels[:50], load_rows("synthetic_large").labels[:50])


TINY = Setup(
    "synthetic",
    (0.8,),
    sampling_prob=0.05,
    learning_rate=2.0,
    steps=12,
    sigma=2.0,
    checkpoints=(4, 8, 12),
    check_levels=(0.001, 0.004),
    check_budgets=(0.008,),
    check_sigma=16.0,
    margins=(0.0,),
    fixed_eps=2.0,
    doubling_eps0=1.0,
    doubling_attempts=2,
    oracle_grid=(1.0, 2.0),
)


def test_results_do_not_depend_on_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same runs, in the same order, on one process and on two (fork start)."""
    monkeypatch.setitem(learning_setup.SETUPS, "synthetic", TINY)
    importlib.import_module("expost.apps.learning.experiment")
    tasks = [("synthetic", seed, None) for seed in range(3)]
    one = [r.to_json() for r in run_all(tasks, 1)]
    two = [r.to_json() for r in run_all(tasks, 2)]
    assert one == two
    assert len({r["seed"] for r in one}) == 3
