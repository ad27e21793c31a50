"""Logistic and softmax regression in numpy, with per-example gradients (vectorised, no loop).

Parameters are one flat vector: d weights (logistic, labels 0/1) or d·K weights in row-major
(d, K) order (softmax, labels 0..K−1). The loss of a row is the cross-entropy of its label; the
per-example gradient is (σ(wᵀx) − y)·x (logistic) and x ⊗ (softmax(Wᵀx) − e_y) (softmax), of
norm <= ‖x‖·√2. DP-SGD clips them anyway: that is the release's job, never the model's.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost.apps.learning.data import LabelledRows
from expost.errors import InvalidParameter

__all__ = ["LogisticRegression", "Model", "SoftmaxRegression", "accuracy", "model_for"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]


class Model(Protocol):
    """What DP-SGD needs of a model."""

    def size(self, d: int) -> int:
        """Number of parameters for d features."""

    def gradients(self, params: FloatArray, rows: LabelledRows) -> FloatArray:
        """Per-example gradients of the loss, shape (n, size)."""

    def loss(self, params: FloatArray, rows: LabelledRows) -> float:
        """Mean cross-entropy over the rows."""

    def predict(self, params: FloatArray, features: FloatArray) -> IntArray:
        """Predicted class of each row."""


def _sigmoid(z: FloatArray) -> FloatArray:
    out: FloatArray = 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free logistic function
    return out


@frozen
class LogisticRegression:
    """Binary logistic regression: P(y = 1 | x) = σ(wᵀx)."""

    def size(self, d: int) -> int:
        """d weights (the intercept is a feature)."""
        return d

    def gradients(self, params: FloatArray, rows: LabelledRows) -> FloatArray:
        """(σ(wᵀx_i) − y_i)·x_i for every row i, shape (n, d)."""
        residual = _sigmoid(rows.features @ params) - rows.labels
        out: FloatArray = residual[:, None] * rows.features
        return out

    def loss(self, params: FloatArray, rows: LabelledRows) -> float:
        """Mean log(1 + exp(−s·wᵀx)) with s = 2y − 1."""
        margins = (2.0 * rows.labels - 1.0) * (rows.features @ params)
        return float(np.logaddexp(0.0, -margins).mean())

    def predict(self, params: FloatArray, features: FloatArray) -> IntArray:
        """1 where wᵀx > 0, else 0."""
        out: IntArray = (features @ params > 0.0).astype(np.intp)
        return out


def _softmax(logits: FloatArray) -> FloatArray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    out: FloatArray = shifted / shifted.sum(axis=1, keepdims=True)
    return out


@frozen
class SoftmaxRegression:
    """Multinomial logistic regression with ``classes`` classes: P(y = k | x) ∝ exp(W_kᵀx)."""

    classes: int

    def __attrs_post_init__(self) -> None:
        if isinstance(self.classes, bool) or not isinstance(self.classes, int) or self.classes < 2:
            raise InvalidParameter("classes", self.classes, "must be an integer >= 2")

    def size(self, d: int) -> int:
        """d·K weights."""
        return d * self.classes

    def _logits(self, params: FloatArray, features: FloatArray) -> FloatArray:
        out: FloatArray = features @ params.reshape(features.shape[1], self.classes)
        return out

    def gradients(self, params: FloatArray, rows: LabelledRows) -> FloatArray:
        """x_i ⊗ (softmax(Wᵀx_i) − e_(y_i)) for every row i, flattened to shape (n, d·K)."""
        residual = _softmax(self._logits(params, rows.features))
        residual[np.arange(rows.n), rows.labels] -= 1.0
        out: FloatArray = np.einsum("nd,nk->ndk", rows.features, residual).reshape(rows.n, -1)
        return out

    def loss(self, params: FloatArray, rows: LabelledRows) -> float:
        """Mean −log softmax(Wᵀx)_y."""
        logits = self._logits(params, rows.features)
        top = logits.max(axis=1)
        log_norm = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
        return float((log_norm - logits[np.arange(rows.n), rows.labels]).mean())

    def predict(self, params: FloatArray, features: FloatArray) -> IntArray:
        """argmax_k W_kᵀx."""
        out: IntArray = np.argmax(self._logits(params, features), axis=1).astype(np.intp)
        return out


def model_for(classes: int) -> LogisticRegression | SoftmaxRegression:
    """Logistic regression for two classes, softmax regression for more."""
    return LogisticRegression() if classes == 2 else SoftmaxRegression(classes)


def accuracy(model: Model, params: FloatArray, rows: LabelledRows) -> float:
    """Share of rows whose class the model predicts."""
    return float(np.mean(model.predict(params, rows.features) == rows.labels))
