"""APC Sec. 7 with exact samplers (issues 22 and 23): `expost.apps.relative_error_exact`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from expost.apps import relative_error as re
from expost.apps.data import zipf_counts
from expost.apps.relative_error_exact import run_exact, skellam_boundary, skellam_times
from expost.cli import main
from expost.errors import InvalidParameter

SMALL = re.Settings(eps=2.0, grid_size=100)
DATA = np.tile(zipf_counts(np.random.default_rng(13), 8_000), (4, 1))


def test_doubling_exact_trials_spend_their_budget_and_no_more() -> None:
    """Spent <= rho; a trial ends only when a selection plus the first try no longer fit."""
    out = run_exact(DATA, "doubling-exact", SMALL, np.random.default_rng(1))
    assert np.all(out.spent <= SMALL.rho)
    assert np.all(out.spent > SMALL.rho - SMALL.em_rho - SMALL.start_eps2 / 2.0)
    assert np.all(out.precise <= out.returned)
    assert np.all(out.returned >= 1)


def test_skellam_trials_spend_their_ex_post_budget_and_no_more() -> None:
    """Ex-post eps spent <= eps; a trial ends only when a selection plus the cheapest release
    (ψ at the first time) no longer fit."""
    out = run_exact(DATA, "skellam", SMALL, np.random.default_rng(2))
    cheapest = float(skellam_boundary(SMALL)(float(skellam_times(SMALL)[0])))
    assert np.all(out.spent <= SMALL.eps)
    assert np.all(out.spent > SMALL.eps - SMALL.eps_em / 2.0 - cheapest)
    assert np.all(out.precise <= out.returned)
    assert np.all(out.returned >= 1)


def test_skellam_deltas_sum_to_at_most_delta() -> None:
    """Every round pays at least its selection (eps_EM/2 ex-post), so at most eps/(eps_EM/2)
    rounds: their deltas add up to at most delta."""
    psi = skellam_boundary(SMALL)
    most_rounds = math.floor(SMALL.eps / (SMALL.eps_em / 2.0))
    assert psi.delta * most_rounds <= SMALL.delta
    assert psi.delta * (most_rounds + 1) > SMALL.delta  # not needlessly small


def test_skellam_times_carry_the_brownian_grids_noise() -> None:
    """Noise variance 2λt at rate 1 equals the BM's 1/eps² at each level of its grid."""
    times = skellam_times(SMALL)
    eps2 = SMALL.open_grid().clip(math.sqrt(2.0 * SMALL.rho)).eps2
    np.testing.assert_allclose(2.0 * times, 1.0 / eps2, rtol=1e-15)
    assert np.all(np.diff(times) < 0.0)


def test_exact_runs_repeat_from_the_same_seed() -> None:
    for method in re.EXACT_METHODS:
        a = run_exact(DATA[:2], method, SMALL, np.random.default_rng(5))
        b = run_exact(DATA[:2], method, SMALL, np.random.default_rng(5))
        np.testing.assert_array_equal(a.returned, b.returned)
        np.testing.assert_array_equal(a.spent, b.spent)


def test_adding_exact_methods_leaves_the_float_rows_unchanged() -> None:
    both = re.reproduce((8_000,), 3, 2, SMALL, methods=re.ALL_METHODS)
    floats = re.reproduce((8_000,), 3, 2, SMALL)
    assert [r.method for r in both.rows] == list(re.ALL_METHODS)
    assert both.rows[:2] == floats.rows
    assert [r.unit for r in both.rows] == ["rho", "rho", "rho", "eps"]


def test_bad_methods_and_counts_are_refused() -> None:
    with pytest.raises(InvalidParameter, match="methods"):
        re.reproduce((8_000,), 2, 0, SMALL, methods=["nope"])
    with pytest.raises(InvalidParameter, match="methods"):
        re.reproduce((8_000,), 2, 0, SMALL, methods=[])
    with pytest.raises(InvalidParameter, match="counts"):
        run_exact(DATA + 0.5, "skellam", SMALL, np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="method"):
        run_exact(DATA, "bm", SMALL, np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="method"):
        re.run_batch(DATA, "skellam", SMALL, np.random.default_rng(0))


def test_cli_exact_prints_the_four_methods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "exact.json"
    base = ["reproduce", "relative-error", "--trials", "2", "--sizes", "8000", "--no-plot"]
    assert main([*base, "--eps", "2", "--exact", "--json", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "ExPostFilter(2, 1e-06)" in printed
    assert "exact exponential mechanism" in printed
    rows = json.loads(path.read_text())["rows"]
    assert [(r["method"], r["unit"]) for r in rows] == [
        ("bm", "rho"), ("doubling", "rho"), ("doubling-exact", "rho"), ("skellam", "eps"),
    ]  # fmt: skip
    assert main([*base, "--eps", "2", "--mechanism", "skellam", "--json", str(path)]) == 0
    assert [r["method"] for r in json.loads(path.read_text())["rows"]] == [
        "bm",
        "doubling",
        "skellam",
    ]
    assert main([*base, "--skellam-level", "0"]) == 2
