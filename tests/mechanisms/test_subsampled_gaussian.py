"""`SubsampledGaussianMechanism` and `PrivateSession.subsampled_gaussian` (issue 35, item 3).

The mechanism samples, clips, sums and adds noise itself. Checked here: the clipping (exactly
what an independent norm computation gives, never past Δ, no overflow), the sampling rate
(never above q in exact arithmetic; the kept count of 200,000 records is binomial), the noise
scale, and the session's round (cost, shapes, secure-mode refusal, refusals spend nothing).
Statistical checks: fixed seeds, a two-sided z = 4.89 bound (false alarm 1e-6 each), and a
planted twin each that the same check must reject.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost import PrivateSession, ZCDPFilter
from expost.errors import InvalidParameter
from expost.filters import LaplaceCost, SubsampledGaussianCost
from expost.filters.costs import DiscreteLaplaceCost, DPCost
from expost.mechanisms import SubsampledGaussianMechanism
from tests.conftest import pg_ledger_url

Z = 4.89  # two-sided normal quantile for a false-alarm probability of 1e-6


def _clip_reference(x: np.ndarray, bound: float) -> np.ndarray:
    """Rows scaled to norm <= bound, by numpy's own norm (an independent computation)."""
    norms = np.linalg.norm(x, axis=1)
    out: np.ndarray = x * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None]
    return out


def test_clipping_matches_an_independent_norm_and_never_passes_the_bound() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 3.0, (500, 7))
    m = SubsampledGaussianMechanism(2.0, 1.0, 0.5)
    got = m.clipped(x)
    np.testing.assert_allclose(got, _clip_reference(x, 2.0 * (1 - 2.0**-30)), rtol=1e-12)
    assert np.all(np.linalg.norm(got, axis=1) <= 2.0)
    small = x / (10 * np.linalg.norm(x, axis=1))[:, None]  # norms 0.1: unchanged
    np.testing.assert_array_equal(m.clipped(small), small)


def test_clipping_huge_and_zero_rows_does_not_overflow() -> None:
    x = np.array([[1e300, -1e300, 1e300], [0.0, 0.0, 0.0], [2.0**1000, 0.0, 0.0]])
    got = SubsampledGaussianMechanism(1.0, 1.0, 1.0).clipped(x)
    assert np.all(np.isfinite(got))
    norms = [math.sqrt(sum(float(v) ** 2 for v in row)) for row in got]
    assert norms[0] == pytest.approx(1.0, rel=1e-9)
    assert norms[0] <= 1.0
    assert norms[1] == 0.0
    assert got[2, 0] == pytest.approx(1.0, rel=1e-9)
    assert got[2, 0] <= 1.0
    np.testing.assert_allclose(got[0], np.array([1, -1, 1]) / math.sqrt(3), rtol=1e-9)


@pytest.mark.parametrize("q", [0.01, 1 / 3, 0.1, 2.0**-60, 0.999999, 1.0])
def test_the_keep_probability_is_at_most_q_exactly(q: float) -> None:
    """floor(q·2⁵³)/2⁵³ <= q in rationals; the planted twin (a ceiling, what ``u < q`` on a
    53-bit uniform gives) exceeds q wherever q·2⁵³ is not an integer."""
    m = SubsampledGaussianMechanism(1.0, 1.0, q)
    assert Fraction(m.threshold, 2**53) <= Fraction(q)
    assert Fraction(m.threshold + 1, 2**53) > Fraction(q)  # the largest such
    twin = math.ceil(Fraction(q) * 2**53)
    if (Fraction(q) * 2**53).denominator != 1:
        assert Fraction(twin, 2**53) > Fraction(q)


def _kept(q: float, seed: int, n: int = 200_000) -> float:
    """The released sum of n records of value 1 (d = 1) with negligible noise: the kept count."""
    m = SubsampledGaussianMechanism(1.0, 1e-12, q)
    return float(m.run(np.ones(n), np.random.default_rng(seed))[0])


def _binomial_ok(count: float, n: int, q: float) -> bool:
    return abs(count - n * q) <= Z * math.sqrt(n * q * (1 - q)) + 1e-6


def test_the_kept_count_is_binomial_n_q() -> None:
    n, q = 200_000, 0.01
    assert _binomial_ok(_kept(q, 5), n, q)
    assert not _binomial_ok(_kept(0.012, 5), n, q)  # planted twin: a rate 20% too high


def test_the_noise_has_standard_deviation_sigma_times_sensitivity() -> None:
    """4,000 releases of zero records: the sample variance within z·sqrt(2/n) relative of
    (σ·Δ)²; the twin drawing σ (forgetting Δ = 3) is rejected by the same check."""
    trials, want = 4000, (1.5 * 3.0) ** 2

    def fits(out: np.ndarray) -> bool:
        return abs(float(np.var(out)) / want - 1.0) <= Z * math.sqrt(2.0 / trials)

    m = SubsampledGaussianMechanism(3.0, 1.5, 0.5)
    assert fits(m.run_batch(np.zeros((10, 1)), trials, np.random.default_rng(7)))
    twin = SubsampledGaussianMechanism(1.0, 1.5, 0.5)
    assert not fits(twin.run_batch(np.zeros((10, 1)), trials, np.random.default_rng(7)))


