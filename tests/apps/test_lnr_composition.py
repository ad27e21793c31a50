"""APC App. C measured (apps.lnr_composition): the exact bracket against known answers, the
simulation against the exact law, the order-statistic interval, the CLI.

Statistical checks use tests/stats.py at false-alarm level 1e-6; each has a planted-bug twin
that the same check rejects.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from expost.apps import lnr_composition as lc
from expost.cli import main
from expost.errors import InvalidParameter
from expost.mechanisms import LaplaceNoiseReduction
from expost.stopping import AtIndex
from tests import stats as st

FloatArray = npt.NDArray[np.float64]


def _laplace_tail(eps: float, x: FloatArray) -> FloatArray:
    """P(L > x) for one Laplace release at level eps, -eps <= x < eps (APC Lemma C.1, by hand:
    L = eps when X <= 0, (d − 2X)/t for 0 < X < d, so P(L > x) = 1 − e^(−(eps − x)/2)/2)."""
    return np.asarray(1.0 - 0.5 * np.exp(-(eps - x) / 2.0))


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("round_up", [True, False])
def test_one_round_law_is_a_distribution_with_its_atoms(eps: float, round_up: bool) -> None:
    pmf = lc.fixed_scale_pmf(eps, 50, round_up)
    assert pmf.size == 101
    assert np.all(pmf >= 0.0)
    assert math.isclose(pmf.sum(), 1.0, rel_tol=1e-12)
    assert pmf[-1] >= 0.5  # the atom at eps (plus, rounded up, the mass just below)
    assert pmf[0] >= 0.5 * math.exp(-eps)


def test_one_round_bracket_contains_the_closed_form_tail() -> None:
    exact = lc.composed_fixed_scale(1.0, 1, steps=200)
    x = exact.losses[:-1]
    truth = _laplace_tail(1.0, x)
    up, down = lc._tail(exact.upper)[:-1], lc._tail(exact.lower)[:-1]
    assert np.all(down <= truth + 1e-12)
    assert np.all(truth <= up + 1e-12)
    assert np.max(up - down) <= 0.5 * (1.0 / 200)  # the bracket is one grid step of mass wide


def test_one_round_hockey_stick_is_the_laplace_privacy_profile() -> None:
    # Laplace at eps is (e, 1 − e^((e − eps)/2))-DP for 0 <= e <= eps (its privacy profile).
    exact = lc.composed_fixed_scale(1.0, 1, steps=1000)
    for delta in (0.3, 0.1, 1e-2):
        low, high = exact.dp_eps(delta)
        truth = 1.0 + 2.0 * math.log(1.0 - delta)
        assert low <= truth <= high
        assert high - low <= 2.5e-3


def test_dp_eps_is_zero_when_total_variation_is_within_delta() -> None:
    # two Laplace rounds at eps = 0.001: total variation <= 2·(1 − e^(−0.0005)) ≈ 1e-3 < 1e-2
    exact = lc.composed_fixed_scale(0.001, 2, steps=400)
    assert exact.dp_eps(1e-2) == (0.0, 0.0)
    low, high = exact.dp_eps(1e-6)
    assert 0.0 < low <= high


@pytest.mark.parametrize("k", [2, 5, 10])
def test_summing_is_exact_below_two_to_the_minus_k(k: int) -> None:
    # P(L = k·eps) = 2^−k exactly (every round on its atom): no c < 1 works for delta < 2^−k,
    # and some c < 1 does for delta > 2^−k.
    exact = lc.composed_fixed_scale(0.5, k, steps=200)
    assert exact.factor(0.9 * 0.5**k) == (1.0, 1.0)
    assert exact.factor(1.5 * 0.5**k)[1] < 1.0
    assert math.isclose(exact.upper[-1], 0.5**k, rel_tol=0.2)  # the atom plus a sliver rounded up


@pytest.mark.parametrize(
    ("k", "delta", "limit"), [(10, 1e-3, 0.8), (20, 1e-6, 0.9), (20, 1e-3, 0.7), (10, 1e-6, 1.0)]
)
def test_small_eps_limit_by_hand(k: int, delta: float, limit: float) -> None:
    # j = 1, 1, 3, 0: P(J <= 0) = 2^−k and P(J <= 3) = 1351/2^20 straddle the deltas.
    assert lc.small_eps_limit(k, delta) == pytest.approx(limit, abs=1e-12)


def _wrong_limit(k: int, delta: float) -> float:
    """Planted bug: a round at −1 costs 1/k of the bound, not 2/k (1 − j/k)."""
    return 1.0 - (1.0 - lc.small_eps_limit(k, delta)) / 2.0


@pytest.mark.parametrize("k", [5, 10, 20])
@pytest.mark.parametrize("delta", [1e-2, 1e-3, 1e-6])
def test_small_eps_limit_is_reached_and_is_a_floor(k: int, delta: float) -> None:
    # Deterministic brackets: at eps = 1e-4 the bracket sits on the limit; at every eps above.
    limit = lc.small_eps_limit(k, delta)
    low, high = lc.composed_fixed_scale(1e-4, k, steps=200).factor(delta)
    assert low - 1e-9 <= limit <= high + 1e-9
    if limit < 1.0:  # twin: the wrong limit is outside the bracket
        assert not low - 1e-9 <= _wrong_limit(k, delta) <= high + 1e-9
    for eps in (1.0, 0.1, 0.01):
        assert lc.composed_fixed_scale(eps, k, steps=200).factor(delta)[0] >= limit - 1e-9


def test_all_hit_bound_certifies_c_one_where_the_interval_cannot() -> None:
    # k = 20 rounds hitting with probability 0.6: P(R = 1) = 0.6^20 = 3.7e-5 > delta = 2e-5, so
    # c(delta) = 1, but only ~7 all-hit trials in 200,000: the order-statistic interval's lower
    # end stays below 1, while the all-hit bound (level 1e-6) exceeds delta. Twin: rate 1/2,
    # P(R = 1) = 9.5e-7 < delta, is not certified.
    rng = np.random.default_rng(12)
    n, k, delta = 200_000, 20, 2e-5
    certified = []
    for rate in (0.6, 0.5):
        hits = rng.random((n, k)) < rate
        all_hit = np.logical_and.accumulate(hits, axis=1)
        ratio = np.where(all_hit, 1.0, rng.uniform(-1.0, 0.99, size=(n, k)))
        sim = lc.SimulatedComposition("iid hits", ratio, hits)
        certified.append(sim.all_hit(k, alpha=1e-6)[0] > delta)
        if rate == 0.6:
            assert sim.factor(k, delta, alpha=1e-6).lower < 1.0
    assert certified == [True, False]


def _sum_of_losses(eps: float, k: int, n: int, rng: np.random.Generator) -> FloatArray:
    """k independent Laplace releases at scale 1/eps, neighbour at +1: the loss drawn directly."""
    x = rng.laplace(0.0, 1.0 / eps, size=(n, k))
    return np.asarray(((np.abs(x - 1.0) - np.abs(x)) * eps).sum(axis=1))


def _wrong_pmf(eps: float, steps: int, round_up: bool) -> FloatArray:
    """Planted bug: the CDF's exponent without its 1/2 (G = e^(−(eps − l))/2)."""
    g = 0.5 * np.exp(-(eps - np.linspace(-eps, eps, 2 * steps + 1)))
    jumps = np.diff(g)
    if round_up:
        return np.concatenate(([g[0]], jumps[:-1], [1.0 - g[-2]]))
    return np.concatenate(([g[1]], jumps[1:], [0.5]))


