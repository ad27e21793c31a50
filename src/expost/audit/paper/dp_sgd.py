"""Audit: ex-post RDP of accuracy-first DP-SGD at its own data-dependent stop (THEORY §11, §12).

``dp-sgd/accuracy-first/alpha-<α>``: the learner's loop (`expost.apps.learning.methods.
train_until`, its trainer, Brownian check, check budget and stopping rule, unchanged) runs on a
tiny logistic regression with neighbours x = x' ∪ {z}: z is a training row (its gradient is
clipped to C) and a validation row that no model classifies correctly (features 0, label 1), so
the checked statistic f = correct − a·n moves by D = −a (a = 0.75: three quarters of the
worst case). The releases are drawn from their
law under x by `LossRelease`, which also adds up the privacy loss of each round. For a step the
loss is that of the mechanism that also reveals which *other* rows were sampled (the release is
a post-processing of it): with s = σC, g = z's clipped gradient and Z = 1{z sampled}·g +
N(0, s²I), the loss is log(1 − q + q·exp((⟨Z, g⟩ − ‖g‖²/2)/s²)). A Brownian check stopped at
privacy time s_stop has the loss of its last iterate y (noise variance t = 1/s_stop; APC Lemma
4.1): ((y − f')² − (y − f)²)/(2t). The claim (EValueClaim) is

    E[exp((α−1)(L_τ − Σ_(j<=τ) ε_α,j − α·S/2))] <= 1,

ε_α,j = `Unit.rdp` (the steps' exact subsampled-Gaussian RDP, Mironov, Talwar & Zhang 2019), S
the checks' summed privacy time (ex-post RDP α·s/2 of a Brownian walk, THEORY §11), τ the unit
at which the learner stopped. Twin: the checks' α·S/2 forgotten.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from expost.apps.learning.accounting import Unit
from expost.apps.learning.data import LabelledRows
from expost.apps.learning.methods import train_until
from expost.apps.learning.models import LogisticRegression
from expost.apps.learning.sgd import BrownianCheck, SGDConfig, Trainer
from expost.audit.claims import EValueClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, register
from expost.grids import EpsilonGrid
from expost.mechanisms.transcript import Transcript
from expost.stopping import Released

__all__ = [
    "ALPHAS",
    "CHECK",
    "CHECK_BUDGET",
    "SCHEDULE",
    "LossRelease",
    "dp_sgd_rdp_samples",
    "dp_sgd_run",
]

FloatArray = npt.NDArray[np.float64]

ALPHAS = (2.0, 3.0)
SIGMA, RATE, CLIP, TARGET = 2.0, 0.5, 1.0, 0.75
SCHEDULE = tuple(Unit(3, SIGMA, RATE) for _ in range(4))
"""Four units of three steps (q = 0.5, σ = 2), each followed by a Brownian check."""
CHECK = BrownianCheck((0.1, 0.4, 1.6), margin=0.0)
"""The check: privacy times 0.1, 0.4, 1.6 (noise 3.2, 1.6, 0.8 on f), stopped at 2 deviations."""
CHECK_BUDGET = 3.2
"""The check budget: two checks walked to the finest level."""

TRAIN = LabelledRows(
    np.array([[1.0, 0.2], [0.8, -0.3], [-0.9, 0.1], [-1.0, -0.4], [0.3, 1.0], [40.0, -30.0]]),
    np.array([1, 1, 0, 0, 1, 0]),
    2,
)  # the last row is z: its gradient has norm far above C, so the release clips it
VALIDATION = LabelledRows(
    np.array([[0.9, 0.0], [-0.8, 0.2], [0.5, 0.5], [-0.3, -0.9], [0.0, 0.0]]),
    np.array([1, 0, 1, 0, 1]),
    2,
)  # the last row is z: features 0, label 1, never classified correctly (predict: wᵀx > 0)
_SHIFT = -TARGET  # f(x) − f(x') with z counted wrong (margin 0): D = −a


def _clip(rows: FloatArray, c: float) -> FloatArray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: FloatArray = rows * np.minimum(1.0, c / np.maximum(norms, 1e-300))
    return out


class _Batch:
    """One step's batch under x; its release adds the step's loss to ``owner.loss``."""

    def __init__(
        self, owner: LossRelease, keep: npt.NDArray[np.bool_], q: float, s: float, c: float
    ):
        self.owner, self.keep, self.q, self.s, self.c = owner, keep, q, s, c
        self.indices = np.flatnonzero(keep).astype(np.int64)
        self.g = _clip(owner.z_gradient(), c)[0]  # z's clipped gradient at the current model

    def release(self, rows: Any) -> FloatArray:
        x = np.asarray(rows, dtype=np.float64)
        noise = self.owner.rng.normal(0.0, self.s, self.g.size)
        z = float(self.keep[-1]) * self.g + noise
        tilt = (float(z @ self.g) - 0.5 * float(self.g @ self.g)) / self.s**2
        self.owner.loss += float(np.logaddexp(math.log1p(-self.q), math.log(self.q) + tilt))
        out: FloatArray = _clip(x, self.c).sum(axis=0) + noise if x.size else noise
        return out


class LossRelease:
    """Draws each release from its law under x and adds up the privacy loss (module doc).

    ``z_gradient`` returns z's gradient (1, size) at the current model (set by `dp_sgd_run`)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.loss = 0.0
        self.z_gradient: Any = None

    def poisson_batch(
        self, n: int, sampling_prob: float, sigma: float, sensitivity: float
    ) -> _Batch:
        keep: npt.NDArray[np.bool_] = np.asarray(self.rng.random(n) < sampling_prob)
        return _Batch(self, keep, sampling_prob, sigma * sensitivity, sensitivity)

    def gaussian(self, value: npt.ArrayLike, sensitivity: float, rho: float) -> FloatArray:
        raise TypeError(
            "the audited learner checks with brownian only; a Gaussian check is not simulated"
        )

    def brownian(
        self, value: npt.ArrayLike, sensitivity: float, grid: EpsilonGrid, stop: Any
    ) -> Transcript:
        """The walk in privacy time (THEORY §3): X(s) a Brownian motion, iterate f + X(s)/s."""
        f = float(np.asarray(value, dtype=np.float64).reshape(-1)[0])
        levels = np.asarray(grid.eps2, dtype=np.float64)
        steps = self.rng.normal(0.0, np.sqrt(np.diff(levels, prepend=0.0)))
        iterates = f + np.cumsum(steps) / levels
        k = 0
        while k < levels.size - 1 and not stop(
            Released(iterates[: k + 1, None], 1.0 / levels[: k + 1], sensitivity)
        ):
            k += 1
        y, t = float(iterates[k]), 1.0 / float(levels[k])
        self.loss += ((y - (f - _SHIFT)) ** 2 - (y - f) ** 2) / (2.0 * t)
        return Transcript(
            iterates[: k + 1, None],
            1.0 / levels[: k + 1],
            np.sqrt(levels[: k + 1]),
            True,
            None,
            None,
        )


