"""Accuracy-first DP-SGD's parts: data, per-example gradients, the trainer and its release."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pytest

from expost import PrivateSession
from expost.apps.learning.data import LabelledRows, load_rows, split, synthetic_rows
from expost.apps.learning.methods import train_until
from expost.apps.learning.models import LogisticRegression, SoftmaxRegression, accuracy
from expost.apps.learning.sgd import BrownianCheck, CountCheck, SGDConfig, Trainer
from expost.errors import InvalidParameter
from expost.filters import ZCDPCost, ZCDPFilter


def _rows(classes: int, n: int = 7, d: int = 4, seed: int = 0) -> LabelledRows:
    rng = np.random.default_rng(seed)
    return LabelledRows(rng.normal(size=(n, d)), rng.integers(0, classes, size=n), classes)


def _numeric_gradient(
    model: object, params: npt.NDArray[np.float64], one: LabelledRows
) -> npt.NDArray[np.float64]:
    """Central differences of the one-row loss, step 1e-6 (error O(h²) ≈ 1e-12)."""
    h = 1e-6
    out = np.empty_like(params)
    for k in range(params.size):
        e = np.zeros_like(params)
        e[k] = h
        out[k] = (model.loss(params + e, one) - model.loss(params - e, one)) / (2 * h)  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize("classes", [2, 3])
def test_per_example_gradients_match_finite_differences(classes: int) -> None:
    rows = _rows(classes)
    model = LogisticRegression() if classes == 2 else SoftmaxRegression(classes)
    params = np.random.default_rng(1).normal(size=model.size(rows.d))
    grads = model.gradients(params, rows)
    assert grads.shape == (rows.n, params.size)
    for i in range(rows.n):
        one = rows.rows(np.array([i]))
        np.testing.assert_allclose(grads[i], _numeric_gradient(model, params, one), atol=1e-7)


def test_finite_difference_check_catches_a_wrong_gradient() -> None:
    """Twin: the softmax gradient with the wrong sign of e_y fails the same comparison."""
    rows = _rows(3)
    model = SoftmaxRegression(3)
    params = np.random.default_rng(1).normal(size=model.size(rows.d))
    one = rows.rows(np.array([0]))
    wrong = np.einsum("d,k->dk", one.features[0], np.eye(3)[one.labels[0]]).reshape(-1)
    wrong = model.gradients(params, one)[0] + 2.0 * wrong  # +e_y instead of −e_y
    assert not np.allclose(wrong, _numeric_gradient(model, params, one), atol=1e-7)


def test_logistic_equals_two_class_softmax_predictions() -> None:
    rows = _rows(2, n=50)
    w = np.random.default_rng(2).normal(size=rows.d)
    soft = np.column_stack([np.zeros(rows.d), w]).reshape(-1)
    assert np.array_equal(
        LogisticRegression().predict(w, rows.features),
        SoftmaxRegression(2).predict(soft, rows.features),
    )


def test_rows_are_prepared_and_split_by_seed() -> None:
    rows = synthetic_rows()
    norms = np.linalg.norm(rows.features[:, :-1], axis=1)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-12)
    assert np.all(rows.features[:, -1] == 1.0)
    a, b = (split(rows, "synthetic", np.random.default_rng(5)) for _ in range(2))
    assert np.array_equal(a.train.features, b.train.features)
    assert a.train.n + a.validation.n + a.test.n == rows.n
    c = split(rows, "synthetic", np.random.default_rng(6))
    assert not np.array_equal(a.train.features, c.train.features)


@pytest.mark.parametrize(("name", "n", "classes"), [("breast_cancer", 569, 2), ("wine", 178, 3)])
def test_bundled_sets(name: str, n: int, classes: int) -> None:
    pytest.importorskip("sklearn")
    rows = load_rows(name)
    assert (rows.n, rows.classes) == (n, classes)


def test_unknown_dataset_is_refused() -> None:
    with pytest.raises(InvalidParameter, match="dataset"):
        load_rows("mnist")


class _RecordingBatch:
    def __init__(self, owner: _Recording, n: int) -> None:
        self.owner = owner
        self.indices = np.arange(n, dtype=np.int64)

    def release(self, rows: npt.ArrayLike) -> npt.NDArray[np.float64]:
        r = np.asarray(rows, dtype=np.float64)
        self.owner.records.append(r)
        return np.zeros(r.shape[1])


class _Recording:
    """A release whose batches hold every row; it records what the trainer passes."""

    def __init__(self) -> None:
        self.records: list[npt.NDArray[np.float64]] = []

    def poisson_batch(
        self, n: int, sampling_prob: float, sigma: float, sensitivity: float
    ) -> _RecordingBatch:
        return _RecordingBatch(self, n)


def test_trainer_passes_raw_per_example_gradients_of_the_batch() -> None:
    """The caller does not clip: the batch rows' raw gradients go to the release."""
    rows = LabelledRows(np.full((5, 2), 30.0), np.array([0, 1, 0, 1, 1]), 2)
    release = _Recording()
    trainer = Trainer(LogisticRegression(), rows, SGDConfig(1.0, 1.0, 0.5, 0.1, 2.5))
    trainer.run(release, 2)  # type: ignore[arg-type]
    assert len(release.records) == 2
    np.testing.assert_array_equal(
        release.records[0], LogisticRegression().gradients(np.zeros(2), rows)
    )
    assert np.linalg.norm(release.records[0], axis=1).max() > 20.0


