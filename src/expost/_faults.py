"""Where and what the fault of a refused input is, without its values (issue 41, item 3).

A check that refuses an array or a private input (`expost.errors.refused`) names the argument,
its type, shape and dtype, and the index and kind of the first fault: "entry 2 is inf",
"entry (1, 0) is NaN", "entry 1 is ragged", "entry 2 is a str" — never a value.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from expost.errors import describe

__all__ = ["fault", "first", "kind", "nonfinite", "where"]


def where(index: tuple[int, ...]) -> str:
    """An entry by its index: "entry 2", "entry (1, 0)", "the value" (a scalar)."""
    return "the value" if not index else f"entry {index[0] if len(index) == 1 else index}"


def kind(x: object) -> str:
    """What a refused entry is, without its value: "NaN", "inf", "-inf", "a non-integral
    float" (where integers are asked: a finite float is refused nowhere else), else its type."""
    if isinstance(x, float | np.floating) and math.isnan(x):
        return "NaN"
    if isinstance(x, float | np.floating) and math.isinf(x):
        return "-inf" if x < 0 else "inf"
    return "a non-integral float" if isinstance(x, float | np.floating) else describe(x)


def first(mask: npt.NDArray[np.bool_]) -> str:
    """Where the first True of ``mask`` is."""
    return where(tuple(int(i) for i in np.argwhere(mask)[0]))


def nonfinite(arr: npt.NDArray[np.float64]) -> str:
    """The first NaN or infinity of a float array: where, and which."""
    index = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
    return f"{where(index)} is {kind(arr[index])}"


def fault(value: object, ok: Callable[[object], bool], index: tuple[int, ...] = ()) -> str:
    """The first entry of a nested sequence that ``ok`` refuses, or its first ragged row."""
    if not (isinstance(value, list | tuple) or (isinstance(value, np.ndarray) and value.ndim > 0)):
        return "" if ok(value) else f"{where(index)} is {kind(value)}"
    sizes = [len(x) if isinstance(x, list | tuple) or np.ndim(x) else -1 for x in value]
    for i, item in enumerate(value):
        if sizes[i] != sizes[0]:
            return f"{where((*index, i))} is ragged (its length is not entry 0's)"
        if found := fault(item, ok, (*index, i)):
            return found
    return ""