def dp_sgd_run(rng: np.random.Generator) -> tuple[float, int, float]:
    """One run of the learner's own loop under x: (privacy loss L, units run, check time S)."""
    release = LossRelease(rng)
    model = LogisticRegression()
    trainer = Trainer(model, TRAIN, SGDConfig(CLIP, SIGMA, RATE, 1.0, RATE * TRAIN.n))
    z_row = TRAIN.rows(np.array([TRAIN.n - 1]))
    release.z_gradient = lambda: model.gradients(trainer.params, z_row)
    done, _, _, _, spent = train_until(
        trainer, SCHEDULE, CHECK, release, VALIDATION, TARGET, CHECK_BUDGET
    )
    return release.loss, done, spent


def _bounds(alpha: float) -> FloatArray:
    """Σ_(j<=k) ε_α,j for k = 1..4 (the library's `Unit.rdp`)."""
    return np.cumsum([u.rdp(int(alpha)) for u in SCHEDULE])


def dp_sgd_rdp_samples(
    alpha: float, forget_checks: bool, n: int, rng: np.random.Generator
) -> FloatArray:
    """n runs of exp((α−1)(L_τ − ε_α(τ) − α·S/2)) of the learner's own loop (module docstring);
    the twin (``forget_checks``) leaves out the checks' α·S/2."""
    bounds = _bounds(alpha)
    out = np.empty(n)
    for i in range(n):
        loss, done, spent = dp_sgd_run(rng)
        bound = bounds[done - 1] + (0.0 if forget_checks else alpha * spent / 2.0)
        out[i] = math.exp((alpha - 1.0) * (loss - bound))
    return out


def _audit(alpha: float, n: int) -> Audit:
    name = f"dp-sgd/accuracy-first/alpha-{alpha:g}"
    return Audit(
        name=name,
        source="THEORY §11 (ex-post RDP at a stopping time), §12 (subsampled Gaussian RDP)",
        statement=(
            "accuracy-first DP-SGD's own loop (4 units of 3 steps, q = 0.5, σ = 2, C = 1, "
            f"Brownian checks on a budget, target {TARGET}): E[exp((α−1)(L − Σ ε_α,j − α·S/2))] "
            f"<= 1 at α = {alpha:g}"
        ),
        claim=EValueClaim(1.0),
        simulate=partial(dp_sgd_rdp_samples, alpha, False),
        n=n,
        twin=Twin(
            f"{name}/checks-forgotten",
            EValueClaim(1.0),
            partial(dp_sgd_rdp_samples, alpha, True),
        ),
        chunk_size=5_000,
    )


@register(PAPER)
def dp_sgd_audits(suite: str) -> list[Audit]:
    """The learner's ex-post RDP at its stop, α in `ALPHAS` (5,000 runs each)."""
    del suite
    return [_audit(a, 5_000) for a in ALPHAS]
