"""Cross-checks of `expost.pld` against dp-accounting's and prv-accountant's PLDs (issue 35).

Ours is never below prv-accountant's certified lower bound (its ``compute_delta`` returns
(lower, estimate, upper)), and at most 1.05 times dp-accounting's pessimistic (connect-the-dots)
δ where that is >= 1e-10. Skipped when the accountants are absent. Planted twins: our PLD with every
loss moved 0.05 down must fail the lower-bound check, moved 0.05 up the ratio check.
"""

from __future__ import annotations

from typing import Any

import pytest

from expost.pld import PrivacyLossDistribution
from expost.pld.discrete import DiscreteLoss

dp_pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
prv = pytest.importorskip("prv_accountant")
prv_rv = pytest.importorskip("prv_accountant.privacy_random_variables")

PLD = PrivacyLossDistribution
CASES = [
    # (name, ours, dp-accounting, prv random variable, rounds, eps values)
    (
        "gaussian",
        lambda: PLD.gaussian(31.6227766),
        lambda: dp_pld.from_gaussian_mechanism(31.6227766),
        lambda: prv_rv.GaussianMechanism(noise_multiplier=31.6227766),
        1000,
        [1.0, 3.0, 5.0, 6.0],
    ),
    (
        "dp-sgd",
        lambda: PLD.gaussian(1.0, sampling_prob=0.01),
        lambda: dp_pld.from_gaussian_mechanism(1.0, sampling_prob=0.01),
        lambda: prv_rv.PoissonSubsampledGaussianMechanism(0.01, 1.0),
        1000,
        [0.5, 1.0, 2.0, 3.0],
    ),
    (
        "laplace",
        lambda: PLD.laplace(10.0),
        lambda: dp_pld.from_laplace_mechanism(10.0),
        lambda: prv_rv.LaplaceMechanism(0.1),
        300,
        [2.0, 5.0, 8.0, 10.0],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_never_below_prv_lower_bound_and_within_5_percent_of_dp_accounting(
    case: tuple[Any, ...],
) -> None:
    _, ours_f, dp_f, prv_f, k, eps = case
    ours = ours_f().self_compose(k)
    theirs = dp_f().self_compose(k)
    acc = prv.PRVAccountant(
        prvs=[prv_f()],
        max_self_compositions=[k],
        eps_error=0.01,
        delta_error=1e-12,
    )
    got = [ours.delta(e) for e in eps]
    lower = [acc.compute_delta(epsilon=e, num_self_compositions=[k])[0] for e in eps]
    pessimistic = [theirs.get_delta_for_epsilon(e) for e in eps]
    assert all(g >= low for g, low in zip(got, lower, strict=True))
    kept = [(g, p) for g, p in zip(got, pessimistic, strict=True) if p >= 1e-10]
    assert kept
    assert all(g <= 1.05 * p for g, p in kept)
    # planted twins: the losses moved 0.05 down fall under the certified lower bound; moved
    # 0.05 up they exceed 1.05 times dp-accounting's value
    down = [_moved(ours, -0.05, e) for e in eps]
    assert any(d < low for d, low in zip(down, lower, strict=True))
    up = [_moved(ours, 0.05, e) for e in eps]
    assert any(u > 1.05 * p for u, p in zip(up, pessimistic, strict=True) if p >= 1e-10)


def _moved(pld: PrivacyLossDistribution, by: float, eps: float) -> float:
    """Twin: δ(eps) of ``pld`` with every loss moved by ``by`` (whole grid steps)."""
    out = 0.0
    for d in (pld.remove, pld.add):
        steps = round(by / d.h)
        moved = DiscreteLoss(d.h, d.offset + steps, d.masses, d.inf_mass, d.error, d.tail_mass)
        out = max(out, moved.delta(eps))
    return out
