"""Accuracy-first private learning: DP-SGD that stops when a private check says it is good enough.

`data` (scikit-learn's bundled sets and a synthetic one, split by seed), `models` (logistic and
softmax regression, per-example gradients), `sgd` (DP-SGD on the session's Poisson batches; the
Brownian and Gaussian checks), `accounting` (counting filters on a grid of budgets, ex-post
RDP, calibration; THEORY §11–13), `setup` (hyper-parameters per data set), `methods`
(accuracy-first, fixed, doubling, oracle), `experiment` and `figures` (`expost reproduce dp-sgd`).
Docs: docs/apps/dp-sgd.md.
"""

from expost.apps.learning.accounting import (
    DELTA,
    CheckedGrid,
    CountingGrid,
    Unit,
    calibrate_sigma,
    checked_grid,
    counting_grid,
    ex_post_rdp_eps,
)
from expost.apps.learning.data import DATASETS, LabelledRows, Split, load_rows, split
from expost.apps.learning.methods import (
    METHODS,
    Run,
    accuracy_first,
    doubling,
    fixed,
    oracle,
    train_until,
)
from expost.apps.learning.models import LogisticRegression, SoftmaxRegression, model_for
from expost.apps.learning.setup import SETUPS, Setup
from expost.apps.learning.sgd import BrownianCheck, CountCheck, SGDConfig, Trainer

__all__ = [
    "DATASETS",
    "DELTA",
    "METHODS",
    "SETUPS",
    "BrownianCheck",
    "CheckedGrid",
    "CountCheck",
    "CountingGrid",
    "LabelledRows",
    "LogisticRegression",
    "Run",
    "SGDConfig",
    "Setup",
    "SoftmaxRegression",
    "Split",
    "Trainer",
    "Unit",
    "accuracy_first",
    "calibrate_sigma",
    "checked_grid",
    "counting_grid",
    "doubling",
    "ex_post_rdp_eps",
    "fixed",
    "load_rows",
    "model_for",
    "oracle",
    "split",
    "train_until",
]
