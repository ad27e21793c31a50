"""The counting-filter audits (deploy and paper) simulate the rule they state (issue 41, item 7).

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
from expost.audit.paper import counting_filter as paper
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


class _Scripted(np.random.Generator):
    """A Generator whose Laplace draws are ``outputs`` in turn, then CLIMB (one per call)."""

    def __init__(self, outputs: list[float]) -> None:
        super().__init__(np.random.PCG64(0))
        self.stream: Iterator[float] = iter(outputs)

    def laplace(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        return np.full(size, next(self.stream, CLIMB))


PAPER_STOP = [0.2, 0.2, 0.2, -1.0, -1.0, -1.0, -1.0, -1.0]  # +3 − 5 atoms: L = −2·ε0 exactly


def test_the_paper_audit_stops_at_minus_two_eps0_in_atoms() -> None:
    """ε0 = 0.2: the float sum 0.2 + 0.2 + 0.2 − 5·0.2 reads −0.3999999999999999 > −0.4 (the
    twin, summed here), so it went on and climbed past ε; kept in atoms the path stops."""
    value = paper.laplace_stopping(40, 1, _Scripted(PAPER_STOP))
    assert value.tolist() == [0.0]
    floats = 0.0
    for y in PAPER_STOP:
        floats += abs(y) - abs(y - 0.2)
    assert floats > -2 * 0.2  # the planted twin's reading: not stopped


def test_the_paper_rule_in_atoms_and_in_floats() -> None:
    """`stops` against the stated rule in rationals, on atoms-only and mixed paths."""
    from fractions import Fraction

    eps0, top = 0.2, 2.0
    for j in range(-5, 15):
        for s in (0.0, 0.05, 0.1999):
            loss = Fraction(eps0) * j + 2 * Fraction(s)
            stated = loss <= -2 * Fraction(eps0) or loss > Fraction(top)
            got = paper.stops(np.array([j]), np.array([s]), eps0, top)[0]
            assert bool(got) == stated, (j, s)
