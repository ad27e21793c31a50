"""The private validation check (expost.apps.erm.validation; THEORY §11, issue 29 item 5).

- The stop is decided by the released estimates alone: recomputed from the transcript it is the
  check's stop, run after run; a twin that peeks at the private score is caught.
- The charge is the ex-post RDP at the stop, ρ = Δ²/(2τ_stop) rounded up (exact rationals); a
  twin charged at the first time is caught. The ERM cost table adds BM's ρ and the check's.
- The releases have the stated law (mean: the precision-weighted score, variance τ_k), and the
  ex-post RDP holds by Monte Carlo: E[exp((α−1)(L − αρ(τ_stop)))] <= 1 under an adversarial
  released-only stopping rule; the twin with ρ halved is refuted. Tolerances at alpha = 1e-6.
- Reproducible for a seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

from expost.apps.data import (
    synthetic_classification,
    synthetic_regression,
    synthetic_with_validation,
)
from expost.apps.erm import LogisticRegression, Mechanisms, privacy_levels
from expost.apps.erm.validation import ValidationCheck, ValidationResult, first_hits
from expost.errors import InvalidParameter
from expost.ex_post_rdp import DEFAULT_ORDERS, ExPostRDP
from expost.processes import BrownianPath
from expost.rounding import sum_up
from tests import stats as st

FloatArray = npt.NDArray[np.float64]

TIMES = np.geomspace(40.0, 0.5, 12)
CHECK = ValidationCheck(TIMES, 1.0, 55.0, below=False)  # a count: stop when it reaches 55
SCORES = np.linspace(40.0, 62.0, 12)  # the private counts of twelve successive models


def _peeking_run(
    check: ValidationCheck, scores: Iterable[float], rng: np.random.Generator
) -> ValidationResult:
    """Twin: the same releases, but the stop looks at the private score, not the release."""
    path = BrownianPath(1, rng)
    released: list[float] = []
    weighted, previous = 0.0, 0.0
    for k, score in enumerate(scores):
        t = float(check.times[k])
        weighted += (1.0 / t - previous) * score
        previous = 1.0 / t
        released.append(weighted * t + float(path.next(t)[0]))
        if check.passes(score):
            return ValidationResult(k, tuple(released), check.charge(k))
    return ValidationResult(None, tuple(released), check.charge(len(released) - 1))


def _decided_by_releases(
    run: Callable[[ValidationCheck, Iterable[float], np.random.Generator], ValidationResult],
) -> bool:
    """Over 200 seeded runs: is every stop the first released value passing the target?"""
    for seed in range(200):
        result = run(CHECK, iter(SCORES.tolist()), np.random.default_rng(seed))
        hits = [k for k, y in enumerate(result.released) if CHECK.passes(y)]
        expected = hits[0] if hits else None
        if result.stop_index != expected or len(result.released) != (
            len(SCORES) if expected is None else expected + 1
        ):
            return False
    return True


def test_the_stop_is_decided_by_the_released_values_alone() -> None:
    assert _decided_by_releases(lambda c, s, r: c.run(s, r))
    assert not _decided_by_releases(_peeking_run)


def test_the_rule_is_given_the_released_estimates_and_nothing_else() -> None:
    seen: list[tuple[float, ...]] = []

    def spy(values: tuple[float, ...]) -> bool:
        seen.append(values)
        return False

    result = CHECK.run(iter(SCORES.tolist()), np.random.default_rng(1), rule=spy)
    assert seen == [result.released[: k + 1] for k in range(len(TIMES))]
    assert result.stop_index is None
    assert result.ex_post_rdp == CHECK.charge(len(TIMES) - 1)
    assert not set(result.released) & set(SCORES.tolist())


def test_the_windowed_rule_post_processes_the_releases() -> None:
    """window = m: the estimate of the last m increments, computed from the releases alone; its
    mean is the precision-weighted mean of the last m scores, its variance 1/(s_k − s_(k−m))."""
    windowed = ValidationCheck(TIMES, 1.0, 55.0, below=False, window=3)
    n = 20_000
    released = windowed.releases_batch(np.tile(SCORES, (n, 1)), np.random.default_rng(12))
    estimates = windowed.estimates(released)
    np.testing.assert_array_equal(estimates[:, :3], released[:, :3])
    s = 1.0 / TIMES
    lag = np.concatenate([np.zeros(3), s[:-3]])
    steps = np.diff(s, prepend=0.0)
    for k in range(3, TIMES.size):
        mean = float(np.dot(steps[k - 2 : k + 1], SCORES[k - 2 : k + 1]) / (s[k] - lag[k]))
        sd = math.sqrt(1.0 / (s[k] - lag[k]))
        assert st.mean_is_consistent(estimates[:, k], mean, sd)
        assert st.variance_is_consistent(estimates[:, k] - mean, sd**2, 3 * sd**4)
    assert not st.mean_is_consistent(
        released[:, -1],
        float(np.dot(steps[-3:], SCORES[-3:]) / (s[-1] - lag[-1])),
        math.sqrt(TIMES[-1]),
    )
    result = windowed.run(iter(SCORES.tolist()), np.random.default_rng(13))
    for k in range(len(result.released)):
        assert windowed.decides(result.released[: k + 1]) == (k == result.stop_index)


def test_batch_stops_are_the_stops_of_the_released_batch() -> None:
    scores = np.tile(SCORES, (500, 1))
    stops = CHECK.run_batch(scores, np.random.default_rng(2))
    released = CHECK.releases_batch(scores, np.random.default_rng(2))
    np.testing.assert_array_equal(stops, CHECK.stops(released))
    peeked = first_hits(np.broadcast_to(CHECK.target <= SCORES, scores.shape))
    assert not np.array_equal(stops, peeked)  # the private scores would give another stop


def _exact_rho(time: float, sensitivity: float) -> Fraction:
    return Fraction(sensitivity) ** 2 / (2 * Fraction(time))


@pytest.mark.parametrize("sensitivity", [1.0, 0.1, 5.3e-4])
def test_the_charge_is_the_ex_post_rdp_at_the_stop(sensitivity: float) -> None:
    check = ValidationCheck(TIMES * 0.37, sensitivity, 0.0)
    for k in range(TIMES.size):
        rho = check.charge(k).rho
        assert rho is not None
        exact = _exact_rho(float(check.times[k]), sensitivity)
        assert Fraction(rho) >= exact
        assert Fraction(np.nextafter(rho, 0.0)) < exact  # the smallest float above: no slack
        assert check.charge(k).eps(4.0) >= 4 * exact
        first = _exact_rho(float(check.times[0]), sensitivity)  # twin: charged at τ_1
        assert k == 0 or Fraction(first) < exact
    result = CHECK.run(iter(SCORES.tolist()), np.random.default_rng(3))
    stop = len(TIMES) - 1 if result.stop_index is None else result.stop_index
    assert result.ex_post_rdp == ExPostRDP.of_rho(CHECK.rho(stop))
    with pytest.raises(InvalidParameter):
        CHECK.charge(len(TIMES))


def test_releases_have_the_stated_law() -> None:
    """Mean Σ_j (s_j − s_(j−1))v_j / s_k and variance τ_k at every k (20,000 runs)."""
    n = 20_000
    released = CHECK.releases_batch(np.tile(SCORES, (n, 1)), np.random.default_rng(4))
    s = 1.0 / TIMES
    means = np.cumsum(np.diff(s, prepend=0.0) * SCORES) / s
    for k in range(TIMES.size):
        sd = math.sqrt(TIMES[k])
        assert st.mean_is_consistent(released[:, k], means[k], sd)
        assert st.variance_is_consistent(released[:, k] - means[k], TIMES[k], 3 * TIMES[k] ** 2)
    assert not st.mean_is_consistent(released[:, -1], SCORES[-1], math.sqrt(TIMES[-1]))
    single = [
        CHECK.run(iter(SCORES.tolist()), np.random.default_rng(10_000 + i), rule=lambda _: False)
        for i in range(2_000)
    ]
    assert st.same_law([r.released[5] for r in single], released[:, 5])


def _rdp_audit(alpha: float, rho_factor: float, n: int = 40_000) -> tuple[float, float]:
    """Mean and standard error of exp((α−1)(L − α·factor·ρ(τ_stop))) for neighbours whose scores
    differ by Δ = 1 at every step, stopped (released values only) at the first estimate above
    a level that the loss makes likely: the adversarial rule of THEORY §11's audits."""
    rng = np.random.default_rng(5)
    check = ValidationCheck(np.geomspace(4.0, 0.25, 10), 1.0, 0.0)
    scores = np.tile(np.linspace(0.0, 1.0, 10), (n, 1))
    released = check.releases_batch(scores, rng)
    s = 1.0 / check.times
    steps = np.diff(s, prepend=0.0)
    increments = np.diff(released * s, axis=1, prepend=0.0)
    losses = np.cumsum(increments - steps * scores + steps / 2.0, axis=1)  # D = 1: ΔW + Δs/2
    high = ValidationCheck(check.times, 1.0, 0.0, below=False)  # stop where the noise is high
    stop = high.stops(released - scores[0] - 1.5 * np.sqrt(check.times))
    stop = np.where(stop >= 0, stop, s.size - 1)
    rows = np.arange(n)
    rho = np.array([check.rho(k) for k in range(s.size)])[stop] * rho_factor
    x = np.exp((alpha - 1.0) * (losses[rows, stop] - alpha * rho))
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(n))


