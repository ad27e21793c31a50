"""How black-box audits read outputs (`expost.testing.events`): every event decides each output
by itself, whatever the outputs drawn with it, and outputs of any type are audited.

Statistical checks are single audits at alpha = 1e-3 and fixed seeds: a true claim is refuted
with probability <= 1e-3 per audit (so <= 3e-3 for the three seeds of the regression test, by
the union bound); each has a false claim on the same mechanism that it must refute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expost.errors import InvalidParameter
from expost.testing import audit_mechanism
from expost.testing import reference as ref
from expost.testing.events import (
    Complement,
    Interval,
    LinearScore,
    OutputEvent,
    ValueSet,
    as_outputs,
    families,
)

SAMPLES = 20_000
EPS = 1.0


def test_a_rare_non_integer_output_does_not_refute_a_true_claim() -> None:
    # The old reading dropped every value key of a batch holding one 0.5, so the value set
    # {0, 2} was empty exactly in the test batches with a 0.5: these seeds were refuted.
    mechanism = ref.ParityWithRareHalf(EPS, 0.5 / SAMPLES)
    for seed in (13, 16, 21):
        result = audit_mechanism(mechanism, eps=EPS, pairs=[([0], [1])], samples=SAMPLES, seed=seed)
        assert not result.refuted, result.report()
    # planted false claim: the same mechanism is not 0.5-DP
    assert audit_mechanism(mechanism, eps=0.5, pairs=[([0], [1])], samples=SAMPLES, seed=13).refuted


POOL: list[Any] = [0.0, 1.0, 2.5, -1.0, None, "a", math.inf, math.nan, (0.0, 1.0), (1.0, 1.0)]
OUTPUT = st.one_of(
    st.sampled_from(POOL),
    st.integers(-2, 3),
    st.floats(-3.0, 3.0),
    st.tuples(st.integers(0, 1), st.integers(0, 1)),
    st.tuples(st.floats(-2.0, 2.0), st.floats(-2.0, 2.0)),
    st.tuples(st.floats(-1.0, 1.0), st.none()),
)
SCORE = LinearScore(np.zeros(2), np.ones(2), np.array([0.0, 1.0, 0.0, 0.0, 0.0]))  # s(y) = y[0]


def _events(values: frozenset[Any], lo: float, hi: float) -> list[OutputEvent]:
    events: list[OutputEvent] = [ValueSet(values), Interval(lo, hi), Interval(lo, hi, SCORE)]
    return events + [Complement(e) for e in events]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(OUTPUT, min_size=1, max_size=12),
    st.frozensets(st.sampled_from([*POOL, 0.5, 3.0, (0.0, 0.0), (1, 0)])),
    st.floats(-3.0, 3.0),
    st.floats(0.0, 4.0),
)
def test_each_output_is_decided_by_itself(
    batch: list[Any], values: frozenset[Any], lo: float, width: float
) -> None:
    for event in _events(values, lo, lo + width):
        together = event.contains(as_outputs(batch, len(batch)))
        alone = [bool(event.contains(as_outputs([y], 1))[0]) for y in batch]
        assert together.tolist() == alone, event.describe()


def test_numbers_are_read_alike_from_arrays_and_lists() -> None:
    batch = [0.0, 2.5, math.inf, math.nan, 1.0]
    events = _events(frozenset([0.0, math.inf, math.nan]), 0.0, 2.0)
    for event in events:
        from_list = event.contains(as_outputs(batch, 5))
        from_array = event.contains(as_outputs(np.array(batch), 5))
        with_none = event.contains(as_outputs([*batch, None], 6))[:5]
        assert from_list.tolist() == from_array.tolist() == with_none.tolist()
    assert ValueSet(frozenset([math.nan])).contains(as_outputs(batch, 5)).tolist() == [
        False,
        False,
        False,
        True,
        False,
    ]


def _none_if_one(share: float) -> Any:
    def mechanism(x: Sequence[int], rng: np.random.Generator) -> float | None:
        if rng.random() < (share if x[0] == 1 else 0.5):
            return None
        return float(rng.laplace(0.0, 1.0))

    return mechanism


def _inf_if_one(x: Sequence[int], rng: np.random.Generator) -> float:
    return math.inf if x[0] == 1 and rng.random() < 0.5 else float(rng.laplace(0.0, 1.0))


def _nan_if_one(x: Sequence[int], rng: np.random.Generator) -> float:
    return math.nan if x[0] == 1 and rng.random() < 0.5 else float(rng.laplace(0.0, 1.0))


def _size_is_length(x: Sequence[int], rng: np.random.Generator) -> Any:
    return np.zeros(len(x)) + rng.laplace(0.0, 1.0)


@pytest.mark.parametrize(
    ("mechanism", "pair", "refuted"),
    [
        (_none_if_one(0.5), ([1], [0]), False),  # None w.p. 1/2 on both sides: 0-DP
        (_none_if_one(0.1), ([1], [0]), True),  # planted: None 5 times as often under x'
        (_none_if_one(0.0), ([1], [0]), True),  # None only under x'
        (_inf_if_one, ([1], [0]), True),
        (_nan_if_one, ([1], [0]), True),
        (_size_is_length, ([0, 1, 1], [0, 1]), True),
    ],
    ids=["none-both", "none-half", "none-one-side", "inf", "nan", "size"],
)
def test_outputs_that_give_the_mechanism_away_are_audited(
    mechanism: Any, pair: tuple[list[int], list[int]], refuted: bool
) -> None:
    result = audit_mechanism(mechanism, eps=EPS, pairs=[pair], samples=5_000)
    assert result.refuted is refuted, result.report()


def test_an_output_the_search_never_saw_is_outside_intervals() -> None:
    event = Interval(0.0, 1.0)
    assert event.contains(as_outputs([0.5, None, "a", math.inf, 2.0], 5)).tolist() == [
        True,
        False,
        False,
        False,
        False,
    ]


def test_bad_outputs_name_the_value_and_describe_the_dataset() -> None:
    """The mechanism's output is quoted; the dataset only by its size (issue 41, item 3)."""

    def unhashable(x: Any, rng: np.random.Generator) -> object:
        return {"a": 1} if len(x) == 2 else 0.0

    with pytest.raises(InvalidParameter, match=r"mechanism=\{'a': 1\}.*x = <a list of 2 entries>"):
        audit_mechanism(unhashable, pairs=[([0, 1, 1], [0, 1])], samples=1_000)

    class Short:
        def batch(self, x: Any, n: int, rng: np.random.Generator) -> Any:
            return np.zeros(n - 1)

        def __call__(self, x: Any, rng: np.random.Generator) -> float:
            return 0.0

    with pytest.raises(
        InvalidParameter, match=r"999 outputs.*1000 outputs on x = <a list of 3 entries>"
    ):
        audit_mechanism(Short(), pairs=[([0, 1, 1], [0, 1])], samples=1_000)


