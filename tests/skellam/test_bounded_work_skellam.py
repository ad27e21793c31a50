"""Bounded work for the Skellam calls of issue 28: each answers or refuses after bounded work.

The bound is a contract, not a benchmark: the work is bounded (closed forms, monotonicity,
guards checked before any table is built), where these calls used to take more than 15 s or
raise MemoryError. It is measured as work, not seconds (a timed assert fails on a loaded
machine: issue 41, item 7): every float log-pmf entry evaluated (`expost.skellam.pmf.log_ive`)
and every mpmath pmf term (`mp_pmf`'s windows) is counted. A call may evaluate at most
`FLOAT_WORK` float entries and `MP_CALLS` mpmath windows of at most `MP_WINDOW` terms each (the
corner of the exact price's limit: 7 windows, the largest 6,906 terms; the old loop over every
shift made a window per shift, and the old tables spanned 10**7 entries). A refusal "before any
table" evaluates no mpmath term. A refusal must be `InvalidParameter` and, in a session, must
leave it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import expost.skellam.loss
import expost.skellam.pmf
from expost import ExPostFilter, PrivateSession
from expost.errors import InvalidParameter
from expost.mechanisms import SkellamNoiseReduction
from expost.skellam.boundary import SkellamPrivacyBoundary
from expost.skellam.loss import MAX_TERMS, SkellamLoss, hockey_stick_terms
from expost.skellam.pmf import log_pmf

FLOAT_WORK = 10**6  # float log-pmf entries per call
MP_CALLS = 16  # mpmath pmf windows per call (a few precision doublings)
MP_WINDOW = 2 * MAX_TERMS  # terms per window: the guarded window plus the shift


class Work:
    """What the calls made since `reset` cost: float entries, mpmath windows and terms."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.float_entries = 0
        self.windows: list[int] = []


@pytest.fixture(autouse=True)
def work(monkeypatch: pytest.MonkeyPatch) -> Work:
    """Counts the work of `expost.skellam.pmf.log_ive` and of `mp_pmf` as `SkellamLoss` calls it."""
    counted = Work()
    log_ive, mp_pmf = expost.skellam.pmf.log_ive, expost.skellam.pmf.mp_pmf

    def counting_log_ive(n: Any, x: float) -> Any:
        counted.float_entries += int(np.size(n))
        return log_ive(n, x)

    def counting_mp_pmf(lo: int, hi: int, mu1: float, mu2: float) -> Any:
        counted.windows.append(hi - lo + 1)
        return mp_pmf(lo, hi, mu1, mu2)

    monkeypatch.setattr(expost.skellam.pmf, "log_ive", counting_log_ive)
    monkeypatch.setattr(expost.skellam.loss, "mp_pmf", counting_mp_pmf)
    return counted


def bounded(work: Work, call: Callable[[], object]) -> object:
    """``call()``'s value, or the `InvalidParameter` it raised; fails if its work is unbounded
    (module docstring); a refusal evaluated no mpmath term."""
    work.reset()
    try:
        out: object = call()
    except InvalidParameter as refusal:
        out = refusal
    assert work.float_entries <= FLOAT_WORK, f"{work.float_entries} float pmf entries"
    assert len(work.windows) <= MP_CALLS, f"{len(work.windows)} mpmath windows"
    assert max(work.windows, default=0) <= MP_WINDOW, f"an mpmath window of {max(work.windows)}"
    if isinstance(out, InvalidParameter):
        assert work.windows == [], "refused after mpmath work, not before any table"
    return out


def _session() -> PrivateSession:
    return PrivateSession(ExPostFilter(10.0, 1e-5), np.random.default_rng(3))


def _unchanged(session: PrivateSession) -> bool:
    return session.spent == 0.0 and session.history == ()


