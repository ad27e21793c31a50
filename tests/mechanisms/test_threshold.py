"""AboveThreshold (float and exact noise) and ReducedAboveThreshold: halting laws, the Brownian
coupling, black-box audits, bad input.

Halting-index laws are compared with independent simulations written here (Laplace noise by
inverse CDF, discrete Laplace noise as a difference of two geometric variables, threshold noise
by the Koufogiannis chain rather than the continuous process) by the chi-square homogeneity test
of tests/stats.py at alpha = 1e-6. Every comparison has a planted-bug twin that must be rejected:
the same simulation with the wrong threshold or query noise. The exact mode's eps-DP claim is
also audited black-box (`expost.testing.audit_mechanism`, alpha = 1e-3) with a refuted twin.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as hs

from expost.boundaries import LinearPrivacyBoundary
from expost.errors import InvalidParameter
from expost.exact.bits import GeneratorBits
from expost.filters.costs import DPCost, ExPostCost
from expost.grids import TimeGrid
from expost.guarantees import ExPost, PureDP
from expost.mechanism_table import mechanism_for
from expost.mechanisms.noise_reduction import BrownianNoiseReduction
from expost.mechanisms.threshold import AboveThreshold, ReducedAboveThreshold
from expost.processes import sample_brownian_grid, sample_koufogiannis_grid
from expost.stopping import AtIndex
from expost.testing import audit_mechanism
from tests import stats as st

AnyArray = npt.NDArray[Any]
INTERACTIVE = 3_000
BATCH = 20_000
UTILITIES = np.linspace(-3.0, 1.0, 8)
TAU = 1.0


def laplace(scale: AnyArray | float, size: tuple[int, ...], rng: np.random.Generator) -> AnyArray:
    """Lap(scale) by inverse CDF of a uniform (independent of numpy's laplace sampler)."""
    u = rng.random(size) - 0.5
    return np.asarray(-np.asarray(scale) * np.sign(u) * np.log1p(-2.0 * np.abs(u)))


def first_or_minus_one(fired: AnyArray) -> AnyArray:
    return np.where(fired.any(axis=1), np.argmax(fired, axis=1), -1)


def simulate_above_threshold(
    eps: float, utilities: AnyArray, trials: int, rng: np.random.Generator, threshold_scale: float
) -> AnyArray:
    zeta = laplace(threshold_scale, (trials, 1), rng)
    xi = laplace(4.0 / eps, (trials, utilities.size), rng)
    return first_or_minus_one(utilities + xi >= TAU + zeta)


def as_indices(results: list[int | None]) -> AnyArray:
    return np.array([-1 if i is None else i for i in results])


def test_above_threshold_halting_law() -> None:
    eps = 1.0
    mechanism = AboveThreshold(eps, TAU)
    rng = np.random.default_rng(31)
    interactive = as_indices([mechanism.run(UTILITIES, rng).stop_index for _ in range(INTERACTIVE)])
    batch = mechanism.run_batch(np.tile(UTILITIES, (BATCH, 1)), rng)
    reference = simulate_above_threshold(eps, UTILITIES, BATCH, rng, 2.0 / eps)
    assert np.unique(reference).size >= 6  # varied halting points, sometimes none
    assert st.same_discrete_law(interactive, reference)
    assert st.same_discrete_law(batch, reference)
    # planted bug: threshold noise Lap(Δ/eps) instead of Lap(2Δ/eps)
    wrong = simulate_above_threshold(eps, UTILITIES, BATCH, rng, 1.0 / eps)
    assert not st.same_discrete_law(batch, wrong)
    assert not st.same_discrete_law(interactive, wrong)


def test_above_threshold_consumes_lazily_and_reports() -> None:
    asked: list[float] = []

    def stream() -> Iterator[float]:
        for u in [-100.0, -100.0, 100.0, -100.0]:
            asked.append(u)
            yield u

    mechanism = AboveThreshold(2.0, 0.0, sensitivity=0.5)
    result = mechanism.run(stream(), np.random.default_rng(0))
    assert result.stop_index == 2
    assert result.stopped
    assert result.queries_asked == 3
    assert result.cost == mechanism.cost() == DPCost(2.0)
    assert len(asked) == 3
    assert mechanism.guarantee() == PureDP(2.0)
    assert mechanism.threshold_scale == 0.5
    assert mechanism.query_scale == 1.0
    none = mechanism.run([-100.0] * 5, np.random.default_rng(0))
    assert none.stop_index is None
    assert not none.stopped
    assert none.cost == DPCost(2.0)
    assert none.queries_asked == 5


# --- exact noise: integer utilities, discrete Laplace noises --------------------------------------

INT_UTILITIES = np.arange(-6, 2)
INT_TAU = 1


def bits(seed: int) -> GeneratorBits:
    return GeneratorBits(np.random.default_rng(seed))


def discrete_laplace(scale: float, size: tuple[int, ...], rng: np.random.Generator) -> AnyArray:
    """P(x) ∝ exp(−|x|/scale) on the integers as G1 − G2, G geometric with success probability
    1 − e^(−1/scale) (independent of the library's exact sampler)."""
    p = -math.expm1(-1.0 / scale)
    return np.asarray(rng.geometric(p, size) - rng.geometric(p, size))


def simulate_exact(
    eps: float, trials: int, rng: np.random.Generator, threshold_scale: float
) -> AnyArray:
    zeta = discrete_laplace(threshold_scale, (trials, 1), rng)
    xi = discrete_laplace(4.0 / eps, (trials, INT_UTILITIES.size), rng)
    return first_or_minus_one(INT_UTILITIES + xi >= INT_TAU + zeta)


def test_exact_above_threshold_halting_law() -> None:
    eps = 1
    mechanism = AboveThreshold(eps, INT_TAU, exact=True)
    source = bits(41)
    interactive = as_indices(
        [mechanism.run(INT_UTILITIES, source).stop_index for _ in range(INTERACTIVE)]
    )
    batch = mechanism.run_batch(np.tile(INT_UTILITIES, (BATCH, 1)), source)
    rng = np.random.default_rng(42)
    reference = simulate_exact(eps, BATCH, rng, 2.0 / eps)
    assert np.unique(reference).size >= 6  # varied halting points, sometimes none
    assert st.same_discrete_law(interactive, reference)
    assert st.same_discrete_law(batch, reference)
    # planted bug: threshold noise DLap(Δ/eps) instead of DLap(2Δ/eps)
    wrong = simulate_exact(eps, BATCH, rng, 1.0 / eps)
    assert not st.same_discrete_law(batch, wrong)
    assert not st.same_discrete_law(interactive, wrong)


def test_exact_above_threshold_run_and_batch() -> None:
    at = AboveThreshold(Fraction(1, 2), 10, exact=True)
    assert at.threshold_scale == 4
    assert at.query_scale == 8
    assert isinstance(at.query_scale, Fraction)
    assert at.cost() == DPCost(0.5)
    result = at.run(iter([-1000, -1000, 1000, 5]), bits(1))
    assert result.stop_index == 2  # wrong only if some |noise| > 505: probability < 4·e^-63
    assert result.queries_asked == 3
    stops = at.run_batch(np.array([[-1000, 1000], [-1000, -1000]]), bits(2))
    assert stops.tolist() == [1, -1]


def test_exact_sums_do_not_wrap() -> None:
    """Utilities and thresholds beyond int64 are compared in Python integers (`add_exact`)."""
    top = 2**63 - 1
    at = AboveThreshold(1, 2**62, exact=True)
    assert at.run_batch(np.array([[top, -top], [-top, -top]]), bits(3)).tolist() == [0, -1]
    big = AboveThreshold(1, 2**70, exact=True)
    assert big.run_batch([[2**70 - 1000, 2**70 + 1000]], bits(4)).tolist() == [1]
    assert big.run([2**70 - 1000, 2**70 + 1000], bits(4)).stop_index == 1


def test_exact_is_a_field_of_the_mechanism() -> None:
    exact = AboveThreshold(1, 0, exact=True)
    assert exact != AboveThreshold(1, 0)  # equal numbers, different noise
    assert (exact.eps, exact.threshold, exact.sensitivity) == (Fraction(1), 0, 1)
    assert AboveThreshold(0.1, 0, exact=True).eps == Fraction(0.1)  # a float taken exactly
    assert AboveThreshold(1, 0).query_scale == 4.0
    with pytest.raises(InvalidParameter, match="source"):
        exact.run([1], np.random.default_rng(0))  # exact noise needs a BitSource
    with pytest.raises(InvalidParameter, match="source"):
        AboveThreshold(1, 0).run([1.0], bits(0))  # float noise needs a Generator


@given(
    hs.fractions(min_value=Fraction(1, 10**6), max_value=10**6),
    hs.integers(min_value=1, max_value=10**6),
)
def test_exact_scales_are_exact_and_the_price_rounds_up(eps: Fraction, sensitivity: int) -> None:
    at = AboveThreshold(eps, 0, sensitivity, exact=True)
    assert at.threshold_scale == 2 * sensitivity / eps
    assert at.query_scale == 2 * at.threshold_scale
    assert Fraction(at.cost().eps) >= eps
    assert at.guarantee() == PureDP(at.cost().eps)


def test_one_class_in_both_modes_of_the_table() -> None:
    """Both entries build `AboveThreshold`, each with its mode's noise; the sampler limits and
    |τ| <= 2**1000 are refused when the round is built (before anything is spent)."""
    float_build = mechanism_for("above-threshold", "float").build
    exact_build = mechanism_for("above-threshold", "exact").build
    assert float_build(Fraction(1, 3), 2, 1) == AboveThreshold(1 / 3, 2.0)  # Fraction rounded
    assert exact_build(Fraction(1, 3), 2, 1) == AboveThreshold(Fraction(1, 3), 2, exact=True)
    with pytest.raises(InvalidParameter, match="2\\*\\*40"):
        exact_build(1, 0, 2**39)  # 4Δ/eps = 2**41
    exact_build(1, 0, 2**38)  # 4Δ/eps = 2**40: at the limit
    with pytest.raises(InvalidParameter, match="2\\*\\*1000"):
        float_build(1e-300, 0, 1e10)
    for build in (float_build, exact_build):
        with pytest.raises(InvalidParameter, match="threshold"):
            build(1, 2**1001, 1)
        with pytest.raises(InvalidParameter, match="threshold"):
            build(1, 1.5 if build is exact_build else "1", 1)


class Threshold:
    """Exact AboveThreshold over utilities (n − 1, n, n + 1), n the count: sensitivity 1."""

    def __init__(self, mechanism: AboveThreshold) -> None:
        self.mechanism = mechanism

    def __call__(self, data: Sequence[Any], rng: np.random.Generator) -> int:
        return int(self.batch(data, 1, rng)[0])

    def batch(self, data: Sequence[Any], n: int, rng: np.random.Generator) -> AnyArray:
        u = np.tile(len(data) + np.arange(-1, 2), (n, 1))
        return self.mechanism.run_batch(u, GeneratorBits(rng))


def audit(mechanism: Threshold, eps: float) -> bool:
    """Refuted? 20,000 outputs per side in the final test, alpha = 1e-3 (the auditor's default)."""
    result = audit_mechanism(mechanism, eps=eps, datasets=[[1, 2]], samples=20_000, seed=3)
    return result.refuted


def test_exact_above_threshold_is_not_refuted_at_its_claim() -> None:
    assert not audit(Threshold(AboveThreshold(1, 3, exact=True)), eps=1.0)


def test_exact_above_threshold_twin_is_refuted() -> None:
    # planted bug: noises for eps = 8, claimed 1-DP
    assert audit(Threshold(AboveThreshold(8, 3, exact=True)), eps=1.0)


def test_reduced_above_threshold_with_constant_levels_is_above_threshold() -> None:
    eps = 1.0
    rat = ReducedAboveThreshold(TAU, eps_max=3.0)
    rng = np.random.default_rng(32)
    levels = [eps] * UTILITIES.size
    interactive = as_indices(
        [rat.run(UTILITIES, levels, rng).stop_index for _ in range(INTERACTIVE)]
    )
    batch = rat.run_batch(np.tile(UTILITIES, (BATCH, 1)), levels, rng)
    above = AboveThreshold(eps, TAU).run_batch(np.tile(UTILITIES, (BATCH, 1)), rng)
    assert st.same_discrete_law(interactive, above)
    assert st.same_discrete_law(batch, above)
    wrong = simulate_above_threshold(eps, UTILITIES, BATCH, rng, 1.0 / eps)
    assert not st.same_discrete_law(interactive, wrong)


LEVELS = np.array([0.3, 0.3, 0.5, 0.8, 1.2, 1.5, 2.5, 4.0])
RAT_UTILITIES = np.array([-6.0, -4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0])


def simulate_reduced(
    utilities: AnyArray,
    levels: AnyArray,
    trials: int,
    rng: np.random.Generator,
    query: float = 4.0,
    tau: float = TAU,
) -> AnyArray:
    """BNR Algorithm 1 with the thresholds from the Koufogiannis chain on the distinct scales."""
    scales = 2.0 / levels
    distinct = np.unique(scales)[::-1]
    chain = sample_koufogiannis_grid(distinct, trials, 1, rng)[:, :, 0]
    zeta = chain[:, [int(np.flatnonzero(distinct == s)[0]) for s in scales]]
    xi = laplace(query / levels, (trials, levels.size), rng)
    return first_or_minus_one(utilities + xi >= tau + zeta)


def test_reduced_above_threshold_halting_law() -> None:
    rat = ReducedAboveThreshold(TAU, eps_max=5.0)
    rng = np.random.default_rng(33)
    interactive = as_indices(
        [rat.run(iter(RAT_UTILITIES), iter(LEVELS), rng).stop_index for _ in range(INTERACTIVE)]
    )
    batch = rat.run_batch(np.tile(RAT_UTILITIES, (BATCH, 1)), LEVELS, rng)
    reference = simulate_reduced(RAT_UTILITIES, LEVELS, BATCH, rng)
    assert np.unique(reference).size >= 6
    assert st.same_discrete_law(interactive, reference)
    assert st.same_discrete_law(batch, reference)
    # planted bug: query noise Lap(2Δ/eps_n) instead of Lap(4Δ/eps_n)
    wrong = simulate_reduced(RAT_UTILITIES, LEVELS, BATCH, rng, query=2.0)
    assert not st.same_discrete_law(interactive, wrong)
    assert not st.same_discrete_law(batch, wrong)


def test_reduced_above_threshold_result() -> None:
    rat = ReducedAboveThreshold(0.0, eps_max=2.0, sensitivity=0.5)
    result = rat.run([-1e6, -1e6, 1e6, 1e6], [0.5, 1.0, 1.5, 2.0], np.random.default_rng(0))
    assert result.stop_index == 2
    assert result.queries_asked == 3
    assert result.level == 1.5
    assert result.ex_post == ExPost(1.5)
    assert result.cost == ExPostCost(1.5)
    assert result.stopped
    none = rat.run([-1e6, -1e6], [0.5, 0.7], np.random.default_rng(0))
    assert none.stop_index is None
    assert not none.stopped
    assert none.cost == ExPostCost(0.7)
    assert none.queries_asked == 2
    assert none.level == 0.7
    empty = rat.run([], [], np.random.default_rng(0))
    assert empty.stop_index is None
    assert empty.ex_post is None
    assert empty.cost is None


def test_adaptive_levels_are_read_lazily() -> None:
    """Levels may be computed round by round (from what was released before)."""
    seen: list[int] = []

    def levels() -> Iterator[float]:
        for n in range(100):
            seen.append(n)
            yield 0.1 * (n + 1)

    rat = ReducedAboveThreshold(0.0, eps_max=10.0)
    result = rat.run([-1e6, -1e6, -1e6, 1e6, 1e6], levels(), np.random.default_rng(1))
    assert result.stop_index == 3
    assert len(seen) == 4
    assert result.level == pytest.approx(0.4)


# --- ReducedAboveThreshold on a Brownian mechanism (BNR Cor 5.2) ---------------------------------

BOUNDARY = LinearPrivacyBoundary.tuned_for(1.0, 1e-3)
BM_TIMES = np.geomspace(30.0, 0.3, 10)
TARGET = 2.0


def utility(iterate: AnyArray) -> float:
    """−|iterate − target| (computed on private data: here the private value is the target)."""
    return -abs(float(iterate[0]) - TARGET)


def simulate_brownian_rat(
    trials: int, rng: np.random.Generator, levels: AnyArray, tau: float
) -> AnyArray:
    paths = TARGET + sample_brownian_grid(BM_TIMES, trials, 1, rng)[:, :, 0]
    return simulate_reduced(-np.abs(paths - TARGET), levels, trials, rng, tau=tau)


def test_run_with_brownian_halting_law_and_guarantee() -> None:
    eps_max = float(BOUNDARY(BM_TIMES[-1]))
    rat = ReducedAboveThreshold(-0.5, eps_max=eps_max)
    bm = BrownianNoiseReduction(TimeGrid(BM_TIMES), boundary=BOUNDARY)
    rng = np.random.default_rng(34)
    results = [rat.run_with_brownian(bm, TARGET, utility, rng) for _ in range(INTERACTIVE)]
    interactive = as_indices([r.stop_index for r in results])
    levels = np.asarray(BOUNDARY(BM_TIMES))
    reference = simulate_brownian_rat(BATCH, rng, levels, -0.5)
    assert np.unique(reference).size >= 5
    assert st.same_discrete_law(interactive, reference)
    # planted bug: a constant level ψ(T_1) (AboveThreshold at the cheapest level)
    wrong = simulate_brownian_rat(BATCH, rng, np.full(BM_TIMES.size, levels[0]), -0.5)
    assert not st.same_discrete_law(interactive, wrong)
    for r in results:
        if r.stop_index is None:
            assert r.value is None
            assert r.ex_post is None
            assert not r.stopped
            assert r.cost == rat.brownian_cost(bm)
            assert r.cost == ExPostCost(2.0 * float(BOUNDARY(BM_TIMES[-1])), BOUNDARY.delta)
            continue
        t = BM_TIMES[r.stop_index]
        assert r.stopped
        assert r.cost == ExPostCost(2.0 * float(BOUNDARY(t)), BOUNDARY.delta)  # BNR Cor 5.2
        assert r.time == t
        assert r.level == BOUNDARY(t)
        assert r.ex_post == ExPost(2.0 * BOUNDARY(t), BOUNDARY.delta)  # BNR Cor 5.2
        assert r.value is not None
        assert r.value.shape == (1,)


def test_run_with_brownian_adaptive_times() -> None:
    bm = BrownianNoiseReduction(
        lambda r: r.times[-1] / 2.0 if r.count < 6 else None,
        boundary=BOUNDARY,
        first_time=16.0,
        min_time=0.25,
    )
    rat = ReducedAboveThreshold(1e6, eps_max=float(BOUNDARY(0.25)))
    result = rat.run_with_brownian(bm, [0.0], lambda y: 0.0, np.random.default_rng(2))
    assert result.stop_index is None
    assert result.queries_asked == 6


def test_run_with_brownian_refuses_bad_setups() -> None:
    rng = np.random.default_rng(35)
    grid = TimeGrid(BM_TIMES)
    rat = ReducedAboveThreshold(0.0, eps_max=float(BOUNDARY(BM_TIMES[-1])))
    with pytest.raises(InvalidParameter, match="boundary"):
        rat.run_with_brownian(BrownianNoiseReduction(grid), 0.0, utility, rng)
    stopping = BrownianNoiseReduction(grid, stop=AtIndex(2), boundary=BOUNDARY)
    with pytest.raises(InvalidParameter, match="Never"):
        rat.run_with_brownian(stopping, 0.0, utility, rng)
    low = ReducedAboveThreshold(0.0, eps_max=float(BOUNDARY(BM_TIMES[-2])))
    with pytest.raises(InvalidParameter, match="eps_max"):
        low.run_with_brownian(BrownianNoiseReduction(grid, boundary=BOUNDARY), 0.0, utility, rng)
    bm = BrownianNoiseReduction(grid, boundary=BOUNDARY)
    with pytest.raises(InvalidParameter, match="value"):
        rat.run_with_brownian(bm, math.nan, utility, rng)
    with pytest.raises(InvalidParameter, match="utility"):
        rat.run_with_brownian(bm, 0.0, 3.0, rng)  # type: ignore[arg-type]
    assert rng.bit_generator.state == np.random.default_rng(35).bit_generator.state


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        (AboveThreshold, {"eps": 0.0, "threshold": 0.0}),
        (AboveThreshold, {"eps": math.nan, "threshold": 0.0}),
        (AboveThreshold, {"eps": 1.0, "threshold": math.inf}),
        (AboveThreshold, {"eps": 1.0, "threshold": 0.0, "sensitivity": -1.0}),
        (AboveThreshold, {"eps": 1.0, "threshold": 0.0, "exact": 1}),
        (AboveThreshold, {"eps": 1.0, "threshold": 0.5, "exact": True}),
        (AboveThreshold, {"eps": 1.0, "threshold": 0, "sensitivity": 1.5, "exact": True}),
        (AboveThreshold, {"eps": 1.0, "threshold": 0, "sensitivity": 0, "exact": True}),
        (AboveThreshold, {"eps": 0, "threshold": 0, "exact": True}),
        (AboveThreshold, {"eps": math.inf, "threshold": 0, "exact": True}),
        (AboveThreshold, {"eps": "1", "threshold": 0, "exact": True}),
        (ReducedAboveThreshold, {"threshold": 0.0, "eps_max": 0.0}),
        (ReducedAboveThreshold, {"threshold": math.nan, "eps_max": 1.0}),
        (ReducedAboveThreshold, {"threshold": 0.0, "eps_max": 1.0, "sensitivity": 0.0}),
    ],
)
def test_bad_parameters(cls: type, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidParameter):
        cls(**kwargs)


