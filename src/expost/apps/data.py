"""Data sets for the papers' experiments.

ERM (BNR Sec. 6): seeded synthetic data at the paper's sizes and two small real data sets that ship
inside scikit-learn (optional extra ``erm``; no network). Every row is scaled to unit ℓ2 norm, a
per-row operation that bounds the sensitivities (BNR Sec. 6), never a data-wide maximum.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import os
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import generator, positive, positive_int, validator
from expost.errors import InvalidParameter

__all__ = [
    "BUNDLED",
    "ERMData",
    "load_bundled",
    "normalise_rows",
    "standardise",
    "synthetic_classification",
    "synthetic_regression",
    "synthetic_with_validation",
]

FloatArray = npt.NDArray[np.float64]
Kind = Literal["classification", "regression"]

BUNDLED: dict[str, Kind] = {"breast_cancer": "classification", "diabetes": "regression"}
"""The bundled real data sets by name, with their kind (scikit-learn's ``load_<name>``)."""

_ROW_SLACK = 1e-9  # rows normalised in floating point may exceed norm 1 by a few ulps


def normalise_rows(matrix: npt.ArrayLike) -> FloatArray:
    """Each row divided by its ℓ2 norm (all-zero rows stay zero)."""
    m = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    out: FloatArray = m / np.where(norms > 0.0, norms, 1.0)
    return out


def _rows(value: object, name: str = "features") -> FloatArray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1 or not np.all(np.isfinite(arr)):
        raise InvalidParameter(name, np.shape(arr), "must be a finite (n, d) array, n >= 2")
    return arr


def _vector(value: object, name: str = "targets") -> FloatArray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 1 or not np.all(np.isfinite(arr)):
        raise InvalidParameter(name, np.shape(arr), "must be a finite 1-d array")
    return arr


def _kind(_name: str, value: object) -> None:
    if value not in ("classification", "regression"):
        raise InvalidParameter("kind", value, "must be 'classification' or 'regression'")


@frozen(eq=False)
class ERMData:
    """A data set for BNR Sec. 6: features X (n, d), targets y (n,), a name and a kind.

    Classification: labels y in {−1, +1} and rows of X of ℓ2 norm <= 1. Regression: rows of the
    joint vector (x, y) of ℓ2 norm <= 1, which bounds the covariance statistics (THEORY §7).
    """

    features: FloatArray = field(converter=_rows)
    targets: FloatArray = field(converter=_vector)
    name: str
    kind: Kind = field(validator=validator(_kind))

    def __attrs_post_init__(self) -> None:
        n = self.features.shape[0]
        if self.targets.shape != (n,):
            raise InvalidParameter("targets", self.targets.shape, f"must have shape ({n},)")
        if self.kind == "classification":
            if not np.all(np.abs(self.targets) == 1.0):
                raise InvalidParameter("targets", self.targets, "labels must be −1 or +1")
            rows = self.features
        else:
            rows = np.column_stack([self.features, self.targets])
        if np.any(np.linalg.norm(rows, axis=1) > 1.0 + _ROW_SLACK):
            raise InvalidParameter("features", self.name, "rows must have ℓ2 norm <= 1")
        self.features.flags.writeable = False
        self.targets.flags.writeable = False

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.features.shape[0])

    @property
    def d(self) -> int:
        """Number of features."""
        return int(self.features.shape[1])


def _unit_vector(d: int, rng: np.random.Generator) -> FloatArray:
    w = rng.standard_normal(d)
    out: FloatArray = w / np.linalg.norm(w)
    return out


_N, _CLASSIFICATION_D, _SEPARATION = 10_000, 38, 0.6
_REGRESSION_D, _SIGNAL, _NOISE = 77, 1.5, 0.7


