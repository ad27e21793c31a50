"""Data for private learning: scikit-learn's bundled classification sets and a seeded synthetic one.

Rows are prepared row by row from public constants only, so that no statistic of the rows is
released unpriced. Breast cancer and wine (positive, right-skewed measurements): each column x
becomes log(x + c) with c = 5 % of its documented maximum, mapped to [−1, 1] by the documented
range (`RANGES`: the Min/Max tables of scikit-learn's descriptions, UCI) and clipped there.
Digits: the pooled pixels divided by their range 64, minus the row's own mean (a per-row
centring). Synthetic sets: as generated (centred by construction). Then each row is scaled to
unit ℓ2 norm and a constant 1 is appended as the intercept feature, so every row has norm
<= √2. Labels are class indices 0..K−1. The split into training, validation and test rows
is a permutation drawn from the split's seed alone (`split`): training rows feed the DP-SGD
steps, validation rows the private stopping check, test rows only the report.
"""

from __future__ import annotations

import importlib

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import generator, positive_int
from expost.apps.data import normalise_rows
from expost.errors import InvalidParameter

__all__ = ["DATASETS", "RANGES", "LabelledRows", "Split", "load_rows", "split", "synthetic_rows"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

DATASETS = ("breast_cancer", "digits", "wine", "synthetic", "synthetic_large")
"""Data sets by name: three bundled with scikit-learn (no network) and two synthetic ones
(4,000 and 200,000 rows)."""

_BREAST_CANCER_RANGES = (
    (6.981, 28.11), (9.71, 39.28), (43.79, 188.5), (143.5, 2501.0), (0.053, 0.163),
    (0.019, 0.345), (0.0, 0.427), (0.0, 0.201), (0.106, 0.304), (0.05, 0.097),
    (0.112, 2.873), (0.36, 4.885), (0.757, 21.98), (6.802, 542.2), (0.002, 0.031),
    (0.002, 0.135), (0.0, 0.396), (0.0, 0.053), (0.008, 0.079), (0.001, 0.03),
    (7.93, 36.04), (12.02, 49.54), (50.41, 251.2), (185.2, 4254.0), (0.071, 0.223),
    (0.027, 1.058), (0.0, 1.252), (0.0, 0.291), (0.156, 0.664), (0.055, 0.208),
)  # fmt: skip
_WINE_RANGES = (
    (11.0, 14.8), (0.74, 5.80), (1.36, 3.23), (10.6, 30.0), (70.0, 162.0), (0.98, 3.88),
    (0.34, 5.08), (0.13, 0.66), (0.41, 3.58), (1.3, 13.0), (0.48, 1.71), (1.27, 4.00),
    (278.0, 1680.0),
)  # fmt: skip
RANGES: dict[str, tuple[tuple[float, float], ...]] = {
    "breast_cancer": _BREAST_CANCER_RANGES,
    "wine": _WINE_RANGES,
}
"""Each column's documented (min, max): scikit-learn's ``DESCR`` summary tables (UCI) for breast
cancer and wine. Public constants, used in place of any statistic of the rows
(docs/apps/dp-sgd.md says what that choice assumes)."""
_DIGITS_RANGE = 64.0  # a pooled cell is the sum of four pixels in 0..16

_SYNTHETIC_N, _SYNTHETIC_D, _SYNTHETIC_SEED = 4_000, 20, 20_261_127
_LARGE_N, _LARGE_SEED = 200_000, 20_261_128
_SHARES = (0.6, 0.2)  # training and validation shares; the rest is the test set


def _features(value: object) -> FloatArray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 1 or not np.all(np.isfinite(arr)):
        raise InvalidParameter("features", np.shape(arr), "must be a finite (n, d) array, n >= 1")
    arr.flags.writeable = False
    return arr


def _labels(value: object) -> IntArray:
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.dtype.kind not in "iu" or arr.size == 0 or arr.min() < 0:
        raise InvalidParameter("labels", np.shape(arr), "must be a 1-d array of class indices >= 0")
    out: IntArray = arr.astype(np.intp)
    out.flags.writeable = False
    return out


@frozen(eq=False)
class LabelledRows:
    """Rows (n, d) and their class indices (n,) in 0..classes−1."""

    features: FloatArray = field(converter=_features)
    labels: IntArray = field(converter=_labels)
    classes: int

    def __attrs_post_init__(self) -> None:
        if self.labels.shape != (self.features.shape[0],):
            raise InvalidParameter(
                "labels", self.labels.shape, f"must have shape ({self.features.shape[0]},)"
            )
        if self.classes < 2 or int(self.labels.max()) >= self.classes:
            raise InvalidParameter("classes", self.classes, "must be >= 2 and exceed every label")

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.features.shape[0])

    @property
    def d(self) -> int:
        """Number of features (the intercept included)."""
        return int(self.features.shape[1])

    def rows(self, index: IntArray) -> LabelledRows:
        """The rows at ``index``."""
        return LabelledRows(self.features[index], self.labels[index], self.classes)


