"""Reference mechanisms for checking black-box audits: correct ones at their exact guarantee, and
classic broken ones that an audit must refute (issue 15, point 5).

Each is a callable ``(dataset, rng)`` with ``batch(dataset, n, rng)``; ``claim()`` is the
(eps, delta) it is documented to satisfy. Datasets are sequences of records in [0, 1] (counts and
means, neighbours "add-remove" or "replace-one"), a single bit (randomized response and
`ParityWithRareHalf`, whose rare non-integer output checks that events judge each output alone;
"replace-one") or a vector of sensitivity-1 query answers (sparse vector variants, neighbours
`expost.testing.statdp_pairs`).

Broken ones: `LaplaceCount` with ``noise_eps`` above ``eps`` (noise for a larger eps than
claimed), `LaplaceMean` with ``sensitivity_factor`` < 1 (sensitivity under-estimated), and the
sparse-vector variants of Lyu, Su & Li (2017, Fig. 1): Alg. 5 (Stoddard et al. 2014; noise on
the threshold only, none on the queries) and Alg. 6 (Chen et al. 2015; noisy queries, but
it never halts), both claimed eps-DP and in fact not eps'-DP for any eps'.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import as_float, positive, positive_int, probability, validator
from expost.mechanisms.additive import GaussianMechanism, LaplaceMechanism
from expost.mechanisms.exponential import ExponentialMechanism
from expost.mechanisms.threshold import AboveThreshold

__all__ = [
    "GaussianCount",
    "LaplaceCount",
    "LaplaceMean",
    "ParityWithRareHalf",
    "RandomizedResponse",
    "ReportNoisyChoice",
    "SVTNoHalting",
    "SVTThresholdNoiseOnly",
    "SparseVector",
]

FloatArray = npt.NDArray[np.float64]
Claim = tuple[float, float]


def _one(batch: npt.NDArray[np.generic]) -> object:
    first = batch[0]
    return first.item() if first.ndim == 0 else first


def _answers(x: Sequence[float] | FloatArray) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


@frozen
class LaplaceCount:
    """sum(x) + Lap(1/noise_eps): eps-DP under add-remove when noise_eps <= eps (THEORY §2)."""

    eps: float = field(converter=as_float, validator=validator(positive))
    noise_eps: float = field(converter=as_float, validator=validator(positive))

    def claim(self) -> Claim:
        return (self.eps, 0.0)

    def batch(self, x: Sequence[float], n: int, rng: np.random.Generator) -> FloatArray:
        return LaplaceMechanism(1.0, self.noise_eps).run_batch(float(np.sum(x)), n, rng)

    def __call__(self, x: Sequence[float], rng: np.random.Generator) -> object:
        return _one(self.batch(x, 1, rng))


@frozen
class LaplaceMean:
    """mean(x) + Lap(sensitivity_factor/(len(x)·eps)) for records in [0, 1], replace-one.

    The mean's sensitivity is 1/len(x): eps-DP when sensitivity_factor >= 1; a factor 1/2
    under-estimates the sensitivity twofold and the mechanism is only 2eps-DP.
    """

    eps: float = field(converter=as_float, validator=validator(positive))
    sensitivity_factor: float = field(
        default=1.0, converter=as_float, validator=validator(positive)
    )

    def claim(self) -> Claim:
        return (self.eps, 0.0)

    def batch(self, x: Sequence[float], n: int, rng: np.random.Generator) -> FloatArray:
        mechanism = LaplaceMechanism(self.sensitivity_factor / len(x), self.eps)
        return mechanism.run_batch(float(np.mean(x)), n, rng)

    def __call__(self, x: Sequence[float], rng: np.random.Generator) -> object:
        return _one(self.batch(x, 1, rng))


@frozen
class GaussianCount:
    """sum(x) + N(0, sigma²): (eps, delta(eps))-DP with the exact delta of its loss N(r, 2r),
    r = 1/(2 sigma²) (`expost.loss.GaussianLoss.delta_for_eps`)."""

    eps: float = field(converter=as_float, validator=validator(positive))
    sigma: float = field(converter=as_float, validator=validator(positive))

    def claim(self) -> Claim:
        loss = GaussianMechanism.from_sigma(1.0, self.sigma).loss()
        return (self.eps, loss.delta_for_eps(self.eps))

    def batch(self, x: Sequence[float], n: int, rng: np.random.Generator) -> FloatArray:
        return GaussianMechanism.from_sigma(1.0, self.sigma).run_batch(float(np.sum(x)), n, rng)

    def __call__(self, x: Sequence[float], rng: np.random.Generator) -> object:
        return _one(self.batch(x, 1, rng))


@frozen
class RandomizedResponse:
    """The dataset is one bit b, reported truthfully with probability e^eps/(1 + e^eps): eps-DP."""

    eps: float = field(converter=as_float, validator=validator(positive))

    def claim(self) -> Claim:
        return (self.eps, 0.0)

    def batch(self, x: Sequence[int], n: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
        truth = rng.random(n) < np.exp(self.eps) / (1.0 + np.exp(self.eps))
        return np.where(truth, int(x[0]), 1 - int(x[0])).astype(np.int64)

    def __call__(self, x: Sequence[int], rng: np.random.Generator) -> object:
        return _one(self.batch(x, 1, rng))


@frozen
class ParityWithRareHalf:
    """The dataset is one bit b; y in {0, 1, 2, 3} has parity b with probability
    e^eps/(1 + e^eps), and with probability ``p`` (whatever b) y = 0.5 instead: eps-DP, with a
    rare non-integer among integer outputs."""

    eps: float = field(converter=as_float, validator=validator(positive))
    p: float = field(converter=as_float, validator=validator(probability))

    def claim(self) -> Claim:
        return (self.eps, 0.0)

    def batch(self, x: Sequence[int], n: int, rng: np.random.Generator) -> FloatArray:
        truth = rng.random(n) < np.exp(self.eps) / (1.0 + np.exp(self.eps))
        even = truth if int(x[0]) == 0 else ~truth
        out = (2 * rng.integers(0, 2, n) + np.where(even, 0, 1)).astype(np.float64)
        out[rng.random(n) < self.p] = 0.5
        return out

    def __call__(self, x: Sequence[int], rng: np.random.Generator) -> object:
        return _one(self.batch(x, 1, rng))


@frozen
class ReportNoisyChoice:
    """The exponential mechanism over ``categories`` values, scored by their counts in x.

    Counts move together under add-remove (monotone), so it is eps-DP (THEORY §2).
    """

    eps: float = field(converter=as_float, validator=validator(positive))
    categories: int = field(default=3, validator=validator(positive_int))

    def claim(self) -> Claim:
        return (self.eps, 0.0)

    def batch(self, x: Sequence[int], n: int, rng: np.random.Generator) -> npt.NDArray[np.intp]:
        counts = np.bincount(np.asarray(x, dtype=np.int64), minlength=self.categories)
        return ExponentialMechanism(self.eps, monotone=True).run_batch(counts, n, rng)

    def __call__(self, x: Sequence[int], rng: np.random.Generator) -> object:
        return _one(self.batch(x, 1, rng))


@frozen
class SparseVector:
    """`expost.mechanisms.AboveThreshold` on query answers x: the first index above the
    threshold (−1: none). eps-DP for sensitivity-1 answers (Lyu et al. 2017, Alg. 1, c = 1)."""

    eps: float = field(converter=as_float, validator=validator(positive))
    threshold: float = field(default=1.0, converter=as_float)

    def claim(self) -> Claim:
        return (self.eps, 0.0)

    def batch(self, x: Sequence[float], n: int, rng: np.random.Generator) -> npt.NDArray[np.intp]:
        answers = np.broadcast_to(_answers(x), (n, len(x)))
        return AboveThreshold(self.eps, self.threshold).run_batch(answers, rng)

    def __call__(self, x: Sequence[float], rng: np.random.Generator) -> object:
        return _one(self.batch(x, 1, rng))


@frozen
class SVTThresholdNoiseOnly:
    """Lyu et al. (2017) Alg. 5: threshold noise Lap(2/eps), no query noise, every answer
    reported (above or not). Claimed eps-DP; not eps'-DP for any eps'."""

    eps: float = field(converter=as_float, validator=validator(positive))
    threshold: float = field(default=1.0, converter=as_float)

    def claim(self) -> Claim:
        return (self.eps, 0.0)

    def batch(self, x: Sequence[float], n: int, rng: np.random.Generator) -> npt.NDArray[np.int8]:
        rho = rng.laplace(0.0, 2.0 / self.eps, (n, 1))
        return (_answers(x)[None, :] >= self.threshold + rho).astype(np.int8)

    def __call__(self, x: Sequence[float], rng: np.random.Generator) -> object:
        return _one(self.batch(x, 1, rng))


@frozen
class SVTNoHalting:
    """Lyu et al. (2017) Alg. 6: threshold noise Lap(2/eps), query noise Lap(2/eps), every
    answer reported (it never halts). Claimed eps-DP; its loss grows with the queries."""

    eps: float = field(converter=as_float, validator=validator(positive))
    threshold: float = field(default=1.0, converter=as_float)

    def claim(self) -> Claim:
        return (self.eps, 0.0)

    def batch(self, x: Sequence[float], n: int, rng: np.random.Generator) -> npt.NDArray[np.int8]:
        answers = _answers(x)
        rho = rng.laplace(0.0, 2.0 / self.eps, (n, 1))
        nu = rng.laplace(0.0, 2.0 / self.eps, (n, answers.size))
        return (answers[None, :] + nu >= self.threshold + rho).astype(np.int8)

    def __call__(self, x: Sequence[float], rng: np.random.Generator) -> object:
        return _one(self.batch(x, 1, rng))