def _tails_agree(samples: FloatArray, losses: FloatArray, up: FloatArray, down: FloatArray) -> bool:
    """Every checked P(S > x) count is consistent with some value in the bracket [down, up].

    The points avoid the sums' atoms (−2, 0, 2 at eps = 1), where float rounding of the sampled
    losses would decide the comparison."""
    n = samples.size
    ok = True
    for x in (-1.5, -0.5, 0.3, 0.9, 1.5):
        i = int(np.searchsorted(losses, x))
        hits = int(np.count_nonzero(samples > losses[i]))
        ok &= st.clopper_pearson_lower(hits, n, 1e-7) <= up[i]
        ok &= st.clopper_pearson_upper(hits, n, 1e-7) >= down[i]
    return ok


def test_two_rounds_bracket_matches_simulated_sums_and_rejects_a_planted_law() -> None:
    eps, k = 1.0, 2
    samples = _sum_of_losses(eps, k, 200_000, np.random.default_rng(11))
    exact = lc.composed_fixed_scale(eps, k, steps=400)
    assert _tails_agree(samples, exact.losses, lc._tail(exact.upper), lc._tail(exact.lower))
    wrong_up = np.convolve(_wrong_pmf(eps, 400, True), _wrong_pmf(eps, 400, True))
    wrong_down = np.convolve(_wrong_pmf(eps, 400, False), _wrong_pmf(eps, 400, False))
    assert not _tails_agree(samples, exact.losses, lc._tail(wrong_up), lc._tail(wrong_down))


