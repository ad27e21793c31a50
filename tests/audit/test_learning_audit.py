"""The supermartingale audit of accuracy-first DP-SGD at its own stop, and its planted twin."""

from __future__ import annotations

import numpy as np

from expost.audit.claims import EValueClaim
from expost.audit.core import ALPHA_AUDIT
from expost.audit.paper.dp_sgd import dp_sgd_rdp_samples, dp_sgd_run
from expost.audit.registry import PAPER, default_registry

N = 2_000  # runs per check: a betting test at the audits' level; the twin's mean is about 4


def test_ex_post_rdp_holds_at_the_learners_stop() -> None:
    samples = dp_sgd_rdp_samples(2.0, False, N, np.random.default_rng(11))
    verdict = EValueClaim(1.0).verdict(samples, ALPHA_AUDIT)
    assert not verdict.refuted, verdict


def test_forgetting_the_checks_is_refuted() -> None:
    samples = dp_sgd_rdp_samples(2.0, True, N, np.random.default_rng(12))
    verdict = EValueClaim(1.0).verdict(samples, ALPHA_AUDIT)
    assert verdict.refuted, verdict


def test_the_stop_and_the_check_cost_depend_on_the_data() -> None:
    """The audited rule stops at different units with different check times in different runs
    (else it audits nothing beyond a fixed composition)."""
    rng = np.random.default_rng(13)
    outcomes = {dp_sgd_run(rng)[1:] for _ in range(200)}
    assert len({done for done, _ in outcomes}) >= 3
    assert len({spent for _, spent in outcomes}) >= 4


def test_registered_in_the_paper_suite() -> None:
    names = [a.name for a in default_registry().suite(PAPER)]
    assert "dp-sgd/accuracy-first/alpha-2" in names
    assert "dp-sgd/accuracy-first/grid" in names
