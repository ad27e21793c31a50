"""The counting-filter deploy audit simulates the rule it states (issue 41, item 7).

The analyst stops "once the loss falls to −2·eps0". The loss of a path of atoms (outputs
outside (0, eps0)) is an integer multiple of eps0; summed in floats from |y| − |y − eps0| it
reads −0.19999999999999998 at −2·eps0 for the outputs below, and the old simulation went on.
The outputs are scripted (the tilted sampler replaced), so the stopping time is known: after
the stop, outputs far above eps0 would carry the loss past eps and give a positive value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from expost.audit import run_audits
from expost.audit.deploy import counting_filter as audit
from expost.audit.tilting import laplace_log_mgf

FloatArray = npt.NDArray[np.float64]
STOP_AT_MINUS_TWO = [0.1, 0.0, 0.0, -0.7]  # atoms +1, −1, −1, −1: the loss is −2·eps0 exactly
CLIMB = 3.0  # an atom +eps0 per round


def _scripted(outputs: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace the tilted sampler by the scripted outputs, then CLIMB for ever."""
    stream: Iterator[float] = iter(outputs)

    def draw(fx: Any, fxp: Any, scale: float, theta: Any, n: int, rng: Any) -> FloatArray:
        return np.full((n, 1), next(stream, CLIMB))

    monkeypatch.setattr(audit, "tilted_laplace", draw)


def _float_rule(rounds: int, theta: float, n: int, rng: np.random.Generator) -> FloatArray:
    """The old simulation (planted twin): the loss summed in floats from |y| − |y − eps0|."""
    log_mgf = float(laplace_log_mgf(audit.EPS0, theta))
    loss, log_weight = np.zeros(n), np.zeros(n)
    running = np.ones(n, dtype=bool)
    for _ in range(rounds):
        draw = audit.tilted_laplace  # type: ignore[attr-defined]  # the name _scripted replaces
        y = draw(audit._FX, audit._FXP, 1.0, theta, n, rng)[:, 0]
        step = np.abs(y) - np.abs(y - audit.EPS0)
        loss = np.where(running, loss + step, loss)
        log_weight = np.where(running, log_weight - theta * step + log_mgf, log_weight)
        running &= (loss > -2.0 * audit.EPS0) & (loss <= audit.EPS + 1.0)
    value = np.exp(log_weight) * -np.expm1(audit.EPS - loss)
    out: FloatArray = np.where(loss > audit.EPS, value, 0.0)
    return out


def test_a_path_at_minus_two_eps0_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted(STOP_AT_MINUS_TWO, monkeypatch)
    value = audit.tilted_laplace_stopping(300, 0.5, 1, np.random.default_rng(0))
    assert value.tolist() == [0.0]  # stopped at round 4: the climb never came


def test_the_float_sum_goes_on_there(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted twin: the float sum reads the path above −2·eps0, goes on and climbs past eps."""
    _scripted(STOP_AT_MINUS_TWO, monkeypatch)
    value = _float_rule(300, 0.5, 1, np.random.default_rng(0))
    assert value[0] > 0.0


def test_a_path_past_eps_plus_one_stops_at_the_first_atom_above(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The upper rule in atoms: 110 atoms up is 11.000000000000002 > eps + 1 = 11 (eps0 the
    float 0.1), 109 is 10.9: the path stops after 110 rounds, its loss 110·eps0."""
    _scripted([], monkeypatch)
    theta = 0.5
    value = audit.tilted_laplace_stopping(400, theta, 1, np.random.default_rng(0))
    loss = audit.EPS0 * 110
    log_weight = -theta * loss + 110 * float(laplace_log_mgf(audit.EPS0, theta))
    assert value[0] == pytest.approx(np.exp(log_weight) * -np.expm1(audit.EPS - loss), rel=1e-12)


def test_the_audit_holds_and_its_twin_is_refuted() -> None:
    """The registered audit at 1e-6 (quick size): the claim holds, twice-the-rounds refuted."""
    (case,) = audit.cases(1e-6)
    report = run_audits([case.audit(5_000, 5_000)], seed=0)
    assert report.passed, report.table()
