"""Checks of a selection round's inputs: the scores and the candidates mask (the exponential
mechanism, permute-and-flip; docs/session.md, "The input contract")."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from expost._validation import finite_array
from expost.errors import refused

__all__ = ["candidates_mask", "scores_array"]


def scores_array(scores: npt.ArrayLike, *, max_ndim: int) -> npt.NDArray[np.float64]:
    """Finite scores of shape (m,) (``max_ndim`` 1) or also (trials, m) (2), m >= 1."""
    u = finite_array("scores", scores)
    if not 1 <= u.ndim <= max_ndim or u.shape[-1] == 0 or u.size == 0:
        shape = "(m,)" if max_ndim == 1 else "(m,) or (trials, m)"
        raise refused("scores", scores, f"must be a non-empty array of shape {shape}")
    return u


def candidates_mask(
    candidates: npt.ArrayLike | None, shape: tuple[int, ...]
) -> npt.NDArray[np.bool_] | None:
    """The candidates mask broadcast to the scores' shape; every row must allow one candidate."""
    if candidates is None:
        return None
    mask = np.asarray(candidates)
    if mask.dtype != np.bool_:
        raise refused("candidates", candidates, "must be a boolean mask")
    try:
        allowed = np.broadcast_to(mask, shape)
    except ValueError:
        why = f"must broadcast to the scores' shape {shape}"
        raise refused("candidates", candidates, why) from None
    if not np.all(allowed.any(axis=-1)):
        raise refused("candidates", candidates, "must allow at least one candidate")
    return allowed
