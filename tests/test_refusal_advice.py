"""Refusals under a mix name only filters that would admit the round (issue 42).

The issue's case: DP-SGD under PLDFilter(2, 1e-5) at q = 0.01, σ = 1, then a step at q = 0.02.
RDPFilter (δ split over 12 orders), UnifiedFilter and GaussianDPFilter (no subsampling) admit
no such step at this budget, so they are not named; RenyiFilter at one order is. A fresh
RDPFilter's refusal quotes 0 spent (in ε_α at its best order), not the split's tail.
"""

from __future__ import annotations

import numpy as np
import pytest

import expost
from expost import BudgetExceeded, InvalidParameter, PLDFilter, PrivateSession
from expost.filters import GaussianDPFilter, RDPFilter, SubsampledGaussianCost, UnifiedFilter

STEP = SubsampledGaussianCost.from_sigma(1.0, 0.01)
WIDER = SubsampledGaussianCost.from_sigma(1.0, 0.02)


def test_a_changed_rate_names_only_filters_that_admit_it() -> None:
    s = PrivateSession(PLDFilter(2.0, 1e-5), np.random.default_rng(0))
    b = s.poisson_batch(1_000, sampling_prob=0.01, sigma=1.0, sensitivity=1.0)
    b.release(np.zeros((b.indices.size, 2)))
    with pytest.raises(InvalidParameter) as info:
        s.poisson_batch(1_000, sampling_prob=0.02, sigma=1.0, sensitivity=1.0)
    text = str(info.value)
    advice = text.split("THEORY §12)")[1]
    assert "RenyiFilter.for_rounds(2, 1e-05, cost)" in advice
    for blind in (RDPFilter.from_dp(2.0, 1e-5), UnifiedFilter.from_dp(2.0, 1e-5)):
        with pytest.raises(BudgetExceeded):  # they cannot even take the first step
            blind.spend(STEP)
    for name in ("RDPFilter.", "UnifiedFilter.", "GaussianDPFilter."):
        assert name not in advice
    assert "ignore the sampling" in advice
    assert "rho = 0.5" in advice
    assert s.filter.rounds == 1  # nothing charged


def test_the_named_count_is_what_the_filter_admits() -> None:
    f = PLDFilter(2.0, 1e-5).spend(STEP)
    with pytest.raises(InvalidParameter) as info:
        f.check(WIDER)
    count = int(str(info.value).split("(α=")[1].split(": ")[1].split(" more")[0])
    renyi = expost.RenyiFilter.for_rounds(2.0, 1e-5, WIDER).spend(STEP)
    for _ in range(count):
        renyi = renyi.spend(WIDER)
    with pytest.raises(BudgetExceeded):
        renyi.spend(WIDER)


def test_gaussian_dp_filter_admits_nothing_here() -> None:
    with pytest.raises(BudgetExceeded):
        GaussianDPFilter.from_dp(2.0, 1e-5).spend(WIDER)


def test_a_fresh_rdp_filter_quotes_nothing_spent() -> None:
    with pytest.raises(BudgetExceeded) as info:
        RDPFilter.from_dp(2.0, 1e-5).check(STEP)
    err = info.value
    assert err.spent == 0.0
    assert err.unit == "eps_alpha(α=128)"
    assert err.requested > err.remaining
    assert "log(k/delta)/(α−1)" in str(err)


def test_every_filter_the_docs_name_is_importable_from_expost() -> None:
    import re
    from pathlib import Path

    docs = Path(__file__).resolve().parents[1] / "docs"
    names = set()
    for page in docs.glob("**/*.md"):
        names |= set(re.findall(r"\b([A-Z][A-Za-z]*Filter)\b", page.read_text(encoding="utf-8")))
    assert "RDPFilter" in names
    bases = {"BrownianPricedFilter"}  # an abstract base the docs explain, not a filter to build
    missing = {n for n in names if not hasattr(expost, n)} - bases
    assert missing == set()