def test_simulated_fixed_stop_has_the_laplace_loss() -> None:
    scales = lc.SCALES
    lnr = LaplaceNoiseReduction(scales, 1.0, AtIndex(15))
    sim = lc.simulate_rounds(lnr, lc.VALUE, 1, 100_000, np.random.default_rng(5))
    n = sim.hits.shape[0]
    assert st.proportion_is_consistent(int(sim.hits.sum()), n, 0.5)
    # R = L/eps: P(R > 0) = P(L > 0) = 1 − e^(−eps/2)/2, the same at every eps.
    truth = float(_laplace_tail(1.0, np.array(0.0)))
    positive = int(np.count_nonzero(sim.ratio[:, 0] > 0.0))
    assert st.proportion_is_consistent(positive, n, truth)
    assert not st.proportion_is_consistent(positive, n, 1.0 - 0.5 * math.exp(-1.0))  # twin


def test_ratio_is_one_exactly_when_every_round_hits() -> None:
    rules = lc.paper_rules(lc.VALUE)
    lnr = LaplaceNoiseReduction(lc.SCALES, 1.0, rules["adversarial (y <= f(x))"][0])
    sim = lc.simulate_rounds(lnr, lc.VALUE, 5, 4_000, np.random.default_rng(2))
    all_hit = np.logical_and.accumulate(sim.hits, axis=1)
    np.testing.assert_array_equal(sim.ratio == 1.0, all_hit)
    assert np.all(sim.ratio <= 1.0)
    assert np.all(sim.ratio >= -1.0)
    # The adversary ends on the loss's atom far more often than a fixed stop's 1/2.
    hits = int(sim.hits.sum())
    assert st.clopper_pearson_lower(hits, sim.hits.size) > 0.8
    lower, frequency = sim.all_hit(5)
    # Seen from the other neighbour the same stops end on the loss's atom rarely.
    other = lc.simulate_rounds(lnr, lc.VALUE, 1, 4_000, np.random.default_rng(3), above=False)
    assert st.clopper_pearson_upper(int(other.hits.sum()), other.hits.size) < 0.2
    assert 0.8**5 < lower < 1.0
    assert frequency == float(all_hit[:, 4].mean())


def test_order_statistic_interval_covers_a_known_quantile_and_excludes_a_shifted_one() -> None:
    # R uniform on [−1, 1]: c(delta) = 1 − 2·delta.
    rng = np.random.default_rng(8)
    ratio = rng.uniform(-1.0, 1.0, size=(200_000, 1))
    sim = lc.SimulatedComposition("uniform", ratio, np.zeros((200_000, 1), dtype=np.bool_))
    for delta in (1e-3, 1e-2):
        f = sim.factor(1, delta, alpha=1e-6)
        assert f.lower <= 1.0 - 2.0 * delta <= f.upper
        assert f.estimate is not None
        assert f.lower <= f.estimate <= f.upper
    assert sim.factor(1, 1e-6).estimate is None  # fewer than one exceedance expected
    shifted = lc.SimulatedComposition("shifted", ratio * 0.99, sim.hits)
    assert not shifted.factor(1, 1e-2, alpha=1e-6).upper >= 1.0 - 2.0 * 1e-2  # planted twin


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidParameter, match="rounds"):
        lc.composed_fixed_scale(1.0, 0)
    with pytest.raises(InvalidParameter, match="delta"):
        lc.composed_fixed_scale(1.0, 2).factor(0.0)
    with pytest.raises(InvalidParameter, match="rounds"):
        lc.small_eps_limit(0, 1e-3)
    with pytest.raises(InvalidParameter, match="delta"):
        lc.small_eps_limit(5, 1.0)
    lnr = LaplaceNoiseReduction(lc.SCALES, 1.0, AtIndex(0))
    sim = lc.simulate_rounds(lnr, 0.0, 2, 10, np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="rounds"):
        sim.factor(3, 1e-3)


def test_cli_prints_the_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows.json"
    code = main(
        ["reproduce", "lnr-composition", "--trials", "500", "--rounds", "2", "--json", str(out)]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "| adversarial (y <= f(x)) | 2 | " in text
    assert "c(0.001) | c(1e-06)" in text
    assert "| fixed (eps → 0), limit | 2 | 0.25 | [1, 1] † | [1, 1] † |" in text
    assert text.rstrip().endswith(lc.CERTIFIED)
    rows = json.loads(out.read_text())
    assert {r["rule"] for r in rows} >= {
        "fixed (eps = 0.001), exact",
        "relative error 0.1, neighbour below",
    }
    assert all(r["certified"] == (r["all_hit_lower"] > r["delta"]) for r in rows)
    assert main(["reproduce", "lnr-composition", "--trials", "0"]) == 2
    assert "trials" in capsys.readouterr().err
