"""Helpers of the `PrivateSession` tests (tests/session/test_session.py, tests/session/test_session_ledger.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from expost import (
    ApproxDP,
    ConcurrentFilter,
    PrivateSession,
    UnifiedFilter,
    ZCDPFilter,
)
from expost.session import SessionFilter

WORKER = Path(__file__).with_name("session_worker.py")
RHO_FILTERS = (ZCDPFilter, UnifiedFilter, ConcurrentFilter)


def _session(f: SessionFilter, seed: int = 0, **kwargs: Any) -> PrivateSession:
    if "ledger" in kwargs:  # these tests start fresh ledgers (create=False: test_ledger*.py)
        kwargs.setdefault("create", True)
    return PrivateSession(f, np.random.default_rng(seed), **kwargs)


def _spent(s: PrivateSession) -> float:
    spent = s.spent
    assert isinstance(spent, float)
    return spent


def _left(s: PrivateSession) -> float:
    left = s.remaining
    assert isinstance(left, float)
    return left


def _dp(s: PrivateSession) -> ApproxDP:
    claim = s.guarantee()
    assert isinstance(claim, ApproxDP)
    return claim


def _rho(s: PrivateSession) -> float:
    f = s.filter
    assert isinstance(f, ZCDPFilter | UnifiedFilter)
    return f.rho


def _state(s: PrivateSession, rng: np.random.Generator) -> tuple[object, ...]:
    """Everything a refused or invalid round must leave unchanged."""
    return (s.spent, s.remaining, len(s.history), s.filter, s.guarantee(), rng.bit_generator.state)
