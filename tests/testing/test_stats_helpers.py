"""The shared statistical assertions accept true claims and reject planted wrong ones."""

import numpy as np

from tests import stats as st


def test_mean_check_accepts_truth_and_rejects_shift() -> None:
    x = np.random.default_rng(1).normal(2.0, 3.0, 100_000)
    assert st.mean_is_consistent(x, 2.0, 3.0)
    assert not st.mean_is_consistent(x, 2.1, 3.0)


def test_variance_check_accepts_truth_and_rejects_wrong_variance() -> None:
    x = np.random.default_rng(2).normal(0.0, 2.0, 100_000)
    assert st.variance_is_consistent(x, 4.0, 3 * 16.0)
    assert not st.variance_is_consistent(x, 4.2, 3 * 16.0)


def test_ks_checks_have_power() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=20_000), rng.normal(size=20_000)
    assert st.same_law(a, b)
    assert not st.same_law(a, 1.2 * b)
    assert st.follows(a, "norm")
    assert not st.follows(a + 0.1, "norm")


def test_binomial_checks() -> None:
    assert st.proportion_is_consistent(5_000, 10_000, 0.5)
    assert not st.proportion_is_consistent(5_400, 10_000, 0.5)
    assert 0.05 < st.clopper_pearson_upper(500, 10_000) < 0.062


def test_rate_at_most_accepts_truth_and_rejects_excess() -> None:
    assert st.rate_is_at_most(100, 10_000, 0.01)
    assert st.rate_is_at_most(0, 10_000, 0.0)
    assert not st.rate_is_at_most(200, 10_000, 0.01)
    lower, upper = st.clopper_pearson_lower(500, 10_000), st.clopper_pearson_upper(500, 10_000)
    assert 0.04 < lower < 0.05 < upper
