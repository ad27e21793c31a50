"""Statistical assertions for a project's own tests, built on `expost.audit`.

Each helper runs one audit at false-alarm level ``alpha_audit`` (default 1e-6): when the claim
is true it raises with probability at most alpha_audit. On refutation it raises
``AssertionError`` with the audit's table and the reason. Samples are given either as a
sampler ``(n, rng) -> …`` (run with ``n`` runs from ``seed``) or as arrays already drawn.
To show the check has power, run it on a planted bug under ``pytest.raises(AssertionError)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from expost._validation import finite_array
from expost.audit.claims import DPClaim, EValueClaim, ProbabilityClaim
from expost.audit.core import ALPHA_AUDIT, Audit, run_audit
from expost.audit.report import AuditReport, AuditResult
from expost.audit.verdict import Claim
from expost.errors import InvalidParameter

__all__ = ["assert_dp_lower_bound_below", "assert_e_value", "assert_ex_post"]

Sampler = Callable[[int, np.random.Generator], Any]
_SOURCE = "expost.testing"


def _check(
    name: str,
    statement: str,
    claim: Claim,
    samples: Callable[[int, np.random.Generator], npt.ArrayLike] | npt.ArrayLike,
    n: int,
    seed: int,
    alpha_audit: float,
) -> AuditResult:
    if callable(samples):
        audit = Audit(name, _SOURCE, statement, claim, samples, n)
        result = run_audit(audit, seed=seed, alpha_audit=alpha_audit)
    else:
        start = time.perf_counter()
        verdict = claim.verdict(samples, alpha_audit)
        result = AuditResult(name, _SOURCE, statement, verdict, time.perf_counter() - start)
    if result.verdict.refuted:
        report = AuditReport((result,), seed, alpha_audit)
        raise AssertionError(f"claim refuted: {statement}\n\n{report.table()}")
    return result


def _exceeds(losses: npt.ArrayLike, bounds: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    loss = finite_array("losses", losses)
    bound = np.asarray(bounds, dtype=np.float64)
    if loss.ndim != 1 or bound.shape != loss.shape or np.any(np.isnan(bound)):
        raise InvalidParameter("bounds", bound.shape, f"must be 1-d, no NaN, shaped {loss.shape}")
    return np.asarray(loss > bound)


def assert_ex_post(
    sample_losses_and_bounds: Sampler | tuple[npt.ArrayLike, npt.ArrayLike],
    delta: float,
    *,
    n: int = 20_000,
    seed: int = 0,
    alpha_audit: float = ALPHA_AUDIT,
    name: str = "ex-post bound",
) -> AuditResult:
    """Assert ``P(L > E) <= delta``: losses L and ex-post bounds E of independent runs.

    The ex-post guarantee of APC Def 4.1 / BNR Def 2.2. The sampler returns
    ``(losses, bounds)``, two arrays of n values; or pass that pair directly.
    """
    claim = ProbabilityClaim(delta)
    statement = f"P(loss > ex-post bound) <= {claim.delta:g}"
    samples: Callable[[int, np.random.Generator], npt.ArrayLike] | npt.ArrayLike
    if callable(sample_losses_and_bounds):
        sampler = sample_losses_and_bounds

        def samples(k: int, rng: np.random.Generator) -> npt.ArrayLike:
            return _exceeds(*sampler(k, rng))

    else:
        samples = _exceeds(*sample_losses_and_bounds)
    return _check(name, statement, claim, samples, n, seed, alpha_audit)


def assert_e_value(
    samples: Sampler | npt.ArrayLike,
    *,
    bound: float = 1.0,
    n: int = 20_000,
    seed: int = 0,
    alpha_audit: float = ALPHA_AUDIT,
    name: str = "e-value",
) -> AuditResult:
    """Assert ``E[X] <= bound`` (an e-value for bound = 1) by the betting test of `EValueClaim`.

    Valid for heavy-tailed X (no variance needed). ``samples``: n nonnegative values or a sampler.
    """
    claim = EValueClaim(bound)
    return _check(name, claim.describe(), claim, samples, n, seed, alpha_audit)


def assert_dp_lower_bound_below(
    sample_x: Sampler | npt.ArrayLike,
    sample_x_prime: Sampler | npt.ArrayLike,
    eps: float,
    *,
    n: int = 50_000,
    seed: int = 0,
    alpha_audit: float = ALPHA_AUDIT,
    name: str = "eps-DP",
) -> AuditResult:
    """Assert the empirical eps lower bound of a distinguishing test stays <= eps (`DPClaim`).

    ``sample_x`` / ``sample_x_prime``: scalar outputs of the mechanism on neighbours x, x'
    (samplers of n outputs, or arrays of equal length).
    """
    claim = DPClaim(eps)
    samples: Callable[[int, np.random.Generator], npt.ArrayLike] | npt.ArrayLike
    if callable(sample_x) and callable(sample_x_prime):
        first, second = sample_x, sample_x_prime

        def samples(k: int, rng: np.random.Generator) -> npt.ArrayLike:
            return np.column_stack([np.ravel(first(k, rng)), np.ravel(second(k, rng))])

    elif not callable(sample_x) and not callable(sample_x_prime):
        a, b = np.ravel(sample_x), np.ravel(sample_x_prime)
        if a.shape != b.shape:
            raise InvalidParameter("sample_x_prime", b.shape, f"must have {a.size} outputs")
        samples = np.column_stack([a, b])
    else:
        raise InvalidParameter(
            "sample_x", sample_x, "and sample_x_prime: both samplers or both arrays"
        )
    return _check(name, claim.describe(), claim, samples, n, seed, alpha_audit)
