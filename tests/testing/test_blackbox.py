"""Black-box audits (`expost.testing.audit_mechanism`, issue 15): verdicts, validity, splitting.

Verdict tests run at a fixed seed with alpha = 1e-3; the validity test counts refutations of
true claims over seeded audits at a loose level and bounds their rate by the exact one-sided
binomial test of tests/stats.py (false-alarm 1e-6), with a planted false claim it must reject.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from expost.audit import audit_seed
from expost.errors import InvalidParameter
from expost.testing import (
    BlackBoxResult,
    assert_private,
    audit_mechanism,
    statdp_pairs,
)
from expost.testing import reference as ref
from expost.testing.neighbours import NEIGHBOURS, candidate_pairs, difference
from tests.stats import rate_is_at_most

SMALL = 20_000
ONE_PAIR = [([0, 1, 1], [0, 1])]


def test_correct_laplace_not_refuted() -> None:
    result = audit_mechanism(ref.LaplaceCount(1.0, 1.0), eps=1.0, pairs=ONE_PAIR, samples=SMALL)
    assert not result.refuted
    assert 0.0 <= result.eps_lower <= 1.0
    assert result.test_samples == SMALL
    assert result.witness.n == SMALL


@pytest.mark.parametrize(
    ("mechanism", "kwargs"),
    [
        (ref.LaplaceCount(1.0, 2.0), {"pairs": ONE_PAIR}),
        (ref.LaplaceMean(1.0, 0.5), {"datasets": [[0.0, 1.0, 0.5]], "neighbours": "replace-one"}),
        (ref.SVTThresholdNoiseOnly(1.0), {"pairs": statdp_pairs(5)}),
        (ref.SVTNoHalting(1.0), {"pairs": statdp_pairs(5)}),
    ],
    ids=["laplace-2x", "mean-half-sensitivity", "svt-alg5", "svt-alg6"],
)
def test_broken_mechanisms_refuted(mechanism: Any, kwargs: dict[str, Any]) -> None:
    result = audit_mechanism(mechanism, eps=1.0, samples=SMALL, **kwargs)
    assert result.refuted
    assert result.eps_lower > 1.0
    assert "REFUTED" in result.report()


@pytest.mark.parametrize(
    "mechanism",
    [ref.GaussianCount(1.0, 1.0), ref.RandomizedResponse(1.0), ref.ReportNoisyChoice(1.0)],
    ids=["gaussian-exact-delta", "randomized-response", "exponential"],
)
def test_correct_mechanisms_not_refuted(mechanism: Any) -> None:
    eps, delta = mechanism.claim()
    result = audit_mechanism(
        mechanism, eps=eps, delta=delta, datasets=[[0, 1], [1, 0]], samples=SMALL
    )
    assert not result.refuted


def _python_laplace(x: Sequence[float], rng: np.random.Generator) -> float:
    """A third-party style mechanism: one call, one output, no batch."""
    return float(sum(x) + rng.laplace(0.0, 0.5))  # scale 1/2: 2-DP, not 1-DP


def test_plain_callable_is_called_per_output() -> None:
    result = audit_mechanism(_python_laplace, eps=1.0, pairs=[([0], [1])], samples=5_000)
    assert result.refuted


def _leaky_label(x: Sequence[int], rng: np.random.Generator) -> str:
    """Hashable outputs: reports "yes" when the first record is set, with a little noise."""
    flip = rng.random() < 0.1
    return "yes" if (x[0] == 1) != flip else "no"


def test_hashable_outputs_use_value_sets() -> None:
    result = audit_mechanism(_leaky_label, eps=1.0, pairs=[([1], [0])], samples=5_000)
    assert result.refuted  # true eps = log(9) ≈ 2.2
    assert "'yes'" in result.witness.event.describe() or "'no'" in result.witness.event.describe()


def test_delta_enters_as_hockey_stick() -> None:
    # Output 1 on x = [1]; a fair coin on x' = [0]. The event {0} has P = 0 vs 1/2, so the
    # mechanism is (eps, delta)-DP for some eps iff delta >= 1/2, and then for every eps >= 0
    # (5000 samples per side bound eps_lower by about 4.6, so eps = 3 is refutable).
    def coin(x: Sequence[int], rng: np.random.Generator) -> int:
        return 1 if x[0] == 1 else int(rng.random() < 0.5)

    pairs = [([1], [0])]
    holds = audit_mechanism(coin, eps=0.0, delta=0.6, pairs=pairs, samples=5_000)
    fails = audit_mechanism(coin, eps=3.0, delta=0.3, pairs=pairs, samples=5_000)
    assert not holds.refuted
    assert fails.refuted
    assert fails.witness.x == [0]
    assert fails.witness.hits_x_prime == 0


def test_eps_lower_is_the_exact_clopper_pearson_bound() -> None:
    result = audit_mechanism(
        ref.LaplaceCount(1.0, 2.0), eps=1.0, delta=1e-3, pairs=ONE_PAIR, samples=SMALL, alpha=0.01
    )
    w = result.witness
    lower = sps.beta.ppf(0.005, w.hits_x, w.n - w.hits_x + 1)
    upper = sps.beta.isf(0.005, w.hits_x_prime + 1, w.n - w.hits_x_prime)
    assert result.eps_lower == pytest.approx(math.log((lower - 1e-3) / upper), rel=1e-9)


def _refutations(mechanism: Any, eps: float, delta: float, trials: int) -> int:
    return sum(
        audit_mechanism(
            mechanism, eps=eps, delta=delta, pairs=[([1], [0])], samples=2_000, alpha=0.25, seed=s
        ).refuted
        for s in range(trials)
    )


@pytest.mark.parametrize(
    "mechanism", [ref.RandomizedResponse(1.0), ref.GaussianCount(1.0, 1.0)], ids=["rr", "gauss"]
)
def test_false_alarm_rate_is_at_most_alpha(mechanism: Any) -> None:
    eps, delta = mechanism.claim()
    trials = 30
    assert rate_is_at_most(_refutations(mechanism, eps, delta, trials), trials, 0.25)
    # planted bug: the same mechanism claimed at a third of its eps is refuted too often
    assert not rate_is_at_most(_refutations(mechanism, eps / 3, delta, trials), trials, 0.25)


def test_same_seed_same_result_and_seeds_differ() -> None:
    def run(seed: int) -> BlackBoxResult:
        return audit_mechanism(ref.LaplaceCount(1.0, 1.0), pairs=ONE_PAIR, samples=5_000, seed=seed)

    a, b, c = run(4), run(4), run(5)
    assert (a.witness.hits_x, a.witness.hits_x_prime) == (b.witness.hits_x, b.witness.hits_x_prime)
    assert a.eps_lower == b.eps_lower
    assert a.eps_lower != c.eps_lower


def test_test_split_comes_from_its_own_stream() -> None:
    # the documented layout: test outputs from audit_seed(seed, "blackbox").spawn(2)[1]
    mechanism = ref.LaplaceCount(1.0, 1.0)
    result = audit_mechanism(mechanism, pairs=ONE_PAIR, samples=5_000, seed=7)
    w = result.witness
    test_stream = audit_seed(7, "blackbox").spawn(2)[1]
    rx, rxp = (np.random.default_rng(s) for s in test_stream.spawn(2))
    from expost.testing.blackbox import draw

    assert np.count_nonzero(w.event.contains(draw(mechanism, w.x, 5_000, rx))) == w.hits_x
    hits_xp = np.count_nonzero(w.event.contains(draw(mechanism, w.x_prime, 5_000, rxp)))
    assert hits_xp == w.hits_x_prime


def test_test_split_does_not_depend_on_the_search() -> None:
    # More candidate pairs change what the search draws, not the test's outputs: randomized
    # response has one sensible event, so the witness is the same and so are its hits.
    mechanism = ref.RandomizedResponse(1.0)
    alone = audit_mechanism(mechanism, pairs=[([1], [0])], samples=5_000, seed=2)
    crowded = audit_mechanism(
        mechanism, pairs=[([1], [1]), ([0], [0]), ([1], [0])], samples=5_000, seed=2
    )
    assert crowded.search_samples > alone.search_samples
    assert (alone.witness.x, alone.witness.event) == (crowded.witness.x, crowded.witness.event)
    assert alone.witness.hits_x == crowded.witness.hits_x
    assert alone.witness.hits_x_prime == crowded.witness.hits_x_prime


def test_pairs_from_a_hypothesis_strategy_and_a_callable() -> None:
    records = st.lists(st.sampled_from([0.0, 1.0]), min_size=2, max_size=4)
    broken = ref.LaplaceCount(1.0, 2.0)
    assert audit_mechanism(broken, datasets=records, samples=SMALL).refuted

    def drop_first(x: list[float]) -> list[list[float]]:
        return [x[1:]]

    result = audit_mechanism(broken, datasets=[[1.0, 0.0]], neighbours=drop_first, samples=SMALL)
    assert result.refuted
    assert {tuple(result.witness.x), tuple(result.witness.x_prime)} == {(1.0, 0.0), (0.0,)}


def test_budget_stops_the_search_not_the_test() -> None:
    result = audit_mechanism(
        ref.LaplaceCount(1.0, 1.0), datasets=[[0, 1, 1]], samples=5_000, budget_s=1e-9
    )
    assert result.pairs_searched == 1
    assert result.witness.n == 5_000


def test_assert_private() -> None:
    ok = assert_private(ref.LaplaceCount(1.0, 1.0), eps=1.0, pairs=ONE_PAIR, samples=SMALL)
    assert not ok.refuted
    with pytest.raises(AssertionError, match=r"not \(1, 0\)-DP(.|\n)*witness: x = "):
        assert_private(ref.LaplaceCount(1.0, 2.0), eps=1.0, pairs=ONE_PAIR, samples=SMALL)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"mechanism": 3}, "mechanism"),
        ({"eps": -1.0}, "eps"),
        ({"eps": math.nan}, "eps"),
        ({"delta": 1.0}, "delta"),
        ({"samples": 10}, "samples"),
        ({"samples": 2.5}, "samples"),
        ({"alpha": 0.0}, "alpha"),
        ({"seed": -1}, "seed"),
        ({"budget_s": 0.0}, "budget_s"),
        ({"neighbours": "swap"}, "neighbours"),
        ({"pairs": []}, "pairs"),
        ({"pairs": [([0], [1], [2])]}, "pairs"),
        ({"pairs": None}, "datasets"),
        ({"pairs": None, "datasets": []}, "datasets"),
        ({"pairs": None, "datasets": 5}, "datasets"),
        ({"pairs": None, "datasets": ["abc"]}, "datasets"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], name: str) -> None:
    args: dict[str, Any] = {"mechanism": ref.LaplaceCount(1.0, 1.0), "pairs": ONE_PAIR}
    args.update(kwargs)
    with pytest.raises(InvalidParameter, match=name):
        audit_mechanism(**args)


def test_statdp_pairs_are_linf_neighbours() -> None:
    pairs = statdp_pairs(6)
    assert len(pairs) == 7
    for x, x_prime in pairs:
        assert x.shape == x_prime.shape == (6,)
        assert np.max(np.abs(x - x_prime)) <= 1.0
    with pytest.raises(InvalidParameter, match="length"):
        statdp_pairs(1)


@pytest.mark.parametrize(
    ("neighbours", "data"),
    [
        (lambda x: x[:-1], [[1, 1, 1]]),  # one dataset, not an iterable of them
        (lambda x: None, [[1, 1, 1]]),
        (lambda x: x[:-1], [[(0, 1), (1, 1)]]),  # records are pairs: still one dataset
        (lambda x: x[:-1], [np.zeros((3, 2))]),
    ],
    ids=["one-list", "none", "one-list-of-pairs", "one-array"],
)
def test_neighbours_callable_must_return_datasets(neighbours: Any, data: list[Any]) -> None:
    def mechanism(x: Sequence[Any], rng: np.random.Generator) -> float:
        return len(x) + rng.laplace(0.0, 1.0)  # 1-DP under add-remove, whatever the records

    with pytest.raises(InvalidParameter, match=r"neighbours=.*must return an iterable of datasets"):
        audit_mechanism(mechanism, datasets=data, neighbours=neighbours, samples=1_000)
    fine = audit_mechanism(
        mechanism, datasets=data, neighbours=lambda x: (x[:-1],), samples=5_000, seed=1
    )
    assert not fine.refuted
    assert len(fine.witness.x) - len(fine.witness.x_prime) in (1, -1)


def test_numpy_numbers_give_the_structured_pairs() -> None:
    plain = candidate_pairs([[0, 1, 1]], "add-remove")
    numpy = candidate_pairs([[np.int64(0), np.int64(1), np.int64(1)]], "add-remove")
    floats = candidate_pairs([[np.float32(0), np.float32(1), np.float32(1)]], "add-remove")
    assert len(numpy) == len(floats) == len(plain) > 5  # more than the given dataset's own


def _geometric_count(records: Sequence[int], rng: np.random.Generator) -> int:
    """round(sum) + two-sided geometric noise: exactly 1-DP under add-remove on integer records
    (round is then the identity), not on 0.5 (round(0.5 + 1) − round(0.5) = 2)."""
    q = math.exp(-1.0)
    return round(sum(records)) + int(rng.geometric(1 - q)) - int(rng.geometric(1 - q))


def test_a_mechanism_dp_on_its_domain_is_not_refuted() -> None:
    # The increasing dataset was np.linspace(0, 1, 3) = [0.0, 0.5, 1.0]: record 0.5 was never
    # given, and this seed was refuted with eps_lower 1.884.
    data = [np.array([0, 1, 1])]
    result = audit_mechanism(_geometric_count, eps=1.0, datasets=data, samples=SMALL, seed=0)
    assert not result.refuted, result.report()
    # planted false claim: the same mechanism is not 0.5-DP
    assert audit_mechanism(_geometric_count, eps=0.5, datasets=data, samples=SMALL, seed=0).refuted


def _records_seen(datasets: Sequence[Any], pairs: Sequence[tuple[Any, Any]]) -> None:
    seen = {r for x in datasets for r in np.asarray(x).tolist()}
    for x, x_prime in pairs:
        for d in (x, x_prime):
            assert set(np.asarray(d).tolist()) <= seen, (x, x_prime)


INT_DATASET = st.lists(st.integers(-3, 5), min_size=1, max_size=6).flatmap(
    lambda r: st.sampled_from([r, tuple(r), *(np.array(r, dtype=t) for t in ("i1", "i4", "i8"))])
)


@settings(max_examples=200, deadline=None)
@given(st.lists(INT_DATASET, min_size=1, max_size=3), st.sampled_from(NEIGHBOURS))
def test_candidate_datasets_reuse_the_seen_records(datasets: list[Any], neighbours: str) -> None:
    assume(len({r for x in datasets for r in np.asarray(x).tolist()}) >= 2)  # else no pair
    pairs = candidate_pairs(datasets, neighbours)
    _records_seen(datasets, pairs)
    for x, x_prime in pairs:  # structured ones like the first given dataset of their length
        like = next(d for d in datasets if len(d) == len(x))
        like = next((d for d in datasets if d is x), like)
        for d in (x, x_prime):
            assert type(d) is type(like)
            assert getattr(d, "dtype", None) == getattr(like, "dtype", None)


def test_records_of_another_dtype_are_not_cast() -> None:
    # 0.5 added to an int array was cast to 0, a record never given.
    datasets = [np.array([5, 6]), [0.5, 9.75]]
    for neighbours in NEIGHBOURS:
        _records_seen(datasets, candidate_pairs(datasets, neighbours))


def test_report_shows_lengths_the_difference_and_the_seed() -> None:
    x = [0.125] * 30
    result = audit_mechanism(
        ref.LaplaceCount(1.0, 2.0), eps=1.0, pairs=[(x, x[:-1])], samples=SMALL, seed=3
    )
    report = result.report()
    assert result.seed == 3
    assert "seed: 3" in report
    assert "(30 records)" in report
    assert "(29 records)" in report
    assert "x' is x without record 29 (0.125)" in report or "x' is x with 0.125 added" in report


@pytest.mark.parametrize(
    ("x", "x_prime", "said"),
    [
        ([1, 2, 3], [1, 3], "x' is x without record 1 (2)"),
        ([1, 2], [1, 5, 2], "x' is x with 5 added at position 1"),
        ([1, 2, 3], [1, 7, 3], "x' is x with record 1 changed from 2 to 7"),
        (np.zeros((2, 2)), np.ones((2, 2)), "x and x' first differ at record 0"),
        ([1, 2], [1, 2], "x' equals x"),
        ({"a": 1}, {"a": 2}, "x' differs from x"),
    ],
)
def test_difference(x: Any, x_prime: Any, said: str) -> None:
    assert difference(x, x_prime) == said


def test_docs_page_shows_the_example_test_file_verbatim() -> None:
    root = Path(__file__).resolve().parents[2]
    example = (root / "tests" / "testing" / "test_blackbox_example.py").read_text(encoding="utf-8")
    page = (root / "docs" / "blackbox.md").read_text(encoding="utf-8")
    assert f"```python\n{example}```" in page
