"""SkellamNoiseReduction with a SkellamPrivacyBoundary, and PrivateSession.skellam."""

from __future__ import annotations

import numpy as np
import pytest

from expost import (
    ExPostFilter,
    PrivateSession,
    SkellamNoiseReduction,
    SkellamPrivacyBoundary,
)
from expost.errors import BudgetExceeded, InvalidParameter
from expost.filters.costs import ExPostCost
from expost.mechanisms import BatchTranscript
from expost.stopping import RelativeError

TIMES = (400.0, 100.0, 25.0, 4.0)
PSI = SkellamPrivacyBoundary(8.0, 1e-6)


def test_transcript_carries_psi_at_the_stop() -> None:
    mechanism = SkellamNoiseReduction(TIMES, stop=RelativeError(0.3), boundary=PSI)
    run = mechanism.run(120, np.random.default_rng(5))
    assert run.released.dtype == np.int64
    assert run.cost == ExPostCost(PSI(run.time), 1e-6)
    assert run.ex_post is not None
    assert run.ex_post.bound == PSI(run.time)
    assert mechanism.cost().bound == max(PSI(t) for t in TIMES)


def test_batch_bounds_are_psi_at_each_stop() -> None:
    mechanism = SkellamNoiseReduction(TIMES, stop=RelativeError(0.3), boundary=PSI)
    batch = mechanism.run_batch(120, 500, np.random.default_rng(6))
    assert batch.ex_post_bound is not None
    assert batch.delta == 1e-6
    assert np.array_equal(batch.ex_post_bound, PSI.boundary(batch.times))


def test_mismatched_or_vector_use_is_refused() -> None:
    with pytest.raises(InvalidParameter, match="rate"):
        SkellamNoiseReduction(TIMES, rate=2.0, boundary=PSI)
    with pytest.raises(InvalidParameter, match="sensitivity"):
        SkellamNoiseReduction(TIMES, sensitivity=2, boundary=PSI)
    with pytest.raises(InvalidParameter, match="scalar"):
        SkellamNoiseReduction(TIMES, boundary=PSI).run([1, 2], np.random.default_rng(0))


def test_session_spends_psi_through_an_ex_post_filter() -> None:
    session = PrivateSession(ExPostFilter(10.0, 1e-5), np.random.default_rng(7))
    run = session.skellam(120, 1, TIMES, stop=RelativeError(0.3), boundary=PSI)
    assert session.spent == pytest.approx(PSI(run.time), rel=0, abs=0)
    assert session.history[0].request == ExPostCost(max(PSI(t) for t in TIMES), 1e-6)


def test_session_refuses_without_boundary_and_over_budget() -> None:
    session = PrivateSession(ExPostFilter(0.1, 1e-5), np.random.default_rng(8))
    with pytest.raises(InvalidParameter, match="boundary"):
        session.skellam(120, 1, TIMES)
    with pytest.raises(BudgetExceeded):
        session.skellam(120, 1, TIMES, boundary=PSI)  # ψ(4) > 0.1
    assert session.spent == 0.0


def test_secure_session_draws_skellam_integers_from_its_bit_source() -> None:
    """In the secure mode the session's own bit source drives the exact sampler: the same
    integers as ``run`` with ``exact=True`` from the same stream, not the session's numpy rng."""
    from expost.exact.bits import GeneratorBits

    mechanism = SkellamNoiseReduction(TIMES, stop=RelativeError(0.3), boundary=PSI, exact=True)
    expected = mechanism.run(120, GeneratorBits(np.random.default_rng(11)))
    session = PrivateSession(
        ExPostFilter(10.0, 1e-5),
        np.random.default_rng(0),
        bits=GeneratorBits(np.random.default_rng(11)),
    )
    run = session.skellam(120, 1, TIMES, stop=RelativeError(0.3), boundary=PSI)
    assert np.array_equal(run.released, expected.released)
    floats = PrivateSession(ExPostFilter(10.0, 1e-5), np.random.default_rng(11))
    other = floats.skellam(120, 1, TIMES, stop=RelativeError(0.3), boundary=PSI)
    assert not np.array_equal(other.released, expected.released)  # twin: the rng path differs
    secure = PrivateSession(ExPostFilter(10.0, 1e-5), np.random.default_rng(0), exact=True)
    assert secure.skellam(120, 1, TIMES, boundary=PSI).released.dtype == np.int64