def test_learned_score_fits_on_a_bounded_number_of_rows() -> None:
    # At most 2**22 feature entries per side: for d = 50 (101 features) the first 41527 rows.
    d, rows = 50, 2**22 // 101
    rng = np.random.default_rng(0)
    a = rng.normal(0.0, 1.0, (rows + 5_000, d))
    b = rng.normal(0.3, 1.0, (rows + 5_000, d))
    a[rows:] += 5.0  # rows past the bound would move the fit a lot
    fitted = LinearScore.fit(a, b)
    assert np.array_equal(fitted.weights, LinearScore.fit(a[:rows], b[:rows]).weights)
    # scored in chunks (2**20 entries), the same as all at once
    w, z = fitted.weights, (a - fitted.center) / fitted.scale
    direct = w[0] + z @ w[1 : d + 1] + (z * z - 1) @ w[d + 1 :]
    np.testing.assert_allclose(fitted(a), direct, rtol=1e-9, atol=1e-9)


def _bits_rr(x: Sequence[int], n: int, rng: np.random.Generator) -> Any:
    """n outputs of per-bit randomized response, each bit kept w.p. e^0.2/(1 + e^0.2)."""
    keep = rng.random((n, len(x))) < math.exp(0.2) / (1.0 + math.exp(0.2))
    bits = np.asarray(x)
    return np.where(keep, bits, 1 - bits)


