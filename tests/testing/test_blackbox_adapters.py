"""Adapters for OpenDP and diffprivlib mechanisms (`expost.testing.adapters`; optional extras).

Their randomness is their own, so these verdicts are not seed-reproducible: each check is one
audit at alpha = 1e-3 (a correct mechanism fails it with probability <= 1e-3), and the broken
twins have a true eps twice the claim, far beyond what the samples can miss.
"""

from __future__ import annotations

from typing import Any

import pytest

from expost.errors import InvalidParameter
from expost.testing import audit_mechanism
from expost.testing.adapters import from_diffprivlib, from_opendp

PAIRS = [([0.0, 1.0, 1.0], [0.0, 1.0])]
SAMPLES = 8_000


def _opendp_laplace(scale: float) -> Any:
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    domain, metric = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    return dp.m.make_laplace(domain, metric, scale=scale)


def _diffprivlib_laplace(sensitivity: float) -> Any:
    mechanisms = pytest.importorskip("diffprivlib.mechanisms")
    return mechanisms.Laplace(epsilon=1.0, sensitivity=sensitivity)


@pytest.mark.parametrize(("scale", "refuted"), [(1.0, False), (0.5, True)])
def test_opendp_laplace(scale: float, refuted: bool) -> None:
    mechanism = from_opendp(_opendp_laplace(scale), query=sum)
    result = audit_mechanism(mechanism, eps=1.0, pairs=PAIRS, samples=SAMPLES)
    assert result.refuted is refuted


@pytest.mark.parametrize(("sensitivity", "refuted"), [(1.0, False), (0.5, True)])
def test_diffprivlib_laplace(sensitivity: float, refuted: bool) -> None:
    mechanism = from_diffprivlib(_diffprivlib_laplace(sensitivity), query=sum)
    result = audit_mechanism(mechanism, eps=1.0, pairs=PAIRS, samples=SAMPLES)
    assert result.refuted is refuted


def test_adapters_check_their_argument() -> None:
    pytest.importorskip("opendp")
    pytest.importorskip("diffprivlib")
    with pytest.raises(InvalidParameter, match="measurement"):
        from_opendp(lambda x: x)
    with pytest.raises(InvalidParameter, match="mechanism"):
        from_diffprivlib(object())
    with pytest.raises(InvalidParameter, match="query"):
        from_diffprivlib(_diffprivlib_laplace(1.0), query=3)  # type: ignore[arg-type]
