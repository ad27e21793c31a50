"""Error messages quote what was given, abbreviated when it is huge (issue 37, item 4).

A refusal of ``2**1001`` printed its 302 digits; an integer beyond 4300 digits could not be
printed at all (Python's ``str`` limit), so building the error raised ``ValueError`` instead.
The reference digits below come from ``str`` and ``len``, not from the code under test.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import expost as ep
from expost.errors import MAX_SHOWN, InvalidParameter, shown


def _described(n: int) -> str:
    """The description of a positive integer of at most 4300 digits, from its decimal string."""
    digits = str(n)
    return f"a {len(digits)}-digit integer (~{digits[0]}.{digits[1]}e{len(digits) - 1})"


def test_a_huge_integer_is_described_by_its_size() -> None:
    err = InvalidParameter("value", 2**1001, "must have magnitude at most 2**1000")
    assert str(err) == (
        "value=a 302-digit integer (~2.1e301) is invalid: must have magnitude at most 2**1000"
    )
    assert err.value == 2**1001  # the error keeps the value itself


@pytest.mark.parametrize("k", [40, 41, 42, 100, 301, 302, 1000, 4299])
def test_the_digit_count_is_exact_at_powers_of_ten(k: int) -> None:
    # log10 rounds across a power of ten; the count must not
    for n in (10**k, 10**k - 1, 10**k + 1, 2 * 10**k - 1, 99 * 10 ** (k - 2)):
        if n >= 10**40:
            assert shown(n) == _described(n), n
            assert shown(-n) == _described(n).replace("(~", "(~-"), n


def test_integers_up_to_forty_digits_are_printed() -> None:
    assert shown(10**40 - 1) == "9" * 40
    assert shown(-(10**40 - 1)) == "-" + "9" * 40
    assert shown(10**40).startswith("a 41-digit integer")
    assert shown(True) == "True"
    assert shown(np.int64(-5)) == repr(np.int64(-5))


def test_integers_too_long_for_str_do_not_break_the_error() -> None:
    with pytest.raises(ValueError, match="integer string conversion"):
        str(10**5000)  # why the message may not call str
    err = InvalidParameter("rho", 10**5000, "must be small")
    assert "a 5001-digit integer (~1.0e5000)" in str(err)
    assert "cannot be printed" in str(InvalidParameter("value", [1, 10**5000], "no"))


def test_fractions_with_huge_parts() -> None:
    assert shown(Fraction(10**400, 3)) == "Fraction(a 401-digit integer (~1.0e400), 3)"
    assert shown(Fraction(1, 3)) == "Fraction(1, 3)"


def test_long_reprs_are_cut_and_say_how_long_they_were() -> None:
    text = "x" * 10_000
    message = str(InvalidParameter("mechanism", text, "is too long"))
    assert len(message) < MAX_SHOWN + 100
    assert f"a repr of {len(repr(text))} characters" in message
    short = "y" * (MAX_SHOWN - 2)
    assert shown(short) == repr(short)  # at the limit: printed in full


def test_a_session_refusal_of_two_to_the_1001_is_short() -> None:
    session = ep.PrivateSession(ep.ZCDPFilter(1.0), exact=True)
    with pytest.raises(ep.InvalidParameter) as refusal:
        session.gaussian(2**1001, sensitivity=1, rho=0.5)
    # the value is private: described (issue 41, item 3), not even its size
    assert str(refusal.value).startswith("value=<an int> is invalid: must have magnitude at most")
    assert "302" not in str(refusal.value)
    assert len(str(refusal.value)) < 200
    with pytest.raises(ep.InvalidParameter) as too_wide:
        session.gaussian(0, sensitivity=2**1001, rho=0.5)  # σ² has 603 digits
    assert "σ² = Δ²/(2·rho) = a 603-digit integer" in str(too_wide.value)
    assert session.spent == 0.0