def test_the_session_release_clips_what_the_trainer_passes() -> None:
    """With q = 1 and tiny noise the noisy sum of 5 rows of norm ~21 has norm <= 5·C (C = 1)."""
    rows = LabelledRows(np.full((5, 2), 30.0), np.array([1, 1, 1, 1, 1]), 2)
    session = PrivateSession(ZCDPFilter(1e15), np.random.default_rng(0))
    raw = LogisticRegression().gradients(np.zeros(2), rows)
    batch = session.poisson_batch(5, sampling_prob=1.0, sigma=1e-6, sensitivity=1.0)
    released = batch.release(raw[batch.indices])
    assert np.linalg.norm(released) <= 5.0 + 1e-4
    assert np.linalg.norm(raw.sum(axis=0)) > 100.0  # unclipped it would be far larger


def test_training_improves_accuracy_through_a_session() -> None:
    rows = synthetic_rows()
    data = split(rows, "synthetic", np.random.default_rng(0))
    model = LogisticRegression()
    session = PrivateSession(ZCDPFilter(1e9), np.random.default_rng(1))
    trainer = Trainer(model, data.train, SGDConfig(1.0, 1.0, 0.01, 2.0, 24.0))
    before = accuracy(model, trainer.params + 1e-3, data.test)
    trainer.run(session, 60)
    after = accuracy(model, trainer.averaged(), data.test)
    assert after > max(before, 0.75)
    assert len(session.history) == 60


def test_count_check_releases_the_excess_through_the_session() -> None:
    """f = correct − a·n with a = target + margin; the noise is σ_c (rho = 1/(2σ_c²))."""
    rows = LabelledRows(np.eye(2)[[0, 1, 0, 1]], np.array([0, 0, 0, 0]), 2)
    session = PrivateSession(ZCDPFilter(1e12), np.random.default_rng(3))
    check = CountCheck(sigma=1e-4, margin=0.05)
    w = np.array([-1.0, 1.0])  # predicts 1 on the second column: 2 of 4 correct
    assert check.passes(session, LogisticRegression(), w, rows, 0.45)  # f = 2 − 0.5·4 = 0
    assert not check.passes(session, LogisticRegression(), w, rows, 0.46)  # f = −0.04
    request = session.history[0].request
    assert isinstance(request, ZCDPCost)
    assert request.rho <= 1.0 / (2.0 * 1e-8)
    assert request.rho == pytest.approx(1.0 / (2.0 * 1e-8))


def test_brownian_check_stops_early_far_from_the_threshold() -> None:
    """Far below the threshold the walk stops at its noisiest level; at the threshold it walks
    to the finest level the budget allows, and a budget below s_1 refuses to check."""
    rows = LabelledRows(np.eye(2)[[0, 1] * 50], np.zeros(100, dtype=np.intp), 2)
    w = np.array([-1.0, 1.0])  # 50 of 100 correct
    check = BrownianCheck((0.04, 0.16, 0.64, 2.56), margin=0.0, z=2.0)
    session = PrivateSession(ZCDPFilter(100.0), np.random.default_rng(4))
    far = check.decide(session, LogisticRegression(), w, rows, 0.9, 10.0)
    assert far == (False, 0.04)  # f = −40, noise 5: unclear only if the noise exceeds 4σ
    near = check.decide(session, LogisticRegression(), w, rows, 0.5, 0.7)
    assert near is not None
    assert near[1] == 0.64
    assert check.decide(session, LogisticRegression(), w, rows, 0.5, 0.02) is None
    assert len(session.history) == 2


class _StubTrainer:
    """Steps nothing: `train_until`'s bookkeeping alone is under test."""

    params = np.zeros(2)
    model = LogisticRegression()

    def run(self, session: object, steps: int) -> None:
        del session, steps

    def averaged(self) -> npt.NDArray[np.float64]:
        return self.params


class _StubCheck:
    """Answers the given outcomes in turn (None: the budget cannot pay a check)."""

    def __init__(self, outcomes: list[tuple[bool, float] | None]) -> None:
        self.outcomes = outcomes
        self.asked = 0

    def decide(self, *args: object) -> tuple[bool, float] | None:
        self.asked += 1
        return self.outcomes[self.asked - 1]


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        ([(False, 0.25), None], (2, 1, "budget", 0.25)),  # the budget could not pay the 2nd
        ([None], (1, 0, "budget", 0.0)),
        ([(False, 0.25)] * 3, (3, 3, "budget", 0.75)),  # every unit checked, none passed
        ([(False, 0.25), (True, 0.5)], (2, 2, "check", 0.75)),
    ],
)
def test_train_until_counts_only_the_checks_it_made(
    outcomes: list[tuple[bool, float] | None], expected: tuple[int, int, str, float]
) -> None:
    check = _StubCheck(outcomes)
    units = [cast(Any, type("U", (), {"steps": 1}))] * 3
    rows = _rows(2)
    done, checks, _, stopped, spent = train_until(
        cast(Any, _StubTrainer()), units, cast(Any, check), cast(Any, None), rows, 0.9, 1.0
    )
    assert (done, checks, stopped, spent) == expected
    assert check.asked == done  # one decision per unit run, paid or not
