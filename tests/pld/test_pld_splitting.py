"""`split_convolve`: the bulk and the tails convolved apart, against the exact convolution.

The promise (upper side): some c' <= c with ||c' − a * b||_1 <= err, i.e. Σ (a * b − c)_+ <= err;
(lower side): some c' >= c with it, i.e. Σ (c − a * b)_+ <= err. Both are checked against the
exact rational convolution of the float inputs. Planted twins: a bulk product rounded the wrong
way, a lower side not moved below its pieces, and forgotten tails must each be caught.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

from expost.pld import splitting
from expost.pld.convolution import convolve
from expost.pld.splitting import split_convolve
from tests.pld.rational import exact_convolution, shortfall

FloatArray = npt.NDArray[np.float64]


def _law(seed: int, size: int = 300, bulk: int = 40) -> FloatArray:
    """A heavy bulk of ``bulk`` points in the middle and tails falling from 1e-7 to 1e-40."""
    rng = np.random.default_rng(seed)
    a = np.zeros(size)
    mid = size // 2 - bulk // 2
    a[mid : mid + bulk] = rng.uniform(0.5, 1.0, bulk)
    side = np.logspace(-7, -40, mid) * rng.uniform(0.5, 1.0, mid)
    a[:mid] = side[::-1]
    a[mid + bulk :] = side[: size - mid - bulk]
    out: FloatArray = a / a.sum()
    return out


PAIRS = [(1, 1), (2, 3)]


@pytest.fixture(scope="module")
def exacts() -> dict[tuple[int, int], list[Fraction]]:
    return {(s, t): exact_convolution(_law(s), _law(t)) for s, t in PAIRS}


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("pair", PAIRS)
def test_split_convolution_keeps_its_promise(
    pair: tuple[int, int], lower: bool, exacts: dict[tuple[int, int], list[Fraction]]
) -> None:
    a = _law(pair[0])
    b = a if pair[0] == pair[1] else _law(pair[1])
    c, err = split_convolve(a, b, lower)
    assert np.all(c >= 0)
    assert shortfall(c, exacts[pair], lower) <= Fraction(err)


def test_the_split_cuts_the_bound() -> None:
    a = _law(1)
    _, plain = convolve(a, a)
    _, split = split_convolve(a, a)
    assert split <= plain * 1e-3  # tails of 1e-7 against a bulk of mass ~1


@pytest.mark.parametrize("bug", ["bulk-down", "lower-not-below", "tails-forgotten"])
def test_planted_bugs_are_caught(
    bug: str, monkeypatch: pytest.MonkeyPatch, exacts: dict[tuple[int, int], list[Fraction]]
) -> None:
    a = _law(1)
    lower = bug == "lower-not-below"
    if bug == "bulk-down":
        direct = splitting._direct

        def bulk_down(
            x: FloatArray, y: FloatArray, low: bool, tol: float
        ) -> tuple[FloatArray, float]:
            c, e = direct(x, y, low, tol)
            return c * (1.0 - 2.0**-40), e

        monkeypatch.setattr(splitting, "_direct", bulk_down)
    elif bug == "lower-not-below":
        monkeypatch.setattr(splitting, "_below", lambda c, _direct: c)
    else:
        pieces = splitting._pieces
        monkeypatch.setattr(splitting, "_pieces", lambda x: pieces(x)[:1])
    c, err = split_convolve(a, a, lower)
    assert shortfall(c, exacts[(1, 1)], lower) > Fraction(err)
