"""Shared pieces of the paper audits: run counts, neighbouring values and exact losses.

The exact privacy loss of a release y with density p_x is ``L = log p_x(y)/p_x'(y)`` (APC
Def 2.2); the audits compute it from the released value and the neighbouring values f(x),
f(x'), never from the mechanism's own loss formulas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from expost.audit.registry import QUICK

if TYPE_CHECKING:
    from expost.backends import Draws

__all__ = ["gaussian_loss", "gaussian_loss_on", "laplace_loss", "neighbours", "runs"]

FloatArray = npt.NDArray[np.float64]

# f(x) away from the origin and f(x') − f(x) along a direction that uses every coordinate.
_ORIGIN = np.array([0.3, -1.2, 2.0])
_DIRECTION = np.array([2.0, -1.0, 2.0]) / 3.0


def runs(suite: str, quick: int, paper: int) -> int:
    """The number of runs of an audit in ``suite``."""
    return quick if suite == QUICK else paper


def neighbours(distance: float, d: int, norm: int = 2) -> tuple[FloatArray, FloatArray]:
    """(f(x), f(x')) in R^d at ℓ_norm distance ``distance`` (norm 1 or 2)."""
    direction = _DIRECTION[:d] if d > 1 else np.ones(1)
    direction = direction / np.linalg.norm(direction, ord=norm)
    fx = _ORIGIN[:d].copy()
    return fx, fx + distance * direction


def gaussian_loss(
    y: FloatArray, variance: FloatArray | float, fx: FloatArray, fxp: FloatArray
) -> FloatArray:
    """``(‖y − f(x')‖² − ‖y − f(x)‖²)/(2·variance)``: the loss of y ~ N(f(x), variance·I).

    ``y`` has the coordinates on its last axis; ``variance`` broadcasts to ``y.shape[:-1]``.
    For a Brownian mechanism stopped at time t (variance t) it is the loss of the whole
    released sequence (APC Thm 3).
    """
    # ‖y − f(x')‖² − ‖y − f(x)‖² = 2⟨y, f(x) − f(x')⟩ + ‖f(x')‖² − ‖f(x)‖²: one matrix product.
    gap = y @ (2.0 * (fx - fxp)) + (fxp @ fxp - fx @ fx)
    loss: FloatArray = gap / (2.0 * np.asarray(variance))
    return loss


def gaussian_loss_on(y: Any, variance: Any, fx: FloatArray, fxp: FloatArray, draws: Draws) -> Any:
    """`gaussian_loss` of a backend array ``y`` (`expost.backends`), computed on its device."""
    gap = y @ draws.asarray(2.0 * (fx - fxp)) + float(fxp @ fxp - fx @ fx)
    return gap / (2.0 * variance)


def laplace_loss(
    y: FloatArray, scale: FloatArray | float, fx: FloatArray, fxp: FloatArray
) -> FloatArray:
    """``(‖y − f(x')‖₁ − ‖y − f(x)‖₁)/scale``: the loss of y ~ f(x) + Lap(scale) per coordinate."""
    gap = np.sum(np.abs(y - fxp), axis=-1) - np.sum(np.abs(y - fx), axis=-1)
    loss: FloatArray = gap / np.asarray(scale)
    return loss