def test_fixed_price_with_a_large_sensitivity(work: Work) -> None:
    """Was a loop over every shift 1..Δ (each a SkellamLoss): now the shift Δ alone
    (monotone in the shift), refused before any table where the window of mpmath terms,
    12·sqrt(2λ·t_min) + 16·Δ, exceeds MAX_TERMS; the largest Δ admitted answers with bounded work."""
    session = _session()
    out = bounded(work, lambda: session.skellam(5, 1000, [100.0, 10.0], fixed_delta=1e-6))
    assert isinstance(out, InvalidParameter)
    assert "sensitivity 1000" in str(out)
    assert "akl" in str(out)
    assert _unchanged(session)
    akl = bounded(
        work, lambda: SkellamNoiseReduction([100.0, 10.0], 1.0, 1000).fixed_cost(1e-6, "akl")
    )
    assert not isinstance(akl, InvalidParameter)
    largest = max(d for d in range(1, 1000) if hockey_stick_terms(10.0, 10.0, d) <= MAX_TERMS)
    corner = SkellamNoiseReduction([100.0, 10.0], 1.0, largest)
    bounded(work, lambda: corner.fixed_cost(1e-300))
    assert max(work.windows) > MAX_TERMS // 2  # the corner: the largest windows admitted
    refused = bounded(
        work, lambda: SkellamNoiseReduction([100.0, 10.0], 1.0, largest + 1).fixed_cost(1e-6)
    )
    assert isinstance(refused, InvalidParameter)


def test_the_count_catches_a_loop_over_every_shift(work: Work) -> None:
    """Planted twin: the old fixed price, a SkellamLoss per shift 1..Δ, is unbounded work."""
    with pytest.raises(AssertionError, match="mpmath windows"):
        bounded(work, lambda: [SkellamLoss(10.0, d).delta_for_eps(1.0) for d in range(1, 30)])


def test_loss_refuses_windows_beyond_the_limit(work: Work) -> None:
    for call in (
        lambda: SkellamLoss(10.0, 10**6).delta_for_eps(1.0),
        lambda: SkellamLoss(10.0, 10**6).eps_for_delta(1e-6),
        lambda: SkellamLoss(1e6, 1).renyi(2.0),
    ):
        assert isinstance(bounded(work, call), InvalidParameter)
    assert SkellamLoss(1.0, 400).delta_for_eps(1.0) > 0.99  # far shifts stay answerable


@pytest.mark.parametrize("fixed", [True, False], ids=["fixed-price", "boundary"])
def test_extreme_times_are_refused(fixed: bool, work: Work) -> None:
    session = _session()
    kwargs: dict[str, object] = (
        {"fixed_delta": 1e-6} if fixed else {"boundary": SkellamPrivacyBoundary(3.0, 1e-6)}
    )
    out = bounded(work, lambda: session.skellam(5, 1, [1e-300], **kwargs))  # type: ignore[arg-type]
    assert isinstance(out, InvalidParameter)
    assert "rate·t" in str(out)
    assert _unchanged(session)


def test_boundary_far_out_answers(work: Work) -> None:
    """z* is near −4.7e7 here: the pmf is evaluated at the points a search asks (Debye's
    expansion where ive underflows, without asking scipy), not on a table spanning them."""
    psi = bounded(work, lambda: SkellamPrivacyBoundary(0.3, 1e-6)(50.0))
    assert isinstance(psi, float)
    assert 13.0 < psi < 14.0  # about log(1/delta): one shift of weight ~1, ratio ~2|z|/(2λt)


def test_huge_rate_is_refused_before_any_table(work: Work) -> None:
    """Was MemoryError ("636 PiB"): λ·t_min = 1e31 is beyond the exact price's limit."""
    mechanism = SkellamNoiseReduction([100, 10], rate=10**30)
    out = bounded(work, lambda: mechanism.fixed_cost(1e-6))
    assert isinstance(out, InvalidParameter)
    assert "akl" in str(out)
    akl = bounded(work, lambda: mechanism.fixed_cost(1e-6, "akl"))
    assert not isinstance(akl, InvalidParameter)