@pytest.mark.parametrize("alpha", [1.5, 2.0])
def test_ex_post_rdp_holds_by_monte_carlo_and_the_halved_twin_fails(alpha: float) -> None:
    z = st.z_two_sided()
    mean, se = _rdp_audit(alpha, 1.0)
    assert mean - z * se <= 1.0
    twin, twin_se = _rdp_audit(alpha, 0.5)
    assert twin - z * twin_se > 1.0


def test_a_seed_fixes_the_run() -> None:
    runs = [CHECK.run(iter(SCORES.tolist()), np.random.default_rng(s)) for s in (7, 7, 8)]
    assert runs[0] == runs[1]
    assert runs[0].released != runs[2].released
    batch = [CHECK.run_batch(np.tile(SCORES, (50, 1)), np.random.default_rng(s)) for s in (7, 7)]
    np.testing.assert_array_equal(batch[0], batch[1])


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(InvalidParameter):
        ValidationCheck([1.0, 2.0], 1.0, 0.0)  # times must decrease
    with pytest.raises(InvalidParameter):
        ValidationCheck(TIMES, 0.0, 0.0)
    with pytest.raises(InvalidParameter):
        CHECK.run(iter([]), np.random.default_rng(0))
    with pytest.raises(InvalidParameter):
        CHECK.releases_batch(np.zeros((3, 5)), np.random.default_rng(0))