def test_a_learned_score_of_a_row_does_not_depend_on_the_batch() -> None:
    # It was features @ weights: BLAS kernels rounded a row's last bit by its position.
    rng = np.random.default_rng(0)
    for d in range(2, 34):
        a = rng.integers(0, 2, (2_000, d)).astype(np.float64)
        b = (rng.integers(0, 2, (2_000, d)) + (rng.random((2_000, d)) < 0.1)).astype(np.float64)
        score = LinearScore.fit(a, b)
        whole = score(a)
        for start in range(1, 9):
            assert np.array_equal(score(a[start:]), whole[start:]), (d, start)
        alone = [score(a[i : i + 1])[0] for i in range(300)]
        assert np.array_equal(alone, whole[:300]), d
        assert np.array_equal(score(np.asfortranarray(a)), whole), d


def test_vector_outputs_are_decided_in_a_batch_as_one_at_a_time() -> None:
    # With the BLAS score and cuts at quantiles (often a frequent output's exact score), copies
    # of one output were in and out of one event.
    rng = np.random.default_rng(0)
    search = [as_outputs(_bits_rr(x, 20_000, rng), 20_000) for x in ([0] * 5, [1, 0, 0, 0, 0])]
    test = _bits_rr([0] * 5, 4_099, rng)  # 4096 + 3: a ragged tail for blocked kernels
    every, which = np.unique(test, axis=0, return_inverse=True)
    alone = [as_outputs(y[None, :], 1) for y in every]  # single-row batches
    batches = [(test, which), (test[3:], which[3:]), (np.asfortranarray(test), which)]
    read = [(as_outputs(rows, rows.shape[0]), codes) for rows, codes in batches]
    for family in families(*search):
        for k in range(family.hits_x.size):
            event = family.make(k)
            one_at_a_time = np.array([event.contains(y)[0] for y in alone])
            for outputs, codes in read:
                together = event.contains(outputs)
                assert np.array_equal(together, one_at_a_time[codes]), event.describe()


def _seen_values(event: Interval, outputs: Sequence[Any]) -> set[float]:
    size = 1 if event.score is None else event.score.size
    values = np.vstack([o.real(size).values for o in outputs])
    return set((values[:, 0] if event.score is None else event.score(values)).tolist())


@pytest.mark.parametrize("vectors", [False, True], ids=["integers", "bit-vectors"])
def test_interval_cuts_lie_between_the_values_seen(vectors: bool) -> None:
    # Cuts were quantiles of the search values: for discrete outputs mostly values seen.
    rng = np.random.default_rng(0)
    raw = (
        [_bits_rr(x, 5_000, rng) for x in ([0] * 5, [1, 0, 0, 0, 0])]
        if vectors
        else [rng.geometric(0.3, 5_000) - rng.geometric(p, 5_000) for p in (0.3, 0.4)]
    )
    search = [as_outputs(r, r.shape[0]) for r in raw]
    for family in families(*search):
        seen: set[float] | None = None
        for k in range(family.hits_x.size):
            event = family.make(k)
            assert int(event.contains(search[0]).sum()) == family.hits_x[k]  # counts unchanged
            assert int(event.contains(search[1]).sum()) == family.hits_x_prime[k]
            base = event.event if isinstance(event, Complement) else event
            if isinstance(base, Interval):
                seen = _seen_values(base, search) if seen is None else seen
                assert {base.lo, base.hi}.isdisjoint(seen), base.describe()