def test_bad_utilities_and_levels_draw_nothing() -> None:
    rng = np.random.default_rng(36)
    at = AboveThreshold(1.0, 0.0)
    rat = ReducedAboveThreshold(0.0, eps_max=1.0)
    with pytest.raises(InvalidParameter, match="utilities"):
        at.run([math.nan, 1.0], rng)
    with pytest.raises(InvalidParameter, match="utilities"):
        at.run_batch([[1.0, math.nan]], rng)
    with pytest.raises(InvalidParameter, match="utilities"):
        at.run_batch([1.0, 2.0], rng)
    with pytest.raises(InvalidParameter, match="levels"):
        rat.run([0.0], [1.5], rng)  # above eps_max
    with pytest.raises(InvalidParameter, match="levels"):
        rat.run([0.0], [-0.5], rng)
    with pytest.raises(InvalidParameter, match="utilities"):
        rat.run([math.inf], [0.5], rng)
    with pytest.raises(InvalidParameter, match="levels"):
        rat.run_batch([[0.0, 0.0]], [0.5, 1.5], rng)
    with pytest.raises(InvalidParameter, match="levels"):
        rat.run_batch([[0.0, 0.0]], [0.5, 0.4], rng)  # decreasing
    with pytest.raises(InvalidParameter, match="levels"):
        rat.run_batch([[0.0, 0.0]], [0.5], rng)
    with pytest.raises(InvalidParameter, match="source"):
        at.run([1.0], 3)  # type: ignore[arg-type]
    assert rng.bit_generator.state == np.random.default_rng(36).bit_generator.state


def test_exact_bad_utilities_draw_nothing() -> None:
    rng = np.random.default_rng(37)
    source = GeneratorBits(rng)
    at = AboveThreshold(1, 0, exact=True)
    for bad in ([1.5, 2], [True], ["1"], [[1, 2]], [Fraction(1, 2)]):
        with pytest.raises(InvalidParameter, match="utilities"):
            at.run(bad, source)  # type: ignore[arg-type]
    batches: list[Any] = [[[1, 2.5]], [1, 2], [[]], [[2**1001, 0]]]
    for batch in batches:
        with pytest.raises(InvalidParameter, match="utilities"):
            at.run_batch(batch, source)
    assert rng.bit_generator.state == np.random.default_rng(37).bit_generator.state


def test_decreasing_levels_are_refused() -> None:
    """The proof of BNR Thm 5.1 needs the threshold process read at decreasing scales."""
    rat = ReducedAboveThreshold(1e6, eps_max=1.0)
    with pytest.raises(InvalidParameter, match="non-decreasing"):
        rat.run([0.0, 0.0], [0.5, 0.4], np.random.default_rng(0))
