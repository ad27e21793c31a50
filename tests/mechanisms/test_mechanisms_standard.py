"""Standard mechanisms (THEORY §2, §3 "Doubling method"): laws, guarantees, losses, bad input.

Statistical checks run at false-alarm level tests.stats.ALPHA (1e-6) with fixed seeds; each
has a planted-bug twin, the same check on a deliberately wrong law, that must be rejected.
Frequency checks test every cell with an exact binomial test at ALPHA/cells (Bonferroni), so
the whole check keeps false-alarm level ALPHA.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import stats as sps

from expost.errors import InvalidParameter, NotAStoppingTime
from expost.filters.costs import BoundedRangeCost, DPCost, GaussianCost
from expost.guarantees import ZCDP, PureDP, compose_zcdp
from expost.loss import GaussianLoss
from expost.mechanisms.additive import GaussianMechanism, LaplaceMechanism
from expost.mechanisms.doubling import DoublingMethod
from expost.mechanisms.exponential import ExponentialMechanism
from expost.stopping import AtIndex, RelativeError, Released
from tests import stats

FloatArray = npt.NDArray[np.float64]

bad_positive = hs.sampled_from([math.nan, math.inf, -math.inf, 0.0, -1.0, -1e-300])


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def frequencies_match(
    draws: npt.ArrayLike, probabilities: Sequence[float] | FloatArray, alpha: float = stats.ALPHA
) -> bool:
    """Do the counts of each outcome 0..m-1 in ``draws`` follow ``probabilities``?

    One exact binomial test per outcome at level alpha/m (Bonferroni); outcomes outside 0..m-1
    count as a failure.
    """
    x = np.ravel(np.asarray(draws))
    p = np.asarray(probabilities, dtype=float)
    if np.any((x < 0) | (x >= p.size)):
        return False
    counts = np.bincount(x, minlength=p.size)
    return all(
        stats.proportion_is_consistent(int(c), x.size, float(q), alpha / p.size)
        for c, q in zip(counts, p, strict=True)
    )


# --- Gaussian and Laplace: laws ----------------------------------------------------------------

N_LAW = 50_000


@pytest.mark.parametrize("value", [3.0, [3.0, -1.5]])
def test_gaussian_outputs_are_normal_around_the_value(value: float | list[float]) -> None:
    m = GaussianMechanism(sensitivity=2.0, rho=0.5)  # σ = 2/sqrt(1) = 2
    assert m.sigma == 2.0
    out = m.run_batch(value, N_LAW, _rng(1))
    v = np.atleast_1d(value)
    assert out.shape == (N_LAW, *np.shape(value))
    columns = out.reshape(N_LAW, -1)
    for j, vj in enumerate(v):
        assert stats.follows(columns[:, j], sps.norm(vj, 2.0).cdf)
        assert not stats.follows(columns[:, j], sps.norm(vj, 1.2 * 2.0).cdf)  # twin: wrong σ


def test_gaussian_sigma_never_adds_less_noise_than_rho_pays() -> None:
    rng = _rng(5)
    raised = 0
    for _ in range(2_000):
        sensitivity, rho = 10.0 ** rng.uniform(-3, 3, size=2)
        m = GaussianMechanism(float(sensitivity), float(rho))
        nearest = m.sensitivity / math.sqrt(2.0 * m.rho)
        exact = Fraction(m.sensitivity) ** 2 / (2 * Fraction(m.rho))  # the σ² that rho pays
        assert Fraction(m.sigma) ** 2 >= exact
        assert m.sigma <= math.nextafter(math.nextafter(nearest, math.inf), math.inf)  # tight
        raised += m.sigma > nearest
    assert raised > 0  # the float quotient alone falls below the exact σ (planted-bug twin)


@pytest.mark.parametrize("value", [-4.0, [-4.0, 10.0]])
def test_laplace_outputs_are_laplace_around_the_value(value: float | list[float]) -> None:
    m = LaplaceMechanism(sensitivity=3.0, eps=1.5)  # b = 2
    assert m.scale == 2.0
    out = m.run_batch(value, N_LAW, _rng(2)).reshape(N_LAW, -1)
    for j, vj in enumerate(np.atleast_1d(value)):
        assert stats.follows(out[:, j], sps.laplace(vj, 2.0).cdf)
        assert not stats.follows(out[:, j], sps.laplace(vj, 1.2 * 2.0).cdf)  # twin: wrong b


N_PAIR = 4_000


@pytest.mark.parametrize(
    ("mechanism", "twin"),
    [
        (GaussianMechanism(1.0, 0.125), GaussianMechanism.from_sigma(1.0, 3.0)),  # σ 2 vs 3
        (LaplaceMechanism(1.0, 0.5), LaplaceMechanism(1.0, 1.0 / 3.0)),  # b 2 vs 3
    ],
)
def test_single_runs_and_batch_have_the_same_law(mechanism: Any, twin: Any) -> None:
    rng = _rng(3)
    single = np.array([float(mechanism.run(1.0, rng)) for _ in range(N_PAIR)])
    batch = mechanism.run_batch(1.0, N_PAIR, _rng(4))
    assert stats.same_law(single, batch)
    assert not stats.same_law(single, twin.run_batch(1.0, N_PAIR, _rng(4)))  # twin


def test_single_runs_are_arrays_shaped_like_the_value() -> None:
    for m in (GaussianMechanism(1.0, 1.0), LaplaceMechanism(1.0, 1.0)):
        assert isinstance(m.run(2.0, _rng(0)), np.ndarray)
        assert m.run(2.0, _rng(0)).shape == ()
        assert m.run([2.0, 3.0], _rng(0)).shape == (2,)
        assert m.run_batch([2.0, 3.0], 4, _rng(0)).shape == (4, 2)


def test_runs_use_only_the_given_generator() -> None:
    m = GaussianMechanism(1.0, 1.0)
    np.testing.assert_array_equal(m.run([1.0, 2.0], _rng(5)), m.run([1.0, 2.0], _rng(5)))
    lap = LaplaceMechanism(1.0, 1.0)
    np.testing.assert_array_equal(lap.run_batch(0.0, 3, _rng(5)), lap.run_batch(0.0, 3, _rng(5)))


# --- Gaussian and Laplace: guarantee and loss ------------------------------------------------


@given(sensitivity=hs.floats(1e-3, 1e3), rho=hs.floats(1e-4, 1e4))
@settings(max_examples=50, deadline=None)
def test_gaussian_guarantee_and_loss_agree(sensitivity: float, rho: float) -> None:
    m = GaussianMechanism(sensitivity, rho)
    assert m.guarantee() == ZCDP(rho)
    assert m.loss() == GaussianLoss(rho)
    assert m.loss().mean == rho
    assert m.loss().renyi(3.0) == pytest.approx(3.0 * rho, rel=1e-12)
    assert m.loss(sensitivity / 2.0).rho == pytest.approx(rho / 4.0, rel=1e-12)
    assert m.loss(2.0 * sensitivity).rho == pytest.approx(
        (2.0 * sensitivity) ** 2 / (2.0 * m.sigma**2), rel=1e-12
    )
    again = GaussianMechanism.from_sigma(sensitivity, m.sigma)
    assert again.rho == pytest.approx(rho, rel=1e-12)


@given(sensitivity=hs.floats(1e-3, 1e3), eps=hs.floats(1e-3, 30.0))
@settings(max_examples=50, deadline=None)
def test_laplace_guarantee_and_loss_agree(sensitivity: float, eps: float) -> None:
    m = LaplaceMechanism(sensitivity, eps)
    assert m.guarantee() == PureDP(eps)
    loss = m.loss()
    assert loss.scale == m.scale
    assert loss.distance == sensitivity
    assert loss.eps == pytest.approx(eps, rel=1e-12)  # the largest loss is eps
    assert loss.tail(loss.eps) == 0.0
    assert loss.tail(loss.eps * (1.0 - 1e-9)) > 0.0
    assert m.loss(sensitivity / 2.0).eps == pytest.approx(eps / 2.0, rel=1e-12)


def test_gaussian_loss_is_the_law_of_the_log_likelihood_ratio_of_its_outputs() -> None:
    # f(x) = 0, f(x') = d: L(y) = log p_x(y) − log p_x'(y) from the normal densities; its law
    # over y = run(f(x)) must be loss(d).
    m, d = GaussianMechanism(2.0, 0.3), 1.5
    y = m.run_batch(0.0, N_LAW, _rng(6))
    law = sps.norm(0.0, m.sigma)
    loss = law.logpdf(y) - law.logpdf(y - d)
    expected = m.loss(d)
    sd = math.sqrt(expected.variance)
    assert stats.follows(loss, sps.norm(expected.mean, sd).cdf)
    wrong = m.loss()  # twin: the loss at the full sensitivity, not at d
    assert not stats.follows(loss, sps.norm(wrong.mean, math.sqrt(wrong.variance)).cdf)


def test_laplace_loss_atom_at_eps_has_mass_one_half() -> None:
    m = LaplaceMechanism(2.0, 0.8)
    y = m.run_batch(0.0, N_LAW, _rng(7))
    d, b = m.sensitivity, m.scale
    loss = (np.abs(y - d) - np.abs(y)) / b
    assert np.all(np.abs(loss) <= m.eps * (1.0 + 1e-12))
    at_top = int(np.count_nonzero(np.isclose(loss, float(m.eps), rtol=1e-12, atol=0.0)))
    assert stats.proportion_is_consistent(at_top, N_LAW, 0.5)  # LaplaceLoss: atom ½ at eps
    assert m.loss().tail(m.eps * (1.0 - 1e-12)) == pytest.approx(0.5, rel=1e-9)
    assert not stats.proportion_is_consistent(at_top, N_LAW, 0.5 * math.exp(-m.eps))  # twin


# --- Exponential mechanism -------------------------------------------------------------------

SCORES = np.array([0.0, 1.0, 2.0, 3.0, 0.5])
N_EM = 200_000


def softmax_by_hand(scores: npt.ArrayLike, eps: float, sensitivity: float) -> FloatArray:
    """exp(eps·u/Δ)/Σ exp(eps·u/Δ), written out without log-sum-exp."""
    w = np.array([math.exp(eps * float(u) / sensitivity) for u in np.ravel(scores)])
    result: FloatArray = w / w.sum()
    return result


@pytest.mark.parametrize("monotone", [True, False])
def test_gumbel_max_selects_with_the_softmax_law(monotone: bool) -> None:
    m = ExponentialMechanism(eps=1.5, monotone=monotone, sensitivity=2.0)
    p = m.selection_probabilities(SCORES)
    np.testing.assert_allclose(p, softmax_by_hand(SCORES, 1.5, 2.0), rtol=1e-12)
    draws = m.run_batch(SCORES, N_EM, _rng(10))
    assert draws.shape == (N_EM,)
    assert frequencies_match(draws, p)
    hot = ExponentialMechanism(eps=0.75, monotone=monotone, sensitivity=2.0)  # Gumbel 2Δ/eps
    assert not frequencies_match(hot.run_batch(SCORES, N_EM, _rng(10)), p)  # twin


def test_single_selections_follow_the_same_law() -> None:
    m = ExponentialMechanism(eps=1.0, monotone=True)
    rng = _rng(11)
    draws = np.array([m.run(SCORES, rng) for _ in range(20_000)])
    assert frequencies_match(draws, m.selection_probabilities(SCORES))
    wrong = ExponentialMechanism(eps=0.5, monotone=True).selection_probabilities(SCORES)
    assert not frequencies_match(draws, wrong)  # twin: wrong temperature


def test_excluded_candidates_are_never_chosen() -> None:
    m = ExponentialMechanism(eps=2.0, monotone=True)
    mask = np.array([True, True, False, False, True])  # the two best excluded
    p = m.selection_probabilities(SCORES, mask)
    np.testing.assert_allclose(p[mask], softmax_by_hand(SCORES[mask], 2.0, 1.0), rtol=1e-12)
    assert np.all(p[~mask] == 0.0)
    draws = m.run_batch(SCORES, N_EM, _rng(12), candidates=mask)
    assert not np.any(np.isin(draws, np.flatnonzero(~mask)))
    assert frequencies_match(draws, p)
    assert not frequencies_match(draws, m.selection_probabilities(SCORES))  # twin: no mask
    rng = _rng(13)
    assert all(m.run(SCORES, rng, candidates=mask) in (0, 1, 4) for _ in range(500))
    only = np.array([False, False, False, False, True])
    assert m.run(SCORES, rng, candidates=only) == 4


def test_per_trial_scores_and_masks() -> None:
    m = ExponentialMechanism(eps=1.0, monotone=False)
    a, b = np.array([0.0, 2.0, 1.0]), np.array([3.0, 0.0, 0.0])
    trials = 100_000
    rows = np.where(np.arange(trials)[:, None] % 2 == 0, a, b)
    mask = np.ones((trials, 3), dtype=bool)
    mask[1::2, 0] = False  # odd trials (scores b) may not pick candidate 0
    draws = m.run_batch(rows, trials, _rng(14), candidates=mask)
    p_a = m.selection_probabilities(a)
    p_b = m.selection_probabilities(b, np.array([False, True, True]))
    np.testing.assert_allclose(m.selection_probabilities(rows, mask)[:2], [p_a, p_b])
    assert frequencies_match(draws[0::2], p_a)
    assert frequencies_match(draws[1::2], p_b)
    assert not frequencies_match(draws[0::2], p_b)  # twin: rows swapped


def test_monotone_flag_sets_the_cost_exactly() -> None:
    eps = 0.1
    mono = ExponentialMechanism(eps, monotone=True)
    general = ExponentialMechanism(eps, monotone=False)
    assert mono.guarantee() == ZCDP(eps**2 / 8.0)
    assert general.guarantee() == ZCDP(eps**2 / 2.0)
    assert mono.dp_guarantee() == PureDP(eps)
    assert general.dp_guarantee() == PureDP(2.0 * eps)
    assert (mono.bounded_range, general.bounded_range) == (eps, 2.0 * eps)
    assert mono.scale == general.scale == 10.0  # the flag changes the cost, not the noise


def test_selection_probabilities_are_stable_for_extreme_scores() -> None:
    m = ExponentialMechanism(eps=1.0, monotone=True)
    p = m.selection_probabilities([1e308, -1e308, 1e308, 0.0])
    np.testing.assert_array_equal(p, [0.5, 0.0, 0.5, 0.0])
    assert m.run([1e308, -1e308], _rng(15)) == 0
    assert np.all(np.isin(m.run_batch([-1e308, 1e308, 1e308], 50, _rng(15)), [1, 2]))


# --- Doubling method -------------------------------------------------------------------------


def relative_error_holds(y: float, sd: float, alpha: float) -> bool:
    """APC Sec. 7, transcribed: |ŷ| > sd and 1 − α < |(ŷ + sd)/(ŷ − sd)| < 1 + α."""
    if not abs(y) > sd:
        return False
    ratio = abs((y + sd) / (y - sd))
    return 1.0 - alpha < ratio < 1.0 + alpha


def stop_law(value: float, sigmas: FloatArray, alpha: float) -> FloatArray:
    """Exact P(first accepted try = i), i = 0..K-1, then P(no try accepted), for RelativeError.

    ŷ = v + σZ is accepted iff ŷ > σ(2 + α)/α or ŷ < −σ(2 − α)/α (solving the condition).
    """
    hi = (sigmas * (2.0 + alpha) / alpha - value) / sigmas
    lo = (-sigmas * (2.0 - alpha) / alpha - value) / sigmas
    p = sps.norm.sf(hi) + sps.norm.cdf(lo)
    survive = np.concatenate([[1.0], np.cumprod(1.0 - p)])
    result: FloatArray = np.append(p * survive[:-1], survive[-1])
    return result


DOUBLING = DoublingMethod(
    sensitivity=2.0, start_eps2=0.25, ratio=2.0, max_eps2=16.0, stop=RelativeError(0.1)
)
VALUE = 20.0


def test_doubling_tries_double_eps2_and_cost_every_try() -> None:
    d = DOUBLING
    np.testing.assert_array_equal(d.grid.eps2, 0.25 * 2.0 ** np.arange(7))  # 0.25 … 16
    assert [m.rho for m in d.tries] == (d.grid.eps2 / 2.0).tolist()
    sigmas = [m.sigma for m in d.tries if isinstance(m, GaussianMechanism)]  # float tries
    assert sigmas == pytest.approx((2.0 / d.grid.eps).tolist(), rel=1e-15)
    assert d.guarantee() == ZCDP(math.fsum(d.grid.eps2 / 2.0))
    rng = _rng(20)
    for _ in range(200):
        t = d.run(VALUE, rng)
        np.testing.assert_array_equal(t.eps2, d.grid.eps2[: t.tries])
        np.testing.assert_array_equal(t.eps, np.sqrt(t.eps2))
        assert t.cost.rho == pytest.approx(math.fsum(t.eps2 / 2.0), rel=1e-14)
        assert t.costs == tuple(ZCDP(e2 / 2.0) for e2 in d.grid.eps2[: t.tries])
        assert compose_zcdp(*t.costs).rho == pytest.approx(t.cost.rho, rel=1e-14)
        assert t.released.shape == (t.tries,)
        assert t.stopped == (t.stop_index is not None)
        assert t.tries == (t.stop_index + 1 if t.stop_index is not None else len(d.grid))


def test_doubling_stops_at_the_first_accepted_try() -> None:
    seen: list[Released] = []

    def rule(released: Released) -> bool:
        seen.append(released)
        return relative_error_holds(float(released.last[0]), 2.0 / released.eps[-1], 0.1)

    d = DoublingMethod(2.0, 0.25, 2.0, 16.0, stop=rule)
    rng = _rng(21)
    for _ in range(100):
        seen.clear()
        t = d.run(VALUE, rng)
        assert len(seen) == t.tries  # asked after every try, never after the stop
        for k, view in enumerate(seen):
            np.testing.assert_array_equal(view.values[:, 0], t.released[: k + 1])
            np.testing.assert_allclose(view.times, 4.0 / d.grid.eps2[: k + 1], rtol=1e-15)
        accepted = [
            relative_error_holds(y, 2.0 / e, 0.1) for y, e in zip(t.released, t.eps, strict=True)
        ]
        assert not any(accepted[:-1])
        assert accepted[-1] == t.stopped


N_DOUBLING = 100_000
# alpha = 0.5 and value 3 spread the first accepted try over the last three tries and "never".
LAW_DOUBLING = DoublingMethod(2.0, 0.25, 2.0, 16.0, stop=RelativeError(0.5))
LAW_VALUE = 3.0


def test_doubling_stop_law_is_exact_in_batch_and_single_runs() -> None:
    sigmas = np.array([m.sigma for m in LAW_DOUBLING.tries if isinstance(m, GaussianMechanism)])
    law = stop_law(LAW_VALUE, sigmas, 0.5)
    assert law[-1] > 0.05
    assert np.count_nonzero(law > 0.01) >= 3
    wrong = stop_law(LAW_VALUE, sigmas / 2.0, 0.5)  # twin: sd Δ/(2 eps), i.e. sensitivity 1 noise
    k = len(LAW_DOUBLING.grid)

    batch = LAW_DOUBLING.run_batch(LAW_VALUE, N_DOUBLING, _rng(22))
    cells = np.where(batch.stopped, batch.stop_index, k)
    assert frequencies_match(cells, law)
    assert not frequencies_match(cells, wrong)

    rng = _rng(23)
    runs = [LAW_DOUBLING.run(LAW_VALUE, rng) for _ in range(3_000)]
    single = np.array([k if r.stop_index is None else r.stop_index for r in runs])
    assert frequencies_match(single, law)
    assert not frequencies_match(single, wrong)

    finals = np.array([float(r.value) for r in runs])
    assert stats.same_law(finals, batch.value[:3_000])
    shifted = LAW_DOUBLING.run_batch(LAW_VALUE + 1.0, 3_000, _rng(24))
    assert not stats.same_law(finals, shifted.value)  # twin: a value off by 1


def test_doubling_batch_fields_agree() -> None:
    b = DOUBLING.run_batch(VALUE, 5_000, _rng(25))
    k = len(DOUBLING.grid)
    cumulative = np.cumsum(DOUBLING.grid.eps2 / 2.0)
    np.testing.assert_array_equal(b.tries, np.where(b.stopped, b.stop_index + 1, k))
    np.testing.assert_array_equal(b.stop_index[~b.stopped], -1)
    np.testing.assert_allclose(b.cost, cumulative[b.tries - 1], rtol=1e-15)
    sd = 2.0 / np.sqrt(DOUBLING.grid.eps2[b.tries - 1])
    held = [relative_error_holds(y, s, 0.1) for y, s in zip(b.value, sd, strict=True)]
    assert held == b.stopped.tolist()  # returned values satisfy the condition iff success
    assert not b.value.flags.writeable


def test_doubling_batch_falls_back_to_a_loop_for_plain_rules() -> None:
    rule = RelativeError(0.1)
    plain = DoublingMethod(2.0, 0.25, 2.0, 16.0, stop=lambda released: rule(released))
    fast = DOUBLING.run_batch(VALUE, 300, _rng(26))
    slow = plain.run_batch(VALUE, 300, _rng(26))
    for name in ("stop_index", "stopped", "tries", "cost", "value"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name))


def test_doubling_vector_values_and_max_tries() -> None:
    d = DoublingMethod(start_eps2=1e-4, max_tries=5, stop=AtIndex(2))
    np.testing.assert_array_equal(d.grid.eps2, 1e-4 * 2.0 ** np.arange(5))
    t = d.run([1.0, -1.0, 5.0], _rng(27))
    assert t.released.shape == (3, 3)
    assert (t.stop_index, t.tries, t.stopped) == (2, 3, True)
    b = d.run_batch([1.0, -1.0, 5.0], 10, _rng(27))
    assert b.value.shape == (10, 3)
    np.testing.assert_array_equal(b.stop_index, 2)
    capped = DoublingMethod(start_eps2=1.0, max_eps2=1000.0, max_tries=3)
    np.testing.assert_array_equal(capped.grid.eps2, [1.0, 2.0, 4.0])
    never = DoublingMethod(start_eps2=1e-6, max_eps2=1e-5, stop=AtIndex(50))
    t = never.run(1.0, _rng(28))
    assert (t.stopped, t.stop_index, t.tries) == (False, None, 4)
    assert t.cost == never.cost() == GaussianCost(never.guarantee().rho)


def test_doubling_needs_a_cap() -> None:
    with pytest.raises(InvalidParameter, match="max_eps2"):
        DoublingMethod()
    with pytest.raises(InvalidParameter, match="max_eps2"):
        DoublingMethod(start_eps2=1.0, max_eps2=0.5)
    with pytest.raises(InvalidParameter, match="max_tries"):
        DoublingMethod(start_eps2=1.0, ratio=1e10, max_tries=100)
    with pytest.raises(NotAStoppingTime):
        DoublingMethod(max_eps2=1.0, stop=lambda released, data: True)


# --- Bad input ---------------------------------------------------------------------------------

MAKERS: list[tuple[str, Callable[[Any], object]]] = [
    ("sensitivity", lambda x: GaussianMechanism(x, 1.0)),
    ("rho", lambda x: GaussianMechanism(1.0, x)),
    ("sigma", lambda x: GaussianMechanism.from_sigma(1.0, x)),
    ("sensitivity", lambda x: LaplaceMechanism(x, 1.0)),
    ("eps", lambda x: LaplaceMechanism(1.0, x)),
    ("eps", lambda x: ExponentialMechanism(x, monotone=True)),
    ("sensitivity", lambda x: ExponentialMechanism(1.0, monotone=True, sensitivity=x)),
    ("sensitivity", lambda x: DoublingMethod(sensitivity=x, max_eps2=1.0)),
    ("start_eps2", lambda x: DoublingMethod(start_eps2=x, max_eps2=1.0)),
    ("ratio", lambda x: DoublingMethod(ratio=x, max_eps2=1.0)),
    ("max_eps2", lambda x: DoublingMethod(max_eps2=x)),
    ("distance", lambda x: GaussianMechanism(1.0, 1.0).loss(x)),
    ("distance", lambda x: LaplaceMechanism(1.0, 1.0).loss(x)),
]


@pytest.mark.parametrize(("name", "make"), MAKERS)
@given(bad=bad_positive)
@settings(max_examples=10, deadline=None)
def test_bad_parameters_are_refused_by_name(
    name: str, make: Callable[[Any], object], bad: float
) -> None:
    with pytest.raises(InvalidParameter, match=rf"^{name}="):
        make(bad)


@pytest.mark.parametrize("bad", [0.5, 1.0, "2", True])
def test_doubling_ratio_must_exceed_one(bad: Any) -> None:
    with pytest.raises(InvalidParameter, match=r"^ratio="):
        DoublingMethod(ratio=bad, max_eps2=1.0)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_doubling_max_tries_must_be_a_positive_integer(bad: Any) -> None:
    with pytest.raises(InvalidParameter, match=r"^max_tries="):
        DoublingMethod(max_tries=bad)


def test_noise_scales_must_be_representable() -> None:
    with pytest.raises(InvalidParameter, match=r"^rho="):
        GaussianMechanism(1e300, 1e-300)
    with pytest.raises(InvalidParameter, match=r"^sigma="):
        GaussianMechanism.from_sigma(1e200, 1e-200)
    with pytest.raises(InvalidParameter, match=r"^eps="):
        LaplaceMechanism(1e-300, 1e300)
    with pytest.raises(InvalidParameter, match=r"^eps="):
        ExponentialMechanism(1e300, monotone=True, sensitivity=1e-300)


@pytest.mark.parametrize("bad", [1, 0, None, "yes", np.bool_(True)])
def test_monotone_must_be_a_bool(bad: Any) -> None:
    with pytest.raises(InvalidParameter, match=r"^monotone="):
        ExponentialMechanism(0.1, monotone=bad)


def test_monotone_has_no_default() -> None:
    make: Any = ExponentialMechanism
    with pytest.raises(TypeError, match="monotone"):
        make(0.1)


RUNNERS: list[Callable[[Any], object]] = [
    lambda v: GaussianMechanism(1.0, 1.0).run(v, _rng(0)),
    lambda v: GaussianMechanism(1.0, 1.0).run_batch(v, 3, _rng(0)),
    lambda v: LaplaceMechanism(1.0, 1.0).run(v, _rng(0)),
    lambda v: LaplaceMechanism(1.0, 1.0).run_batch(v, 3, _rng(0)),
    lambda v: DOUBLING.run(v, _rng(0)),
    lambda v: DOUBLING.run_batch(v, 3, _rng(0)),
]


@pytest.mark.parametrize("run", RUNNERS)
@pytest.mark.parametrize("bad", [math.nan, [1.0, math.inf], [], [[1.0]], "x"])
def test_bad_values_are_refused(run: Callable[[Any], object], bad: Any) -> None:
    with pytest.raises(InvalidParameter, match=r"^value="):
        run(bad)


MECHANISM_CALLS: list[Callable[[Any, Any], object]] = [
    lambda rng, n: GaussianMechanism(1.0, 1.0).run_batch(0.0, n, rng),
    lambda rng, n: LaplaceMechanism(1.0, 1.0).run_batch(0.0, n, rng),
    lambda rng, n: ExponentialMechanism(1.0, monotone=True).run_batch([0.0, 1.0], n, rng),
    lambda rng, n: DOUBLING.run_batch(0.0, n, rng),
]


@pytest.mark.parametrize("call", MECHANISM_CALLS)
def test_bad_generators_and_trial_counts_are_refused(call: Callable[[Any, Any], object]) -> None:
    with pytest.raises(InvalidParameter, match=r"^source="):
        call(np.random.RandomState(0), 3)
    with pytest.raises(InvalidParameter, match=r"^source="):
        call(None, 3)
    for bad in (0, -2, 2.5, True):
        with pytest.raises(InvalidParameter, match=r"^trials="):
            call(_rng(0), bad)


@pytest.mark.parametrize(
    "scores", [[], [[]], [1.0, math.nan], [math.inf, 0.0], 3.0, np.zeros((2, 2, 2)), ["a"]]
)
def test_bad_scores_are_refused(scores: Any) -> None:
    m = ExponentialMechanism(1.0, monotone=True)
    with pytest.raises(InvalidParameter, match=r"^scores="):
        m.selection_probabilities(scores)
    with pytest.raises(InvalidParameter, match=r"^scores="):
        m.run_batch(scores, 2, _rng(0))
    with pytest.raises(InvalidParameter, match=r"^scores="):
        m.run(scores, _rng(0))


def test_scores_shapes_must_fit() -> None:
    m = ExponentialMechanism(1.0, monotone=True)
    with pytest.raises(InvalidParameter, match=r"^scores="):
        m.run([[0.0, 1.0], [1.0, 0.0]], _rng(0))  # run takes one score vector
    with pytest.raises(InvalidParameter, match=r"^scores="):
        m.run_batch(np.zeros((3, 4)), 2, _rng(0))  # one row per trial


@pytest.mark.parametrize(
    "mask",
    [
        [False, False, False],  # nothing allowed
        [1, 0, 1],  # not a boolean mask
        [True, False],  # wrong length
        [[True, True, True], [False, False, False]],  # a row with nothing allowed
    ],
)
def test_bad_candidate_masks_are_refused(mask: Any) -> None:
    m = ExponentialMechanism(1.0, monotone=True)
    scores = [0.0, 1.0, 2.0]
    with pytest.raises(InvalidParameter, match=r"^candidates="):
        m.run_batch(scores, 2, _rng(0), candidates=np.asarray(mask))
    with pytest.raises(InvalidParameter, match=r"^candidates="):
        m.selection_probabilities(np.tile(scores, (2, 1)), np.asarray(mask))


def test_each_round_describes_its_cost() -> None:
    assert GaussianMechanism(2.0, 0.3).cost() == GaussianCost(0.3)
    assert LaplaceMechanism(2.0, 0.7).cost() == DPCost(0.7)
    assert ExponentialMechanism(0.4, monotone=True).cost() == BoundedRangeCost(0.4)
    assert ExponentialMechanism(0.4, monotone=False).cost() == BoundedRangeCost(0.8)
    for monotone in (True, False):
        em = ExponentialMechanism(0.4, monotone=monotone)
        assert em.cost().eps == em.dp_guarantee().eps
    d = DoublingMethod(2.0, 0.25, 2.0, 16.0)
    assert d.cost() == GaussianCost(d.guarantee().rho)


def _never_below_exact(charged: npt.ArrayLike, rho: npt.ArrayLike) -> bool:
    """Every prefix charge >= the exact rational sum of the tries' rho."""
    from fractions import Fraction

    total = Fraction(0)
    for c, r in zip(np.asarray(charged).tolist(), np.asarray(rho).tolist(), strict=True):
        total += Fraction(r)
        if Fraction(c) < total:
            return False
    return True


@settings(max_examples=60, deadline=None)
@given(
    start=hs.floats(1e-6, 1e-1),
    ratio=hs.floats(1.05, 4.0),
    tries=hs.integers(1, 40),
)
def test_doubling_never_charges_less_than_the_exact_sum_of_its_tries(
    start: float, ratio: float, tries: int
) -> None:
    d = DoublingMethod(start_eps2=start, ratio=ratio, max_tries=tries)
    cumulative = d.cumulative_cost
    assert _never_below_exact(cumulative, d.grid.rho)
    # and it is the smallest such float: one ulp less is below the exact sum
    assert not _never_below_exact(np.nextafter(cumulative, 0.0), d.grid.rho)
    run = d.run(5.0, np.random.default_rng(0))
    assert run.cost.rho == cumulative[len(run.released) - 1]


def test_float_cumsum_under_charges_doubling() -> None:
    """Planted twin: the float cumsum the method used before rounds some prefixes down."""
    d = DoublingMethod(start_eps2=1e-4, ratio=2.0, max_tries=40)
    assert not _never_below_exact(np.cumsum(d.grid.rho), d.grid.rho)
    assert _never_below_exact(d.cumulative_cost, d.grid.rho)
