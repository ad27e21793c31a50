"""How far post-processing pushes a Brownian transcript's probabilistic ex-post bound (THEORY §11).

A BM with privacy boundary ψ (BNR Thm 3.6) released at T carries ``ExPost(ψ(T), delta)``. An
analyst who coarsens the transcript can only claim, for an output z, ψ's supremum over z's
preimage (ψ(t_k) when z reveals the stopping index k). `bucket_factor` computes, by propagating
the law of the path in privacy time on a fine lattice (no sampling), the probability that the
coarsened output's loss exceeds that carried bound, for the adversary:

- stop at the first grid time t_k where L > ψ(t_k) − ``margin`` (``margin`` = ∞: never stop);
- release z = (k, 1{L >= c_k}) with c_k the lowest cut whose bucket {stopped at k, L >= c_k}
  has loss log P_x(bucket)/P_x'(bucket) > ψ(t_k) (the Gaussian bucket of
  `expost.audit.paper.ex_post_rdp`, within each stopping index; at the last index every run still
  there is in play). P_x'(stopped at k, L ∈ dℓ) = e^(−ℓ)·P_x(...): the BM's loss at T is the
  loss of the whole released path (APC Thm 3), so only the law under x is propagated.

Lattice: X(s) = s·B(1/s) is a standard BM in s = 1/t (THEORY §3), L = Δ·X + Δ²s/2; the density
of X on a uniform lattice is convolved with the N(0, s_(k+1) − s_k) kernel step by step and the
mass above the stopping level is removed. The spacing is a fifth of the smallest step's sd.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from expost.audit._shared import grid_times, tuned_boundary

__all__ = [
    "MARGINS",
    "STRIDES",
    "bucket_factor",
    "fixed_time_factor",
    "worst_bucket_factor",
]

FloatArray = npt.NDArray[np.float64]


def _kernel(variance: float, h: float) -> FloatArray:
    width = math.ceil(8.0 * math.sqrt(variance) / h)
    x = h * np.arange(-width, width + 1)
    k: FloatArray = np.exp(-(x**2) / (2.0 * variance))
    out: FloatArray = k / k.sum()
    return out


def _bucket(mass: FloatArray, loss: FloatArray, level: float) -> float:
    """The largest P_x mass of a top bucket {L >= c} whose loss exceeds ``level``."""
    if mass.sum() <= 0.0:
        return 0.0
    top_p = np.cumsum(mass[::-1])
    with np.errstate(over="ignore", under="ignore"):
        top_q = np.cumsum((mass * np.exp(-loss))[::-1])
    ok = (top_p > 0.0) & (
        np.log(np.maximum(top_p, 1e-300)) - np.log(np.maximum(top_q, 1e-300)) > level
    )
    return float(top_p[np.nonzero(ok)[0].max()]) if np.any(ok) else 0.0


def bucket_factor(
    kind: str, delta: float, margin: float, stride: int = 1, sensitivity: float = 1.0
) -> float:
    """P(coarsened output's loss > its carried bound)/delta for the adversary of the module
    docstring, the ``kind`` (mixture or linear) boundary tuned for E = 1 at ``delta`` and the
    audits' 120-point grid (`expost.audit._shared.grid_times`); the rule looks only at every
    ``stride``-th iterate (and the last), so its overshoot past the level is larger."""
    psi = tuned_boundary(kind, sensitivity, delta)
    times = grid_times(psi)
    s = 1.0 / times
    d = sensitivity
    steps = np.diff(s)
    h = math.sqrt(float(min(s[0], steps.min()))) / 5.0
    half = 9.0 * math.sqrt(float(s[-1]))
    x = np.arange(-half, half + h, h)
    density = np.exp(-(x**2) / (2.0 * s[0]))
    density *= 1.0 / density.sum()
    levels = np.asarray(psi(times))
    total = 0.0
    for k in range(times.size):
        loss = d * x + d * d * s[k] / 2.0
        last = k == times.size - 1
        if last:
            stop = np.ones_like(x, dtype=bool)
        elif k % stride:
            stop = np.zeros_like(x, dtype=bool)
        else:
            stop = loss > levels[k] - margin  # margin = inf: a fixed stop at index 0
        if np.any(stop):
            total += _bucket(np.where(stop, density, 0.0), loss, float(levels[k]))
        if last:
            break
        density = np.where(stop, 0.0, density)
        density = np.convolve(density, _kernel(float(steps[k]), h), mode="same")
    return total / delta


MARGINS = (-0.5, 0.0, 0.1, 0.25, 0.5, 1.0)
STRIDES = (1, 4, 10, 30, 119)


def fixed_time_factor(kind: str, delta: float, sensitivity: float = 1.0) -> tuple[float, float]:
    """(factor, t): the largest P(bucket's loss > ψ(t))/delta over the grid's fixed stop times t,
    for the Gaussian bucket {L >= c} at t (one release, variance t; exact normal tails, scipy)."""
    from scipy import optimize, special  # lazy: keeps the `expost` command fast

    psi = tuned_boundary(kind, sensitivity, delta)
    best = (0.0, 0.0)
    for t in grid_times(psi):
        r = sensitivity / math.sqrt(t)  # the loss is r·Z + r²/2, Z ~ N(0, 1) under x
        level = float(psi(float(t)))

        def excess(c: float, r: float = r, level: float = level) -> float:
            return float(special.log_ndtr(-c) - special.log_ndtr(-c - r)) - level

        lo = (level - r * r / 2.0) / r - 40.0
        cut = optimize.brentq(excess, lo, lo + 80.0) if excess(lo) < 0.0 else lo
        best = max(best, (float(special.ndtr(-cut)) / delta, float(t)))
    return best


def worst_bucket_factor(
    kind: str,
    delta: float,
    margins: tuple[float, ...] = MARGINS,
    strides: tuple[int, ...] = STRIDES,
) -> tuple[float, float, int]:
    """(factor, margin, stride) of the largest `bucket_factor` over ``margins`` × ``strides``."""
    return max((bucket_factor(kind, delta, m, k), m, k) for m in margins for k in strides)
