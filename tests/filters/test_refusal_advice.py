"""Refusals under a mix name only filters that would admit the round (issue 42).

The issue's case: DP-SGD under PLDFilter(2, 1e-5) at q = 0.01, σ = 1, then a step at q = 0.02.
RDPFilter (δ split over 12 orders), UnifiedFilter and GaussianDPFilter (no subsampling) admit
no such step at this budget, so they are not named; RenyiFilter at one order is. A fresh
RDPFilter's refusal says that what it has spent before any round is the split of δ.
"""

from __future__ import annotations

import math

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
    count = int(str(info.value).split("(α=")[1].split(": ")[1].split(" more")[0].replace(",", ""))
    renyi = expost.RenyiFilter.for_rounds(2.0, 1e-5, WIDER).spend(STEP)
    for _ in range(count):
        renyi = renyi.spend(WIDER)
    with pytest.raises(BudgetExceeded):
        renyi.spend(WIDER)


def test_gaussian_dp_filter_admits_nothing_here() -> None:
    with pytest.raises(BudgetExceeded):
        GaussianDPFilter.from_dp(2.0, 1e-5).spend(WIDER)


def test_a_fresh_rdp_filter_has_spent_nothing_at_its_best_order() -> None:
    """Before any step the rounds' Σ ε_α is 0 at α = 128 (the order where the most is left):
    the refusal quotes that, the step's ε_α there and B_α − 0; the detail gives B_α and the
    session's one-number spent, the split of delta over 12 orders (0.1102)."""
    f = RDPFilter.from_dp(2.0, 1e-5)
    with pytest.raises(BudgetExceeded) as info:
        f.check(STEP)
    err = info.value
    tail = math.log(12 / 1e-5) / (128 - 1)
    assert f.best_order == 128
    assert (err.spent, err.remaining, err.unit) == (0.0, f.budgets[-1], "eps_alpha")
    assert abs(f.spent - tail) < 1e-12
    text = str(err)
    assert f"B_α={f.budgets[-1]!r}" in text
    assert f"{f.spent!r}" in text
    assert "k = 12 orders" in text
    assert err.requested == f.prices(STEP)[-1] > err.remaining


def test_every_filter_the_docs_name_is_importable_from_expost() -> None:
    import re
    from pathlib import Path

    docs = Path(__file__).resolve().parents[2] / "docs"
    names = set()
    for page in docs.glob("**/*.md"):
        names |= set(re.findall(r"\b([A-Z][A-Za-z]*Filter)\b", page.read_text(encoding="utf-8")))
    assert "RDPFilter" in names
    bases = {"BrownianPricedFilter"}  # an abstract base the docs explain, not a filter to build
    missing = {n for n in names if not hasattr(expost, n)} - bases
    assert missing == set()
