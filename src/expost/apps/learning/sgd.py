"""DP-SGD on a session's subsampled Gaussian release, and the private validation check.

One step (Abadi et al. 2016): the model's per-example gradients of *every* training row go to
``session.subsampled_gaussian(gradients, sensitivity=C, sigma=σ, sampling_prob=q)``, which draws
the Poisson sample (each row kept with probability q), clips each kept row to ℓ2 norm C, sums
them and adds N(0, (σC)²) per coordinate; the learner divides that noisy sum by the *expected*
batch size q·n (a constant, so the step stays a post-processing of the release) and takes a
gradient step. The caller never clips: the release does, so no caller can pass an unclipped row
past it. The model the check and the report use is the running average of the iterates since
the last check (a post-processing of released values, free).

The check releases the number of validation rows the current model classifies correctly with
``session.gaussian(count, sensitivity=1, rho=1/(2σ_c²) rounded down)`` (add/remove of one validation row moves
the count by at most 1; training rows do not move it, the model being a function of released
values) and compares count/n_val with the target plus a margin.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import (
    as_float,
    nonnegative,
    positive,
    positive_int,
    sampling_probability,
    validator,
)
from expost.apps.learning.data import LabelledRows
from expost.apps.learning.models import Model
from expost.rounding import down_exact

__all__ = ["CountCheck", "Releases", "SGDConfig", "Trainer"]

FloatArray = npt.NDArray[np.float64]


class Releases(Protocol):
    """The two releases the learner uses (`expost.PrivateSession` has both)."""

    def subsampled_gaussian(
        self, records: npt.ArrayLike, sensitivity: float, sigma: float, sampling_prob: float
    ) -> npt.NDArray[Any]:
        """Poisson sample at rate q, clip rows to norm ``sensitivity``, sum, add Gaussian noise."""

    def gaussian(self, value: npt.ArrayLike, sensitivity: float, rho: float) -> npt.NDArray[Any]:
        """``value + N(0, sensitivity²/(2·rho))``."""


@frozen
class SGDConfig:
    """DP-SGD's hyper-parameters: clipping norm C, noise multiplier σ, Poisson rate q and the
    learning rate of plain SGD on the noisy mean gradient."""

    clip: float = field(converter=as_float, validator=validator(positive))
    sigma: float = field(converter=as_float, validator=validator(positive))
    sampling_prob: float = field(converter=as_float, validator=validator(sampling_probability))
    learning_rate: float = field(converter=as_float, validator=validator(positive))


@frozen
class CountCheck:
    """The private check: a Gaussian count of correct validation predictions, noise σ_c counts;
    it passes when count/n_val >= target + margin."""

    sigma: float = field(converter=as_float, validator=validator(positive))
    margin: float = field(default=0.0, converter=as_float, validator=validator(nonnegative))

    def _rho(self) -> float:
        """1/(2σ_c²) rounded down: the session's noise is then at least σ_c (its σ is the least
        float with 1/(2σ²) <= rho), the σ_c the accounting prices."""
        return down_exact(1 / (2 * Fraction(self.sigma) ** 2))

    def noisy_accuracy(
        self, session: Releases, model: Model, params: FloatArray, rows: LabelledRows
    ) -> float:
        """The released count of correct predictions over n_val."""
        correct = float(np.sum(model.predict(params, rows.features) == rows.labels))
        released = session.gaussian(np.array([correct]), 1.0, self._rho())
        return float(np.asarray(released, dtype=np.float64).reshape(-1)[0]) / rows.n

    def passes(self, noisy_accuracy: float, target: float) -> bool:
        """Does the released accuracy pass the target (plus the margin)?"""
        return noisy_accuracy >= target + self.margin


class Trainer:
    """DP-SGD state for one model on one training set: the iterate and the running average."""

    def __init__(self, model: Model, rows: LabelledRows, config: SGDConfig) -> None:
        self.model, self.rows, self.config = model, rows, config
        self.params: FloatArray = np.zeros(model.size(rows.d))
        self._sum: FloatArray = np.zeros_like(self.params)
        self._count = 0
        self.steps = 0

    def run(self, session: Releases, steps: int) -> None:
        """``steps`` DP-SGD steps (module docstring), each one release of ``session``."""
        c = self.config
        scale = c.learning_rate / (c.sampling_prob * self.rows.n)
        for _ in range(positive_int("steps", steps)):
            grads = self.model.gradients(self.params, self.rows)
            noisy = session.subsampled_gaussian(grads, c.clip, c.sigma, c.sampling_prob)
            self.params = self.params - scale * np.asarray(noisy, dtype=np.float64)
            self._sum += self.params
            self._count += 1
        self.steps += steps

    def averaged(self) -> FloatArray:
        """The mean of the iterates since the last call (the iterate itself if none), and a
        fresh start of the average."""
        out: FloatArray = self._sum / self._count if self._count else self.params.copy()
        self._sum = np.zeros_like(self.params)
        self._count = 0
        return out