def test_validation_data_share_the_training_distribution() -> None:
    train, held_out = synthetic_with_validation("classification", np.random.default_rng(11), 500)
    plain = synthetic_classification(np.random.default_rng(11))
    np.testing.assert_array_equal(train.features, plain.features)
    assert held_out.n == 500
    task = LogisticRegression(train)
    gap = float(task.loss_on(held_out, task.value) - task.model_loss(task.value))
    assert abs(gap) < 0.05  # same distribution: a model fits both alike
    other = synthetic_classification(np.random.default_rng(12), n=500)  # twin: another w
    assert float(task.loss_on(other, task.value) - task.model_loss(task.value)) > 0.1
    train_r, _ = synthetic_with_validation("regression", np.random.default_rng(11), 10)
    np.testing.assert_array_equal(
        train_r.targets, synthetic_regression(np.random.default_rng(11)).targets
    )
    with pytest.raises(InvalidParameter):
        task.loss_on(train_r, task.value)


def test_erm_costs_add_the_mechanism_and_the_check() -> None:
    task = LogisticRegression(synthetic_classification(np.random.default_rng(4), n=400, d=4))
    mechanisms = Mechanisms.build(task, privacy_levels(0.16, 8.0, 12))
    check = mechanisms.check
    for k, t in enumerate(mechanisms.bm.times.tolist()):
        own = ExPostRDP.of_rho(float(_exact_rho(t, task.l2_sensitivity)))  # within an ulp
        assert (
            abs(Fraction(check.rho(k)) - Fraction(own.rho or 0.0)) <= Fraction(own.rho or 0) * 1e-12
        )
        bm_total = ExPostRDP.of_rho(sum_up([_up_rho(t, task.l2_sensitivity), check.rho(k)]))
        assert mechanisms.costs["BM"]["validation"][k] == bm_total.probabilistic(1e-6).bound
        level = float(mechanisms.bounds["LNR"][k])
        lnr = ExPostRDP.of_orders(
            {a: sum_up([level, check.charge(k).eps(a)]) for a in DEFAULT_ORDERS}
        )
        assert mechanisms.costs["LNR"]["validation"][k] == lnr.probabilistic(1e-6).bound
    assert np.all(np.diff(mechanisms.costs["BM"]["validation"]) > 0.0)


def _up_rho(time: float, sensitivity: float) -> float:
    return ValidationCheck([time], sensitivity, 0.0).rho(0)
