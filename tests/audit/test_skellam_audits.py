"""The Skellam boundary audits (THEORY §10): they pass, and the mixture weights are right."""

from __future__ import annotations

import math

import numpy as np

from expost.audit import default_registry, run_audits
from expost.audit.deploy.skellam import _mixture_runs
from expost.audit.paper.skellam import _paper_runs
from expost.audit.paper.skellam import boundary_grid as _grid
from expost.audit.registry import DEPLOY_QUICK, QUICK
from expost.skellam.boundary import SkellamPrivacyBoundary
from tests.stats import z_two_sided


def test_quick_and_deploy_quick_audits_pass_and_refute_their_twins() -> None:
    audits = [
        a
        for suite in (QUICK, DEPLOY_QUICK)
        for a in default_registry().suite(suite)
        if a.name.startswith("skellam-boundary/")
    ]
    assert len(audits) == 2
    report = run_audits(audits, seed=0)
    assert report.passed, report.results


def _agree(psi: SkellamPrivacyBoundary, scale_weights: float) -> bool:
    """Importance-sampled crossing probability vs plain Monte Carlo, two-sided z-test."""
    times = _grid(psi)
    n = 40_000
    plain = _paper_runs(psi, times, "uniform", n, np.random.default_rng(11)).astype(float)
    weighted = scale_weights * _mixture_runs(psi, psi, times, n, np.random.default_rng(12))
    se = math.sqrt(plain.var() / n + weighted.var() / n)
    return bool(abs(plain.mean() - weighted.mean()) <= z_two_sided() * se)


def test_mixture_weights_are_dp_dq() -> None:
    psi = SkellamPrivacyBoundary.tuned_for(1.0, 0.05)
    assert _agree(psi, 1.0)
    assert not _agree(psi, 1.5)  # planted: weights 50% too large