@frozen(eq=False)
class Split:
    """Training, validation and test rows of one data set, split by one seed."""

    name: str
    train: LabelledRows
    validation: LabelledRows
    test: LabelledRows


def _log_range(x: FloatArray, ranges: tuple[tuple[float, float], ...]) -> FloatArray:
    """log(x + c), c = 5 % of the documented max, mapped by the documented range to [−1, 1]."""
    low, high = np.array(ranges, dtype=np.float64).T
    shift = 0.05 * high
    lo, hi = np.log(low + shift), np.log(high + shift)
    out: FloatArray = np.clip(
        2.0 * (np.log(np.maximum(x, 0.0) + shift) - lo) / (hi - lo) - 1.0, -1.0, 1.0
    )
    return out


def _prepared(x: FloatArray) -> FloatArray:
    """Scale each (already transformed) row to unit norm, append the intercept 1."""
    rows = normalise_rows(x)
    out: FloatArray = np.column_stack([rows, np.ones(rows.shape[0])])
    return out


def synthetic_rows(
    n: int = _SYNTHETIC_N, d: int = _SYNTHETIC_D, seed: int = _SYNTHETIC_SEED
) -> LabelledRows:
    """Two overlapping Gaussian classes, fixed by a constant seed (the same rows every call).

    x = y'·0.25·w + g with y' = ±1 equally likely, w a random unit vector and g ~ N(0, I/d):
    the non-private logistic regression reaches about 86 % test accuracy.
    """
    rng = np.random.default_rng(seed)
    size, dim = positive_int("n", n), positive_int("d", d)
    w = rng.standard_normal(dim)
    w /= np.linalg.norm(w)
    y = rng.integers(0, 2, size=size)
    raw = rng.standard_normal((size, dim)) / np.sqrt(dim) + 0.25 * (2.0 * y - 1.0)[:, None] * w
    return LabelledRows(_prepared(raw), y, 2)


def load_rows(name: str) -> LabelledRows:
    """The data set ``name`` (one of `DATASETS`), prepared as the module docstring says.

    The bundled sets need scikit-learn (the ``erm`` extra), imported only here. ``digits``' 8×8
    images are pooled 2×2 (16 features), which keeps each DP-SGD step cheap.
    """
    if name not in DATASETS:
        raise InvalidParameter("dataset", name, f"must be one of {list(DATASETS)}")
    if name == "synthetic":
        return synthetic_rows()
    if name == "synthetic_large":  # the same law, 200,000 rows: DP-SGD steps at batch cost
        return synthetic_rows(_LARGE_N, _SYNTHETIC_D, _LARGE_SEED)
    try:
        datasets = importlib.import_module("sklearn.datasets")
    except ImportError as exc:
        raise ImportError(
            f"the data set {name!r} ships with scikit-learn: pip install 'expost[erm]'"
        ) from exc
    x, t = getattr(datasets, f"load_{name}")(return_X_y=True)
    features = np.asarray(x, dtype=np.float64)
    if name == "digits":  # 8×8 images pooled 2×2 to 4×4 (sums): a quarter of the work per step
        pooled = features.reshape(-1, 4, 2, 4, 2).sum(axis=(2, 4)).reshape(-1, 16) / _DIGITS_RANGE
        features = pooled - pooled.mean(axis=1, keepdims=True)
    else:
        features = _log_range(features, RANGES[name])
    labels = np.asarray(t, dtype=np.intp)
    return LabelledRows(_prepared(features), labels, int(labels.max()) + 1)


def split(rows: LabelledRows, name: str, rng: np.random.Generator) -> Split:
    """A random 60/20/20 split into training, validation and test rows (``rng`` draws it)."""
    order = generator(rng).permutation(rows.n)
    a = round(_SHARES[0] * rows.n)
    b = a + round(_SHARES[1] * rows.n)
    return Split(name, rows.rows(order[:a]), rows.rows(order[a:b]), rows.rows(order[b:]))
