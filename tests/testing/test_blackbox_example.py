"""A downstream project's privacy tests, as docs/blackbox.md shows them (issue 15)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from expost.testing import assert_private

EPS = 0.5


def noisy_count(records: Sequence[int], rng: np.random.Generator) -> float:
    """The mechanism under test: a count plus Laplace noise of scale 1/EPS."""
    return len(records) + rng.laplace(0.0, 1.0 / EPS)


def buggy_count(records: Sequence[int], rng: np.random.Generator) -> float:
    """The same with a typo: noise of scale 1/(2 EPS), so it is only 2·EPS-DP."""
    return len(records) + rng.laplace(0.0, 0.5 / EPS)


def test_noisy_count_is_private() -> None:
    # fails with probability <= alpha = 1e-3 when the claim is true; fixed seed: reproducible
    assert_private(noisy_count, eps=EPS, datasets=[[1, 2, 3]], samples=20_000, seed=1)


def test_the_audit_catches_the_typo() -> None:
    with pytest.raises(AssertionError, match=r"not \(0.5, 0\)-DP"):
        assert_private(buggy_count, eps=EPS, datasets=[[1, 2, 3]], samples=20_000, seed=1)
