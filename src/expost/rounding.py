"""TEMPORARY local stub of h-round's API (never committed)."""
from __future__ import annotations
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any
import numpy as np
import numpy.typing as npt

def up(x: float, ulps: int = 1) -> float:
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x

def down(x: float, ulps: int = 1) -> float:
    for _ in range(ulps):
        x = math.nextafter(x, -math.inf)
    return x

def up_array(x: npt.ArrayLike, ulps: int = 1) -> npt.NDArray[np.float64]:
    a = np.asarray(x, dtype=np.float64)
    for _ in range(ulps):
        a = np.nextafter(a, np.inf)
    return a

def down_array(x: npt.ArrayLike, ulps: int = 1) -> npt.NDArray[np.float64]:
    a = np.asarray(x, dtype=np.float64)
    for _ in range(ulps):
        a = np.nextafter(a, -np.inf)
    return a

def up_exact(q: Fraction | int) -> float:
    q = Fraction(q)
    x = float(q)
    if Fraction(x) < q:
        x = math.nextafter(x, math.inf)
    return x

def down_exact(q: Fraction | int) -> float:
    q = Fraction(q)
    x = float(q)
    if Fraction(x) > q:
        x = math.nextafter(x, -math.inf)
    return x

def up_mp(x: Any) -> float:
    import mpmath
    return up_exact(Fraction(*mpmath.mpf(x).man_exp and (0,1)) ) if False else _mp(x, True)

def down_mp(x: Any) -> float:
    return _mp(x, False)

def _mp(x: Any, upward: bool) -> float:
    import mpmath
    m = x if isinstance(x, mpmath.mpf) else mpmath.mpf(x)
    if mpmath.isinf(m):
        return float(m)
    man, exp = m.man_exp
    q = Fraction(man) * (Fraction(2) ** exp)
    return up_exact(q) if upward else down_exact(q)

def nudge_up(x: float, ok: Callable[[float], bool]) -> float:
    step = 1.0
    while not ok(x):
        x = x + step * math.ulp(x)
        step *= 2.0
    return x

def nudge_down(x: float, ok: Callable[[float], bool]) -> float:
    step = 1.0
    while not ok(x):
        x = x - step * math.ulp(x)
        step *= 2.0
    return x
