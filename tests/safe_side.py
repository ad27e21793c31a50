"""Is a reported float the nearest float on the safe side of an exact rational (issue 21)?"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction


def exact_sum(values: Iterable[float]) -> Fraction:
    """The exact rational sum of floats."""
    return sum(map(Fraction, values), Fraction(0))


def rounded_up(x: float, exact: Fraction) -> bool:
    """x is the smallest float >= exact (a reported cost, price or guarantee)."""
    return Fraction(x) >= exact > Fraction(math.nextafter(x, -math.inf))


def rounded_down(x: float, exact: Fraction) -> bool:
    """x is the largest float <= exact (a reported budget or remainder)."""
    return Fraction(x) <= exact < Fraction(math.nextafter(x, math.inf))
