"""The ERM tasks of BNR Sec. 6 (THEORY §7): released statistics, sensitivities, losses.

Logistic regression by output perturbation (Chaudhuri et al. 2011) and ridge regression by
covariance perturbation (Smith et al. 2017); models are projected onto a ball that holds the
non-private minimiser, which bounds every released model's loss.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import finite_array, positive
from expost.apps.data import (
    ERMData,
)
from expost.errors import InvalidParameter

__all__ = [
    "CELLS",
    "LAMBDA",
    "TARGETS",
    "ERMTask",
    "LogisticRegression",
    "RidgeRegression",
    "blocks",
    "logistic_minimiser",
    "make_task",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

LAMBDA = 0.05
TARGETS = {"logistic": 0.41, "ridge": 0.025, "breast_cancer": 0.45, "diabetes": 0.045}
"""Loss targets: BNR's for the paper's tasks (synthetic data), ours for the bundled data sets
(their non-private losses, 0.417 and 0.034, lie above BNR's targets)."""
CELLS = 4_000_000  # floats per temporary array (32 MB): bounds memory whatever n, d, runs


def _project(models: FloatArray, radius: float) -> FloatArray:
    norms = np.linalg.norm(models, axis=-1, keepdims=True)
    out: FloatArray = models * np.minimum(1.0, radius / np.maximum(norms, 1e-300))
    return out


def blocks(total: int, width: int) -> Iterator[slice]:
    for start in range(0, total, width):
        yield slice(start, min(start + width, total))


class ERMTask(ABC):
    """A private ERM task: a released statistic f(x), its sensitivities, and the loss of the
    model post-processed from any (noisy) statistic."""

    __slots__ = ()

    name: str
    data: ERMData
    lam: float

    @property
    @abstractmethod
    def value(self) -> FloatArray:
        """The statistic released with noise, f(x)."""

    @property
    @abstractmethod
    def l2_sensitivity(self) -> float:
        """Δ2 of f under replacing one row."""

    @property
    @abstractmethod
    def l1_sensitivity(self) -> float:
        """Δ1 of f under replacing one row."""

    @property
    @abstractmethod
    def radius(self) -> float:
        """R: models are projected onto ‖β‖ <= R, a ball containing the minimiser."""

    @property
    @abstractmethod
    def loss_range(self) -> float:
        """r: the unregularised loss of one row under any model in the ball lies in an interval
        of length r, so a mean over n rows has sensitivity r/n."""

    @property
    def utility_sensitivity(self) -> float:
        """Sensitivity of the training loss of any model in the ball (the accuracy check's)."""
        return self.loss_range / self.data.n

    @abstractmethod
    def models(self, released: npt.ArrayLike) -> FloatArray:
        """The models (..., d) post-processed from released statistics (..., m)."""

    @abstractmethod
    def loss_on(self, data: ERMData, models: npt.ArrayLike) -> FloatArray:
        """The regularised loss of models (..., d) on ``data`` (a validation set), shape (...)."""

    def model_loss(self, models: npt.ArrayLike) -> FloatArray:
        """The regularised training loss L(β) of models (..., d), shape (...)."""
        return self.loss_on(self.data, models)

    def loss(self, released: npt.ArrayLike) -> FloatArray:
        """The training loss of the model of each released statistic (..., m) -> (...)."""
        return self.model_loss(self.models(released))


def _checked_models(models: npt.ArrayLike, d: int) -> FloatArray:
    b = finite_array("models", models)
    if b.ndim < 1 or b.shape[-1] != d:
        raise InvalidParameter("models", b.shape, f"must have shape (..., {d})")
    return b


def _checked_released(released: npt.ArrayLike, m: int) -> FloatArray:
    r = finite_array("released", released)
    if r.ndim < 1 or r.shape[-1] != m:
        raise InvalidParameter("released", r.shape, f"must have shape (..., {m})")
    return r


def _same_shape(data: ERMData, own: ERMData) -> ERMData:
    if not isinstance(data, ERMData) or data.kind != own.kind or data.d != own.d:
        raise InvalidParameter("data", data, f"must be {own.kind} ERMData with d = {own.d}")
    return data


def _kind(kind: str, data: ERMData) -> ERMData:
    if not isinstance(data, ERMData) or data.kind != kind:
        raise InvalidParameter("data", data, f"must be ERMData of kind {kind!r}")
    return data


def _logistic_objective(
    beta: FloatArray, x: FloatArray, y: FloatArray, lam: float
) -> tuple[float, FloatArray]:
    from scipy.special import expit  # lazy: keeps the `expost` command fast

    margins = y * (x @ beta)
    value = float(np.logaddexp(0.0, -margins).mean()) + 0.5 * lam * float(beta @ beta)
    gradient: FloatArray = -(x.T @ (y * expit(-margins))) / y.size + lam * beta
    return value, gradient


def logistic_minimiser(data: ERMData, lam: float = LAMBDA) -> FloatArray:
    """argmin of the regularised logistic loss by scipy's L-BFGS-B (strictly convex, unique)."""
    from scipy.optimize import minimize  # lazy: keeps the `expost` command fast

    x, y = data.features, data.targets
    result = minimize(
        _logistic_objective,
        np.zeros(data.d),
        args=(x, y, positive("lam", lam)),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-11, "ftol": 0.0, "maxiter": 10_000},
    )
    beta: FloatArray = np.asarray(result.x, dtype=np.float64)
    return beta


