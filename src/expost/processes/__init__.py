"""Exact path samplers for noise-reduction processes (THEORY.md §3).

Batch samplers ``sample_*_grid(grid, trials, d, rng)`` take a strictly decreasing grid of times
or scales (noisiest first) and return an array of shape ``(trials, K, d)`` in the grid's order.
Interactive samplers (`BrownianPath`, `LaplaceProcess`, `SkellamPath`) draw one path lazily at
decreasing times with the same law.
"""

from __future__ import annotations

from expost.processes.brownian import (
    BrownianPath,
    sample_brownian_grid,
    sample_brownian_grid_privacy_time,
)
from expost.processes.laplace import LaplaceProcess, sample_koufogiannis_grid, sample_laplace_grid
from expost.processes.skellam import SkellamPath, sample_skellam_grid

__all__ = [
    "BrownianPath",
    "LaplaceProcess",
    "SkellamPath",
    "sample_brownian_grid",
    "sample_brownian_grid_privacy_time",
    "sample_koufogiannis_grid",
    "sample_laplace_grid",
    "sample_skellam_grid",
]
