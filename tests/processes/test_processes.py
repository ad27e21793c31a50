"""Exact path samplers (THEORY.md §3): laws, interactive = batch, and bad input.

Every statistical check runs at the false-alarm level of tests/stats.py (alpha = 1e-6 per
comparison; a path-law check makes one KS comparison per feature, so its false-alarm level is at
most the number of features times alpha). Each check has a planted-bug twin in the same test that
it must reject: usually the library's own code with one private formula monkeypatched to a wrong
one (bridge variance, increment variance, keep probability, arrival intensity, thinning).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats as sps

from expost.errors import InvalidParameter
from expost.processes import (
    BrownianPath,
    LaplaceProcess,
    SkellamPath,
    sample_brownian_grid,
    sample_brownian_grid_privacy_time,
    sample_koufogiannis_grid,
    sample_laplace_grid,
    sample_skellam_grid,
)
from expost.processes import _paths as paths_module
from expost.processes import brownian as brownian_module
from expost.processes import laplace as laplace_module
from expost.processes import skellam as skellam_module
from tests import stats as st

AnyArray = npt.NDArray[Any]
GRIDS = [(4.0, 2.0, 1.0), (1.0, 0.9, 0.3, 0.05), (10.0, 0.5)]
DIMS = [1, 3]
INTERACTIVE_TRIALS = 3_000
BATCH_TRIALS = 20_000


class _Path(Protocol):
    def next(self, t: float, /) -> AnyArray: ...


def walk(make: Callable[[], _Path], grid: Sequence[float], trials: int) -> AnyArray:
    """``trials`` independent interactive paths read at ``grid``: shape (trials, K, d)."""
    paths = [make() for _ in range(trials)]
    return np.array([[path.next(t) for t in grid] for path in paths])


def path_features(paths: AnyArray) -> list[AnyArray]:
    """Marginals, consecutive differences and products, and a cross-coordinate product."""
    K = paths.shape[1]
    features = [paths[:, k] for k in range(K)]
    features += [paths[:, k] - paths[:, k + 1] for k in range(K - 1)]
    features += [paths[:, k] * paths[:, k + 1] for k in range(K - 1)]
    if paths.shape[2] > 1:
        features.append(paths[:, :, 0] * paths[:, :, 1])
    return features


def same_path_law(a: AnyArray, b: AnyArray) -> bool:
    """Two-sample KS on every feature of `path_features` (coordinates pooled: they are iid)."""
    return all(st.same_law(x, y) for x, y in zip(path_features(a), path_features(b), strict=True))


def marginals_follow(paths: AnyArray, grid: Sequence[float], cdf: Callable[..., Any]) -> bool:
    """One-sample KS of ``paths[:, k] / grid[k]`` against ``cdf`` at every grid point."""
    return all(st.follows(paths[:, k] / g, cdf) for k, g in enumerate(grid))


def unchanged_as_predicted(paths: AnyArray, grid: Sequence[float]) -> bool:
    """Binomial test of P(ζ(s) = ζ(t)) = (s/t)² for every pair of scales s < t."""
    n = paths.shape[0] * paths.shape[2]
    return all(
        st.proportion_is_consistent(
            int(np.sum(paths[:, i] == paths[:, j])), n, (grid[j] / grid[i]) ** 2
        )
        for i in range(len(grid))
        for j in range(i + 1, len(grid))
    )


# --- Brownian motion ------------------------------------------------------------------------


def plant_missing_square_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: increments with standard deviation (not variance) t_k − t_(k+1)."""
    gaps = paths_module.gaps
    monkeypatch.setattr(brownian_module, "gaps", lambda g: gaps(g) ** 2)


