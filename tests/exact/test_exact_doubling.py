"""The doubling method with exact discrete Gaussian tries: `DoublingMethod(..., exact=True)`
(issue 22 item 2; issue 28 item 4: one class, the noise chosen by ``exact``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expost.errors import InvalidParameter
from expost.exact.bits import GeneratorBits
from expost.exact.samplers import discrete_gaussian
from expost.filters import ZCDPFilter
from expost.filters.costs import GaussianCost, ZCDPCost
from expost.mechanism_table import mechanism_for
from expost.mechanisms.doubling import DoublingMethod
from expost.stopping import Never, RelativeError, Released
from expost.testing import audit_mechanism


def bits(seed: int) -> GeneratorBits:
    return GeneratorBits(np.random.default_rng(seed))


def test_every_try_is_the_float_methods_level_exactly() -> None:
    method = DoublingMethod(start_eps2=1e-3, ratio=2.0, max_tries=6, stop=Never())
    exact = DoublingMethod(start_eps2=1e-3, ratio=2.0, max_tries=6, stop=Never(), exact=True)
    assert exact.grid == method.grid
    assert all(t.exact for t in exact.tries)
    assert [t.rho for t in exact.tries] == method.grid.rho.tolist()
    assert exact.cost() == ZCDPCost(method.guarantee().rho)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 1_000),
    st.floats(1e-6, 10.0),
    st.floats(1.01, 10.0),
    st.integers(1, 12),
)
def test_exact_tries_have_sigma2_delta2_over_eps2_exactly_and_the_float_price(
    delta: int, start: float, ratio: float, tries: int
) -> None:
    """σ_i² = Δ²/eps_i² in exact arithmetic on the float levels; the same rho as the float
    method, typed ZCDPCost (exact) and GaussianCost (float)."""
    exact = DoublingMethod(delta, start, ratio, max_tries=tries, exact=True)
    floats = DoublingMethod(delta, start, ratio, max_tries=tries)
    assert exact.sensitivity == delta
    assert isinstance(exact.sensitivity, int)
    for t, e2 in zip(exact.tries, exact.grid.eps2, strict=True):
        assert t.exact
        assert t.sigma2 * Fraction(float(e2)) == delta**2
    assert type(exact.cost()) is ZCDPCost
    assert type(floats.cost()) is GaussianCost
    assert exact.cost().rho == floats.cost().rho
    assert np.array_equal(exact.cumulative_cost, floats.cumulative_cost)


def test_a_run_that_never_stops_makes_and_pays_every_try() -> None:
    method = DoublingMethod(start_eps2=1e-3, max_tries=6, stop=Never(), exact=True)
    run = method.run(50, bits(1))
    assert run.released.dtype == np.int64
    assert run.released.shape == (6,)
    assert not run.released.flags.writeable
    assert run.stop_index is None
    assert not run.stopped
    assert run.tries == 6
    assert type(run.cost) is ZCDPCost
    assert run.cost == ZCDPCost(float(method.cumulative_cost[-1]))
    assert run.ex_post_rdp.rho == run.cost.rho
    assert [c.rho for c in run.costs] == method.grid.rho.tolist()


def test_each_try_is_its_discrete_gaussian_drawn_in_order() -> None:
    """A run that never stops replays, from the same bits, try i's exact `GaussianMechanism`."""
    method = DoublingMethod(3, 1e-3, 2.0, max_tries=5, stop=Never(), exact=True)
    run = method.run([7, -2], bits(3))
    replay = bits(3)
    tries = method.tries
    assert all(t.exact for t in tries)
    expected = [t.run(np.array([7, -2]), replay) for t in tries]
    assert np.array_equal(run.released, np.stack(expected))
    assert np.array_equal(run.value, expected[-1])


