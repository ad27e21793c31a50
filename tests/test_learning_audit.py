"""The supermartingale audit of accuracy-first DP-SGD at its own stop, and its planted twin."""

from __future__ import annotations

import numpy as np

from expost.audit.claims import EValueClaim
from expost.audit.core import ALPHA_AUDIT
from expost.audit.paper.dp_sgd import SCHEDULE, dp_sgd_rdp_samples
from expost.audit.registry import PAPER, default_registry

N = 3_000  # runs per check: a 1e-6-level betting test; the twin's mean is about e^(ε_α/2) >> 1


def test_ex_post_rdp_holds_at_the_learners_stop() -> None:
    samples = dp_sgd_rdp_samples(2.0, False, N, np.random.default_rng(11))
    verdict = EValueClaim(1.0).verdict(samples, ALPHA_AUDIT)
    assert not verdict.refuted, verdict


def test_the_halved_bound_is_refuted() -> None:
    samples = dp_sgd_rdp_samples(2.0, True, N, np.random.default_rng(12))
    verdict = EValueClaim(1.0).verdict(samples, ALPHA_AUDIT)
    assert verdict.refuted, verdict


def test_the_stop_depends_on_the_data() -> None:
    """The audited rule stops at different units in different runs (else it audits nothing
    beyond a fixed composition)."""
    from expost.apps.learning.methods import train_until
    from expost.apps.learning.models import LogisticRegression
    from expost.apps.learning.sgd import CountCheck, SGDConfig, Trainer
    from expost.audit.paper import dp_sgd

    stops = set()
    rng = np.random.default_rng(13)
    for _ in range(200):
        release = dp_sgd._LossRelease(rng)
        trainer = Trainer(LogisticRegression(), dp_sgd._TRAIN, SGDConfig(1.0, 2.0, 0.5, 1.0))
        done, _, _ = train_until(
            trainer, SCHEDULE, CountCheck(1.5), release, dp_sgd._VALIDATION, dp_sgd.TARGET
        )
        stops.add(done)
    assert len(stops) >= 3


def test_registered_in_the_paper_suite() -> None:
    names = [a.name for a in default_registry().suite(PAPER)]
    assert "dp-sgd/accuracy-first/alpha-2" in names