def synthetic_classification(
    rng: np.random.Generator,
    n: int = _N,
    d: int = _CLASSIFICATION_D,
    separation: float = _SEPARATION,
) -> ERMData:
    """Two Gaussian classes at the paper's KDD-99 size (BNR Sec. 6: n = 10,000, d = 38).

    y = ±1 with probability ½; x = normalise(y·separation·w + g) with w a random unit vector and
    g ~ N(0, I/d) (so ‖g‖ ≈ 1). With separation 0.6 the non-private regularised logistic loss
    (λ = 0.05) is about 0.405, just under BNR's target 0.41, as on the paper's data.
    """
    rng = generator(rng)
    n, d = positive_int("n", n), positive_int("d", d)
    s = positive("separation", separation)
    return _classification_rows(_unit_vector(d, rng), n, s, rng)


def _classification_rows(
    w: FloatArray, n: int, separation: float, rng: np.random.Generator
) -> ERMData:
    d = w.size
    y = rng.choice(np.array([-1.0, 1.0]), size=n)
    raw = rng.standard_normal((n, d)) / np.sqrt(d) + separation * y[:, None] * w
    return ERMData(normalise_rows(raw), y, "synthetic", "classification")


def synthetic_regression(
    rng: np.random.Generator,
    n: int = _N,
    d: int = _REGRESSION_D,
    signal: float = _SIGNAL,
    noise: float = _NOISE,
) -> ERMData:
    """A linear model at the paper's Twitter size (BNR Sec. 6: n = 10,000, d = 77).

    z ~ N(0, I_d), y_raw = signal·⟨w, z⟩ + noise·N(0, 1) with w a random unit vector; each row
    (z, y_raw) is normalised to unit ℓ2 norm and split into (x, y). With the defaults the
    non-private ridge loss (λ = 0.05) is about 0.014, under BNR's target 0.025.
    """
    rng = generator(rng)
    n, d = positive_int("n", n), positive_int("d", d)
    a, b = positive("signal", signal), positive("noise", noise)
    return _regression_rows(_unit_vector(d, rng), n, a, b, rng)


def _regression_rows(
    w: FloatArray, n: int, signal: float, noise: float, rng: np.random.Generator
) -> ERMData:
    z = rng.standard_normal((n, w.size))
    y = signal * (z @ w) + noise * rng.standard_normal(n)
    rows = normalise_rows(np.column_stack([z, y]))
    return ERMData(rows[:, :-1], rows[:, -1], "synthetic", "regression")


def synthetic_with_validation(
    kind: Kind, rng: np.random.Generator, validation: int = 10_000
) -> tuple[ERMData, ERMData]:
    """The default synthetic training set of ``kind`` (the very rows `synthetic_classification`
    / `synthetic_regression` draw with their defaults from the same generator) and
    ``validation`` more rows from the same distribution (same direction w), drawn after them:
    a private validation set."""
    rng = generator(rng)
    m = positive_int("validation", validation)
    if kind == "classification":
        w = _unit_vector(_CLASSIFICATION_D, rng)
        train = _classification_rows(w, _N, _SEPARATION, rng)
        return train, _classification_rows(w, m, _SEPARATION, rng)
    if kind == "regression":
        w = _unit_vector(_REGRESSION_D, rng)
        train = _regression_rows(w, _N, _SIGNAL, _NOISE, rng)
        return train, _regression_rows(w, m, _SIGNAL, _NOISE, rng)
    raise InvalidParameter("kind", kind, "must be 'classification' or 'regression'")


def standardise(columns: FloatArray) -> FloatArray:
    """Each column centred and divided by its standard deviation (constant columns: centred)."""
    sd = columns.std(axis=0)
    out: FloatArray = (columns - columns.mean(axis=0)) / np.where(sd > 0.0, sd, 1.0)
    return out