def _exact_last_values(rate: float, n: int) -> np.ndarray:
    from expost.exact.bits import GeneratorBits

    mechanism = SkellamNoiseReduction((6.0, 2.5, 1.0), rate=rate, exact=True)
    bits = GeneratorBits(np.random.default_rng(9))
    return np.array([int(mechanism.run(0, bits).value[0]) for _ in range(n)])


def test_exact_runs_have_the_skellam_law() -> None:
    from tests.stats import same_discrete_law

    numpy_runs = SkellamNoiseReduction((6.0, 2.5, 1.0)).run_batch(
        0, 3_000, np.random.default_rng(3)
    )
    reference = numpy_runs.value[:, 0]
    assert same_discrete_law(_exact_last_values(1.0, 3_000), reference)
    assert not same_discrete_law(_exact_last_values(2.0, 3_000), reference)  # planted: rate 2x


def test_exact_run_carries_the_guarantee() -> None:
    from expost.exact.bits import SecureBits

    mechanism = SkellamNoiseReduction(TIMES, stop=RelativeError(0.3), boundary=PSI, exact=True)
    run = mechanism.run(120, SecureBits())
    assert run.released.dtype == np.int64
    assert run.cost == ExPostCost(PSI(run.time), 1e-6)


def test_session_draws_exactly_from_secure_bits() -> None:
    from expost.exact.bits import SecureBits

    session = PrivateSession(ExPostFilter(10.0, 1e-5), np.random.default_rng(10), bits=SecureBits())
    run = session.skellam(120, 1, TIMES, boundary=PSI)
    assert run.released.dtype == np.int64
    assert session.spent == PSI(run.time)


def test_exactness_is_a_flag_of_the_one_class() -> None:
    """``exact`` is keyword-only, part of equality, and chooses the source ``run`` and
    ``run_batch`` accept (a BitSource for exact noise, a Generator for float noise)."""
    from expost.exact.bits import GeneratorBits, SecureBits

    floats, exact = SkellamNoiseReduction(TIMES), SkellamNoiseReduction(TIMES, exact=True)
    assert floats != exact
    assert exact == SkellamNoiseReduction(TIMES, exact=True)
    with pytest.raises(InvalidParameter, match="exact"):
        SkellamNoiseReduction(TIMES, exact=1)  # type: ignore[arg-type]
    rng = np.random.default_rng(0)
    for mechanism, wrong in ((floats, SecureBits()), (exact, rng)):
        with pytest.raises(InvalidParameter, match="source"):
            mechanism.run(120, wrong)
        with pytest.raises(InvalidParameter, match="source"):
            mechanism.run_batch(120, 3, wrong)
    assert exact.run_batch(120, 3, GeneratorBits(rng)).value.dtype == np.int64


def test_exact_batches_have_the_skellam_law() -> None:
    """`run_batch` with exact noise (Poisson at t_1, then binomial thinning) against numpy's
    batch paths: the same law of the stopped value and index; a rate-2λ twin is rejected."""
    from expost.exact.bits import GeneratorBits
    from tests.stats import same_discrete_law

    times, rule = (6.0, 2.5, 1.0), RelativeError(0.5)
    reference = SkellamNoiseReduction(times, stop=rule).run_batch(
        4, 3_000, np.random.default_rng(3)
    )

    def exact_batch(rate: float) -> BatchTranscript:
        m = SkellamNoiseReduction(times, rate=rate, stop=rule, exact=True)
        return m.run_batch(4, 3_000, GeneratorBits(np.random.default_rng(4)))

    def same(b: BatchTranscript) -> bool:
        return same_discrete_law(b.value[:, 0], reference.value[:, 0]) and same_discrete_law(
            b.end_index, reference.end_index
        )

    assert same(exact_batch(1.0))
    assert not same(exact_batch(2.0))  # planted: rate 2x
