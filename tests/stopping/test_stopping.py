"""Stopping rules (THEORY §3, §6): released-only views, built-in rules, batch = scalar, bad rules."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expost.errors import InvalidParameter, NotAStoppingTime
from expost.stopping import (
    AtIndex,
    BatchStoppingRule,
    Never,
    RelativeError,
    Released,
    StoppingRule,
    WhenPublicUtility,
    as_stopping_rule,
    first_stops,
    run_rule_on_path,
)

FloatArray = npt.NDArray[np.float64]

alphas = st.floats(1e-3, 0.9)
y_hats = st.floats(-1e6, 1e6, allow_subnormal=False)
epss = st.floats(1e-4, 1e3)


def apc_condition(y: float, eps: float, alpha: float) -> bool:
    """APC Sec. 7, transcribed: |ŷ| > 1/eps and 1 − α < |(ŷ + 1/eps)/(ŷ − 1/eps)| <= 1 + α.

    1/eps is the noise sd sqrt(t) with t = 1/eps²; the rules receive t, so sd is taken as sqrt(t).
    """
    sd = math.sqrt(1.0 / eps**2)
    if not abs(y) > sd:
        return False
    ratio = abs((y + sd) / (y - sd))
    return 1.0 - alpha < ratio <= 1.0 + alpha


def apc_condition_without_lower_bound(y: float, eps: float, alpha: float) -> bool:
    """A planted bug: the transcription with the 1 − α side dropped."""
    sd = math.sqrt(1.0 / eps**2)
    return abs(y) > sd and abs((y + sd) / (y - sd)) <= 1.0 + alpha


def brownian_path(rng: np.random.Generator, value: float, times: FloatArray) -> FloatArray:
    """value + B(t_k) for decreasing times (privacy-time cumulative sum, THEORY §3)."""
    s = 1.0 / times
    x = np.cumsum(rng.normal(0.0, np.sqrt(np.diff(s, prepend=0.0))))
    path: FloatArray = value + x / s
    return path


# --- Released ------------------------------------------------------------------------------


def test_released_exposes_the_released_iterates() -> None:
    r = Released([[1.0, 2.0], [3.0, 4.0]], [4.0, 1.0], sensitivity=2.0)
    np.testing.assert_array_equal(r.values, [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(r.times, [4.0, 1.0])
    np.testing.assert_array_equal(r.eps, [1.0, 2.0])  # Δ/sqrt(t)
    np.testing.assert_array_equal(r.last, [3.0, 4.0])
    assert r.count == 2
    assert r.sensitivity == 2.0
    scalar = Released([5.0, 6.0, 7.0], [3.0, 2.0, 1.0])
    assert scalar.values.shape == (3, 1)
    np.testing.assert_array_equal(scalar.last, [7.0])


@pytest.mark.parametrize("name", ["value", "data", "x", "private", "_secret", "path"])
def test_released_refuses_other_attributes(name: str) -> None:
    r = Released([1.0], [1.0])
    with pytest.raises(NotAStoppingTime, match=f"may only look at released iterates.*'{name}'"):
        getattr(r, name)


def test_released_is_read_only_and_independent_of_its_source() -> None:
    values = np.array([[1.0], [2.0]])
    r = Released(values, [2.0, 1.0])
    for arr in (r.values, r.times, r.eps, r.last):
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 0.0
    values[0, 0] = 99.0
    assert r.values[0, 0] == 1.0
    with pytest.raises(AttributeError):
        r.count = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        r._values = values
    with pytest.raises(AttributeError):
        del r._values
    assert not hasattr(r, "__array__")  # protocol probes get a plain AttributeError


def test_rules_cannot_see_future_iterates() -> None:
    values = np.arange(10.0)
    seen: list[tuple[int, int, bool]] = []

    def spy(released: Released) -> bool:
        v = released.values
        seen.append((released.count, v.shape[0], v.base is None and released.times.base is None))
        return False

    assert run_rule_on_path(spy, values, np.linspace(10.0, 1.0, 10)) is None
    assert seen == [(k, k, True) for k in range(1, 11)]


@pytest.mark.parametrize(
    ("values", "times", "name"),
    [
        ([1.0, 2.0], [1.0, 2.0], "times"),
        ([1.0, 2.0], [2.0, 0.0], "times"),
        ([1.0], [], "times"),
        ([1.0, 2.0], [1.0], "values"),
        ([[[1.0]]], [1.0], "values"),
        ([math.nan], [1.0], "values"),
        (np.zeros((1, 0)), [1.0], "values"),
    ],
)
def test_released_rejects_bad_paths(values: Any, times: Any, name: str) -> None:
    with pytest.raises(InvalidParameter) as exc:
        Released(values, times)
    assert exc.value.name == name
    with pytest.raises(InvalidParameter) as exc:
        Released([1.0], [1.0], sensitivity=0.0)
    assert exc.value.name == "sensitivity"


# --- RelativeError ---------------------------------------------------------------------------------


@settings(max_examples=300)
@given(y_hats, epss, alphas)
def test_relative_error_is_the_apc_condition(y: float, eps: float, alpha: float) -> None:
    rule = RelativeError(alpha)
    t = 1.0 / eps**2
    expected = apc_condition(y, eps, alpha)
    assert rule(Released([y], [t])) is expected
    assert rule.stops(np.array([[[y]]]), np.array([t]), 1.0).tolist() == [[expected]]


@settings(max_examples=50)
@given(st.integers(0, 2**32 - 1), alphas)
def test_relative_error_vectorised_matches_transcription(seed: int, alpha: float) -> None:
    rng = np.random.default_rng(seed)
    eps = np.sort(rng.uniform(1e-3, 2.0, 40))
    times = 1.0 / eps**2
    values = rng.normal(rng.uniform(0, 200, (5, 1)), 1.0 / eps)[..., np.newaxis]
    got = RelativeError(alpha).stops(values, times, 1.0)
    expected = [
        [apc_condition(float(y), float(e), alpha) for y, e in zip(row, eps, strict=True)]
        for row in values[..., 0]
    ]
    assert got.tolist() == expected


def test_relative_error_by_hand_and_planted_bug() -> None:
    rule = RelativeError(0.1)
    cases = [  # (ŷ, eps, stop?)
        (100.0, 0.5, True),  # sd 2: 102/98 = 1.041
        (20.0, 1.0, False),  # 21/19 = 1.105 > 1.1
        (1.0, 1.0, False),  # |ŷ| = sd
        (0.5, 1.0, False),  # |ŷ| < sd
        (0.0, 1.0, False),  # ratio 1, refused only by |ŷ| > sd
        (-100.0, 0.5, True),  # 98/102 = 0.961 > 0.9
        (-3.0, 1.0, False),  # 2/4 = 0.5 <= 0.9: only the lower side refuses it
    ]
    for y, eps, stop in cases:
        assert apc_condition(y, eps, 0.1) is stop
        assert rule(Released([y], [1 / eps**2])) is stop
    # Exact edges at alpha = 0.5, sd = 1: 6/4 = 1 + alpha is inside, 2/4 = 1 − alpha is outside.
    assert RelativeError(0.5)(Released([5.0], [1.0])) is apc_condition(5.0, 1.0, 0.5) is True
    assert RelativeError(0.5)(Released([-3.0], [1.0])) is apc_condition(-3.0, 1.0, 0.5) is False
    # The planted bug (lower side dropped) is caught by the same cases.
    assert any(apc_condition_without_lower_bound(y, e, 0.1) is not s for y, e, s in cases)


def test_relative_error_needs_scalar_iterates_and_valid_alpha() -> None:
    with pytest.raises(InvalidParameter) as exc:
        RelativeError(0.1)(Released([[1.0, 2.0]], [1.0]))
    assert exc.value.name == "values"
    for bad in (0.0, -0.1, math.nan, math.inf, "0.1"):
        with pytest.raises(InvalidParameter) as exc:
            RelativeError(bad)  # type: ignore[arg-type]
        assert exc.value.name == "alpha"


# --- AtIndex, Never, WhenPublicUtility -----------------------------------------------------------


def test_at_index_and_never() -> None:
    times = np.array([4.0, 3.0, 2.0, 1.0])
    values = np.zeros((2, 4, 1))
    assert AtIndex(2).stops(values, times, 1.0).tolist() == [[False, False, True, False]] * 2
    assert run_rule_on_path(AtIndex(0), [1.0, 2.0], [2.0, 1.0]) == 0
    assert run_rule_on_path(AtIndex(3), np.zeros(4), times) == 3
    assert run_rule_on_path(AtIndex(4), np.zeros(4), times) is None
    assert run_rule_on_path(Never(), np.zeros(4), times) is None
    assert not Never().stops(values, times, 1.0).any()
    for bad in (-1, 1.0, True, None):
        with pytest.raises(InvalidParameter) as exc:
            AtIndex(bad)  # type: ignore[arg-type]
        assert exc.value.name == "k"


def test_when_public_utility() -> None:
    times = np.array([3.0, 2.0, 1.0])
    values = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])

    def first_coordinate(v: FloatArray) -> float:
        return float(v[0])

    assert run_rule_on_path(WhenPublicUtility(first_coordinate, 2.0), values, times) == 1
    assert run_rule_on_path(WhenPublicUtility(first_coordinate, 9.0), values, times) is None
    below = WhenPublicUtility(lambda v: -float(v[0]), -2.5, at_least=False)
    assert run_rule_on_path(below, values, times) == 2
    batched = WhenPublicUtility(lambda v: v[..., 0], 2.0, batched=True)
    batch = np.stack([values, values[::-1]])
    assert batched.stops(batch, times, 1.0).tolist() == [[False, True, True], [True, True, False]]
    assert (
        WhenPublicUtility(first_coordinate, 2.0).stops(batch, times, 1.0).tolist()
        == batched.stops(batch, times, 1.0).tolist()
    )


def test_when_public_utility_rejects_bad_input() -> None:
    times = np.array([1.0])
    with pytest.raises(InvalidParameter) as exc:
        WhenPublicUtility(lambda v: math.nan, 0.0)(Released([1.0], times))
    assert exc.value.name == "utility"
    with pytest.raises(InvalidParameter) as exc:
        WhenPublicUtility(lambda v: v, 0.0, batched=True).stops(np.ones((1, 1, 2)), times, 1.0)
    assert exc.value.name == "utility"
    cases: list[tuple[dict[str, Any], str]] = [
        ({"utility": 3, "threshold": 0.0}, "utility"),
        ({"utility": abs, "threshold": math.nan}, "threshold"),
        ({"utility": abs, "threshold": 0.0, "at_least": 1}, "at_least"),
        ({"utility": abs, "threshold": 0.0, "batched": "yes"}, "batched"),
    ]
    for kwargs, name in cases:
        with pytest.raises(InvalidParameter) as exc:
            WhenPublicUtility(**kwargs)
        assert exc.value.name == name


def test_stops_checks_its_inputs() -> None:
    rule = Never()
    with pytest.raises(InvalidParameter) as exc:
        rule.stops(np.zeros((1, 3, 1)), np.array([2.0, 1.0]), 1.0)  # K = 3 iterates, 2 times
    assert exc.value.name == "values"
    with pytest.raises(InvalidParameter) as exc:
        rule.stops(np.zeros(3), np.array([3.0, 2.0, 1.0]), 1.0)  # batch form needs (..., K, d)
    assert exc.value.name == "values"
    with pytest.raises(InvalidParameter) as exc:
        rule.stops(np.zeros((3, 1)), np.array([1.0, 2.0, 3.0]), 1.0)
    assert exc.value.name == "times"
    with pytest.raises(InvalidParameter) as exc:
        rule.stops(np.zeros((1, 1)), np.array([1.0]), -1.0)
    assert exc.value.name == "sensitivity"
    with pytest.raises(InvalidParameter) as exc:
        rule("not a view")  # type: ignore[arg-type]
    assert exc.value.name == "released"


# --- as_stopping_rule ---------------------------------------------------------------------------


def two_arguments(released: Released, data: FloatArray) -> bool:
    return bool(data.sum() > 0)


def keyword_only(released: Released, *, data: FloatArray) -> bool:
    return True


def no_arguments() -> bool:
    return True


@pytest.mark.parametrize("bad", [two_arguments, keyword_only, no_arguments, lambda r, x: True])
def test_as_stopping_rule_rejects_rules_that_ask_for_more(bad: Any) -> None:
    with pytest.raises(NotAStoppingTime, match="exactly one argument"):
        as_stopping_rule(bad)
    with pytest.raises(NotAStoppingTime):
        run_rule_on_path(bad, [1.0], [1.0])


class CallableRule:
    def __call__(self, released: Released) -> bool:
        return released.count >= 2


def test_as_stopping_rule_accepts_functions_of_the_view() -> None:
    def with_default(released: Released, margin: float = 0.0) -> bool:
        return bool(released.last[0] > margin)

    def star_args(*args: Released) -> bool:
        return args[0].count >= 3

    for rule, expected in [
        (with_default, 1),
        (star_args, 2),
        (CallableRule(), 1),
        (lambda released: bool(released.count == 2), 1),
    ]:
        wrapped = as_stopping_rule(rule)
        assert isinstance(wrapped, StoppingRule)
        assert run_rule_on_path(wrapped, [-1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == expected
    built_in = RelativeError(0.1)
    assert as_stopping_rule(built_in) is built_in
    assert as_stopping_rule(as_stopping_rule(with_default)) == as_stopping_rule(with_default)


def test_as_stopping_rule_rejects_non_rules() -> None:
    for bad in (3, "stop", None):
        with pytest.raises(NotAStoppingTime):
            as_stopping_rule(bad)
    with pytest.raises(NotAStoppingTime, match="exactly one argument"):
        as_stopping_rule(np.add)  # two positional arguments
    with pytest.raises(NotAStoppingTime, match="cannot read the signature"):
        as_stopping_rule(max)
    returns_array = as_stopping_rule(lambda released: released.values)
    with pytest.raises(NotAStoppingTime, match=r"True \(stop\) or False"):
        returns_array(Released([1.0], [1.0]))
    asks_for_data = as_stopping_rule(lambda released: released.data)
    with pytest.raises(NotAStoppingTime, match="'data'"):
        run_rule_on_path(asks_for_data, [1.0], [1.0])


class UserBatchRule:
    """A user's batch rule: stop once the iterate is positive."""

    def __call__(self, released: Released) -> bool:
        return bool(self.stops(released.last[np.newaxis, :], released.times[-1:], 1.0)[0])

    def stops(self, values: FloatArray, times: FloatArray, sensitivity: float) -> Any:
        return values[..., 0] > 0


