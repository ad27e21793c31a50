"""APC Sec. 7 (relative-error counts): data, the batch-support additions, both engines, the CLI.

Statistical checks use tests/stats.py at false-alarm level 1e-6 and each has a planted-bug
twin that the same check rejects. The engines are compared on one fixed histogram (so trials
are independent draws within each engine) at a reduced budget that keeps the interactive
engine, one `PrivateSession` per trial, fast.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
import pytest

from expost.apps import relative_error as re
from expost.apps.data import load_counts, zipf_counts, zipf_probabilities
from expost.cli import main
from expost.errors import InvalidParameter
from expost.grids import EpsilonGrid, OpenEpsilonGrid
from expost.mechanisms import BrownianNoiseReduction, DoublingMethod, ExponentialMechanism
from expost.mechanisms.trials import brownian_trials
from expost.stopping import AtIndex, RelativeError
from tests import stats as st

FloatArray = npt.NDArray[np.float64]


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- data ----------------------------------------------------------------------------------------


def test_zipf_probabilities_and_counts_follow_the_law() -> None:
    p = zipf_probabilities()
    assert p.shape == (300,)
    assert math.isclose(p.sum(), 1.0)
    assert np.all(np.diff(p) < 0)
    assert math.isclose(p[0] / p[15], 16.0**0.75)
    data = zipf_counts(_rng(0), 8_000, 50)
    assert data.shape == (50, 300)
    assert np.all(data.sum(axis=1) == 8_000)
    totals = data.sum(axis=0).astype(int)
    draws = 8_000 * 50

    def fits(q: FloatArray) -> bool:  # exact binomial per element, Bonferroni over 300
        return all(
            st.proportion_is_consistent(int(h), draws, float(pk), st.ALPHA / q.size)
            for h, pk in zip(totals, q, strict=True)
        )

    assert fits(p)
    assert not fits(zipf_probabilities(exponent=0.7))  # twin: a slightly flatter law
    assert zipf_counts(_rng(1), 100).shape == (300,)
    np.testing.assert_array_equal(zipf_counts(_rng(2), 500, 3), zipf_counts(_rng(2), 500, 3))


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("a.csv", "5\n3\n0\n", [5, 3, 0]),
        ("b.csv", "word,count\nthe,10\nof,7.0\n\n", [10, 7]),
        ("c.json", "[4, 2, 1]", [4, 2, 1]),
        ("d.json", '{"the": 9, "a": 8}', [9, 8]),
    ],
)
def test_load_counts(tmp_path: Path, name: str, text: str, expected: list[float]) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    np.testing.assert_array_equal(load_counts(path), expected)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.csv", "5\n-1\n"),
        ("b.csv", "5\nnan\n"),
        ("c.csv", "x,1\ny,two\n"),
        ("d.csv", "7\n"),
        ("e.json", "[1, 2"),
        ("f.json", '"text"'),
        ("g.json", '[1, "a"]'),
        ("h.json", "[[1, 2], [3, 4]]"),
    ],
)
def test_load_counts_rejects_bad_files(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidParameter, match="counts"):
        load_counts(path)
    with pytest.raises(InvalidParameter, match="cannot be read"):
        load_counts(tmp_path / "missing.csv")


# --- per-trial Brownian walks, per-trial times, doubling caps, clip_each -------------------------


def test_clip_each_rows_are_the_clipped_grids() -> None:
    # start = 2⁻¹⁴ is a float's square, so the first cap closes the grid at its first point exactly
    # (clipping keeps eps² <= max_eps² exactly: sqrt(1e-4)² is below the float 1e-4, issue 21)
    start = 2.0**-14
    caps = np.sqrt([start, 1.0000001e-4, 0.0123, 1.3, 2.706])
    for open_grid in (
        OpenEpsilonGrid("linear", start, num=1000),
        OpenEpsilonGrid("geometric", start, ratio=1.0103),
    ):
        rows = open_grid.clip_each(caps)
        table = rows.eps2()
        for i, m in enumerate(caps):
            own = open_grid.clip(float(m)).eps2
            np.testing.assert_array_equal(table[i, : own.size], own)
            assert np.all(table[i, own.size :] == own[-1])  # padded by repeating the last level
        np.testing.assert_array_equal(rows.at(np.full(5, 7)), table[:, 7])
    with pytest.raises(InvalidParameter):
        open_grid.clip_each([0.001])


BM_GRID = EpsilonGrid.linear_in_eps2(0.02, 1.0, 25)


def _stop_law_matches(a_index: FloatArray, a_values: FloatArray, b: object) -> bool:
    index, values = b.end_index, b.value[:, 0]  # type: ignore[attr-defined]
    return st.same_discrete_law(a_index, index) and st.same_law(a_values, values)


def test_brownian_trials_matches_run_batch_per_group() -> None:
    """Interleaved trials with two values and two grids: each group has run_batch's law."""
    assert isinstance(BM_GRID, EpsilonGrid)
    short = EpsilonGrid.from_eps2(BM_GRID.eps2[:12])
    n = 4_000
    group = np.arange(n) % 2 == 1
    values = np.where(group, 6.0, 10.0)
    rows = np.where(group[:, None], np.r_[short.eps2, [short.eps2[-1]] * 13], BM_GRID.eps2)
    out = brownian_trials(values, rows, RelativeError(0.25), _rng(5), chunk=4)
    assert out.cost is not None
    np.testing.assert_allclose(out.cost, rows[np.arange(n), out.end_index] / 2.0)
    for value, grid, mask in ((10.0, BM_GRID, ~group), (6.0, short, group)):
        ref = BrownianNoiseReduction(grid, stop=RelativeError(0.25)).run_batch(
            value, 2_000, _rng(6)
        )
        # a padded row's repeats never stop where its last real level did not
        own_index = np.minimum(out.end_index[mask], len(grid) - 1)
        own_values = out.value[mask, 0]
        assert _stop_law_matches(own_index, own_values, ref)
    wrong = BrownianNoiseReduction(  # twin: 1.5 times the noise variance
        EpsilonGrid.from_eps2(BM_GRID.eps2 / 1.5), stop=RelativeError(0.25)
    ).run_batch(10.0, 2_000, _rng(7))
    assert not _stop_law_matches(out.end_index[~group], out.value[~group, 0], wrong)


