"""`max_rounds` within 1% of the exact count at sampling rates from 1e-4 to 1 (issue 40 item 7).

For each pair and budget the count K comes with two certificates computed here: its own upper
bound on δ after K rounds is within the budget (so K <= the exact count K*), and the certified
lower bound on δ (the optimistic side of `delta_bracket`) after some k'' in (K, K/0.99 + 1] rounds
exceeds the budget (so K* < k'', hence K >= 0.99·K*). k'' keeps only the top 8 binary digits of
⌊K/0.99⌋ + 1 (a power far below the grid costs the lower side up to one grid step: docs/pld.md,
"Counting many rounds"). Planted twins: a count 2% too high fails its own upper bound, and a
claimed ceiling 2% below K cannot be proven by the lower side. Cross-check: prv-accountant's
certified lower bound at K is within the budget where it reaches the count.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from expost.pld import PrivacyLossDistribution, compose_rounds, max_rounds

PLD = PrivacyLossDistribution
EPS = 2.0


def _probe(k: int) -> int:
    """A round count k'' in (k, k/0.99 + 1] with at most 8 significant binary digits."""
    top = int(k / 0.99) + 1
    shift = max(0, top.bit_length() - 8)
    return max(k + 1, (top >> shift) << shift)


CASES: list[tuple[str, Callable[[], PLD], float]] = [
    ("gauss1-q1e-4", lambda: PLD.gaussian(1.0, sampling_prob=1e-4), 1e-5),
    ("gauss1-q1e-3", lambda: PLD.gaussian(1.0, sampling_prob=1e-3), 1e-5),
    ("gauss1-q1e-2", lambda: PLD.gaussian(1.0, sampling_prob=1e-2), 1e-5),
    ("gauss1-q0.5", lambda: PLD.gaussian(1.0, sampling_prob=0.5), 1e-5),
    ("gauss2-q1e-4", lambda: PLD.gaussian(2.0, sampling_prob=1e-4), 1e-5),
    ("gauss2-q0.1", lambda: PLD.gaussian(2.0, sampling_prob=0.1), 1e-5),
    ("gauss2-q1", lambda: PLD.gaussian(2.0), 1e-5),
    ("gauss2-q1e-3-1e-8", lambda: PLD.gaussian(2.0, sampling_prob=1e-3), 1e-8),
    ("gauss2-q1e-2-1e-8", lambda: PLD.gaussian(2.0, sampling_prob=1e-2), 1e-8),
    ("gauss2-q3e-4-1e-8", lambda: PLD.gaussian(2.0, sampling_prob=3e-4), 1e-8),
    ("laplace1-q1e-3", lambda: PLD.laplace(1.0, sampling_prob=1e-3), 1e-5),
    ("laplace1-q1e-2", lambda: PLD.laplace(1.0, sampling_prob=1e-2), 1e-5),
    ("laplace1-q0.1", lambda: PLD.laplace(1.0, sampling_prob=0.1), 1e-5),
    ("laplace1-q1", lambda: PLD.laplace(1.0), 1e-8),
]


@pytest.mark.parametrize(("make", "delta"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_count_within_one_percent_of_the_exact_count(make: Callable[[], PLD], delta: float) -> None:
    pld = make()
    k = max_rounds(pld, EPS, delta)
    if k:  # K <= K*: its own upper bound fits
        assert compose_rounds(pld, k).delta(EPS) <= delta
    probe = _probe(k)
    low, high = compose_rounds(pld, probe).delta_bracket(EPS)
    assert low > delta  # K* < probe <= K/0.99 + 1
    assert low <= high


def test_a_count_too_high_and_a_ceiling_too_low_are_rejected() -> None:
    pld = PLD.gaussian(1.0, sampling_prob=1e-3)
    k = max_rounds(pld, EPS, 1e-5)
    assert compose_rounds(pld, k * 102 // 100).delta(EPS) > 1e-5  # twin: 2% over the count
    low, _ = compose_rounds(pld, _probe(k * 98 // 100)).delta_bracket(EPS)
    assert low <= 1e-5  # twin: a ceiling 2% under the count is not provable


def test_counts_reach_past_a_million_rounds_and_stop_at_the_limit() -> None:
    pld = PLD.gaussian(2.0, sampling_prob=1e-4)
    assert max_rounds(pld, EPS, 1e-5) > 1 << 26
    assert max_rounds(pld, EPS, 1e-5, limit=1 << 20) == 1 << 20


def test_probe_is_above_the_count_and_within_one_percent() -> None:
    for k in (0, 1, 10, 98, 99, 357, 143_818, 14_606_933, 88_426_056):
        p = _probe(k)
        assert k < p <= k / 0.99 + 1


def test_coarsened_keeps_both_sides_and_refuses_a_bad_factor() -> None:
    from expost.errors import InvalidParameter

    pld = PLD.gaussian(1.0, sampling_prob=0.01).self_compose(64)
    fine_low, fine_high = pld.delta_bracket(0.5)
    low, high = pld.coarsened(4).delta_bracket(0.5)
    # coarsening only widens the bracket (up to the float margins of delta and delta_lower,
    # which grow with the array's length: relative 2u per point)
    assert low <= fine_low * (1.0 + 1e-9)
    assert high >= fine_high * (1.0 - 1e-9)
    assert high <= fine_high * 1.01
    with pytest.raises(InvalidParameter, match="factor"):
        pld.coarsened(3)


def test_prv_accountant_lower_bound_is_within_the_budget_at_our_count() -> None:
    prv = pytest.importorskip("prv_accountant")
    rv = pytest.importorskip("prv_accountant.privacy_random_variables")
    for q, sigma in ((1e-2, 1.0), (1e-2, 2.0)):
        k = max_rounds(PLD.gaussian(sigma, sampling_prob=q), EPS, 1e-5)
        acc = prv.PRVAccountant(
            prvs=[rv.PoissonSubsampledGaussianMechanism(q, sigma)],
            max_self_compositions=[_probe(k)],
            eps_error=0.01,
            delta_error=1e-9,
        )
        lower, _, _ = acc.compute_delta(epsilon=EPS, num_self_compositions=[k])
        assert lower <= 1e-5  # our count is not above the exact count by prv's certificate
        _, _, upper = acc.compute_delta(epsilon=EPS, num_self_compositions=[_probe(k)])
        assert upper > 1e-5  # and prv agrees the exact count is below our probe