def test_user_batch_rules_keep_their_vectorised_form() -> None:
    rule = UserBatchRule()
    assert isinstance(rule, BatchStoppingRule)
    assert as_stopping_rule(rule) is rule
    assert run_rule_on_path(rule, [-1.0, -0.5, 2.0], [3.0, 2.0, 1.0]) == 2


# --- run_rule_on_path and first_stops: batch and scalar forms agree ------------------------------


def rules() -> st.SearchStrategy[Any]:
    return st.one_of(
        alphas.map(RelativeError),
        st.integers(0, 40).map(AtIndex),
        st.just(Never()),
        st.floats(0.0, 150.0).map(lambda c: WhenPublicUtility(lambda v: float(v[0]), c)),
    )


@settings(max_examples=60)
@given(rules(), st.integers(0, 2**32 - 1), st.floats(0.0, 200.0), st.integers(1, 30))
def test_batch_and_scalar_forms_agree(rule: Any, seed: int, value: float, steps: int) -> None:
    rng = np.random.default_rng(seed)
    times = 1.0 / np.linspace(1e-3, 1.0, steps)
    path = brownian_path(rng, value, times)
    batch = run_rule_on_path(rule, path, times)
    scalar = run_rule_on_path(lambda released: rule(released), path, times)
    assert batch == scalar
    by_hand = next((k for k in range(steps) if rule(Released(path[: k + 1], times[: k + 1]))), None)
    assert batch == by_hand