def test_brownian_trials_clipped_grids_equal_explicit_rows() -> None:
    open_grid = OpenEpsilonGrid.linear_in_eps2(1e-4, 200)
    assert isinstance(open_grid, OpenEpsilonGrid)
    grids = open_grid.clip_each(np.sqrt(_rng(8).uniform(1e-4, 0.05, 300)))
    y = _rng(9).uniform(20.0, 200.0, 300)
    a = brownian_trials(y, grids, RelativeError(0.1), _rng(10), chunk=8)
    b = brownian_trials(y, grids.eps2(), RelativeError(0.1), _rng(10), chunk=8)
    for name in ("end_index", "stop_index", "value", "times", "eps", "stopped", "cost"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    with pytest.raises(InvalidParameter):
        brownian_trials(y, grids.eps2()[:, ::-1], RelativeError(0.1), _rng(0))
    with pytest.raises(InvalidParameter):
        brownian_trials(y[:5], grids, RelativeError(0.1), _rng(0))
    with pytest.raises(InvalidParameter):
        brownian_trials(y, grids, lambda released: True, _rng(0))


def test_doubling_run_trials_caps_and_matches_run_batch() -> None:
    d = DoublingMethod(1.0, 1e-3, 2.0, stop=RelativeError(0.1), max_tries=10)
    same = d.run_trials(np.full(500, 40.0), _rng(11))
    ref = d.run_batch(40.0, 500, _rng(11))
    for name in ("stop_index", "stopped", "tries", "cost", "value"):
        np.testing.assert_array_equal(getattr(same, name), getattr(ref, name))
    caps = _rng(12).integers(1, 11, 500)
    capped = d.run_trials(np.full(500, 40.0), _rng(11), max_tries=caps)
    assert np.all(capped.tries <= caps)
    np.testing.assert_array_equal(capped.stopped, ref.stopped & (ref.stop_index < caps))
    np.testing.assert_array_equal(capped.cost, d.cumulative_cost[capped.tries - 1])
    with pytest.raises(InvalidParameter):
        d.run_trials(np.full(3, 40.0), _rng(0), max_tries=np.array([0, 1, 2]))
    with pytest.raises(InvalidParameter):
        DoublingMethod(1.0, 1e-3, stop=AtIndex(0), max_tries=2).run_trials([1.0], _rng(0), [1, 2])


def test_rank_batch_is_sequential_selection_without_replacement() -> None:
    scores = np.array([0.0, 1.0, 2.0, 3.0, 3.5])
    em = ExponentialMechanism(1.0, monotone=True)
    n = 20_000
    order = em.rank_batch(scores, n, _rng(18))
    assert np.all(np.sort(order, axis=1) == np.arange(5))  # each row a permutation
    rng = _rng(19)
    first = em.run_batch(scores, n, rng)
    left = np.ones((n, 5), dtype=bool)
    left[np.arange(n), first] = False
    second = em.run_batch(scores, n, rng, candidates=left)
    sequential = 5 * first + second
    assert st.same_discrete_law(5 * order[:, 0] + order[:, 1], sequential)
    hot = ExponentialMechanism(1.3, monotone=True).rank_batch(scores, n, _rng(20))  # twin
    assert not st.same_discrete_law(5 * hot[:, 0] + hot[:, 1], sequential)
    with pytest.raises(InvalidParameter):
        em.rank_batch(np.ones((3, 5)), 2, _rng(0))


# --- the two engines agree ---------------------------------------------------------------------

SMALL = re.Settings(eps=2.0, grid_size=100)
DATA = zipf_counts(_rng(13), 8_000)


def _shape(grid: str) -> Literal["linear", "geometric"]:
    return "linear" if grid == "linear" else "geometric"


def _engines_agree(a: re.TrialResults, b: re.TrialResults, rho: float) -> bool:
    """Counts returned (chi-square), precision and spend (KS). Spends are compared to 1e-12 of
    the budget ``rho``: the batch's conservative rounding keeps it a few ulps below the session's."""
    return (
        st.same_discrete_law(a.returned, b.returned)
        and st.same_law(a.precision, b.precision)
        and st.same_law(np.round(a.spent / rho, 12), np.round(b.spent / rho, 12))
    )


def _accounting(name: str) -> Literal["zcdp", "gdp"]:
    return "gdp" if name == "gdp" else "zcdp"


@pytest.mark.parametrize(
    ("method", "grid", "accounting"),
    [
        ("bm", "linear", "zcdp"),
        ("doubling", "linear", "zcdp"),
        ("bm", "geometric", "zcdp"),
        ("bm", "linear", "gdp"),
        ("doubling", "linear", "gdp"),
    ],
)
def test_batch_engine_matches_the_session_engine(method: str, grid: str, accounting: str) -> None:
    """150 session trials against 3000 batch trials; the batch draws the exponential
    mechanism's choices at once (`rank_batch`), the session one round at a time."""

    def settings_at(alpha: float) -> re.Settings:
        return re.Settings(
            eps=2.0,
            grid_size=100,
            alpha=alpha,
            grid=_shape(grid),
            accounting=_accounting(accounting),
        )

    settings = settings_at(0.1)
    slow = re.run_interactive(np.tile(DATA, (150, 1)), method, settings, _rng(14))
    fast = re.run_batch(np.tile(DATA, (3_000, 1)), method, settings, _rng(15))
    assert fast.returned.mean() > 4.0  # several rounds per trial
    assert _engines_agree(slow, fast, settings.rho)
    twin = settings_at(0.12)  # twin: 20% looser rule
    twin_fast = re.run_batch(np.tile(DATA, (3_000, 1)), method, twin, _rng(16))
    assert not _engines_agree(slow, twin_fast, settings.rho)


def test_gdp_trials_never_exceed_the_gdp_budget() -> None:
    """Under gdp both engines stay within mu² (spends are reported in rho units, mu²/2), and
    the budget is the GDP one: larger than the zCDP filter's for the same (eps, delta)."""
    settings = re.Settings(eps=2.0, grid_size=100, accounting="gdp")
    mu2 = settings.filter().budget
    assert settings.rho == mu2 / 2.0
    assert settings.rho > re.Settings(eps=2.0, grid_size=100).rho
    for method in re.METHODS:
        slow = re.run_interactive(np.tile(DATA, (20, 1)), method, settings, _rng(18))
        fast = re.run_batch(np.tile(DATA, (500, 1)), method, settings, _rng(19))
        for out in (slow, fast):
            assert np.all(2.0 * out.spent <= mu2)
            assert np.all(out.spent > settings.rho - settings.start_eps2 - settings.em_rho)


def test_interactive_trials_respect_the_budget() -> None:
    out = re.run_interactive(np.tile(DATA, (5, 1)), "bm", SMALL, _rng(17))
    rho = SMALL.rho
    assert np.all(out.spent <= rho)
    assert np.all(out.spent > rho - SMALL.start_eps2)
    assert np.all(out.precise <= out.returned)


# --- the paper's finding, on a reduced run -------------------------------------------------------


def _bm_wins(report: re.Report) -> bool:
    """BM returns more counts than doubling at every n, precision within 3 points."""
    by = {(r.n, r.method): r for r in report.rows}
    sizes = {r.n for r in report.rows}
    return all(
        by[n, "bm"].results_mean > by[n, "doubling"].results_mean
        and abs(by[n, "bm"].precision_mean - by[n, "doubling"].precision_mean) < 0.03
        for n in sizes
    )


def test_bm_returns_more_counts_with_similar_precision() -> None:
    """400 trials per size. At 1000 trials the precision gap is at most 1.6 points with sd <= 0.04
    per method, so its standard error here is <= 0.04·sqrt(2/400) = 0.28 points: 3 points is
    > 5 standard errors away; the counts differ by >= 4 with standard error <= 0.3."""
    report = re.reproduce(trials=400, seed=1)
    assert _bm_wins(report)
    assert report.rows[0].trials == 400
    assert len(report.rows) == 10
    swapped = re.Report(  # twin: the methods' labels exchanged
        tuple(
            re.Row(r.n, "doubling" if r.method == "bm" else "bm", *_numbers(r)) for r in report.rows
        ),
        1,
        0.0,
        report.settings,
    )
    assert not _bm_wins(swapped)


def _numbers(r: re.Row) -> tuple[int, float, float, float, float, float]:
    return (
        r.trials,
        r.results_mean,
        r.results_sd,
        r.precision_mean,
        r.precision_sd,
        r.spend_mean,
    )


# --- settings and the command line ---------------------------------------------------------------


def test_settings_validate() -> None:
    assert math.isclose(re.Settings().rho, 1.35301, rel_tol=1e-5)
    assert re.Settings(conversion="cks").rho > re.Settings().rho
    geometric = re.Settings(grid="geometric")
    assert math.isclose(1e-4 * geometric.ratio**999, 2.0 * geometric.rho, rel_tol=1e-9)
    for bad in (
        {"alpha": 0.0},
        {"eps_em": -1.0},
        {"delta": 0.0},
        {"grid_size": 1},
        {"grid": "cubic"},
        {"conversion": "rdp"},
        {"start_eps2": 10.0},
        {"stop_alpha": 0.0},
        {"accounting": "rdp"},
        {"accounting": "gdp", "conversion": "cks"},
    ):
        with pytest.raises(InvalidParameter):
            re.Settings(**bad)
    with pytest.raises(InvalidParameter):
        re.run_batch(np.ones((2, 1)), "bm", SMALL, _rng(0))
    with pytest.raises(InvalidParameter):
        re.run_batch(np.ones((2, 3)), "gaussian", SMALL, _rng(0))


def test_cli_table_json_and_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, path = tmp_path / "fig", tmp_path / "r.json"
    args = ["reproduce", "relative-error", "--trials", "20", "--sizes", "8000", "16000"]
    assert main([*args, "--seed", "4", "--out", str(out), "--json", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "doubling" in printed
    assert "16000" in printed
    assert (out / "relative_error.png").stat().st_size > 10_000
    data = json.loads(path.read_text())
    assert set(data) == {"rows", "seed", "seconds", "settings", "rho", "em_rho"}
    assert data["seed"] == 4
    assert data["settings"] == {
        "alpha": 0.1, "eps_em": 0.1, "eps": 10.0, "delta": 1e-6, "start_eps2": 1e-4,
        "grid_size": 1000, "grid": "linear", "stop_alpha": None, "filter": "zcdp",
        "conversion": "bun-steinke", "skellam_level": 1.0,
    }  # fmt: skip
    assert math.isclose(data["rho"], 1.35301, rel_tol=1e-5)
    assert math.isclose(data["em_rho"], 0.1**2 / 8, rel_tol=1e-12)
    assert [(r["n"], r["method"]) for r in data["rows"]] == [
        (8000, "bm"), (8000, "doubling"), (16000, "bm"), (16000, "doubling"),
    ]  # fmt: skip
    assert set(data["rows"][0]) == {
        "n", "method", "trials", "results_mean", "results_sd", "precision_mean",
        "precision_sd", "spend_mean", "unit",
    }  # fmt: skip
    gdp = tmp_path / "gdp.json"
    gdp_args = [*args[:4], "--sizes", "8000", "--filter", "gdp", "--json", str(gdp)]
    assert main([*gdp_args, "--no-plot"]) == 0
    assert "GDP mu²/2 = " in capsys.readouterr().out
    other = json.loads(gdp.read_text())  # the accounting tells the two files apart
    assert (other["settings"]["filter"], other["settings"]["conversion"]) == ("gdp", None)
    assert math.isclose(other["rho"], 1.70780, rel_tol=1e-5)  # mu²/2, mu = 1.848
    assert math.isclose(other["em_rho"], 0.0019633, rel_tol=1e-4)  # mu(eps_EM/2)²/2
    again = tmp_path / "again.json"
    assert main([*args, "--seed", "4", "--no-plot", "--json", str(again)]) == 0
    assert json.loads(again.read_text())["rows"] == data["rows"]  # same seed, same rows


def test_cli_user_counts_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = tmp_path / "words.csv"
    counts.write_text("word,count\n" + "".join(f"w{i},{500 - i}\n" for i in range(100)))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # matplotlib missing
    base = ["reproduce", "relative-error", "--trials", "10", "--out", str(tmp_path)]
    assert main([*base, "--counts", str(counts), "--alpha", "0.05"]) == 0
    captured = capsys.readouterr()
    assert "matplotlib is missing" in captured.err
    assert " 45050 " in captured.out
    assert main([*base, "--counts", str(counts), "--sizes", "8000"]) == 2
    assert main([*base, "--alpha", "-1"]) == 2
    assert main([*base, "--trials", "0"]) == 2
    assert main([*base, "--stop-alpha", "0"]) == 2
    assert main([*base, "--filter", "gdp", "--conversion", "cks"]) == 2
    with pytest.raises(SystemExit):
        main([*base, "--filter", "rdp"])
    assert "relative-error" in capsys.readouterr().err


def _trades(plain: re.Report, other: re.Report) -> bool:
    """Fewer counts and higher precision for both methods."""
    return all(
        b.results_mean < a.results_mean and b.precision_mean > a.precision_mean
        for a, b in zip(plain.rows, other.rows, strict=True)
    )


def test_a_stricter_rule_trades_counts_for_precision() -> None:
    """--stop-alpha 0.09 against 0.1 at n = 32000, 400 trials: counts drop by 4–6 (standard
    error of the difference <= 0.2), precision rises by 0.8–1.2 points (standard error <= 0.13
    points). Twin: a looser rule (0.11) does not trade that way."""
    plain = re.reproduce(sizes=(32_000,), trials=400, seed=2)
    strict = re.reproduce(
        sizes=(32_000,), trials=400, seed=2, settings=re.Settings(stop_alpha=0.09)
    )
    assert _trades(plain, strict)
    loose = re.reproduce(sizes=(32_000,), trials=400, seed=2, settings=re.Settings(stop_alpha=0.11))
    assert not _trades(plain, loose)
    assert re.Settings(stop_alpha=0.09).stop.alpha == 0.09
    assert re.Settings().stop.alpha == 0.1
