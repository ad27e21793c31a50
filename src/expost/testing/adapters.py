"""Other libraries' mechanisms as callables ``(dataset, rng) -> output`` for `audit_mechanism`.

- `from_opendp`: an OpenDP measurement (``opendp.measurements.make_laplace`` …); extra
  ``pip install 'expost[opendp]'``.
- `from_diffprivlib`: a diffprivlib mechanism (``diffprivlib.mechanisms.Laplace(...)``), called
  through its ``randomise``; extra ``pip install 'expost[diffprivlib]'`` (diffprivlib 0.6.6
  needs scikit-learn < 1.7).

Both libraries draw their own randomness (OpenDP from the system's secure generator), so the
``rng`` passed in is ignored: the audit stays valid (every output is a fresh draw) but its
outputs, and so its verdict, are not reproducible from the seed. Neither has a ``batch``: every
output is one call (an OpenDP Laplace measurement takes about 65 µs), so at the default 2·10⁵
samples per side an audit takes about 40 s for one pair and minutes for many; pass a smaller
``samples`` (8,000–20,000) or a ``budget_s``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
from attrs import frozen

from expost.errors import InvalidParameter

__all__ = ["DiffprivlibMechanism", "OpenDPMechanism", "from_diffprivlib", "from_opendp"]

Query = Callable[[Any], Any]


def _require(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{module} is needed here: pip install 'expost[{extra}]'") from exc


def _identity(dataset: Any) -> Any:
    return dataset


@frozen
class OpenDPMechanism:
    """``measurement(query(dataset))``; the rng is ignored (module docstring)."""

    measurement: Any
    query: Query = _identity

    def __call__(self, dataset: Any, rng: np.random.Generator) -> Any:
        return self.measurement(self.query(dataset))


@frozen
class DiffprivlibMechanism:
    """``mechanism.randomise(query(dataset))``; the rng is ignored (module docstring)."""

    mechanism: Any
    query: Query = _identity

    def __call__(self, dataset: Any, rng: np.random.Generator) -> Any:
        return self.mechanism.randomise(self.query(dataset))


def _query(query: Query | None) -> Query:
    if query is None:
        return _identity
    if not callable(query):
        raise InvalidParameter("query", query, "must be callable as query(dataset) or None")
    return query


def from_opendp(measurement: Any, query: Query | None = None) -> OpenDPMechanism:
    """Wrap an OpenDP ``Measurement``; ``query`` maps a dataset to the measurement's input."""
    opendp = _require("opendp.mod", "opendp")
    if not isinstance(measurement, opendp.Measurement):
        raise InvalidParameter("measurement", measurement, "must be an opendp Measurement")
    return OpenDPMechanism(measurement, _query(query))


def from_diffprivlib(mechanism: Any, query: Query | None = None) -> DiffprivlibMechanism:
    """Wrap a diffprivlib mechanism (it has ``randomise``); ``query`` maps a dataset to its input."""
    base = _require("diffprivlib.mechanisms.base", "diffprivlib")
    if not isinstance(mechanism, base.DPMechanism):
        raise InvalidParameter("mechanism", mechanism, "must be a diffprivlib DPMechanism")
    return DiffprivlibMechanism(mechanism, _query(query))