def test_a_run_stops_where_the_rule_accepts_and_pays_its_prefix() -> None:
    # 10,000 with 10% relative error: the first try (sd 1/sqrt(eps2) ≈ 32) already qualifies
    # unless the noise is below −9,300 (about 295 sd; probability far below 1e-100)
    method = DoublingMethod(start_eps2=1e-3, max_tries=8, stop=RelativeError(0.1), exact=True)
    run = method.run(10_000, bits(2))
    assert run.stop_index == 0
    assert run.cost == ZCDPCost(float(method.cumulative_cost[0]))
    assert int(run.value) == int(run.released[0])


def test_values_beyond_int64_are_released_exactly() -> None:
    method = DoublingMethod(start_eps2=1e-2, max_tries=3, stop=Never(), exact=True)
    big = 2**70
    run = method.run([big, 0], bits(5))
    noise = DoublingMethod(start_eps2=1e-2, max_tries=3, stop=Never(), exact=True).run(
        [0, 0], bits(5)
    )
    assert [int(x) - big for x in run.released[:, 0]] == [int(x) for x in noise.released[:, 0]]


def test_a_fractional_sensitivity_or_value_is_refused() -> None:
    with pytest.raises(InvalidParameter, match="sensitivity"):
        DoublingMethod(sensitivity=1.5, max_tries=3, exact=True)
    with pytest.raises(InvalidParameter, match="value"):
        DoublingMethod(max_tries=3, exact=True).run(0.5, bits(0))


def test_the_source_must_match_the_noise() -> None:
    """Exact tries draw from a BitSource, float tries from a numpy Generator (`noise_source`)."""
    with pytest.raises(InvalidParameter, match="source"):
        DoublingMethod(max_tries=3, exact=True).run(5, np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="source"):
        DoublingMethod(max_tries=3).run(5.0, bits(0))


def _replayed(method: DoublingMethod, rows: npt.NDArray[Any], seed: int) -> list[list[int]]:
    """Each row's tries rebuilt in Python ints from the sampler's own draws, in the order the
    batch draws them: try by try, all rows at once."""
    replay = bits(seed)
    draws = [discrete_gaussian(t.sigma2, replay, rows.size) for t in method.tries]
    return [[int(v) + int(d[r]) for d in draws] for r, v in enumerate(rows.tolist())]


@pytest.mark.parametrize("twin", [False, True])
def test_an_exact_batch_is_every_try_value_plus_the_samplers_draws(twin: bool) -> None:
    """`run_trials` with exact tries: each trial's released value is exactly its value plus the
    discrete Gaussian draw of the try it stopped at (replayed from the same bits, in Python
    ints, values beyond int64 included), and it stopped where the rule first accepts its own
    path. Twin: a replay with the first try's σ² for every try must disagree."""
    rule = RelativeError(0.5)
    method = DoublingMethod(start_eps2=1e-3, ratio=2.0, max_tries=8, stop=rule, exact=True)
    rows = np.array([40, 3, 2**70, -(2**66), 900, 0], dtype=object)
    batch = method.run_trials(rows, bits(11))
    paths = _replayed(method, rows, 11)
    if twin:
        wrong = DoublingMethod(start_eps2=1e-3, ratio=1.0001, max_tries=8, stop=rule, exact=True)
        paths = _replayed(wrong, rows, 11)
    times = method.grid.times.array
    want = []
    for path in paths:
        floats = np.array(path, dtype=np.float64)
        k = next(
            (i for i in range(len(path)) if rule(Released(floats[: i + 1, None], times[: i + 1]))),
            None,
        )
        want.append((path[-1] if k is None else path[k], -1 if k is None else k))
    got = [(int(v), int(k)) for v, k in zip(batch.value.tolist(), batch.stop_index, strict=True)]
    assert (got == want) != twin
    assert batch.cost.tolist() == [method.cumulative_cost[t - 1] for t in batch.tries]


