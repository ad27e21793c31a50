"""The DP-SGD step draws its noise at σ·Δ rounded up (issue 41, item 7), in both routes: a
session's `subsampled_gaussian` and the batch step (`poisson_batch`, then ``release``).

The noise scale the step hands the generator is recorded (a spying Generator) and compared with
the smallest float >= σ·Δ, computed here in rationals, for pairs (σ, Δ) whose product rounded
to nearest is below the exact one (where a rounded-down or nearest sd shows). A second test
replays the batch release from the same seed: Σ of the kept rows + N(0, sd²) at that sd. The
guards of the planted bug "the noise sd rounded down in the batch step" (and a further one of it
in `subsampled_gaussian`, beside tests/house/test_planted_bugs.py).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from expost import PrivateSession, ZCDPFilter


def _up(x: Fraction) -> float:
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def _below_nearest() -> list[tuple[float, float]]:
    rng = np.random.default_rng(7)
    pairs = [(float(s), float(d)) for s, d in rng.uniform(0.2, 6.0, (200, 2))]
    out = [(s, d) for s, d in pairs if Fraction(s * d) < Fraction(s) * Fraction(d)]
    assert len(out) >= 20
    return out[:20]


class Spy(np.random.Generator):
    """A seeded Generator that records the scale of every normal draw."""

    def __init__(self, seed: int) -> None:
        super().__init__(np.random.PCG64(seed))
        self.scales: list[float] = []

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        self.scales.append(float(scale))
        return super().normal(loc, scale, size)


ROWS = np.array([[0.1, -0.2], [0.05, 0.0], [0.0, 0.01]])


@pytest.mark.parametrize("route", ["subsampled_gaussian", "poisson_batch"])
def test_the_step_draws_at_the_rounded_up_sd(route: str) -> None:
    for sigma, delta in _below_nearest():
        spy = Spy(0)
        session = PrivateSession(ZCDPFilter(1e6), spy)
        if route == "subsampled_gaussian":
            session.subsampled_gaussian(ROWS, delta, sigma, 0.5)
        else:
            batch = session.poisson_batch(3, 0.5, sigma, delta)
            batch.release(ROWS[batch.indices])  # one row per index of the batch
        assert spy.scales[-1] == _up(Fraction(sigma) * Fraction(delta)), (sigma, delta)


def test_a_batch_release_is_the_kept_rows_plus_noise_at_that_sd() -> None:
    for sigma, delta in _below_nearest()[:5]:
        session = PrivateSession(ZCDPFilter(1e6), np.random.default_rng(3))
        batch = session.poisson_batch(3, 1.0, sigma, delta)  # q = 1: every row kept
        got = batch.release(ROWS)
        replay = np.random.default_rng(3)
        session_again = PrivateSession(ZCDPFilter(1e6), replay)
        session_again.poisson_batch(3, 1.0, sigma, delta)  # the same index draws
        want = ROWS.sum(axis=0) + replay.normal(0.0, _up(Fraction(sigma) * Fraction(delta)), 2)
        np.testing.assert_array_equal(got, want)
