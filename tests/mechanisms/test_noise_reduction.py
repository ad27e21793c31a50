"""Noise-reduction mechanisms: the noise-reduction property, run = run_batch, transcripts, bad input.

Statistical checks run at the false-alarm level of tests/stats.py (alpha = 1e-6 per comparison;
a law check makes two comparisons, KS on the stopped values and chi-square on the stop indices).
Each has a planted-bug twin in the same test that must be rejected: the same check against a
mechanism with the wrong noise level. The noise-reduction property (APC Thm 3, Lemma 4.1) is
checked exactly, not statistically: the log-likelihood ratio of the whole released sequence,
from the joint density, equals the closed-form loss of the last iterate. That identity holds for
any values given the process's covariance (BM) or product structure (LNR, Skellam), so it checks
the transcripts' bookkeeping and the loss formulas; that the released values follow the process
is checked by the law tests (run = run_batch, the Laplace tie rates).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import stats as sps

from expost.boundaries import LinearPrivacyBoundary, MixturePrivacyBoundary
from expost.errors import InvalidParameter, NotAStoppingTime
from expost.filters.costs import BrownianCost, ExPostCost
from expost.grids import EpsilonGrid, OpenEpsilonGrid, TimeGrid
from expost.guarantees import ZCDP, ExPost, PureDP
from expost.loss import BrownianLoss, LaplaceNoiseReductionLoss
from expost.mechanisms.noise_reduction import (
    BrownianNoiseReduction,
    LaplaceNoiseReduction,
)
from expost.mechanisms.skellam_noise_reduction import SkellamNoiseReduction
from expost.mechanisms.transcript import BatchTranscript, Transcript
from expost.skellam.loss import SkellamLoss
from expost.stopping import AtIndex, Never, RelativeError, Released
from tests import stats as st

AnyArray = npt.NDArray[Any]
INTERACTIVE = 1_500
BATCH = 15_000


def _decreasing_times(draw: Callable[..., Any]) -> list[float]:
    """2–5 times in [0.02, 50], consecutive ratios >= 1.2 (a well-conditioned covariance)."""
    k = draw(hs.integers(2, 5))
    logs = draw(hs.lists(hs.floats(0.18, 1.5), min_size=k - 1, max_size=k - 1))
    start = draw(hs.floats(math.log(0.02), math.log(2.0)))
    points = np.exp(start + np.concatenate([[0.0], np.cumsum(logs)]))
    return [float(t) for t in points[::-1]]


decreasing_times = hs.composite(_decreasing_times)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


# --- noise-reduction property: exact joint log-likelihood ratios --------------------------------


def gaussian_joint_llr(released: AnyArray, times: AnyArray, f: AnyArray, f2: AnyArray) -> float:
    """log p_f(y_1..y_k) − log p_f2(y_1..y_k) for y_j = f + B(t_j), Cov = min(t_i, t_j), per coordinate."""
    cov = np.minimum.outer(times, times)
    total = 0.0
    for c in range(released.shape[1]):
        y = released[:, c]
        total += float(sps.multivariate_normal.logpdf(y, np.full(y.size, f[c]), cov))
        total -= float(sps.multivariate_normal.logpdf(y, np.full(y.size, f2[c]), cov))
    return total


def last_iterate_loss(transcript: Transcript, f: AnyArray, f2: AnyArray, index: int) -> float:
    """APC Thm 3 at iterate ``index``: ‖D‖²/(2t) + (‖D‖/t)·W(t), W(t) = −⟨u, B(t)⟩, u = D/‖D‖."""
    shift = f2 - f
    distance = float(np.linalg.norm(shift))
    noise = transcript.released[index] - f
    w = -float(np.dot(shift / distance, noise))
    return float(BrownianLoss(float(transcript.times[index]), distance).at(w))


@settings(max_examples=25, deadline=None)
@given(
    times=decreasing_times(),
    d=hs.integers(1, 3),
    seed=hs.integers(0, 2**32 - 1),
    use_rule=hs.booleans(),
)
def test_brownian_sequence_costs_its_last_iterate(
    times: list[float], d: int, seed: int, use_rule: bool
) -> None:
    rng = np.random.default_rng(seed)
    f = rng.normal(0.0, 3.0, d)
    f2 = f + rng.normal(0.0, 1.0, d)
    if use_rule:

        def rule(released: Released) -> bool:
            return bool(np.sum(np.abs(released.last - 1.0)) < 2.0 * math.sqrt(released.times[-1]))

        mechanism = BrownianNoiseReduction(TimeGrid(times), stop=rule)
    else:
        mechanism = BrownianNoiseReduction(
            TimeGrid(times), stop=AtIndex(int(rng.integers(1, len(times))))
        )
    transcript = mechanism.run(f, rng)
    k = len(transcript.released) - 1
    joint = gaussian_joint_llr(transcript.released, transcript.times, f, f2)
    assert _close(joint, last_iterate_loss(transcript, f, f2, k))
    if k > 0:  # planted bug: paying for the first iterate instead of the last
        assert not _close(joint, last_iterate_loss(transcript, f, f2, 0))


def backward_joint_log_density(
    released: AnyArray,
    f: float,
    marginal: Callable[[float, float], float],
    increment: Callable[[float, float, float], float],
    times: AnyArray,
) -> float:
    """log density of y_1..y_k (noisiest first) factored backwards, noisiest to least noisy.

    p(y_1)·Π_j p(y_(j+1) | y_j) with the backward transition
    p(z' at t_(j+1) | z at t_j) = p_(t_(j+1))(z')·q_j(z − z')/p_(t_j)(z), where q_j is the law of
    the (independent) increment from t_(j+1) up to t_j.
    """
    z = released - f
    log_p = marginal(z[0], times[0])
    for j in range(z.size - 1):
        log_p += marginal(z[j + 1], times[j + 1])
        log_p += increment(z[j] - z[j + 1], times[j + 1], times[j])
        log_p -= marginal(z[j], times[j])
    return log_p


def laplace_marginal(z: float, t: float) -> float:
    return float(sps.laplace.logpdf(z, scale=t))


def koufogiannis_increment(delta: float, smaller: float, larger: float) -> float:
    """BNR eq. 3: no jump with probability (s/t)² (an atom), else a Lap(t) jump."""
    keep = (smaller / larger) ** 2
    if delta == 0.0:
        return math.log(keep)
    return math.log1p(-keep) + float(sps.laplace.logpdf(delta, scale=larger))


def laplace_last_loss(x: float, distance: float, scale: float) -> float:
    """APC Lemma C.1: −(1/t)(|X| − |X − d|)."""
    return -(abs(x) - abs(x - distance)) / scale


@settings(max_examples=25, deadline=None)
@given(times=decreasing_times(), seed=hs.integers(0, 2**32 - 1), use_rule=hs.booleans())
def test_laplace_sequence_costs_its_last_iterate(
    times: list[float], seed: int, use_rule: bool
) -> None:
    rng = np.random.default_rng(seed)
    f, distance = float(rng.normal(0.0, 2.0)), float(rng.choice([-1.0, 1.0]) * rng.uniform(0.2, 1))
    stop: object = (
        (lambda r: bool(abs(r.last[0] - f) < r.times[-1] ** 0.5)) if use_rule else Never()
    )
    transcript = LaplaceNoiseReduction(times, stop=stop).run(f, rng)
    y, scales = transcript.released[:, 0], transcript.times
    joint = backward_joint_log_density(
        y, f, laplace_marginal, koufogiannis_increment, scales
    ) - backward_joint_log_density(
        y, f + distance, laplace_marginal, koufogiannis_increment, scales
    )
    assert _close(joint, laplace_last_loss(y[-1] - f, distance, scales[-1]))
    assert abs(joint) <= abs(distance) / scales[-1] + 1e-12  # BNR Prop 4.2
    if y.size > 1:  # planted bug: the first iterate's loss
        assert not _close(joint, laplace_last_loss(y[0] - f, distance, scales[0]))


def skellam_marginal(rate: float) -> Callable[[float, float], float]:
    return lambda z, t: float(sps.skellam.logpmf(z, rate * t, rate * t))


def skellam_increment(rate: float) -> Callable[[float, float, float], float]:
    return lambda delta, s, t: float(sps.skellam.logpmf(delta, rate * (t - s), rate * (t - s)))


@settings(max_examples=15, deadline=None)
@given(times=decreasing_times(), seed=hs.integers(0, 2**32 - 1))
def test_skellam_sequence_costs_its_last_iterate(times: list[float], seed: int) -> None:
    rng = np.random.default_rng(seed)
    rate, f, shift = 3.0, int(rng.integers(-5, 5)), int(rng.integers(1, 3))
    scaled = [10.0 * t for t in times]  # enough Poisson mass that ties and jumps both occur
    transcript = SkellamNoiseReduction(scaled, rate=rate).run(f, rng)
    y, t = transcript.released[:, 0].astype(float), transcript.times
    marginal, increment = skellam_marginal(rate), skellam_increment(rate)
    joint = backward_joint_log_density(y, f, marginal, increment, t)
    joint -= backward_joint_log_density(y, f + shift, marginal, increment, t)
    last = marginal(y[-1] - f, t[-1]) - marginal(y[-1] - f - shift, t[-1])
    assert _close(joint, last)
    first = marginal(y[0] - f, t[0]) - marginal(y[0] - f - shift, t[0])
    if not _close(first, last):  # Skellam values are discrete: the two losses can tie exactly
        assert not _close(joint, first)  # planted bug: the first iterate's loss


# --- run and run_batch have the same law ---------------------------------------------------------


def same_stop_law(a: BatchTranscript | list[Transcript], b: BatchTranscript) -> bool:
    """KS on the stopped values and chi-square on the stop indices."""
    if isinstance(a, list):
        values = np.array([t.value[0] for t in a])
        index = np.array([len(t.released) - 1 for t in a])
    else:
        values, index = a.value[:, 0], a.end_index
    return st.same_law(values, b.value[:, 0]) and st.same_discrete_law(index, b.end_index)


BM_GRID = EpsilonGrid.linear_in_eps2(0.02, 1.0, 25)


def test_brownian_run_and_run_batch_same_law() -> None:
    assert isinstance(BM_GRID, EpsilonGrid)
    mechanism = BrownianNoiseReduction(BM_GRID, stop=RelativeError(0.25))
    rng = np.random.default_rng(11)
    interactive = [mechanism.run(10.0, rng) for _ in range(INTERACTIVE)]
    batch = mechanism.run_batch(10.0, BATCH, rng, chunk=4)
    assert 0.2 < batch.stopped.mean() < 0.99  # the rule fires at varied points, sometimes never
    assert same_stop_law(interactive, batch)
    assert same_stop_law(mechanism.run_batch(10.0, BATCH, rng, chunk=100), batch)
    # planted bug: the batch walk with 1.5 times the noise variance
    wrong = BrownianNoiseReduction(TimeGrid(1.5 * BM_GRID.times.array), stop=RelativeError(0.25))
    assert not same_stop_law(interactive, wrong.run_batch(10.0, BATCH, rng, chunk=4))


def test_brownian_run_batch_with_a_path_dependent_batch_rule() -> None:
    class TwoInARow:
        """Stop once two consecutive iterates are both above 1 (a rule that needs the path)."""

        def __call__(self, released: Released) -> bool:
            v = released.values[:, 0]
            return bool(v.size >= 2 and v[-1] > 1.0 and v[-2] > 1.0)

        def stops(
            self, values: AnyArray, times: AnyArray, sensitivity: float, start: int = 0
        ) -> AnyArray:
            assert start == 0  # a path-dependent rule is always shown whole paths
            above = values[..., 0] > 1.0
            out = np.zeros_like(above)
            out[..., 1:] = above[..., 1:] & above[..., :-1]
            return out

    grid = TimeGrid(np.geomspace(4.0, 0.05, 12))
    mechanism = BrownianNoiseReduction(grid, stop=TwoInARow())
    rng = np.random.default_rng(5)
    interactive = [mechanism.run(0.8, rng) for _ in range(INTERACTIVE)]
    batch = mechanism.run_batch(0.8, BATCH, rng)
    assert same_stop_law(interactive, batch)
    wrong = BrownianNoiseReduction(TimeGrid(3.0 * grid.array), stop=TwoInARow())
    assert not same_stop_law(interactive, wrong.run_batch(0.8, BATCH, rng))


LNR_SCALES = np.geomspace(8.0, 0.1, 15)


def test_laplace_run_and_run_batch_same_law() -> None:
    mechanism = LaplaceNoiseReduction(LNR_SCALES, stop=RelativeError(0.3))
    rng = np.random.default_rng(12)
    interactive = [mechanism.run(6.0, rng) for _ in range(INTERACTIVE)]
    batch = mechanism.run_batch(6.0, BATCH, rng)
    assert np.unique(batch.stop_index).size >= 8  # the rule fires at varied points
    assert same_stop_law(interactive, batch)
    wrong = LaplaceNoiseReduction(1.5 * LNR_SCALES, stop=RelativeError(0.3))
    assert not same_stop_law(interactive, wrong.run_batch(6.0, BATCH, rng))


def test_skellam_run_and_run_batch_same_law() -> None:
    times = np.geomspace(50.0, 0.5, 10)
    mechanism = SkellamNoiseReduction(times, rate=2.0, stop=RelativeError(0.3))
    rng = np.random.default_rng(13)
    interactive = [mechanism.run(15, rng) for _ in range(INTERACTIVE)]
    batch = mechanism.run_batch(15, BATCH, rng)
    values = np.array([t.value[0] for t in interactive])
    index = np.array([len(t.released) - 1 for t in interactive])

    def same(b: BatchTranscript) -> bool:
        return st.same_discrete_law(values, b.value[:, 0]) and st.same_discrete_law(
            index, b.end_index
        )

    assert same(batch)
    wrong = SkellamNoiseReduction(times, rate=3.0, stop=RelativeError(0.3))
    assert not same(wrong.run_batch(15, BATCH, rng))


def test_laplace_chain_structure_of_released_iterates() -> None:
    """Consecutive released iterates tie with probability (t_(j+1)/t_j)² (BNR eq. 3)."""
    scales = np.array([3.0, 2.0, 1.2, 0.5])
    mechanism = LaplaceNoiseReduction(scales)
    paths = mechanism.run_batch(0.0, 1, np.random.default_rng(0))  # shape check only
    assert paths.value.shape == (1, 1)
    rng = np.random.default_rng(14)
    runs = np.array([mechanism.run(0.0, rng).released[:, 0] for _ in range(4_000)])
    ties = (runs[:, :-1] == runs[:, 1:]).sum(axis=0)
    right = (scales[1:] / scales[:-1]) ** 2
    assert all(
        st.proportion_is_consistent(int(h), runs.shape[0], p)
        for h, p in zip(ties, right, strict=True)
    )
    wrong = scales[1:] / scales[:-1]  # planted bug: unsquared ratio
    assert not all(
        st.proportion_is_consistent(int(h), runs.shape[0], p)
        for h, p in zip(ties, wrong, strict=True)
    )


# --- adaptive time functions ---------------------------------------------------------------------


def test_adaptive_time_function_matches_the_fixed_grid() -> None:
    grid = TimeGrid([5.0, 2.0, 1.0, 0.4, 0.1])

    def halve_ish(released: Released) -> float | None:
        _ = released.last  # looks at the iterates, ignores them
        k = released.count
        return grid.times[k] if k < len(grid) else None

    rule = RelativeError(0.5)
    fixed = BrownianNoiseReduction(grid, stop=rule)
    adaptive = BrownianNoiseReduction(halve_ish, stop=rule, first_time=5.0, min_time=0.1)
    assert adaptive.adaptive
    assert not fixed.adaptive
    for seed in range(50):
        a = fixed.run(3.0, np.random.default_rng(seed))
        b = adaptive.run(3.0, np.random.default_rng(seed))
        assert np.array_equal(a.released, b.released)
        assert np.array_equal(a.times, b.times)
        assert np.allclose(a.eps, b.eps, rtol=1e-15)
        assert a.stopped == b.stopped
        assert a.cost == b.cost
    assert adaptive.guarantee() == fixed.guarantee() == ZCDP(1.0 / (2 * 0.1))


def test_adaptive_time_function_that_uses_the_iterates() -> None:
    def shrink_until_confident(released: Released) -> float | None:
        t = float(released.times[-1])
        return None if abs(released.last[0]) > 4.0 * math.sqrt(t) else max(t / 3.0, 0.01)

    mechanism = BrownianNoiseReduction(shrink_until_confident, first_time=9.0, min_time=0.01)
    transcript = mechanism.run(1.0, np.random.default_rng(3))
    assert np.all(np.diff(transcript.times) < 0)
    assert transcript.times[-1] >= 0.01
    assert not transcript.stopped
    assert transcript.cost == BrownianCost(transcript.times[-1], 1.0)
    assert transcript.stop_index is None
    with pytest.raises(InvalidParameter, match="adaptive"):
        mechanism.run_batch(1.0, 10, np.random.default_rng(0))


def test_adaptive_time_function_outside_its_range_is_refused() -> None:
    rng = np.random.default_rng(0)
    up = BrownianNoiseReduction(lambda r: r.times[-1] * 2.0, first_time=1.0, min_time=0.1)
    with pytest.raises(InvalidParameter, match="next_time"):
        up.run(0.0, rng)
    below = BrownianNoiseReduction(lambda r: 0.05, first_time=1.0, min_time=0.1)
    with pytest.raises(InvalidParameter, match="next_time"):
        below.run(0.0, rng)


# --- transcript fields ---------------------------------------------------------------------------


def test_brownian_transcript_fields() -> None:
    boundary = LinearPrivacyBoundary.tuned_for(1.0, 1e-3, sensitivity=2.0)
    grid = TimeGrid(np.geomspace(40.0, 0.5, 30))
    mechanism = BrownianNoiseReduction(grid, 2.0, RelativeError(0.2), boundary)
    rng = np.random.default_rng(4)
    transcript = mechanism.run([20.0], rng)
    k = len(transcript.released) - 1
    assert transcript.stop_index == (k if transcript.stopped else None)
    t = float(grid.times[k])
    assert transcript.released.shape == (k + 1, 1)
    assert transcript.time == t
    assert np.array_equal(transcript.value, transcript.released[-1])
    assert np.array_equal(transcript.times, grid.array[: k + 1])
    assert np.allclose(transcript.eps, 2.0 / np.sqrt(grid.array[: k + 1]), rtol=1e-15)
    assert transcript.cost == BrownianCost(t, 2.0, float(boundary(t)), boundary.delta)
    assert transcript.cost == mechanism.cost_at(t)
    assert transcript.ex_post == ExPost(boundary(t), boundary.delta)
    assert transcript.stopped == RelativeError(0.2)(
        Released(transcript.released, transcript.times, 2.0)
    )
    with pytest.raises(ValueError, match="read-only"):
        transcript.released[0, 0] = 0.0
    assert mechanism.guarantee() == ZCDP(4.0 / (2.0 * 0.5))
    assert mechanism.loss() == BrownianLoss(0.5, 2.0)
    assert mechanism.loss(1.0) == BrownianLoss(0.5, 1.0)

    batch = mechanism.run_batch([20.0], 500, rng)
    times = grid.array[batch.end_index]
    assert np.array_equal(batch.times, times)
    assert batch.cost is not None
    assert batch.ex_post_bound is not None
    assert np.allclose(batch.cost, 4.0 / (2.0 * times), rtol=1e-14)
    assert np.allclose(batch.ex_post_bound, boundary(times), rtol=1e-14)
    assert batch.delta == boundary.delta
    assert batch.trials == 500
    assert batch.value.shape == (500, 1)
    assert np.all(batch.stopped | (batch.end_index == len(grid) - 1))
    assert np.array_equal(batch.stop_index, np.where(batch.stopped, batch.end_index, -1))


def test_brownian_epsilon_grid_costs_exact_eps2() -> None:
    grid = EpsilonGrid.from_eps2([0.01, 0.02, 0.03], sensitivity=3.0)
    mechanism = BrownianNoiseReduction(grid, stop=AtIndex(1))
    assert mechanism.sensitivity == 3.0
    transcript = mechanism.run(0.0, np.random.default_rng(0))
    assert transcript.cost == BrownianCost(grid.times.array[1], 3.0)
    assert transcript.ex_post is None
    assert mechanism.guarantee() == ZCDP(0.03 / 2.0)
    batch = mechanism.run_batch(0.0, 3, np.random.default_rng(0))
    assert batch.cost is not None
    assert batch.cost.tolist() == [0.01] * 3


def test_brownian_grid_runs_out_without_stopping() -> None:
    grid = TimeGrid([1.0, 0.5])
    transcript = BrownianNoiseReduction(grid).run(0.0, np.random.default_rng(0))
    assert not transcript.stopped
    assert transcript.stop_index is None
    assert len(transcript.released) == 2
    assert transcript.cost == BrownianCost(0.5, 1.0)
    batch = BrownianNoiseReduction(grid).run_batch(0.0, 7, np.random.default_rng(0))
    assert not batch.stopped.any()
    assert np.all(batch.end_index == 1)
    assert np.all(batch.stop_index == -1)


def test_lazy_batch_walk_draws_only_the_steps_walked() -> None:
    grid = TimeGrid(np.geomspace(10.0, 0.001, 5_000))
    rng, twin = np.random.default_rng(8), np.random.default_rng(8)
    BrownianNoiseReduction(grid, stop=AtIndex(0)).run_batch([1.0, 2.0], 100, rng, chunk=16)
    twin.standard_normal((100, 16, 2))
    assert rng.bit_generator.state == twin.bit_generator.state


def test_laplace_transcript_fields() -> None:
    mechanism = LaplaceNoiseReduction([4.0, 2.0, 1.0, 0.25], sensitivity=0.5, stop=AtIndex(2))
    transcript = mechanism.run([1.0, -1.0], np.random.default_rng(1))
    assert transcript.stop_index == 2
    assert transcript.released.shape == (3, 2)
    # Δ1/scale, one division rounded up: one ulp above the exact 0.5 and 2 (issue 21)
    half, two = math.nextafter(0.5, math.inf), math.nextafter(2.0, math.inf)
    assert transcript.cost == ExPostCost(half, 0.0, eps_max=two)
    assert transcript.cost == mechanism.cost_at(1.0)
    assert mechanism.cost() == ExPostCost(two, 0.0, eps_max=two)
    assert transcript.ex_post == ExPost(half)
    assert np.array_equal(transcript.eps, np.nextafter([0.125, 0.25, 0.5], math.inf))
    assert mechanism.guarantee() == PureDP(two)
    assert mechanism.loss() == LaplaceNoiseReductionLoss(0.25, 0.5)
    batch = mechanism.run_batch([1.0, -1.0], 20, np.random.default_rng(1))
    assert np.all(batch.stop_index == 2)
    assert batch.cost is not None
    assert np.all(batch.cost == half)
    assert batch.delta == 0.0


def test_laplace_rules_see_eps_as_the_pure_dp_level() -> None:
    seen: list[AnyArray] = []

    def rule(released: Released) -> bool:
        seen.append(released.eps)
        return False

    LaplaceNoiseReduction([2.0, 0.5], sensitivity=1.5, stop=rule).run(0.0, np.random.default_rng(0))
    assert np.allclose(seen[-1], [0.75, 3.0], rtol=1e-15)


def test_skellam_transcript_and_loss() -> None:
    mechanism = SkellamNoiseReduction([20.0, 5.0, 1.0], rate=2.0, sensitivity=2, stop=AtIndex(1))
    transcript = mechanism.run([3, -7], np.random.default_rng(2))
    assert transcript.released.dtype == np.int64
    assert transcript.cost is None
    assert transcript.ex_post is None
    assert np.allclose(transcript.eps, 2.0 / np.sqrt(4.0 * np.array([20.0, 5.0])))
    assert mechanism.loss() == SkellamLoss(2.0, 2)
    assert mechanism.loss(1, time=5.0) == SkellamLoss(10.0, 1)
    batch = mechanism.run_batch([3, -7], 4, np.random.default_rng(2))
    assert batch.value.dtype == np.int64
    assert batch.cost is None
    with pytest.raises(InvalidParameter, match="value"):
        mechanism.run(0.5, np.random.default_rng(0))


# --- bad input: InvalidParameter, nothing drawn --------------------------------------------------


def unchanged(rng: np.random.Generator, seed: int) -> bool:
    return rng.bit_generator.state == np.random.default_rng(seed).bit_generator.state


@pytest.mark.parametrize(
    "make",
    [
        lambda: LaplaceNoiseReduction([1.0, 2.0]),
        lambda: LaplaceNoiseReduction([1.0, 1.0]),
        lambda: LaplaceNoiseReduction([1.0, -1.0]),
        lambda: LaplaceNoiseReduction([1.0, 0.5], sensitivity=0.0),
        lambda: LaplaceNoiseReduction([1.0, math.nan]),
        lambda: SkellamNoiseReduction([1.0, 2.0]),
        lambda: SkellamNoiseReduction([2.0, 0.0]),
        lambda: SkellamNoiseReduction([2.0, 1.0], sensitivity=0),
        lambda: SkellamNoiseReduction([2.0, 1.0], sensitivity=1.5),  # type: ignore[arg-type]
        lambda: SkellamNoiseReduction([2.0, 1.0], rate=-1.0),
        lambda: BrownianNoiseReduction(TimeGrid([2.0, 1.0]), sensitivity=-1.0),
        lambda: BrownianNoiseReduction(TimeGrid([2.0, 1.0]), sensitivity=math.nan),
        lambda: BrownianNoiseReduction(EpsilonGrid([0.1, 0.2]), sensitivity=2.0),
        lambda: BrownianNoiseReduction(OpenEpsilonGrid.linear_in_eps2(1e-4, 10)),  # type: ignore[arg-type]
        lambda: BrownianNoiseReduction([2.0, 1.0]),  # type: ignore[arg-type]
        lambda: BrownianNoiseReduction(lambda r: None, first_time=1.0),
        lambda: BrownianNoiseReduction(lambda r: None, first_time=1.0, min_time=2.0),
        lambda: BrownianNoiseReduction(lambda r: None, first_time=0.0, min_time=0.0),
        lambda: BrownianNoiseReduction(TimeGrid([2.0, 1.0]), min_time=0.5),
        lambda: BrownianNoiseReduction(
            TimeGrid([2.0, 1.0]), boundary=MixturePrivacyBoundary(1.0, 1e-6, sensitivity=2.0)
        ),
        lambda: BrownianNoiseReduction(TimeGrid([2.0, 1.0]), boundary=lambda t: t),
    ],
)
def test_bad_construction_is_refused(make: Callable[[], object]) -> None:
    with pytest.raises(InvalidParameter):
        make()


def test_open_grid_must_be_clipped_first() -> None:
    open_grid = OpenEpsilonGrid.linear_in_eps2(1e-4, 10)
    assert isinstance(open_grid, OpenEpsilonGrid)
    with pytest.raises(InvalidParameter, match="clip"):
        BrownianNoiseReduction(open_grid)  # type: ignore[arg-type]
    assert len(BrownianNoiseReduction(open_grid.clip(0.5)).times) == 10


def test_non_stopping_rules_are_refused() -> None:
    with pytest.raises(NotAStoppingTime):
        BrownianNoiseReduction(TimeGrid([1.0]), stop=lambda released, data: True)
    with pytest.raises(NotAStoppingTime):
        LaplaceNoiseReduction([1.0], stop=3)


@pytest.mark.parametrize("value", [math.nan, [1.0, math.inf], [[1.0]], [], "x"])
@pytest.mark.parametrize(
    "mechanism",
    [
        BrownianNoiseReduction(TimeGrid([2.0, 1.0])),
        LaplaceNoiseReduction([2.0, 1.0]),
        SkellamNoiseReduction([2.0, 1.0]),
    ],
    ids=["brownian", "laplace", "skellam"],
)
def test_bad_values_draw_nothing(value: object, mechanism: Any) -> None:
    rng = np.random.default_rng(21)
    with pytest.raises(InvalidParameter):
        mechanism.run(value, rng)
    with pytest.raises(InvalidParameter):
        mechanism.run_batch(value, 5, rng)
    assert unchanged(rng, 21)


@pytest.mark.parametrize(
    "mechanism",
    [
        BrownianNoiseReduction(TimeGrid([2.0, 1.0]), stop=lambda r: False),
        LaplaceNoiseReduction([2.0, 1.0], stop=lambda r: False),
        SkellamNoiseReduction([2.0, 1.0], stop=lambda r: False),
    ],
    ids=["brownian", "laplace", "skellam"],
)
def test_batch_needs_a_vectorised_rule_and_valid_trials(mechanism: Any) -> None:
    rng = np.random.default_rng(22)
    with pytest.raises(InvalidParameter, match="stop"):
        mechanism.run_batch(1, 5, rng)
    with pytest.raises(InvalidParameter, match="trials"):
        mechanism.run_batch(1, 0, rng)
    with pytest.raises(InvalidParameter, match=r"rng|source"):  # merged classes: source
        mechanism.run(1, 7)
    assert unchanged(rng, 22)


def test_brownian_costs_describe_the_stop_and_the_worst_case() -> None:
    grid = TimeGrid([4.0, 1.0, 0.25])
    plain = BrownianNoiseReduction(grid, sensitivity=2.0)
    assert plain.cost_at(1.0) == BrownianCost(1.0, 2.0, None, 0.0)
    assert plain.cost() == BrownianCost(0.25, 2.0)  # the worst case: t_min (APC Thm 5 (3))
    boundary = LinearPrivacyBoundary.tuned_for(1.0, 1e-3, sensitivity=2.0)
    bounded = BrownianNoiseReduction(grid, sensitivity=2.0, boundary=boundary)
    assert bounded.cost() == BrownianCost(0.25, 2.0, float(boundary(0.25)), boundary.delta)
    adaptive = BrownianNoiseReduction(lambda r: None, first_time=3.0, min_time=0.5)
    assert adaptive.cost() == BrownianCost(0.5, 1.0)
    with pytest.raises(InvalidParameter, match="time"):
        plain.cost_at(0.0)