def load_bundled(name: str) -> ERMData:
    """A real data set shipped inside scikit-learn (no network): see `BUNDLED`.

    ``breast_cancer`` (569 × 30, malignant = −1 / benign = +1) for logistic regression and
    ``diabetes`` (442 × 10, disease progression) for ridge regression. Columns are standardised
    (a public preprocessing of the published data set, as the paper's feature encoding is), then
    each row (regression: each joint row (x, y)) is normalised to unit ℓ2 norm.
    """
    if name not in BUNDLED:
        raise InvalidParameter("name", name, f"must be one of {sorted(BUNDLED)}")
    try:
        datasets = importlib.import_module("sklearn.datasets")
    except ImportError as exc:
        raise ImportError(
            f"the bundled data set {name!r} needs scikit-learn: pip install 'expost[erm]'"
        ) from exc
    loaded = getattr(datasets, f"load_{name}")(return_X_y=True)
    x, t = (np.asarray(part, dtype=np.float64) for part in loaded)
    if BUNDLED[name] == "classification":
        return ERMData(
            normalise_rows(standardise(x)), np.where(t == 1, 1.0, -1.0), name, "classification"
        )
    rows = normalise_rows(standardise(np.column_stack([x, t])))
    return ERMData(rows[:, :-1], rows[:, -1], name, "regression")


# ----------------------------------------------------------------------------- histograms (APC Sec. 7)

__all__ += ["load_counts", "zipf_counts", "zipf_probabilities"]


def zipf_probabilities(support: int = 300, exponent: float = 0.75) -> FloatArray:
    """P(k) ∝ k^(−exponent) on {1, …, support} (APC Sec. 7: support 300, exponent 0.75)."""
    m = positive_int("support", support)
    a = positive("exponent", exponent)
    weights = np.arange(1, m + 1, dtype=np.float64) ** -a
    out: FloatArray = weights / weights.sum()
    return out


def zipf_counts(
    rng: np.random.Generator,
    n: int,
    trials: int | None = None,
    support: int = 300,
    exponent: float = 0.75,
) -> FloatArray:
    """The histogram of n Zipf draws (APC Sec. 7): shape (support,), or (trials, support) for
    ``trials`` independent data sets. Each person adds one to one count (ℓ∞ sensitivity 1)."""
    rng = generator(rng)
    size = positive_int("n", n)
    p = zipf_probabilities(support, exponent)
    shape = None if trials is None else positive_int("trials", trials)
    out: FloatArray = rng.multinomial(size, p, size=shape).astype(np.float64)
    return out


def load_counts(path: str | os.PathLike[str]) -> FloatArray:
    """A histogram from a file: JSON (a list of counts or an object label → count) or CSV
    (one count per line, or ``label,count`` lines; a header line is skipped).

    Counts must be finite and >= 0; at least two are needed (the exponential mechanism chooses).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidParameter("counts", str(p), f"cannot be read ({exc.strerror})") from exc
    raw = _json_counts(text, p) if p.suffix.lower() == ".json" else _csv_counts(text, p)
    try:
        counts = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidParameter("counts", str(p), "must hold numbers only") from exc
    if counts.ndim != 1 or counts.size < 2:
        raise InvalidParameter("counts", str(p), "must hold at least two counts")
    if not np.all(np.isfinite(counts)) or np.any(counts < 0.0):
        raise InvalidParameter("counts", str(p), "counts must be finite and >= 0")
    return counts


def _json_counts(text: str, path: Path) -> list[object]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidParameter("counts", str(path), f"is not valid JSON ({exc.msg})") from exc
    if isinstance(data, dict):
        return list(data.values())
    if isinstance(data, list):
        return data
    raise InvalidParameter("counts", str(path), "JSON must be a list or an object of counts")


def _csv_counts(text: str, path: Path) -> list[object]:
    rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
    values: list[object] = []
    for number, row in enumerate(rows):
        cell = row[-1].strip()
        try:
            values.append(float(cell))
        except ValueError:
            if number == 0:  # a header
                continue
            raise InvalidParameter(
                "counts", str(path), f"line {number + 1}: {cell!r} is not a number"
            ) from None
    return values
