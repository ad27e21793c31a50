"""Accuracy-first DP-SGD's step on 10⁵ rows: Poisson batches against every row's gradient.

One DP-SGD step of the learner (`expost.apps.learning.sgd.Trainer`) on the training rows of
`synthetic_large` (120,000 rows, 21 features, q = 0.002: an expected batch of 240), through
``session.poisson_batch`` (gradients of the batch only, issue 42) and, in the same run, the way
issue 36 did it: the per-example gradients of *every* row handed to
``session.subsampled_gaussian``. Median seconds per step over ``--steps`` steps each; the ratio
comes last.

Run: ``python benchmarks/bench_dp_sgd_batches.py [--steps N]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import median_seconds

from expost import PrivateSession
from expost.apps.learning.data import load_rows, split
from expost.apps.learning.models import LogisticRegression
from expost.apps.learning.setup import SETUPS
from expost.apps.learning.sgd import Trainer
from expost.filters import ZCDPFilter

__all__ = ["main"]


def main() -> None:
    """Time both steps and print the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    steps = parser.parse_args().steps
    setup = SETUPS["synthetic_large"]
    data = split(load_rows("synthetic_large"), "synthetic_large", np.random.default_rng(0))
    config = setup.config(setup.sigma)
    session = PrivateSession(ZCDPFilter(1e12), np.random.default_rng(1))
    trainer = Trainer(LogisticRegression(), data.train, config)

    def batch_step() -> None:
        trainer.run(session, 1)

    def every_row_step() -> None:
        grads = trainer.model.gradients(trainer.params, data.train)
        session.subsampled_gaussian(grads, config.clip, config.sigma, config.sampling_prob)

    batch = median_seconds(batch_step, steps)
    full = median_seconds(every_row_step, steps)
    print(f"rows {data.train.n:,}, q = {config.sampling_prob:g}, features {data.train.d}")
    print(f"poisson_batch step:       {batch * 1e3:8.2f} ms")
    print(f"every row's gradient:     {full * 1e3:8.2f} ms")
    print(f"ratio (every row / batch): {full / batch:.1f}x")


if __name__ == "__main__":
    main()
