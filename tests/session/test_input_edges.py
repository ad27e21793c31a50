"""Input edges a user hit (issue 37, "Smaller"): wide ints in float mode, a huge `Fraction` level,
bit-source argument types, and −0.0 in a filter's configuration."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import expost as ep
from expost.exact.bits import GeneratorBits, SecureBits


def _session() -> ep.PrivateSession:
    return ep.PrivateSession(ep.ZCDPFilter(10.0), np.random.default_rng(0))


@pytest.mark.parametrize("value", [10**30, -(10**30), 2**1000, [10**30, 1.5], [2**64, 3]])
def test_float_mode_takes_ints_of_any_width(value: npt.ArrayLike) -> None:
    """docs/session.md: Python ints of any width, as float64 (correctly rounded)."""
    s = _session()
    out = s.gaussian(value, 1.0, 1.0)
    want = np.array([float(v) for v in np.ravel(np.asarray(value, dtype=object))])
    assert np.all(np.abs(np.ravel(out) - want) <= np.abs(want) * 1e-12 + 100)
    assert s.spent == 1.0


@pytest.mark.parametrize("value", [2**1000 + 2**990, 10**400, [1, 10**400], [10**30, True]])
def test_float_mode_refuses_ints_beyond_the_limit_naming_the_value(value: npt.ArrayLike) -> None:
    s = _session()
    with pytest.raises(ep.InvalidParameter, match=r"^value=.*nothing was spent"):
        s.gaussian(value, 1.0, 1.0)
    assert s.spent == 0.0


@pytest.mark.parametrize(
    ("method", "name"),
    [("gaussian-rho", "rho"), ("laplace-eps", "eps"), ("gaussian-sensitivity", "sensitivity")],
)
def test_a_fraction_beyond_the_floats_is_refused_naming_its_argument(
    method: str, name: str
) -> None:
    s, huge = _session(), Fraction(10**400)
    calls = {
        "gaussian-rho": lambda: s.gaussian(0.0, 1.0, huge),
        "laplace-eps": lambda: s.laplace(0.0, 1.0, huge),
        "gaussian-sensitivity": lambda: s.gaussian(0.0, huge, 0.1),
    }
    with pytest.raises(ep.InvalidParameter, match=rf"^{name}=Fraction"):
        calls[method]()
    assert s.spent == 0.0


@pytest.mark.parametrize("source", [SecureBits(), GeneratorBits(np.random.default_rng(0))])
@pytest.mark.parametrize(
    ("n", "size"), [("7", 1), (7, True), (True, 3), (7.0, 3), (7, "3"), (None, 1), (7, 2.0)]
)
def test_bit_sources_refuse_non_integers(source: ep.SecureBits, n: object, size: object) -> None:
    with pytest.raises(ep.InvalidParameter):
        source.below(n, size)  # type: ignore[arg-type]


def test_bit_sources_take_python_and_numpy_integers() -> None:
    for n, size in ((7, 3), (np.int64(7), np.int32(3)), (2**70, 2)):
        out = SecureBits().below(n, size)  # type: ignore[arg-type]
        assert len(out) == int(size)
        assert all(0 <= int(v) < int(n) for v in out)


def test_minus_zero_is_zero_in_a_filter_and_its_ledger(tmp_path: Path) -> None:
    """ZCDPFilter(1.0, -0.0) is ZCDPFilter(1.0, 0.0): a ledger made with one reopens with the other."""
    assert ep.ZCDPFilter(1.0, -0.0) == ep.ZCDPFilter(1.0, 0.0)
    assert str(ep.ZCDPFilter(1.0, -0.0).delta) == "0.0"
    path = tmp_path / "l.sqlite"
    rng = np.random.default_rng(1)
    ep.PrivateSession(ep.ZCDPFilter(1.0, -0.0), rng, ledger=path, create=True).close()
    ep.PrivateSession(ep.ZCDPFilter(1.0, 0.0), rng, ledger=path).close()
    ep.PrivateSession(ep.ZCDPFilter(-0.0 + 1.0, -0.0), rng, ledger=path).close()