def test_first_stops_over_trials_matches_one_path_at_a_time() -> None:
    rng = np.random.default_rng(11)
    times = 1.0 / np.linspace(1e-4, 0.5, 200)
    paths = np.stack([brownian_path(rng, 30.0, times) for _ in range(300)])
    rule = RelativeError(0.1)
    first = first_stops(rule, paths[..., np.newaxis], times)
    assert first.shape == (300,)
    for trial in range(300):
        one = run_rule_on_path(rule, paths[trial], times)
        assert first[trial] == (-1 if one is None else one)
    assert (first >= 0).any()
    assert (first == -1).any()
    nested = first_stops(rule, paths.reshape(3, 100, 200, 1), times)
    np.testing.assert_array_equal(nested.ravel(), first)


def test_run_rule_on_path_checks_its_inputs() -> None:
    with pytest.raises(InvalidParameter) as exc:
        run_rule_on_path(Never(), [1.0, 2.0], [1.0])
    assert exc.value.name == "values"
    with pytest.raises(InvalidParameter) as exc:
        run_rule_on_path(Never(), np.zeros((2, 2, 1)), [2.0, 1.0])
    assert exc.value.name == "values"
    with pytest.raises(InvalidParameter) as exc:
        run_rule_on_path(Never(), [1.0], [1.0], sensitivity=math.inf)
    assert exc.value.name == "sensitivity"
