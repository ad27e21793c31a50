"""Audit: ex-post RDP of accuracy-first DP-SGD at its own data-dependent stop (THEORY §11, §12).

``dp-sgd/accuracy-first/alpha-<α>``: the learner's loop (`expost.apps.learning.methods.
train_until`, its trainer, count check and stopping rule, unchanged) runs on a tiny logistic
regression with neighbours x = x' ∪ {z}: z is a training row (its gradient is clipped to C) and
a validation row that every model classifies correctly (features 0, label 0: the count moves by
exactly 1, the worst case). The releases are drawn from their law under x by `_LossRelease`,
which also adds up the privacy loss of each round. For a step the loss is that of the mechanism
that also reveals which *other* rows were sampled (the release is a post-processing of it, and
ex-post RDP is immune to post-processing, THEORY §11): with s = σC, g = z's clipped gradient and
Z = Y − Σ(other sampled rows) = 1{z sampled}·g + N(0, s²I), the loss is
log(1 − q + q·exp((⟨Z, g⟩ − ‖g‖²/2)/s²)). A check releasing c + N(0, σ_c²) with c − c' = 1 has
loss ((R − c')² − (R − c)²)/(2σ_c²). The claim (EValueClaim) is

    E[exp((α−1)(L_τ − Σ_(j<=τ) ε_α,j))] <= 1,

ε_α,j = `Unit.rdp` (the step's exact subsampled-Gaussian RDP, Mironov, Talwar & Zhang 2019, plus
α/(2σ_c²)), τ the unit at which the learner's check passed. Twin: the bound halved.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import numpy.typing as npt

from expost.apps.learning.accounting import Unit
from expost.apps.learning.data import LabelledRows
from expost.apps.learning.methods import train_until
from expost.apps.learning.models import LogisticRegression
from expost.apps.learning.sgd import CountCheck, SGDConfig, Trainer
from expost.audit.claims import EValueClaim
from expost.audit.core import Audit, Twin
from expost.audit.registry import PAPER, register

__all__ = ["ALPHAS", "SCHEDULE", "dp_sgd_audits", "dp_sgd_rdp_samples"]

FloatArray = npt.NDArray[np.float64]

ALPHAS = (2.0, 3.0)
SIGMA, RATE, CLIP, CHECK_SIGMA, TARGET = 2.0, 0.5, 1.0, 1.5, 0.75
SCHEDULE = tuple(Unit(3, SIGMA, RATE, CHECK_SIGMA) for _ in range(4))
"""Four units of three steps (q = 0.5, σ = 2), each followed by a count check (σ_c = 1.5)."""

_TRAIN = LabelledRows(
    np.array([[1.0, 0.2], [0.8, -0.3], [-0.9, 0.1], [-1.0, -0.4], [0.3, 1.0], [40.0, -30.0]]),
    np.array([1, 1, 0, 0, 1, 0]),
    2,
)  # the last row is z: its gradient has norm far above C, so the release clips it
_VALIDATION = LabelledRows(
    np.array([[0.9, 0.0], [-0.8, 0.2], [0.5, 0.5], [-0.3, -0.9], [0.0, 0.0]]),
    np.array([1, 0, 1, 0, 0]),
    2,
)  # the last row is z: features 0, label 0, always classified correctly (predict: wᵀx > 0)


class _LossRelease:
    """Draws each release from its law under x and adds up the privacy loss (module doc)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.loss = 0.0

    def subsampled_gaussian(
        self, records: npt.ArrayLike, sensitivity: float, sigma: float, sampling_prob: float
    ) -> FloatArray:
        rows = np.asarray(records, dtype=np.float64)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        clipped = rows * np.minimum(1.0, sensitivity / np.maximum(norms, 1e-300))
        keep: npt.NDArray[np.bool_] = np.asarray(self.rng.random(rows.shape[0]) < sampling_prob)
        noise = self.rng.normal(0.0, sigma * sensitivity, rows.shape[1])
        g, s2 = clipped[-1], (sigma * sensitivity) ** 2
        z = float(keep[-1]) * g + noise
        tilt = (float(z @ g) - 0.5 * float(g @ g)) / s2
        self.loss += float(np.logaddexp(math.log1p(-sampling_prob), math.log(sampling_prob) + tilt))
        out: FloatArray = keep.astype(np.float64) @ clipped + noise
        return out

    def gaussian(self, value: npt.ArrayLike, sensitivity: float, rho: float) -> FloatArray:
        c = np.asarray(value, dtype=np.float64)
        sd = sensitivity / math.sqrt(2.0 * rho)
        released: FloatArray = c + self.rng.normal(0.0, sd, c.shape)
        r, without = float(released[0]), float(c[0]) - 1.0  # c' = c − 1: z is counted
        self.loss += ((r - without) ** 2 - (r - float(c[0])) ** 2) / (2.0 * sd**2)
        return released


def _bounds(alpha: float) -> FloatArray:
    """Σ_(j<=k) ε_α,j for k = 1..4 (the library's `Unit.rdp`)."""
    return np.cumsum([u.rdp(int(alpha)) for u in SCHEDULE])


def dp_sgd_rdp_samples(alpha: float, halved: bool, n: int, rng: np.random.Generator) -> FloatArray:
    """n runs of exp((α−1)(L_τ − ε_α(τ))) of the learner's own loop (module docstring); the
    twin (``halved``) claims half the bound."""
    bounds = _bounds(alpha) / (2.0 if halved else 1.0)
    check = CountCheck(CHECK_SIGMA)
    out = np.empty(n)
    for i in range(n):
        release = _LossRelease(rng)
        trainer = Trainer(LogisticRegression(), _TRAIN, SGDConfig(CLIP, SIGMA, RATE, 1.0))
        done, _, _ = train_until(trainer, SCHEDULE, check, release, _VALIDATION, TARGET)
        out[i] = math.exp((alpha - 1.0) * (release.loss - bounds[done - 1]))
    return out


def _audit(alpha: float, n: int) -> Audit:
    name = f"dp-sgd/accuracy-first/alpha-{alpha:g}"
    return Audit(
        name=name,
        source="THEORY §11 (ex-post RDP at a stopping time), §12 (subsampled Gaussian RDP)",
        statement=(
            "accuracy-first DP-SGD's own loop (4 units of 3 steps, q = 0.5, σ = 2, C = 1, count "
            f"check σ_c = 1.5, target {TARGET}): E[exp((α−1)(L − Σ ε_α,j))] <= 1 at α = {alpha:g}"
        ),
        claim=EValueClaim(1.0),
        simulate=partial(dp_sgd_rdp_samples, alpha, False),
        n=n,
        twin=Twin(
            f"{name}/bound-halved", EValueClaim(1.0), partial(dp_sgd_rdp_samples, alpha, True)
        ),
        chunk_size=5_000,
    )


@register(PAPER)
def dp_sgd_audits(suite: str) -> list[Audit]:
    """The learner's ex-post RDP at its stop, α in `ALPHAS` (20,000 runs each)."""
    del suite
    return [_audit(a, 20_000) for a in ALPHAS]
