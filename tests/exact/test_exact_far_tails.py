"""A far-tail proposal of the discrete Gaussian is accepted with its exact probability, never
dropped (issue 37: a sampler that silently rejected 41σ proposals survived the suite).

A 41σ value has probability about e^−840: no statistical test can see it. These tests force
the proposal instead (the samplers' proposal and Bernoulli steps replaced by scripted ones) and
check, for both of `discrete_gaussian`'s paths (inversion table with its exact tail, and CKS
Alg. 3's rejection from a discrete Laplace), that the forced proposal is released as it is when
the acceptance Bernoulli says yes, and that this Bernoulli is Bern(exp(−num/den)) with the
exact target/proposal ratio of CKS 2020 (Alg. 3) or of the tail's geometric proposal.
Each has a planted twin that drops far proposals, which the same check rejects.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from expost.exact import samplers
from expost.exact.bits import GeneratorBits
from expost.exact.tables import table

FAR = 41  # in σ


@contextmanager
def _scripted(
    monkeypatch: pytest.MonkeyPatch, proposal: str, value: int
) -> Iterator[list[tuple[Any, int]]]:
    """The proposal function ``proposal`` returns ``value`` for every pending sample on its
    first call (a near 0 afterwards, so a sampler that rejects the far value ends), and every
    acceptance Bernoulli says yes; yields the Bernoulli arguments seen."""
    seen: list[tuple[Any, int]] = []
    calls: list[int] = []

    def propose(*args: Any) -> Any:
        calls.append(1)
        return np.full(args[-1], value if len(calls) == 1 else 0, dtype=np.int64)

    def accept(num: Any, den: int, bits: Any) -> Any:
        seen.append((num, den))
        return np.ones(len(num), dtype=bool)

    with monkeypatch.context() as m:
        m.setattr(samplers, proposal, propose)
        m.setattr(samplers, "_bern_exp", accept)
        yield seen


def _rejection_path(monkeypatch: pytest.MonkeyPatch, sampler: Callable[..., Any]) -> None:
    """σ² = 10**10 (σ = 10**5: no table): a ±41σ Laplace proposal y is accepted with
    Bern(exp(−(|y|·t·q − p)²/(2·p·q·t²))), t = isqrt(p/q) + 1 (CKS Alg. 3)."""
    p, q = 10**10, 1
    sigma = math.isqrt(p)
    t = math.isqrt(p // q) + 1
    for y in (FAR * sigma, -FAR * sigma):
        with _scripted(monkeypatch, "_laplace", y) as seen:
            out = sampler(Fraction(p, q), GeneratorBits(np.random.default_rng(0)), 3)
        assert list(out) == [y, y, y]  # released as proposed
        ((num, den),) = seen
        a = abs(y) * t * q - p
        assert den == 2 * p * q * t * t
        assert [int(v) for v in num] == [a * a] * 3  # the exact log-ratio, not 0 or a cap


def _table_path(monkeypatch: pytest.MonkeyPatch, sampler: Callable[..., Any]) -> None:
    """σ² = 4 (a table of reach K): the tail index 2K + 2 and a geometric proposal g give
    K + 1 + g, accepted with Bern(exp(−g²/(2σ²)))."""
    p, q = 4, 1
    tab = table(Fraction(q, 2 * p), Fraction(q, p))
    k = tab.k
    far = FAR * 2  # 41σ
    g = far - (k + 1)
    assert g > 0
    for index, sign in ((2 * k + 2, 1), (0, -1)):
        with monkeypatch.context() as m:
            m.setattr(samplers, "invert", lambda t, bits, size, i=index: np.full(size, i))
            with _scripted(monkeypatch, "_half", g) as seen:
                out = sampler(Fraction(p, q), GeneratorBits(np.random.default_rng(0)), 2)
        assert list(out) == [sign * far] * 2
        ((num, den),) = seen
        assert den == 2 * p
        assert [int(v) for v in num] == [g * g * q] * 2


def test_a_far_rejection_proposal_is_accepted_with_its_exact_probability(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _rejection_path(monkeypatch, samplers.discrete_gaussian)


def test_a_far_tail_proposal_is_accepted_with_its_exact_probability(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _table_path(monkeypatch, samplers.discrete_gaussian)


def _dropping(path: str) -> Callable[..., Any]:
    """Planted twin: a discrete Gaussian that silently redraws proposals beyond 40σ."""

    def sampler(sigma2: Fraction, bits: Any, size: int) -> Any:
        cap = 40 * math.isqrt(int(sigma2))
        out = samplers.discrete_gaussian(sigma2, bits, size)
        return np.where(np.abs(out) > cap, 0, out)  # "dropped": replaced by a near value

    return sampler


@pytest.mark.parametrize("path", [_rejection_path, _table_path])
def test_twin_dropping_far_proposals_is_caught(
    monkeypatch: pytest.MonkeyPatch, path: Callable[..., None]
) -> None:
    with pytest.raises(AssertionError):
        path(monkeypatch, _dropping(path.__name__))