def test_the_session_releases_a_vector_of_length_d_and_records_its_cost() -> None:
    s = PrivateSession(ZCDPFilter(50.0), np.random.default_rng(0))
    out = s.subsampled_gaussian(np.ones((30, 4)), 1.0, 2.0, 0.25)
    assert out.shape == (4,)
    assert out.dtype == np.float64
    assert s.history[-1].request == SubsampledGaussianCost.from_sigma(2.0, 0.25)
    assert s.history[-1].mechanism == "subsampled-gaussian"
    assert s.subsampled_gaussian(np.arange(5.0), 1.0, 2.0, 1.0).shape == (1,)  # (n,): d = 1
    assert s.spent == pytest.approx(2 * (1 / 8))  # priced as the Gaussian of rho = 1/(2σ²)


def test_the_session_refuses_it_in_secure_mode_before_spending() -> None:
    s = PrivateSession(ZCDPFilter(50.0), np.random.default_rng(0), exact=True)
    with pytest.raises(
        InvalidParameter, match=r"no exact version.*square roots.*nothing was spent"
    ):
        s.subsampled_gaussian(np.ones((3, 2)), 1.0, 1.0, 0.5)
    assert s.history == ()
    assert s.spent == 0.0


@pytest.mark.parametrize(
    ("arg", "value"),
    [
        ("records", np.ones((2, 2, 2))),
        ("records", [[1.0, np.nan]]),
        ("records", np.zeros((0, 3))),
        ("records", "abc"),
        ("records", [[True, False]]),
        ("records", 3.0),
        ("sampling_prob", 0.0),
        ("sampling_prob", 1.5),
        ("sampling_prob", np.nan),
        ("sigma", 0.0),
        ("sigma", -1.0),
        ("sensitivity", 0.0),
        ("sigma", 1e308),
    ],
)
def test_bad_inputs_are_refused_and_spend_nothing(arg: str, value: object) -> None:
    s = PrivateSession(ZCDPFilter(50.0), np.random.default_rng(0))
    kw: dict[str, object] = {
        "records": np.ones((3, 2)),
        "sensitivity": 1.0,
        "sigma": 1.0,
        "sampling_prob": 0.5,
    }
    with pytest.raises(InvalidParameter, match="nothing was spent"):
        s.subsampled_gaussian(**{**kw, arg: value})  # type: ignore[arg-type]
    assert s.history == ()
    assert s.spent == 0.0


def test_laplace_on_a_scalar_records_its_pair_cost_and_otherwise_dp_cost() -> None:
    """The Laplace pair is claimed for float noise on one coordinate only (THEORY §12); secure
    noise on one coordinate is priced at the discrete Laplace pair, on vectors at eps."""
    s = PrivateSession(ZCDPFilter(50.0), np.random.default_rng(0))
    s.laplace(1.0, 1.0, 0.5)
    s.laplace([1.0], 1.0, 0.5)
    s.laplace([1.0, 2.0], 1.0, 0.5)
    assert [type(r.request) for r in s.history] == [LaplaceCost, LaplaceCost, DPCost]
    secure = PrivateSession(ZCDPFilter(50.0), np.random.default_rng(0), exact=True)
    secure.laplace(1, 1, Fraction(1, 2))
    secure.laplace([1, 2], 1, Fraction(1, 2))
    kinds = [type(r.request) for r in secure.history]
    assert kinds == [DiscreteLaplaceCost, DPCost]  # discrete noise: not the Laplace pair


def test_postgresql_prices_the_new_costs_as_their_parents(pg_server: Any, tmp_path: Path) -> None:
    """A scalar Laplace round (LaplaceCost) and a DP-SGD step (SubsampledGaussianCost) on a
    PostgreSQL ledger: the server admits and prices them as DPCost and GaussianCost, so the
    spend equals a SQLite ledger's; past the budget both backends refuse."""
    spends = []
    for target in (pg_ledger_url(pg_server, "new_costs"), str(tmp_path / "new.sqlite")):
        f = ep.UnifiedFilter.from_dp(10.0, 1e-6)
        s = PrivateSession(f, np.random.default_rng(0), target, create=True)
        s.laplace(1.0, 1.0, 0.5)
        s.subsampled_gaussian(np.ones((4, 2)), 1.0, 2.0, 0.1)
        with pytest.raises(ep.BudgetExceeded):
            s.subsampled_gaussian(np.ones((4, 2)), 1.0, 0.1, 0.1)
        spends.append(s.spent)
        s.close()
    assert spends[0] == spends[1] == pytest.approx(0.5**2 / 2 + 1 / 8)