def test_an_exact_batch_keeps_int64_and_its_caps() -> None:
    method = DoublingMethod(start_eps2=1e-3, ratio=2.0, max_tries=5, stop=Never(), exact=True)
    batch = method.run_batch(7, 4, bits(2))
    assert batch.value.dtype == np.int64
    assert not batch.value.flags.writeable
    assert batch.tries.tolist() == [5] * 4
    capped = method.run_trials([1, 2, 3], bits(3), max_tries=np.array([1, 5, 2]))
    assert capped.tries.tolist() == [1, 5, 2]
    assert not capped.stopped.any()
    with pytest.raises(InvalidParameter, match="values"):
        method.run_trials([1.5, 2.0], bits(3))  # integers only
    with pytest.raises(InvalidParameter, match="source"):
        method.run_batch(7, 4, np.random.default_rng(0))


def test_the_flag_is_part_of_the_value() -> None:
    assert DoublingMethod(max_tries=3, exact=True) != DoublingMethod(max_tries=3)
    assert DoublingMethod(max_tries=3, exact=True) == DoublingMethod(2 - 1, max_tries=3, exact=True)
    with pytest.raises(InvalidParameter, match="exact"):
        DoublingMethod(max_tries=3, exact=1)  # type: ignore[arg-type]


def _claim(rho: float, delta: float) -> float:
    """eps = rho + 2·sqrt(rho·log(1/delta)) (Bun–Steinke; APC Lemma 2.1)."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


class Tries:
    """Both tries of a two-try run on a count, released (no stopping: the worst case)."""

    def __init__(self, start_eps2: float) -> None:
        self.doubling = DoublingMethod(start_eps2=start_eps2, max_tries=2, stop=Never(), exact=True)

    def __call__(self, data: Sequence[Any], rng: np.random.Generator) -> npt.NDArray[np.int64]:
        return self.doubling.run(len(data), GeneratorBits(rng)).released

    def batch(self, data: Sequence[Any], n: int, rng: np.random.Generator) -> npt.NDArray[Any]:
        """n runs at once: with a rule that never stops, a run is its tries drawn independently."""
        b = GeneratorBits(rng)
        tries = list(self.doubling.tries)
        assert len(tries) == 2
        return np.stack([t.run_batch(len(data), n, b) for t in tries], axis=1)


def _refuted(mechanism: Tries) -> bool:
    rho = float(DoublingMethod(start_eps2=0.25, max_tries=2).cumulative_cost[-1])  # 0.375
    result = audit_mechanism(
        mechanism, eps=_claim(rho, 1e-3), delta=1e-3, datasets=[[1, 2]], samples=20_000, seed=4
    )
    return result.refuted


def test_exact_doubling_is_not_refuted_at_its_claim() -> None:
    assert not _refuted(Tries(0.25))


def test_exact_doubling_twin_is_refuted() -> None:
    # planted bug: tries at 16 times the eps² the run is charged for
    assert _refuted(Tries(4.0))


def test_the_table_builds_one_class_and_refuses_the_first_sigma2_above_the_limit() -> None:
    """(doubling, float) and (doubling, exact) build a `DoublingMethod`, flagged by the mode; the
    exact build refuses σ_1² = Δ²/start_eps2 > 2**80 (the sampler's limit) and accepts it at
    2**80 exactly, spending nothing either way (the build only searches the cap)."""
    f = ZCDPFilter(1e6)
    for mode in ("float", "exact"):
        m = mechanism_for("doubling", mode).build(f, 1, 1e-2, 2.0, Never())
        assert type(m) is DoublingMethod
        assert m.exact is (mode == "exact")
    build = mechanism_for("doubling", "exact").build
    at_limit = build(f, 2**40, 1.0, 2.0, Never())  # σ² = 2**80 exactly
    first = at_limit.tries[0]
    assert first.exact
    assert first.sigma2 == 2**80
    with pytest.raises(InvalidParameter, match="start_eps2"):
        build(f, 2**40, math.nextafter(1.0, 0.0), 2.0, Never())  # σ² just above 2**80
    assert f.spent == 0.0
