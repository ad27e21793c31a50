"""DP-SGD on a session's Poisson batches, and the two private validation checks.

One step (Abadi et al. 2016): ``session.poisson_batch(n, sampling_prob=q, sigma=σ,
sensitivity=C)`` reserves the step and samples the batch (each training row kept with
probability q); the learner computes the per-example gradients of exactly those rows and
``batch.release(rows)`` clips each to ℓ2 norm C, sums them and adds N(0, (σC)²) per coordinate.
The learner divides that noisy sum by the *public* expected batch size B (a constant of the
setup, never the private n) and takes a gradient step. The caller never clips: the release does.
Nothing but the gradients is computed from the batch's indices. The model the checks and the
report use is the running average of the iterates since the last check (post-processing).

Both checks release the statistic f = (correct validation predictions) − a·n_val with
a = target + margin, and pass when the released f is >= 0 (accuracy >= a). Under add/remove of
one validation row f moves by 1 − a or −a, so its sensitivity is at most 1 (n_val is private
too and is never divided by). Training rows do not move f: the model is a function of released
values.

- `CountCheck` (doubling's): one Gaussian release of f with noise σ_c.
- `BrownianCheck` (accuracy-first's): the Brownian mechanism on f (APC Def 4.4,
  ``session.brownian``) over privacy levels s_1 < … < s_K (noise variance 1/s), walked noisiest
  first, stopped as soon as the sign of f is clear, |released| >= z/√s, or at the finest level
  the check budget still allows. A check of a model far from the threshold stops at the
  noisiest level and costs s_1; it costs s_K only near the threshold. Its price is the privacy
  time reached, μ² = s_stop in Gaussian-DP units (THEORY §9), charged to a check budget.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
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
from expost.errors import InvalidParameter
from expost.grids import EpsilonGrid
from expost.mechanisms.transcript import Transcript
from expost.rounding import down_exact
from expost.stopping import Released

__all__ = ["BrownianCheck", "CountCheck", "Releases", "SGDConfig", "Trainer"]

FloatArray = npt.NDArray[np.float64]


class Batch(Protocol):
    """A reserved DP-SGD step (`expost.PoissonBatch`)."""

    @property
    def indices(self) -> npt.NDArray[np.int64]:
        """The sampled rows (private)."""

    def release(self, rows: Any) -> Any:
        """Clip, sum, add the noise; settle the step."""


class Releases(Protocol):
    """The releases the learner uses (`expost.PrivateSession` has them all)."""

    def poisson_batch(
        self, n: int, sampling_prob: float, sigma: float, sensitivity: float
    ) -> Batch:
        """Reserve one DP-SGD step and sample its batch."""

    def gaussian(self, value: npt.ArrayLike, sensitivity: float, rho: float) -> npt.NDArray[Any]:
        """``value + N(0, sensitivity²/(2·rho))``."""

    def brownian(
        self, value: npt.ArrayLike, sensitivity: float, grid: EpsilonGrid, stop: Any
    ) -> Transcript:
        """The Brownian mechanism on ``grid``, stopped by ``stop``."""


@frozen
class SGDConfig:
    """DP-SGD's hyper-parameters: clipping norm C, noise multiplier σ, Poisson rate q, the
    learning rate of plain SGD on the noisy mean gradient and the public expected batch size B
    the noisy sum is divided by."""

    clip: float = field(converter=as_float, validator=validator(positive))
    sigma: float = field(converter=as_float, validator=validator(positive))
    sampling_prob: float = field(converter=as_float, validator=validator(sampling_probability))
    learning_rate: float = field(converter=as_float, validator=validator(positive))
    expected_batch: float = field(converter=as_float, validator=validator(positive))


def _excess(model: Model, params: FloatArray, rows: LabelledRows, level: float) -> float:
    """f = correct predictions − level·n (module docstring; sensitivity <= 1)."""
    correct = float(np.sum(model.predict(params, rows.features) == rows.labels))
    return correct - level * rows.n


@frozen
class CountCheck:
    """Doubling's check: f (module docstring) plus Gaussian noise σ_c; passes when >= 0."""

    sigma: float = field(converter=as_float, validator=validator(positive))
    margin: float = field(default=0.0, converter=as_float, validator=validator(nonnegative))

    def _rho(self) -> float:
        """1/(2σ_c²) rounded down: the session's noise is then at least σ_c."""
        return down_exact(1 / (2 * Fraction(self.sigma) ** 2))

    def passes(
        self, session: Releases, model: Model, params: FloatArray, rows: LabelledRows, target: float
    ) -> bool:
        """Release f with noise σ_c; does it pass?"""
        f = _excess(model, params, rows, target + self.margin)
        released = session.gaussian(np.array([f]), 1.0, self._rho())
        return float(np.asarray(released, dtype=np.float64).reshape(-1)[0]) >= 0.0


def _float_tuple(value: Iterable[float]) -> tuple[float, ...]:
    return tuple(float(v) for v in value)


def _levels(_instance: object, _attribute: object, value: tuple[float, ...]) -> None:
    if not value or any(b <= a for a, b in itertools.pairwise(value)) or value[0] <= 0:
        raise InvalidParameter("levels", value, "must be positive and increasing")


@frozen
class BrownianCheck:
    """Accuracy-first's check (module docstring): Brownian levels s_1 < … < s_K (privacy time,
    noise variance 1/s of f), the stopping rule's ``z`` and the ``margin`` added to the target."""

    levels: tuple[float, ...] = field(converter=_float_tuple, validator=_levels)
    margin: float = field(default=0.0, converter=as_float, validator=validator(nonnegative))
    z: float = field(default=2.0, converter=as_float, validator=validator(positive))

    def decide(
        self,
        session: Releases,
        model: Model,
        params: FloatArray,
        rows: LabelledRows,
        target: float,
        budget: float,
    ) -> tuple[bool, float] | None:
        """Walk the levels that fit ``budget`` (what is left of the check budget) until the sign
        of f is clear; (passed, s_stop), or None when not even s_1 fits."""
        allowed = [s for s in self.levels if s <= budget]
        if not allowed:
            return None
        f = _excess(model, params, rows, target + self.margin)
        z = self.z

        def clear(released: Released) -> bool:
            return bool(abs(float(released.last[0])) >= z * math.sqrt(float(released.times[-1])))

        walk = session.brownian(np.array([f]), 1.0, EpsilonGrid.from_eps2(allowed), clear)
        stop = int(walk.times.size) - 1
        return float(np.asarray(walk.released)[-1, 0]) >= 0.0, allowed[stop]


class Trainer:
    """DP-SGD state for one model on one training set: the iterate and the running average."""

    def __init__(self, model: Model, rows: LabelledRows, config: SGDConfig) -> None:
        self.model, self.rows, self.config = model, rows, config
        self.params: FloatArray = np.zeros(model.size(rows.d))
        self._sum: FloatArray = np.zeros_like(self.params)
        self._count = 0
        self.steps = 0

    def _gradients(self, index: npt.NDArray[np.int64]) -> FloatArray:
        if index.size == 0:
            return np.zeros((0, self.params.size))
        return self.model.gradients(self.params, self.rows.rows(index))

    def run(self, session: Releases, steps: int) -> None:
        """``steps`` DP-SGD steps (module docstring), each one Poisson batch of ``session``."""
        c, n = self.config, self.rows.n
        scale = c.learning_rate / c.expected_batch
        for _ in range(positive_int("steps", steps)):
            batch = session.poisson_batch(n, c.sampling_prob, c.sigma, c.clip)
            noisy = batch.release(self._gradients(batch.indices))
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