@pytest.mark.parametrize("grid", GRIDS)
def test_brownian_marginals_are_normal_with_variance_t(
    grid: tuple[float, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    sd = tuple(math.sqrt(t) for t in grid)
    paths = sample_brownian_grid(grid, BATCH_TRIALS, 1, np.random.default_rng(11))
    assert marginals_follow(paths, sd, sps.norm.cdf)
    plant_missing_square_root(monkeypatch)
    wrong = sample_brownian_grid(grid, BATCH_TRIALS, 1, np.random.default_rng(11))
    assert not marginals_follow(wrong, sd, sps.norm.cdf)


def covariance_is_min(paths: AnyArray, grid: Sequence[float]) -> bool:
    """Cov(B_a(t_i), B_b(t_j)) = min(t_i, t_j)·[a = b], by mean tests on products."""
    checks = []
    for i in range(len(grid)):
        for j in range(i, len(grid)):
            c = min(grid[i], grid[j])
            prod = paths[:, i, 0] * paths[:, j, 0]
            checks.append(st.mean_is_consistent(prod, c, math.sqrt(grid[i] * grid[j] + c * c)))
            if paths.shape[2] > 1:
                cross = paths[:, i, 0] * paths[:, j, 1]
                checks.append(st.mean_is_consistent(cross, 0.0, math.sqrt(grid[i] * grid[j])))
    return all(checks)


@pytest.mark.parametrize("d", DIMS)
def test_brownian_batch_covariance_is_min(d: int) -> None:
    grid = (4.0, 2.0, 1.0, 0.25)
    rng = np.random.default_rng(12)
    assert covariance_is_min(sample_brownian_grid(grid, BATCH_TRIALS, d, rng), grid)
    # Planted bug: right marginals, independent across times.
    independent = rng.standard_normal((BATCH_TRIALS, len(grid), d)) * np.sqrt(grid)[:, None]
    assert not covariance_is_min(independent, grid)


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("d", DIMS)
def test_brownian_interactive_and_batch_have_the_same_law(
    grid: tuple[float, ...], d: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(13)
    batch = sample_brownian_grid(grid, INTERACTIVE_TRIALS, d, rng)
    assert same_path_law(walk(lambda: BrownianPath(d, rng), grid, INTERACTIVE_TRIALS), batch)
    # Planted bug: bridge noise of variance s − t instead of t(s − t)/s.
    monkeypatch.setattr(brownian_module, "_bridge_sd", lambda t, s: math.sqrt(s - t))
    wrong = walk(lambda: BrownianPath(d, rng), grid, INTERACTIVE_TRIALS)
    assert not same_path_law(wrong, batch)


@pytest.mark.parametrize("d", DIMS)
def test_privacy_time_sampler_has_the_law_of_the_grid_sampler(
    d: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    grid = (2.0, 1.5, 0.4, 0.1)
    rng = np.random.default_rng(14)
    inverted = sample_brownian_grid_privacy_time(grid, BATCH_TRIALS, d, rng)
    assert same_path_law(inverted, sample_brownian_grid(grid, BATCH_TRIALS, d, rng))
    plant_missing_square_root(monkeypatch)
    assert not same_path_law(inverted, sample_brownian_grid(grid, BATCH_TRIALS, d, rng))


def test_brownian_path_history_is_a_read_only_copy() -> None:
    path = BrownianPath(2, np.random.default_rng(15))
    assert path.times.shape == (0,)
    assert path.values.shape == (0, 2)
    first = path.next(2.0)
    first[:] = 99.0
    second = path.next(0.5)
    assert path.times.tolist() == [2.0, 0.5]
    assert path.values.shape == (2, 2)
    assert np.all(path.values[0] != 99.0)
    assert np.array_equal(path.values[1], second)
    with pytest.raises(ValueError, match="read-only"):
        path.values[0, 0] = 1.0


# --- Laplace noise reduction ----------------------------------------------------------------

LAPLACE_GRIDS = [(4.0, 2.0, 1.0, 0.5), (3.0, 2.5, 0.2), (1.0, 0.1)]


def _one_over_t_intensity(eta: float, T: float) -> float:
    return math.log(T / eta)


def _linear_keep(smaller: npt.NDArray[np.float64], larger: npt.NDArray[np.float64]) -> Any:
    return smaller / larger


@pytest.mark.parametrize("grid", LAPLACE_GRIDS)
@pytest.mark.parametrize("d", DIMS)
def test_laplace_process_marginals_are_laplace(
    grid: tuple[float, ...], d: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = sample_laplace_grid(grid, BATCH_TRIALS, d, np.random.default_rng(21))
    assert marginals_follow(paths, grid, sps.laplace.cdf)
    # Planted bug: arrival intensity 1/t instead of 2/t.
    monkeypatch.setattr(laplace_module, "_arrival_mean", _one_over_t_intensity)
    wrong = sample_laplace_grid(grid, BATCH_TRIALS, d, np.random.default_rng(21))
    assert not marginals_follow(wrong, grid, sps.laplace.cdf)


@pytest.mark.parametrize("grid", LAPLACE_GRIDS)
@pytest.mark.parametrize("d", DIMS)
def test_koufogiannis_marginals_are_laplace(
    grid: tuple[float, ...], d: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = sample_koufogiannis_grid(grid, BATCH_TRIALS, d, np.random.default_rng(22))
    assert marginals_follow(paths, grid, sps.laplace.cdf)
    # Planted bug: keep probability s/t instead of (s/t)².
    monkeypatch.setattr(laplace_module, "_keep_probability", _linear_keep)
    wrong = sample_koufogiannis_grid(grid, BATCH_TRIALS, d, np.random.default_rng(22))
    assert not marginals_follow(wrong, grid, sps.laplace.cdf)


@pytest.mark.parametrize("grid", LAPLACE_GRIDS)
@pytest.mark.parametrize("d", DIMS)
def test_koufogiannis_chain_and_continuous_process_have_the_same_law(
    grid: tuple[float, ...], d: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(23)
    continuous = sample_laplace_grid(grid, BATCH_TRIALS, d, rng)
    chain = sample_koufogiannis_grid(grid, BATCH_TRIALS, d, rng)
    assert same_path_law(chain, continuous)
    assert unchanged_as_predicted(chain, grid)
    assert unchanged_as_predicted(continuous, grid)
    # Planted bugs: wrong keep probability (chain), wrong intensity (continuous process).
    monkeypatch.setattr(laplace_module, "_keep_probability", _linear_keep)
    wrong_chain = sample_koufogiannis_grid(grid, BATCH_TRIALS, d, rng)
    assert not same_path_law(wrong_chain, continuous)
    assert not unchanged_as_predicted(wrong_chain, grid)
    monkeypatch.setattr(laplace_module, "_arrival_mean", _one_over_t_intensity)
    assert not unchanged_as_predicted(sample_laplace_grid(grid, BATCH_TRIALS, d, rng), grid)


@pytest.mark.parametrize("grid", LAPLACE_GRIDS)
@pytest.mark.parametrize("d", DIMS)
def test_laplace_interactive_and_batch_have_the_same_law(
    grid: tuple[float, ...], d: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(24)
    # The interactive path lives on a wider [eta, T]: its law at the grid is the same.
    interactive = walk(
        lambda: LaplaceProcess(grid[-1] / 2.0, 2.0 * grid[0], d, rng), grid, INTERACTIVE_TRIALS
    )
    assert same_path_law(interactive, sample_laplace_grid(grid, INTERACTIVE_TRIALS, d, rng))
    assert unchanged_as_predicted(interactive, grid)
    # Planted bug in the batch sampler: arrival intensity 1/t.
    monkeypatch.setattr(laplace_module, "_arrival_mean", _one_over_t_intensity)
    wrong = sample_laplace_grid(grid, INTERACTIVE_TRIALS, d, rng)
    assert not same_path_law(interactive, wrong)


def test_laplace_process_reads_are_consistent() -> None:
    process = LaplaceProcess(0.1, 5.0, 3, np.random.default_rng(25))
    scales = (5.0, 3.0, 1.0, 0.3, 0.1)
    before = [process.at(s) for s in scales]
    nexts = [process.next(s) for s in scales]
    after = [process.at(s) for s in scales]
    for b, n, a in zip(before, nexts, after, strict=True):
        assert np.array_equal(b, n)
        assert np.array_equal(b, a)
    assert np.array_equal(process.values, np.array(nexts))
    assert process.times.tolist() == list(scales)
    assert (process.eta, process.T, process.d) == (0.1, 5.0, 3)
    # Between two arrivals the path is flat; reading a scale twice gives the same value.
    assert np.array_equal(process.at(2.0), process.at(2.0))


# --- Skellam noise reduction ----------------------------------------------------------------

RATES = [(1.0, 1.0), (2.0, 0.5)]


def skellam_marginals_follow(
    paths: AnyArray, grid: Sequence[float], rate1: float, rate2: float
) -> bool:
    """Binomial test of P(X(t) <= v) = Skellam cdf for v between its 0.5% and 99.5% quantiles."""
    checks = []
    for k, t in enumerate(grid):
        law = sps.skellam(t * rate1, t * rate2)
        x = paths[:, k].ravel()
        for v in range(int(law.ppf(0.005)), int(law.ppf(0.995)) + 1):
            checks.append(st.proportion_is_consistent(int(np.sum(x <= v)), x.size, law.cdf(v)))
    return all(checks)


def _squared_thinning(t: float, s: float) -> float:
    return (t / s) ** 2


@pytest.mark.parametrize("rates", RATES)
@pytest.mark.parametrize("d", DIMS)
def test_skellam_batch_marginals(rates: tuple[float, float], d: int) -> None:
    grid = (6.0, 2.0, 0.5)
    rate1, rate2 = rates
    rng = np.random.default_rng(31)
    paths = sample_skellam_grid(grid, BATCH_TRIALS, d, rng, rate1=rate1, rate2=rate2)
    assert paths.dtype == np.int64
    assert skellam_marginals_follow(paths, grid, rate1, rate2)
    # Planted bug: one rate scaled by 1.5 (for unequal rates, also the sign convention).
    assert not skellam_marginals_follow(paths, grid, 1.5 * rate1, rate2)
    if rate1 != rate2:
        assert not skellam_marginals_follow(-paths, grid, rate1, rate2)


@pytest.mark.parametrize("rates", RATES)
@pytest.mark.parametrize("d", DIMS)
def test_skellam_interactive_marginals_and_batch_law(
    rates: tuple[float, float], d: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    grid = (4.0, 1.5, 1.0, 0.2)
    rate1, rate2 = rates
    rng = np.random.default_rng(32)
    batch = sample_skellam_grid(grid, INTERACTIVE_TRIALS, d, rng, rate1=rate1, rate2=rate2)

    def make() -> SkellamPath:
        return SkellamPath(d, rng, rate1, rate2)

    interactive = walk(make, grid, INTERACTIVE_TRIALS)
    assert interactive.dtype == np.int64
    assert skellam_marginals_follow(interactive, grid, rate1, rate2)
    assert same_path_law(interactive, batch)
    # Planted bug: thinning probability (t/s)² instead of t/s.
    monkeypatch.setattr(skellam_module, "_thinning_probability", _squared_thinning)
    wrong = walk(make, grid, INTERACTIVE_TRIALS)
    assert not skellam_marginals_follow(wrong, grid, rate1, rate2)
    assert not same_path_law(wrong, batch)


# --- bad input ------------------------------------------------------------------------------

BATCH_SAMPLERS: list[Callable[..., AnyArray]] = [
    sample_brownian_grid,
    sample_brownian_grid_privacy_time,
    sample_koufogiannis_grid,
    sample_laplace_grid,
    sample_skellam_grid,
]
BAD_GRIDS: list[Any] = [
    [1.0, 2.0],
    [1.0, 1.0],
    [],
    [[2.0, 1.0]],
    [2.0, math.nan],
    [math.inf, 1.0],
    [1.0, 0.0],
    [1.0, -0.5],
    ["a", "b"],
]


@pytest.mark.parametrize("sampler", BATCH_SAMPLERS)
@pytest.mark.parametrize("grid", BAD_GRIDS)
def test_batch_samplers_reject_bad_grids(sampler: Callable[..., AnyArray], grid: Any) -> None:
    rng = np.random.default_rng(41)
    state = rng.bit_generator.state
    with pytest.raises(InvalidParameter) as info:
        sampler(grid, 5, 1, rng)
    assert info.value.name in {"times", "scales"}
    assert rng.bit_generator.state == state


@pytest.mark.parametrize("sampler", BATCH_SAMPLERS)
@pytest.mark.parametrize(
    ("trials", "d", "rng", "name"),
    [
        (0, 1, np.random.default_rng(0), "trials"),
        (2.0, 1, np.random.default_rng(0), "trials"),
        (True, 1, np.random.default_rng(0), "trials"),
        (3, 0, np.random.default_rng(0), "d"),
        (3, -2, np.random.default_rng(0), "d"),
        (3, 1, 7, "rng"),
        (3, 1, np.random.RandomState(0), "rng"),
    ],
)
def test_batch_samplers_reject_bad_shapes_and_rng(
    sampler: Callable[..., AnyArray], trials: Any, d: Any, rng: Any, name: str
) -> None:
    with pytest.raises(InvalidParameter) as info:
        sampler([2.0, 1.0], trials, d, rng)
    assert info.value.name == name


@pytest.mark.parametrize("sampler", BATCH_SAMPLERS)
def test_batch_samplers_shape_and_order(sampler: Callable[..., AnyArray]) -> None:
    out = sampler([3.0, 2.0, 1.0], 4, 2, np.random.default_rng(42))
    assert out.shape == (4, 3, 2)
    assert out.flags.c_contiguous
    single = sampler([0.7], 3, 1, np.random.default_rng(42))
    assert single.shape == (3, 1, 1)


@pytest.mark.parametrize(
    "rates", [(0.0, 1.0), (1.0, -1.0), (math.nan, 1.0), (1.0, math.inf), ("1", 1.0)]
)
def test_skellam_rejects_bad_rates(rates: tuple[Any, Any]) -> None:
    rng = np.random.default_rng(43)
    with pytest.raises(InvalidParameter):
        sample_skellam_grid([1.0], 2, 1, rng, rate1=rates[0], rate2=rates[1])
    with pytest.raises(InvalidParameter):
        SkellamPath(1, rng, *rates)


INTERACTIVE: list[Callable[[np.random.Generator], _Path]] = [
    lambda rng: BrownianPath(2, rng),
    lambda rng: SkellamPath(2, rng, 2.0, 0.5),
    lambda rng: LaplaceProcess(0.5, 8.0, 2, rng),
]


@pytest.mark.parametrize("make", INTERACTIVE)
def test_interactive_rejections_change_nothing(
    make: Callable[[np.random.Generator], Any],
) -> None:
    rng = np.random.default_rng(44)
    path = make(rng)
    path.next(4.0)
    times, values, state = path.times, path.values, rng.bit_generator.state
    for bad in (4.0, 5.0, 0.0, -1.0, math.nan, math.inf, "1", None):
        with pytest.raises(InvalidParameter):
            path.next(bad)
        assert np.array_equal(path.times, times)
        assert np.array_equal(path.values, values)
        assert rng.bit_generator.state == state
    path.next(1.0)
    assert path.times.tolist() == [4.0, 1.0]


@pytest.mark.parametrize("make", INTERACTIVE)
def test_interactive_first_call_rejects_non_positive(
    make: Callable[[np.random.Generator], Any],
) -> None:
    path = make(np.random.default_rng(45))
    for bad in (0.0, -3.0, math.nan):
        with pytest.raises(InvalidParameter):
            path.next(bad)
    assert path.times.shape == (0,)


def test_laplace_process_rejects_scales_outside_its_range() -> None:
    rng = np.random.default_rng(46)
    process = LaplaceProcess(0.5, 8.0, 2, rng)
    state = rng.bit_generator.state
    for bad in (9.0, 0.4, 0.0, math.nan):
        with pytest.raises(InvalidParameter) as info:
            process.at(bad)
        assert info.value.name == "scale"
        with pytest.raises(InvalidParameter):
            process.next(bad)
    assert process.times.shape == (0,)
    assert rng.bit_generator.state == state


@pytest.mark.parametrize(
    ("eta", "T", "d", "name"),
    [(0.0, 1.0, 1, "eta"), (2.0, 1.0, 1, "T"), (math.nan, 1.0, 1, "eta"), (0.1, 1.0, 0, "d")],
)
def test_laplace_process_rejects_bad_construction(eta: Any, T: Any, d: Any, name: str) -> None:
    with pytest.raises(InvalidParameter) as info:
        LaplaceProcess(eta, T, d, np.random.default_rng(47))
    assert info.value.name == name


@pytest.mark.parametrize("make", [BrownianPath, SkellamPath])
def test_paths_reject_bad_dimension_and_rng(make: Callable[..., Any]) -> None:
    for d in (0, 1.5, True):
        with pytest.raises(InvalidParameter):
            make(d, np.random.default_rng(48))
    with pytest.raises(InvalidParameter):
        make(1, 3)