@frozen(init=False)
class LogisticRegression(ERMTask):
    """Regularised logistic regression released by output perturbation (BNR Sec. 6).

    f(x) = β* = argmin L; Δ2 = 2/(nλ), Δ1 = 2√d/(nλ) (Chaudhuri et al. 2011, BNR Sec. 6).
    """

    data: ERMData
    lam: float
    minimiser: FloatArray = field(eq=False)
    name: str = "logistic"

    def __init__(self, data: ERMData, lam: float = LAMBDA) -> None:
        d = _kind("classification", data)
        lam_ = positive("lam", lam)
        beta = logistic_minimiser(d, lam_)
        beta.flags.writeable = False
        self.__attrs_init__(d, lam_, beta)

    @property
    def value(self) -> FloatArray:
        """β*, the non-private minimiser."""
        return self.minimiser

    @property
    def l2_sensitivity(self) -> float:
        """2/(nλ)."""
        return 2.0 / (self.data.n * self.lam)

    @property
    def l1_sensitivity(self) -> float:
        """2√d/(nλ)."""
        return math.sqrt(self.data.d) * self.l2_sensitivity

    @property
    def radius(self) -> float:
        """sqrt(2 log 2/λ): λ‖β*‖²/2 <= L(0) = log 2."""
        return math.sqrt(2.0 * math.log(2.0) / self.lam)

    @property
    def loss_range(self) -> float:
        """R: on the ball, log(1 + e^(−z)) for |z| <= R ranges over an interval of length R."""
        return self.radius

    def models(self, released: npt.ArrayLike) -> FloatArray:
        """The released β, projected onto the ball."""
        return _project(_checked_released(released, self.data.d), self.radius)

    def loss_on(self, data: ERMData, models: npt.ArrayLike) -> FloatArray:
        """Mean log(1 + exp(−yβᵀx)) + λ‖β‖²/2 on ``data``, in blocks of models (vectorised).

        Inside the ball |yβᵀx| <= R, so exp cannot overflow; outside it the loss is computed
        through logaddexp.
        """
        data = _same_shape(data, self.data)
        b = _checked_models(models, self.data.d)
        flat = b.reshape(-1, self.data.d)
        signed = data.features * data.targets[:, None]
        out = np.empty(flat.shape[0])
        safe = bool(np.all(np.linalg.norm(flat, axis=1) <= self.radius * (1.0 + 1e-9)))
        for block in blocks(flat.shape[0], max(1, CELLS // data.n)):
            margins = signed @ flat[block].T
            if safe:
                np.negative(margins, out=margins)
                np.exp(margins, out=margins)
                np.log1p(margins, out=margins)
            else:
                margins = np.logaddexp(0.0, -margins)
            out[block] = margins.mean(axis=0)
        out += 0.5 * self.lam * np.einsum("md,md->m", flat, flat)
        return out.reshape(b.shape[:-1])


@frozen(init=False)
class RidgeRegression(ERMTask):
    """Ridge regression released by covariance perturbation (BNR Sec. 6, Smith et al. 2017).

    f(x) = (upper triangle of XᵀX, Xᵀy) with rows (x, y) of norm <= 1: one row contributes a
    vector of norm <= ‖x‖·sqrt(‖x‖² + y²) <= 1, so Δ2 = 2.0; ℓ1: ‖x‖1² <= d and ‖x‖1·|y| <= √d,
    so Δ1 = 2.0d + 2.0√d (BNR Sec. 6). The model solves the symmetrised perturbed system
    (Ã + nλI)β = b̃ (a.s. non-singular) and is projected onto the ball.
    """

    data: ERMData
    lam: float
    statistic: FloatArray = field(eq=False)
    gram: FloatArray = field(eq=False)
    name: str = "ridge"

    def __init__(self, data: ERMData, lam: float = LAMBDA) -> None:
        d = _kind("regression", data)
        lam_ = positive("lam", lam)
        x, y = d.features, d.targets
        gram = x.T @ x
        upper = np.triu_indices(d.d)
        statistic = np.concatenate([gram[upper], x.T @ y])
        statistic.flags.writeable = False
        gram.flags.writeable = False
        self.__attrs_init__(d, lam_, statistic, gram)

    @property
    def value(self) -> FloatArray:
        """(upper(XᵀX), Xᵀy)."""
        return self.statistic

    @property
    def l2_sensitivity(self) -> float:
        """2.0."""
        return 2.0

    @property
    def l1_sensitivity(self) -> float:
        """2.0d + 2.0√d."""
        return 2.0 * self.data.d + 2.0 * math.sqrt(self.data.d)

    @property
    def radius(self) -> float:
        """1/sqrt(λ): λ‖β*‖²/2 <= L(0) = mean(y²)/2 <= 1/2."""
        return 1.0 / math.sqrt(self.lam)

    @property
    def loss_range(self) -> float:
        """(R² + 1)/2: 0 <= (βᵀx − y)²/2 <= (‖β‖² + 1)(‖x‖² + y²)/2 (Cauchy–Schwarz)."""
        return (self.radius**2 + 1.0) / 2.0

    def models(self, released: npt.ArrayLike) -> FloatArray:
        """Solve (sym(Ã) + nλI)β = b̃ for each released statistic, then project onto the ball."""
        d, n = self.data.d, self.data.n
        r = _checked_released(released, self.statistic.size)
        flat = r.reshape(-1, r.shape[-1])
        i, j = np.triu_indices(d)
        where = np.empty((d, d), dtype=np.intp)  # position of entry (i, j) in the upper triangle
        where[i, j] = where[j, i] = np.arange(i.size)
        ridge = n * self.lam * np.eye(d)
        out = np.empty((flat.shape[0], d))
        for block in blocks(flat.shape[0], max(1, CELLS // (d * d))):
            a = flat[block][:, where] + ridge
            out[block] = np.linalg.solve(a, flat[block, i.size :, None])[..., 0]
        return _project(out, self.radius).reshape(*r.shape[:-1], d)

    def loss_on(self, data: ERMData, models: npt.ArrayLike) -> FloatArray:
        """(βᵀXᵀXβ − 2βᵀXᵀy + yᵀy)/(2n) + λ‖β‖²/2 from the exact statistics of ``data``."""
        data = _same_shape(data, self.data)
        b = _checked_models(models, self.data.d)
        x, y = data.features, data.targets
        gram = self.gram if data is self.data else x.T @ x
        quadratic = np.einsum("...i,ij,...j->...", b, gram, b)
        fit = (quadratic - 2.0 * b @ (x.T @ y) + float(y @ y)) / (2.0 * data.n)
        result: FloatArray = fit + 0.5 * self.lam * np.einsum("...i,...i->...", b, b)
        return result


def make_task(data: ERMData, lam: float = LAMBDA) -> ERMTask:
    """The task of a data set's kind: logistic for classification, ridge for regression."""
    if data.kind == "classification":
        return LogisticRegression(data, lam)
    return RidgeRegression(data, lam)
