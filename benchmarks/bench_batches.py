"""Per-step time of DP-SGD at the cost of the batch: independent of n at fixed q·n (issue 42).

A logistic-regression step on n = 10⁵ and 10⁶ rows of 100 features, q·n = 256 expected rows:
``session.poisson_batch`` draws the private indices (O(q·n) skips), the step computes the
per-example gradients of those rows only, ``batch.release`` clips, sums and adds the noise.
Timed as the median over ``--steps`` steps per n, with the ratio n = 10⁶ / n = 10⁵ (1 means
independent of n). Baseline in the same run: ``session.subsampled_gaussian``, which takes the
gradients of every row (at n = 10⁵ only: 10⁶ × 100 entries is above its `MAX_ENTRIES`), and
its ratio to the batch step. The session runs on a `ZCDPFilter` with a large budget, so the
accounting is O(1) a step for both.

Run: ``python benchmarks/bench_batches.py [--steps N] [--torch DEVICE]`` (``--torch cuda``:
rows and gradients as torch tensors on that device; benchmarks/gpu_batch_check.py runs it).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from timing import median_seconds

from expost import PrivateSession, ZCDPFilter

__all__ = ["main"]

D, BATCH, SIGMA, C, LR = 100, 256, 1.0, 1.0, 0.5


def data(n: int, xp: Any, device: str | None) -> tuple[Any, Any]:
    """n seeded rows of D features (float32) and labels, on the device."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, D), dtype=np.float32)
    y = (x[:, 0] + 0.5 * rng.standard_normal(n, dtype=np.float32) > 0).astype(np.float32)
    if xp is np:
        return x, y
    return xp.asarray(x, device=device), xp.asarray(y, device=device)


def gradients(w: Any, x: Any, y: Any, xp: Any) -> Any:
    """Per-example logistic-loss gradients of the rows ``x`` (no loop over rows)."""
    p = 1.0 / (1.0 + xp.exp(-(x @ w)))
    return (p - y)[:, None] * x


def batch_step_seconds(session: PrivateSession, n: int, steps: int, lib: Any) -> float:
    """Median seconds of one batch step on n rows (``lib``: (namespace, device, to_index))."""
    xp, device, index = lib
    x, y = data(n, xp, device)
    state = {
        "w": xp.zeros(D, dtype=xp.float32, device=device) if device else np.zeros(D, np.float32)
    }
    q = BATCH / n

    def step() -> None:
        batch = session.poisson_batch(n, sampling_prob=q, sigma=SIGMA, sensitivity=C)
        rows = index(batch.indices)
        noisy = batch.release(gradients(state["w"], x[rows], y[rows], xp))
        state["w"] = state["w"] - LR * xp.astype(noisy, xp.float32) / BATCH  # public constant

    return median_seconds(step, steps)


def full_step_seconds(session: PrivateSession, n: int, steps: int) -> float:
    """Median seconds of the baseline: gradients of all n rows to `subsampled_gaussian`."""
    x, y = data(n, np, None)
    w = np.zeros(D, np.float32)

    def step() -> None:
        g = gradients(w, x, y, np)
        session.subsampled_gaussian(g, sensitivity=C, sigma=SIGMA, sampling_prob=BATCH / n)

    return median_seconds(step, steps)


def _library(device: str | None) -> tuple[Any, str | None, Any]:
    if device is None:
        return np, None, lambda a: a
    import array_api_compat
    import torch

    def to_index(a: Any) -> Any:
        return torch.as_tensor(a, device=device)

    return array_api_compat.array_namespace(torch.empty(0)), device, to_index


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--torch", metavar="DEVICE", default=None)
    args = parser.parse_args(argv)
    lib = _library(args.torch)
    session = PrivateSession(ZCDPFilter(1e9), np.random.default_rng(0))
    where = "numpy" if args.torch is None else f"torch on {args.torch}"
    times = {}
    for n in (10**5, 10**6):
        times[n] = batch_step_seconds(session, n, args.steps, lib)
        print(f"n = {n:>9,} ({where}): {1e3 * times[n]:8.3f} ms a step (batch, gradients, release)")
    base = full_step_seconds(session, 10**5, max(3, args.steps // 8))
    print(
        f"baseline subsampled_gaussian on all 100,000 rows (numpy): {1e3 * base:8.3f} ms a step, "
        f"{base / times[10**5]:.1f}× the batch step"
    )
    print(f"ratio n = 10⁶ / n = 10⁵: {times[10**6] / times[10**5]:.2f} (1 = independent of n)")


if __name__ == "__main__":
    main()