@pytest.mark.parametrize(
    ("times", "rate", "sensitivity"),
    [
        ([1.0, 2.0], 1.0, 1),  # increasing
        ([1.0, float("nan")], 1.0, 1),
        ([float("inf")], 1.0, 1),
        ([], 1.0, 1),
        ([1.0], 0.0, 1),
        ([1.0], float("inf"), 1),
        ([1e300], 1e300, 1),  # rate·t overflows
        ([1e-300], 1e-300, 1),  # rate·t underflows to 0
        ([1.0], 1.0, 1.5),
        ([1.0], 1.0, 0),
        ([1.0], 1.0, True),
    ],
)
def test_constructor_refuses_bad_inputs(times: list[float], rate: float, sensitivity: int) -> None:
    with pytest.raises(InvalidParameter):
        SkellamNoiseReduction(times, rate, sensitivity)


@pytest.mark.parametrize("value", [2.5, "120", float("nan"), 2**1000 + 1, -(10**400), [[1, 2]]])
def test_session_refuses_bad_values_before_spending(value: object) -> None:
    session = _session()
    with pytest.raises(InvalidParameter, match="value"):
        session.skellam(value, 1, [10.0, 1.0], fixed_delta=1e-6)  # type: ignore[arg-type]
    assert _unchanged(session)


@pytest.mark.parametrize("exact", [False, True], ids=["float", "exact"])
@pytest.mark.parametrize("value", [2**53 - 1, 2**63 - 1, 2**63 + 999, -(2**1000) + 1])
def test_releases_are_exact_integers_up_to_the_value_limit(exact: bool, value: int) -> None:
    """value + noise exactly (`add_exact`): int64 while it fits, Python ints beyond; a float64
    sum would round odd releases to even above 2**53 (the twin below)."""
    from expost.exact.bits import GeneratorBits

    mechanism = SkellamNoiseReduction(np.geomspace(50.0, 5.0, 6), exact=exact)

    def source() -> object:
        rng = np.random.default_rng(11)
        return GeneratorBits(rng) if exact else rng

    run = mechanism.run(value, source())  # type: ignore[arg-type]
    noise = mechanism.run(0, source()).released  # type: ignore[arg-type]
    expected = [value + int(z) for z in noise.ravel()]
    fits = all(-(2**63) <= x < 2**63 for x in expected)
    assert run.released.dtype == (np.int64 if fits else object)
    assert [int(x) for x in run.released.ravel()] == expected
    assert any(int(x) % 2 for x in run.released.ravel())  # odd releases survive
    rounded = [int(float(value) + float(z)) for z in noise.ravel()]  # twin: a float64 sum
    assert value < 2**53 or rounded != expected
    batch = mechanism.run_batch(value, 50, source())  # type: ignore[arg-type]
    zeros = mechanism.run_batch(0, 50, source())  # type: ignore[arg-type]
    assert [int(x) for x in batch.value.ravel()] == [value + int(z) for z in zeros.value.ravel()]


def test_boundary_with_a_large_sensitivity_answers(work: Work) -> None:
    """ψ = max over 1 <= D <= Δ of log p(z) − log p(z − D): log p is concave, so the two ends
    suffice (was an array over every D: 7.8 s at Δ = 10**7). Checked against every D at Δ = 40,
    where D = 1 alone (the twin) is far below the maximum."""
    psi = bounded(work, lambda: SkellamPrivacyBoundary(3.0, 1e-6, sensitivity=10**7)(5.0))
    assert isinstance(psi, float)
    assert psi > 0.0
    b = SkellamPrivacyBoundary(3.0, 1e-6, sensitivity=40)
    z = b.crossing_point(5.0) + 1
    lp = log_pmf(np.arange(z - 40, z + 1, dtype=np.float64), 5.0, 5.0)
    every = float(np.max(lp[-1] - lp[:-1]))
    assert every <= b(5.0) <= every + 1e-8
    assert float(lp[-1] - lp[-2]) < every - 1.0
