"""Noise-reduction grids (THEORY §3, §6): shapes, exact endpoints, clipping, boundaries, bad input."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from attrs import frozen
from hypothesis import example, given, settings
from hypothesis import strategies as st

from expost.errors import InvalidParameter
from expost.grids import EpsilonGrid, HasTimeFor, OpenEpsilonGrid, TimeGrid

BAD_POSITIVE: list[Any] = [math.nan, math.inf, -math.inf, 0.0, -1.0, "1", None, True]
bad_positive = st.sampled_from(BAD_POSITIVE)
eps2_values = st.floats(1e-8, 1e4)
max_epss = st.floats(1e-4, 1e2)


def closed(grid: EpsilonGrid | OpenEpsilonGrid) -> EpsilonGrid:
    assert isinstance(grid, EpsilonGrid)
    return grid


def opened(grid: EpsilonGrid | OpenEpsilonGrid) -> OpenEpsilonGrid:
    assert isinstance(grid, OpenEpsilonGrid)
    return grid


def assert_names(exc: pytest.ExceptionInfo[InvalidParameter], name: str) -> None:
    assert exc.value.name == name
    assert str(exc.value).startswith(f"{name}=")


def assert_well_formed(grid: EpsilonGrid) -> None:
    assert len(grid) >= 1
    assert np.all(np.diff(grid.eps2) > 0)
    assert np.all(np.diff(grid.eps) > 0)
    assert np.all(np.diff(grid.times.array) < 0)


# --- TimeGrid ---------------------------------------------------------------------------


def test_time_grid_basics() -> None:
    g = TimeGrid(np.array([4.0, 2.0, 0.5]))
    assert g.times == (4.0, 2.0, 0.5)
    assert isinstance(g.times, tuple)
    assert all(type(t) is float for t in g.times)
    assert len(g) == 3
    assert list(g) == [4.0, 2.0, 0.5]
    assert g.smallest == 0.5
    # Δ²/(2t) = 0.5, 1, 4 and Δ/sqrt(t), rounded up by a few ulps (issue 21)
    for got, want in zip(g.rho_for(2.0), [0.5, 1.0, 4.0], strict=True):
        assert want <= got <= want + 3 * math.ulp(want)
    assert g.max_rho_for(2.0) == g.rho_for(2.0)[-1]
    assert 1.0 <= g.max_rho_for() <= 1.0 + 3 * math.ulp(1.0)
    for got, t in zip(g.eps_for(), g.times, strict=True):
        assert Fraction(got) ** 2 >= 1 / Fraction(t)  # got >= 1/sqrt(t) exactly
        assert abs(got - 1 / math.sqrt(t)) <= 4 * math.ulp(got)
    assert g == TimeGrid([4, 2, 0.5])
    assert hash(g) == hash(TimeGrid((4.0, 2.0, 0.5)))


def test_time_grid_arrays_cannot_change_the_grid() -> None:
    g = TimeGrid([3.0, 1.0])
    arr = g.array
    with pytest.raises(ValueError, match="read-only"):
        arr[0] = 0.1
    with pytest.raises(ValueError, match="read-only"):
        g.rho_for()[0] = 0.0
    assert g.times == (3.0, 1.0)


def test_time_grid_repr_is_short_for_long_grids() -> None:
    assert repr(TimeGrid([2.0, 1.0])) == "TimeGrid((2.0, 1.0))"
    long = TimeGrid(np.linspace(1000.0, 1.0, 1000))
    assert len(repr(long)) < 100
    assert "1000 points" in repr(long)


@given(
    st.sampled_from(
        [
            [],
            [1.0, 2.0],
            [2.0, 2.0],
            [3.0, 1.0, 2.0],
            [1.0, 0.0],
            [1.0, -1.0],
            [math.nan],
            [math.inf, 1.0],
            [[2.0, 1.0]],
            2.0,
            "21",
            ["2", "1"],
            [True, False],
            None,
            [[1.0], [1.0, 2.0]],
        ]
    )
)
def test_time_grid_rejects_bad_times(times: Any) -> None:
    with pytest.raises(InvalidParameter) as exc:
        TimeGrid(times)
    assert_names(exc, "times")


@given(
    st.lists(st.floats(1e-6, 1e6), min_size=1, max_size=30, unique=True).map(
        lambda xs: sorted(xs, reverse=True)
    )
)
def test_time_grid_accepts_any_strictly_decreasing_positive_times(times: list[float]) -> None:
    assert TimeGrid(times).times == tuple(times)


@pytest.mark.parametrize("bad", BAD_POSITIVE)
def test_time_grid_helpers_check_sensitivity(bad: Any) -> None:
    g = TimeGrid([1.0])
    for helper in (g.rho_for, g.max_rho_for, g.eps_for):
        with pytest.raises(InvalidParameter) as exc:
            helper(bad)
        assert_names(exc, "sensitivity")


# --- TimeGrid.from_boundary --------------------------------------------------------------


@frozen
class InverseBoundary:
    """ψ(t) = c/t + floor: decreasing, with inverse time_for(E) = c/(E − floor)."""

    c: float
    floor: float = 0.0

    def psi(self, t: float) -> float:
        return self.c / t + self.floor

    def time_for(self, eps: float) -> float:
        return self.c / (eps - self.floor)


@frozen
class ConstantBoundary:
    """A broken boundary: every level maps to the same time."""

    def time_for(self, eps: float) -> float:
        return 1.0


def test_from_boundary_uses_the_inverse() -> None:
    b = InverseBoundary(c=2.0, floor=0.1)
    assert isinstance(b, HasTimeFor)
    levels = [0.2, 0.5, 1.0, 3.0]
    g = TimeGrid.from_boundary(b, levels)
    assert g.times == tuple(2.0 / (e - 0.1) for e in levels)
    for t, e in zip(g.times, levels, strict=True):
        assert b.psi(t) == pytest.approx(e, rel=1e-14)


@settings(max_examples=50)
@given(st.floats(1e-3, 1e3), st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=20, unique=True))
def test_from_boundary_reaches_every_level(c: float, levels: list[float]) -> None:
    b = InverseBoundary(c=c)
    times = [b.time_for(e) for e in sorted(levels)]
    if any(s <= t for s, t in itertools.pairwise(times)):  # levels an ulp apart can share a time
        with pytest.raises(InvalidParameter, match="strictly decreasing"):
            TimeGrid.from_boundary(b, sorted(levels))
        return
    g = TimeGrid.from_boundary(b, sorted(levels))
    assert len(g) == len(levels)
    for t, e in zip(g.times, sorted(levels), strict=True):
        assert b.psi(t) <= e * (1 + 4e-16)


def test_from_boundary_rejects_bad_input() -> None:
    with pytest.raises(InvalidParameter) as exc:
        TimeGrid.from_boundary(object(), [1.0])  # type: ignore[arg-type]
    assert_names(exc, "boundary")
    for levels in ([1.0, 0.5], [0.5, 0.5], [], [math.nan], [-1.0, 1.0]):
        with pytest.raises(InvalidParameter) as exc:
            TimeGrid.from_boundary(InverseBoundary(c=1.0), levels)
        assert_names(exc, "levels")
    with pytest.raises(InvalidParameter) as exc:
        TimeGrid.from_boundary(ConstantBoundary(), [0.5, 1.0])
    assert_names(exc, "levels")
    with pytest.raises(InvalidParameter) as exc:  # level below the floor: negative time
        TimeGrid.from_boundary(InverseBoundary(c=1.0, floor=1.0), [0.5, 2.0])
    assert_names(exc, "levels")


# --- EpsilonGrid ---------------------------------------------------------------------------


def test_epsilon_grid_basics() -> None:
    g = EpsilonGrid([0.5, 1.0, 2.0], sensitivity=3.0)
    np.testing.assert_array_equal(g.eps, [0.5, 1.0, 2.0])
    np.testing.assert_array_equal(g.eps2, [0.25, 1.0, 4.0])
    assert g.times == TimeGrid([36.0, 9.0, 2.25])  # Δ²/eps²
    assert g.first_eps == 0.5
    assert g.last_eps == 2.0
    np.testing.assert_array_equal(g.rho, [0.125, 0.5, 2.0])  # eps²/2, whatever Δ
    assert g.max_rho == 2.0
    assert abs(g.max_rho - g.times.max_rho_for(3.0)) <= 6 * math.ulp(g.max_rho)  # both rounded
    assert list(g) == [0.5, 1.0, 2.0]
    assert g == EpsilonGrid.from_eps2([0.25, 1.0, 4.0], 3.0)
    assert g != EpsilonGrid([0.5, 1.0, 2.0])
    for arr in (g.eps, g.eps2, g.rho):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 9.0


@given(st.lists(st.floats(1e-100, 1e100), min_size=1, max_size=20, unique=True))
def test_epsilon_grid_gives_eps_back_exactly(eps: list[float]) -> None:
    eps.sort()
    g = EpsilonGrid(eps)
    assert g.eps.tolist() == eps
    assert g.eps2.tolist() == [e * e for e in eps]


@given(
    st.sampled_from(
        [[], [1.0, 0.5], [1.0, 1.0], [0.0, 1.0], [-1.0], [math.nan], [1.0, math.inf], [[1.0]], 1.0]
    )
)
def test_epsilon_grid_rejects_bad_eps(eps: Any) -> None:
    with pytest.raises(InvalidParameter) as exc:
        EpsilonGrid(eps)
    assert_names(exc, "eps")


def test_epsilon_grid_rejects_levels_whose_square_is_not_a_normal_float() -> None:
    for eps in ([1e-160], [1.0, 1e160]):
        with pytest.raises(InvalidParameter) as exc:
            EpsilonGrid(eps)
        assert_names(exc, "eps")
    with pytest.raises(InvalidParameter) as exc:  # Δ²/eps² overflows
        EpsilonGrid([1e-100], sensitivity=1e200)
    assert_names(exc, "eps")


def test_from_eps2_rejects_bad_values() -> None:
    for eps2 in ([], [0.5, 0.25], [0.0], [math.nan]):
        with pytest.raises(InvalidParameter) as exc:
            EpsilonGrid.from_eps2(eps2)
        assert_names(exc, "eps2")


@given(bad_positive)
def test_epsilon_grid_rejects_bad_sensitivity(bad: Any) -> None:
    with pytest.raises(InvalidParameter) as exc:
        EpsilonGrid([1.0], sensitivity=bad)
    assert_names(exc, "sensitivity")


# --- linear_in_eps2 ----------------------------------------------------------------------------


def test_apc_section_7_grid() -> None:
    g = closed(EpsilonGrid.linear_in_eps2(1e-4, 2.705, 1000))
    assert len(g) == 1000
    assert g.eps2[0] == 1e-4
    assert g.eps2[-1] == 2.705
    np.testing.assert_allclose(np.diff(g.eps2), (2.705 - 1e-4) / 999, rtol=1e-9)
    np.testing.assert_allclose(g.times.array, 1.0 / g.eps2, rtol=1e-15)
    assert g.max_rho == 2.705 / 2


@given(eps2_values, st.floats(1e-3, 1e3), st.integers(2, 2000))
def test_linear_grid_endpoints_count_and_spacing(start: float, span: float, num: int) -> None:
    stop = start * (1.0 + span)
    g = closed(EpsilonGrid.linear_in_eps2(start, stop, num))
    assert g.eps2[0] == start
    assert g.eps2[-1] == stop
    assert len(g) == num
    step = (stop - start) / (num - 1)
    np.testing.assert_allclose(np.diff(g.eps2), step, rtol=1e-8 * stop / step + 1e-12)
    assert_well_formed(g)


def test_linear_grid_single_point_and_degenerate_ranges() -> None:
    one = closed(EpsilonGrid.linear_in_eps2(0.5, 0.5, 1))
    assert one.eps2.tolist() == [0.5]
    with pytest.raises(InvalidParameter) as exc:
        EpsilonGrid.linear_in_eps2(0.5, 1.0, 1)
    assert_names(exc, "num")
    with pytest.raises(InvalidParameter) as exc:
        EpsilonGrid.linear_in_eps2(0.5, 0.5, 3)
    assert_names(exc, "stop")


def test_points_that_coincide_in_floating_point_are_merged() -> None:
    start = 1e-4
    stop = math.nextafter(math.nextafter(start, 1.0), 1.0)  # two ulps: at most 3 distinct values
    g = closed(EpsilonGrid.linear_in_eps2(start, stop, 1000))
    assert 1 <= len(g) <= 3
    assert g.eps2[0] == start
    assert_well_formed(g)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"start": math.nan}, "start"),
        ({"start": 0.0}, "start"),
        ({"start": -1.0}, "start"),
        ({"stop": math.inf}, "stop"),
        ({"stop": 0.5e-4}, "stop"),
        ({"stop": -1.0}, "stop"),
        ({"num": 0}, "num"),
        ({"num": 2.0}, "num"),
        ({"num": True}, "num"),
        ({"num": 10**9}, "num"),
        ({"sensitivity": 0.0}, "sensitivity"),
    ],
)
def test_linear_grid_names_the_bad_argument(kwargs: dict[str, Any], name: str) -> None:
    args: dict[str, Any] = {"start": 1e-4, "stop": 1.0, "num": 10, "sensitivity": 1.0}
    args.update(kwargs)
    with pytest.raises(InvalidParameter) as exc:
        EpsilonGrid.linear_in_eps2(**args)
    assert_names(exc, name)


@given(st.sampled_from(["start", "stop", "sensitivity"]), bad_positive)
def test_linear_grid_rejects_any_bad_positive_argument(name: str, bad: Any) -> None:
    args: dict[str, Any] = {"start": 1e-4, "stop": 1.0, "num": 10, "sensitivity": 1.0}
    args[name] = bad
    with pytest.raises(InvalidParameter) as exc:
        EpsilonGrid.linear_in_eps2(**args)
    assert_names(exc, name)


# --- geometric_in_eps2 ---------------------------------------------------------------------------


def test_doubling_grid() -> None:
    g = closed(EpsilonGrid.geometric_in_eps2(1e-4, 2.705))
    k = np.arange(len(g))
    np.testing.assert_array_equal(g.eps2, 1e-4 * 2.0**k)  # doubling is exact
    assert g.eps2[-1] <= 2.705 < 2 * g.eps2[-1]
    assert len(g) == 15  # 1e-4·2^14 = 1.6384 <= 2.705 < 3.2768


@given(eps2_values, st.floats(1.0, 1e6), st.floats(1.01, 10.0))
def test_geometric_grid_stops_at_the_last_point_within_stop(
    start: float, span: float, ratio: float
) -> None:
    stop = start * span
    g = closed(EpsilonGrid.geometric_in_eps2(start, stop, ratio))
    assert g.eps2[0] == start
    assert g.eps2[-1] <= stop
    assert g.eps2[-1] * ratio > stop * (1 - 1e-12)
    np.testing.assert_allclose(g.eps2[1:] / g.eps2[:-1], ratio, rtol=1e-9)
    assert_well_formed(g)


@given(st.sampled_from([1.0, 0.5, -2.0, math.nan, math.inf, None, "2"]))
def test_geometric_grid_rejects_bad_ratio(ratio: Any) -> None:
    with pytest.raises(InvalidParameter) as exc:
        EpsilonGrid.geometric_in_eps2(1e-4, 1.0, ratio)
    assert_names(exc, "ratio")
    with pytest.raises(InvalidParameter) as exc:
        OpenEpsilonGrid.geometric_in_eps2(1e-4, ratio)
    assert_names(exc, "ratio")


def test_geometric_grid_rejects_bad_start_and_stop() -> None:
    with pytest.raises(InvalidParameter) as exc:
        EpsilonGrid.geometric_in_eps2(0.0, 1.0)
    assert_names(exc, "start")
    with pytest.raises(InvalidParameter) as exc:
        EpsilonGrid.geometric_in_eps2(1.0, 0.5)
    assert_names(exc, "stop")
    with pytest.raises(InvalidParameter) as exc:
        EpsilonGrid.geometric_in_eps2(1e-300, 1e300, 1.0 + 1e-12)
    assert_names(exc, "ratio")


# --- clip and open grids ---------------------------------------------------------------------------


def test_open_grids_record_their_shape() -> None:
    lin = opened(OpenEpsilonGrid.linear_in_eps2(1e-4, 1000))
    assert lin == OpenEpsilonGrid("linear", 1e-4, num=1000)
    assert lin.first_eps == 0.01
    geo = opened(OpenEpsilonGrid.geometric_in_eps2(1e-4, 2.0, sensitivity=2.0))
    assert geo == OpenEpsilonGrid("geometric", 1e-4, ratio=2.0, sensitivity=2.0)
    with pytest.raises(AttributeError):
        lin.start = 1.0  # type: ignore[misc]


def test_open_grid_rejects_inconsistent_shapes() -> None:
    cases: list[tuple[tuple[Any, ...], dict[str, Any], str]] = [
        (("cubic", 1e-4), {"num": 3}, "shape"),
        (("linear", 1e-4), {}, "num"),
        (("linear", 1e-4), {"num": 3, "ratio": 2.0}, "ratio"),
        (("geometric", 1e-4), {}, "ratio"),
        (("geometric", 1e-4), {"ratio": 0.5}, "ratio"),
        (("geometric", 1e-4), {"ratio": 2.0, "num": 3}, "num"),
        (("linear", 0.0), {"num": 3}, "start"),
        (("linear", 1e-4), {"num": 3, "sensitivity": math.nan}, "sensitivity"),
    ]
    for args, kwargs, name in cases:
        with pytest.raises(InvalidParameter) as exc:
            OpenEpsilonGrid(*args, **kwargs)
        assert_names(exc, name)


def test_open_linear_clip_matches_the_closed_grid() -> None:
    lin = opened(OpenEpsilonGrid.linear_in_eps2(1e-4, 1000))
    max_eps = math.sqrt(2.705)
    assert lin.clip(max_eps) == EpsilonGrid.linear_in_eps2(1e-4, max_eps**2, 1000)
    assert lin.clip(max_eps).eps2[-1] == max_eps**2


def square_down(x: float) -> float:
    """The largest float <= x² exactly (Fraction arithmetic)."""
    exact = Fraction(x) ** 2
    f = float(exact)
    return math.nextafter(f, 0.0) if Fraction(f) > exact else f


@given(max_epss, st.floats(1e-6, 1.0), st.integers(1, 1500))
@example(42.240686566555425, 1.0, 2)  # max_eps**2 (pow) is an ulp off max_eps * max_eps
def test_open_linear_clip(max_eps: float, start: float, num: int) -> None:
    grid = opened(OpenEpsilonGrid.linear_in_eps2(start, num))
    if max_eps**2 < start:
        with pytest.raises(InvalidParameter, match="does not allow even the first") as exc:
            grid.clip(max_eps)
        assert_names(exc, "max_eps")
        return
    g = grid.clip(max_eps)
    assert np.all(g.eps <= max_eps)
    assert g.eps2[0] == start
    assert_well_formed(g)
    if num > 1 and max_eps**2 > start * (1 + 1e-9):
        assert len(g) == num
        # the largest float <= max_eps² exactly (issue 21: the clip rounds down; max_eps**2
        # and max_eps * max_eps can be an ulp above it, e.g. at max_eps = 42.240686566555425)
        assert g.eps2[-1] == square_down(max_eps)


@given(max_epss, st.floats(1e-6, 1.0), st.floats(1.05, 4.0))
def test_open_geometric_clip(max_eps: float, start: float, ratio: float) -> None:
    grid = opened(OpenEpsilonGrid.geometric_in_eps2(start, ratio))
    if max_eps**2 < start:
        with pytest.raises(InvalidParameter) as exc:
            grid.clip(max_eps)
        assert_names(exc, "max_eps")
        return
    g = grid.clip(max_eps)
    assert np.all(g.eps <= max_eps)
    assert g.eps2[0] == start
    assert g.eps2[-1] * ratio > max_eps**2 * (1 - 1e-12)
    assert_well_formed(g)


def test_clip_to_exactly_the_first_point() -> None:
    for grid in (
        opened(OpenEpsilonGrid.linear_in_eps2(0.25, 100)),
        opened(OpenEpsilonGrid.geometric_in_eps2(0.25)),
        closed(EpsilonGrid.linear_in_eps2(0.25, 1.0, 100)),
    ):
        assert grid.clip(0.5).eps2.tolist() == [0.25]


@given(
    st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=50, unique=True),
    st.floats(1e-3, 1e3),
)
def test_closed_clip_keeps_exactly_the_affordable_prefix(eps: list[float], max_eps: float) -> None:
    eps.sort()
    g = EpsilonGrid(eps)
    # a point is affordable iff its stored eps² (its price ×2) is <= max_eps² exactly (issue 21):
    # EpsilonGrid([1.9]).eps2 = fl(1.9²) lies above 1.9², so clip(1.9) drops that point
    top = Fraction(max_eps) ** 2
    affordable = [e for e, e2 in zip(eps, g.eps2.tolist(), strict=True) if Fraction(e2) <= top]
    if not affordable:
        with pytest.raises(InvalidParameter, match="does not allow even the cheapest") as exc:
            g.clip(max_eps)
        assert_names(exc, "max_eps")
        return
    clipped = g.clip(max_eps)
    assert clipped.eps.tolist() == affordable
    assert clipped.sensitivity == g.sensitivity


@given(bad_positive)
def test_clip_rejects_bad_max_eps(bad: Any) -> None:
    for grid in (
        EpsilonGrid([1.0]),
        opened(OpenEpsilonGrid.linear_in_eps2(1e-4, 10)),
        opened(OpenEpsilonGrid.geometric_in_eps2(1e-4)),
    ):
        with pytest.raises(InvalidParameter) as exc:
            grid.clip(bad)
        assert_names(exc, "max_eps")


def test_clip_rejects_an_overflowing_max_eps() -> None:
    for grid in (
        opened(OpenEpsilonGrid.linear_in_eps2(1e-4, 10)),
        opened(OpenEpsilonGrid.geometric_in_eps2(1e-4)),
    ):
        with pytest.raises(InvalidParameter) as exc:
            grid.clip(1e200)
        assert_names(exc, "max_eps")


def affordable_grid(
    spec: EpsilonGrid | OpenEpsilonGrid, remaining_rho: float
) -> EpsilonGrid | None:
    """How a session uses a grid: check the cheapest point, then clip (cost eps²/2)."""
    if spec.first_eps**2 / 2 > remaining_rho:
        return None
    return spec.clip(math.sqrt(2 * remaining_rho))


def test_grid_spec_supports_the_budget_check() -> None:
    specs: list[EpsilonGrid | OpenEpsilonGrid] = [
        OpenEpsilonGrid.linear_in_eps2(1e-4, 1000),
        OpenEpsilonGrid.geometric_in_eps2(1e-4),
        EpsilonGrid.linear_in_eps2(1e-4, 4.0, 1000),
    ]
    for spec in specs:
        assert affordable_grid(spec, 0.4e-4) is None
        g = affordable_grid(spec, 1.3525)
        assert g is not None
        assert g.max_rho <= 1.3525
