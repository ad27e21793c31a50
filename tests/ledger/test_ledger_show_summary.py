"""``expost ledger show`` summarises runs (issue 42): steps, σ and q of DP-SGD steps (not ρ),
the ε so far, no ``remaining inf`` before the mechanism is fixed; ``--entries`` lists all."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from expost import PLDFilter, PrivateSession
from expost.cli import main
from expost.ledger.records import init_ledger


def _show(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["ledger", "show", *args]) == 0
    return capsys.readouterr().out


def test_show_summarises_a_training_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "run.sqlite")
    init_ledger(path, PLDFilter(2.0, 1e-5))
    fresh = _show(capsys, path)
    assert "inf" not in fresh
    assert "remaining not yet fixed" in fresh
    s = PrivateSession(PLDFilter(2.0, 1e-5), np.random.default_rng(0), ledger=path)
    for _ in range(60):
        b = s.poisson_batch(2_000, sampling_prob=0.01, sigma=1.0, sensitivity=1.0)
        b.release(np.zeros((b.indices.size, 2)))
    spent = s.privacy_spent(1e-5)
    s.close()
    out = _show(capsys, path)
    assert len(out.splitlines()) == 5  # ledger, id, one run, the spend, ε so far
    assert "rounds 0–59: 60 × poisson-batch, σ = 1, q = 0.01" in out
    assert "rho" not in out
    assert "120 entries, 60 rounds; spent 60.0, remaining" in out
    assert f"ε so far {spent.eps!r} at δ = 1e-05 after 60 rounds" in out
    assert "independently of the outputs" in out
    full = _show(capsys, path, "--entries")
    assert len(full.splitlines()) == 2 + 120 + 2
    assert _show(capsys, path, "--all") == full


def test_an_unsettled_batch_is_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "open.sqlite")
    init_ledger(path, PLDFilter(2.0, 1e-5))
    s = PrivateSession(PLDFilter(2.0, 1e-5), np.random.default_rng(0), ledger=path)
    s.poisson_batch(2_000, sampling_prob=0.01, sigma=1.0, sensitivity=1.0)
    s.close()
    out = _show(capsys, path)
    assert "1 reserved and not settled (charged at their request)" in out
    assert "1 entry, 1 round; spent 1.0" in out
