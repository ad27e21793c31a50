"""Fixtures shared by the PLD tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from expost.pld import twiddles


@pytest.fixture
def fresh() -> Iterator[None]:
    """The twiddle errors found afresh (their cache cleared before and after)."""
    twiddles.twiddle_error.cache_clear()
    yield
    twiddles.twiddle_error.cache_clear()
