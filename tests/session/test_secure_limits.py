"""Secure mode refuses every parameter its exact samplers cannot take before the round is reserved
(issue 37: ``gaussian(0, 1, 1e154)`` raised OverflowError inside the sampler after reserving).

A fuzz over tiny to huge levels and sensitivities: each call either releases (and is charged)
or raises `InvalidParameter` / `BudgetExceeded` with the ledger file unchanged byte for byte and
nothing in ``history``; no other exception escapes. The planted twin (the prepare-time limit
removed) is caught by the same check.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import expost as ep
from expost import mechanism_table
from expost.exact.bits import GeneratorBits

LEVELS = [5e-324, 1e-300, 1.5e-154, 2.0**-81, 2.0**-79, 0.5, 2.0**79, 2.0**81, 1e154, 1e200]
SENSITIVITIES = [1, 2**40]


def _session(path: Path) -> ep.PrivateSession:
    bits = GeneratorBits(np.random.default_rng(5))
    return ep.PrivateSession(
        ep.ZCDPFilter(1e300), np.random.default_rng(4), ledger=path, create=True, bits=bits
    )


def _calls(s: ep.PrivateSession) -> list[tuple[str, Callable[[], Any]]]:
    out: list[tuple[str, Callable[[], Any]]] = []
    for x in LEVELS:
        for d in SENSITIVITIES:
            out += [
                (f"gaussian rho={x} Δ={d}", partial(s.gaussian, 7, d, x)),
                (f"laplace eps={x} Δ={d}", partial(s.laplace, 7, d, x)),
                (f"above_threshold eps={x} Δ={d}", partial(s.above_threshold, [1, 9], x, 5, d)),
                (f"doubling start={x} Δ={d}", partial(s.doubling, 7, d, x, 2.0, _first)),
            ]
        out.append((f"exponential eps={x}", partial(s.exponential_mechanism, [3, 1, 2], x, True)))
    return out


def _first(released: object) -> bool:
    return True


def _fuzz(tmp_path: Path) -> tuple[int, int]:
    """(released, refused); asserts that every refusal left the ledger and history unchanged."""
    path = tmp_path / "l.sqlite"
    s = _session(path)
    released = refused = 0
    for what, call in _calls(s):
        before, rounds = path.read_bytes(), len(s.history)
        try:
            call()
        except (ep.InvalidParameter, ep.BudgetExceeded) as refusal:
            message = str(refusal)
            assert path.read_bytes() == before, f"{what}: refused after reserving"
            assert len(s.history) == rounds, what
            assert "nothing was spent" in message, what
            refused += 1
        else:
            assert len(s.history) == rounds + 1, what
            released += 1
    s.close()
    return released, refused


def test_secure_mode_refuses_before_reserving(tmp_path: Path) -> None:
    released, refused = _fuzz(tmp_path)
    assert released > 20  # the fuzz exercised both outcomes
    assert refused > 20


def test_twin_without_the_lower_limit_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mechanism_table, "MIN_SCALE", 0)  # the planted bug: no lower limit
    with pytest.raises((AssertionError, OverflowError)):
        _fuzz(tmp_path)
