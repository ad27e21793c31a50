"""The importance-sampling engine: betting bounds, `ImportanceClaim`, delta suites, ``--delta``.

Coverage checks run M independent bounds at alpha = 0.05 or 0.1 (so a miss rate is measurable)
on a law with known mean; misses R ~ Binomial(M, r) with r <= alpha for a valid bound, checked
with an exact one-sided binomial test at level 1e-6 (false alarm <= 1e-6). Planted twins the
same check must reject: a wrong mean, a normal approximation (on a rare Bernoulli mean) and the
betting bounds at 2·alpha.
"""

from __future__ import annotations

import json
import math
import pickle
from collections.abc import Callable
from functools import partial
from pathlib import Path

import attrs
import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats as sps

from expost.audit import (
    DEPLOY,
    DEPLOY_DELTAS,
    DEPLOY_QUICK,
    Audit,
    ImportanceClaim,
    ProbabilityClaim,
    Registry,
    Twin,
    betting_bounds,
    delta_tag,
    effective_sample_size,
    register_at_deltas,
    run_audit,
    run_audits,
)
from expost.cli import main
from expost.errors import InvalidParameter
from tests.audit.test_paper_audits import _generator

FloatArray = npt.NDArray[np.float64]
_M, _N, _LEVEL = 300, 200, 0.05


def _rate_exceeds(misses: int, m: int, rate: float) -> bool:
    """Exact one-sided test (level 1e-6) of "miss rate <= rate" from misses out of m."""
    return bool(sps.binomtest(misses, m, rate, alternative="greater").pvalue < 1e-6)


def _bounded_draws(rng: np.random.Generator) -> FloatArray:
    """Rare-ish, skewed values in [0, 1]: 1{U < 0.1}·Beta(2, 5); mean 0.1·2/7."""
    draws: FloatArray = (rng.random((_M, _N)) < 0.1) * rng.beta(2.0, 5.0, (_M, _N))
    return draws


def _misses(mean: float) -> tuple[int, int]:
    rng = np.random.default_rng(11)
    bounds = [betting_bounds(row, _LEVEL) for row in _bounded_draws(rng)]
    low = sum(lo > mean for lo, _ in bounds)
    high = sum(hi < mean for _, hi in bounds)
    return low, high


def test_betting_bounds_cover_the_mean() -> None:
    """Each side misses the true mean at rate <= alpha (exact binomial check, level 1e-6)."""
    low, high = _misses(0.1 * 2.0 / 7.0)
    assert not _rate_exceeds(low, _M, _LEVEL)
    assert not _rate_exceeds(high, _M, _LEVEL)


def test_coverage_check_catches_a_wrong_mean() -> None:
    """Twin: against a mean 40% too low the lower bound 'misses' far more often than alpha."""
    low, _ = _misses(0.6 * 0.1 * 2.0 / 7.0)
    assert _rate_exceeds(low, _M, _LEVEL)


Bounds = Callable[[FloatArray, float], tuple[float, float]]
_COVER_LEVEL, _COVER_RUNS = 0.1, 500


def _normal_bounds(y: FloatArray, alpha: float) -> tuple[float, float]:
    """Planted bound: the normal approximation mean ± z_(1−alpha)·s/sqrt(n)."""
    half = float(sps.norm.isf(alpha)) * float(y.std(ddof=1)) / math.sqrt(y.size)
    return float(y.mean()) - half, float(y.mean()) + half


def _doubled_alpha(y: FloatArray, alpha: float) -> tuple[float, float]:
    """Planted bound: the betting bounds at 2·alpha (a one-/two-sided mix-up)."""
    return betting_bounds(y, 2.0 * alpha)


def _bernoulli_misses(bounds: Bounds, p: float, repeats: int) -> tuple[int, int]:
    """(lower, upper) misses of p by ``bounds`` at level 0.1 on seeded Bernoulli(p) samples."""
    rng = np.random.default_rng([23, round(1.0 / p)])
    draws = (rng.random((repeats, _COVER_RUNS)) < p).astype(np.float64)
    pairs = [bounds(row, _COVER_LEVEL) for row in draws]
    return sum(lo > p for lo, _ in pairs), sum(hi < p for _, hi in pairs)


@pytest.mark.parametrize(
    ("p", "repeats", "planted"),
    [(0.002, 300, _normal_bounds), (0.05, 3_000, _doubled_alpha)],
    ids=["rare-vs-normal-approximation", "common-vs-doubled-alpha"],
)
def test_betting_bounds_cover_bernoulli_means_at_their_level(
    p: float, repeats: int, planted: Bounds
) -> None:
    """Each side of the betting bounds at alpha = 0.1 on n = 500 Bernoulli(p) misses p at a rate
    the exact binomial test (level 1e-6) cannot place above 0.1. Planted bounds it must reject:

    - p = 0.002: no hit in 0.998^500 = 37% of the samples, where the normal approximation's
      interval has zero width, so its upper bound 0 misses p (the betting bound never did);
    - p = 0.05, 3000 samples: the betting bounds at 2·alpha, whose upper side misses at about
      0.16 (0.155–0.161 measured on three seeds) where the test rejects above about 0.127.
    """
    low, high = _bernoulli_misses(betting_bounds, p, repeats)
    assert not _rate_exceeds(low, repeats, _COVER_LEVEL)
    assert not _rate_exceeds(high, repeats, _COVER_LEVEL)
    assert _rate_exceeds(_bernoulli_misses(planted, p, repeats)[1], repeats, _COVER_LEVEL)


def test_betting_bounds_order_and_degenerate_samples() -> None:
    rng = np.random.default_rng(1)
    y = rng.random(1000)
    lo, hi = betting_bounds(y, 1e-6)
    assert 0.0 < lo < float(y.mean()) < hi < 1.0
    assert betting_bounds(np.zeros(100), 0.01)[0] == 0.0
    assert betting_bounds(np.ones(100), 0.01)[1] == 1.0
    with pytest.raises(InvalidParameter, match="y"):
        betting_bounds(np.array([0.5, 1.5]), 0.01)
    with pytest.raises(InvalidParameter, match="alpha"):
        betting_bounds(y, 1.0)


def test_effective_sample_size() -> None:
    assert effective_sample_size(np.array([0.0, 2.0, 2.0, 0.0])) == 2.0
    assert effective_sample_size(np.array([0.0, 1.0, 3.0])) == pytest.approx(16.0 / 10.0)
    assert effective_sample_size(np.zeros(3)) == 0.0


def test_importance_claim_validates_its_fields() -> None:
    for bad in (0.0, 1.0, -1e-9, math.nan):
        with pytest.raises(InvalidParameter, match="delta"):
            ImportanceClaim(bad, 1.0, "p")
    for bad in (0.0, math.inf, -1.0):
        with pytest.raises(InvalidParameter, match="weight_bound"):
            ImportanceClaim(1e-9, bad, "p")
    with pytest.raises(InvalidParameter, match="proposal"):
        ImportanceClaim(1e-9, 1.0, " ")


def test_a_sample_above_the_weight_bound_refutes_the_claim() -> None:
    """The weight bound is the derivation's inequality on every run: one sample above B refutes
    the claim whatever alpha, and the verdict names the sample (no exception). Twin: the same
    samples without it are not refuted. Malformed samples still raise."""
    claim = ImportanceClaim(1e-9, 2e-9, "tilt")
    samples = np.array([0.0, 1e-9, 3e-9, 2.5e-9])
    verdict = claim.verdict(samples, 0.01)
    assert verdict.refuted
    violation = "weight bound violated: max w·h = 3e-09, B = 2e-09, at run 2 (2 of 4 runs above B)"
    assert verdict.extra["violation"] == violation
    assert verdict.detail.startswith(violation)
    assert "ratio_upper" not in verdict.extra  # X is not known to lie in [0, B]
    assert verdict.bound <= float(np.minimum(samples, 2e-9).max())  # from min(X, B): valid
    within = claim.verdict(samples[:2], 0.01)
    assert not within.refuted
    assert "violation" not in within.extra
    assert within.detail.startswith("P/delta = ")
    with pytest.raises(InvalidParameter, match="samples"):
        claim.verdict(np.array([0.0, -1e-12]), 0.01)
    with pytest.raises(InvalidParameter, match="samples"):
        claim.verdict(np.array([0.0, math.nan]), 0.01)
    with pytest.raises(InvalidParameter, match="samples"):
        claim.verdict(np.zeros((3, 2)), 0.01)


def test_weight_bound_violation_fails_its_audit_not_the_run() -> None:
    """`run_audits` records a violated weight bound in the verdict, the JSON and the table, and
    runs the next audit. Twin: the correct weight under the same tight bound holds."""
    broken, right = _tight_tail_audit(2.0), _tight_tail_audit(1.0)
    report = run_audits([broken, right], seed=0)
    assert [r.name for r in report.results] == [
        "tight-tail/weight-x2/delta-1e-09",
        "tight-tail/weight-x1/delta-1e-09",
    ]
    bad, good = report.results
    assert bad.verdict.refuted
    assert not bad.passed
    assert good.passed
    assert "violation" not in good.verdict.extra
    claims = report.to_json()["claims"]
    assert isinstance(claims, list)
    violation = claims[0]["importance"]["violation"]
    assert violation.startswith("weight bound violated: max w·h = ")
    assert isinstance(broken.claim, ImportanceClaim)
    assert f"B = {broken.claim.weight_bound:.6g}, at run " in violation
    assert "refuted (weight bound violated)" in report.table()
    assert "FAIL tight-tail/weight-x2/delta-1e-09: expected holds, got refuted" in report.table()
    json.loads(report.dumps())


def _overflowing_weight(n: int, rng: np.random.Generator) -> FloatArray:
    """A badly broken derivation: one run's weight overflowed to +inf, the rest are tiny."""
    out: FloatArray = np.full(n, 1e-12)
    out[int(rng.integers(n))] = np.inf
    return out


def test_an_overflowed_weight_is_a_violation_and_the_report_stays_strict_json() -> None:
    """A weight that overflowed to +inf is a sample above B: that audit is refuted (it does
    not raise and stop the suite), and its report has null where a figure is not finite, so
    strict JSON parsers read it. Twin: the next audit runs and passes. NaN still raises."""
    claim = ImportanceClaim(1e-9, 1e-9, "tilt")
    with np.errstate(over="ignore"):
        verdict = claim.verdict(np.array([0.0, np.inf, 1e-10]), 0.01)
    assert verdict.refuted
    assert str(verdict.extra["violation"]).startswith("weight bound violated: max w·h = inf")
    assert math.isnan(float(verdict.extra["ess"]))
    overflow = Audit(
        name="overflow",
        source="test",
        statement="P <= 1e-9",
        claim=claim,
        simulate=_overflowing_weight,
        n=100,
    )
    with np.errstate(over="ignore"):
        report = run_audits([overflow, _tight_tail_audit(1.0)], seed=0)
    bad, good = report.results
    assert not bad.passed
    assert good.passed
    parsed = json.loads(report.dumps(), parse_constant=_reject_constant)
    importance = parsed["claims"][0]["importance"]
    assert importance["ratio"] is None
    assert importance["ess"] is None
    assert parsed["claims"][0]["observed"] is None
    with pytest.raises(InvalidParameter, match="NaN"):
        claim.verdict(np.array([0.0, math.nan]), 0.01)


def _reject_constant(name: str) -> float:
    raise ValueError(f"not strict JSON: {name}")


def test_effective_sample_size_does_not_overflow() -> None:
    """(Σw)²/Σw² computed on w/max(w): huge finite weights give the same ESS as small ones."""
    w = np.array([0.0, 1.0, 3.0])
    assert effective_sample_size(w * 1e200) == pytest.approx(effective_sample_size(w))


def test_a_twin_refuted_only_by_its_own_weight_bound_is_not_caught() -> None:
    """A twin refuted only because a sample broke its own proposal bound is a mis-derived twin,
    not a caught bug: the audit fails and says so. Twin: a false claim with a bound that holds,
    refuted by its interval, passes."""
    z = float(sps.norm.isf(1e-9))
    tight = math.exp(-z * z / 2.0)
    audit = _tight_tail_audit(1.0)
    # P(Z > z) = 1e-9: the twin's claim "<= 2e-9" is true, and its B below the largest
    # weight refutes it by the violation alone, which must not count as a caught bug.
    twin = Twin("double/wrong-B", ImportanceClaim(2e-9, tight / 4, "s"))
    wrong = attrs.evolve(audit, name="wrong-B", twin=twin)
    right = attrs.evolve(audit, twin=Twin("half/right-B", ImportanceClaim(5e-10, tight, "s")))
    report = run_audits([wrong, right], seed=0)
    failed, passed = report.results
    claims = report.to_json()["claims"]
    assert isinstance(claims, list)
    assert [_generator()._passed(c) for c in claims] == [False, True]  # the findings page agrees
    assert failed.twin is not None
    assert failed.twin.verdict.refuted
    assert failed.twin.verdict.bound <= 2e-9  # the interval alone does not refute
    assert not failed.passed
    (problem,) = failed.problems()
    assert "refuted only by its own proposal's bound" in problem
    assert passed.passed
    assert passed.twin is not None
    assert "violation" not in passed.twin.verdict.extra


def test_findings_page_marks_a_weight_bound_violation() -> None:
    """docs/gen_audit_findings.py renders a violated entry (no upper bound) as refuted by it."""
    report = run_audits([_tight_tail_audit(2.0), _tight_tail_audit(1.0)], seed=0).to_json()
    lines = _generator()._deploy_section(report, [], {}, "r")
    bad, good = (line for line in lines if line.startswith("| `tight-tail/"))
    assert bad.endswith(", -] refuted (weight bound violated) **FAIL** |")
    assert "violated" not in good
    assert "**FAIL**" not in good


def _tight_tail_audit(scale: float) -> Audit:
    """P(Z > z) <= 1e-9 with the tight bound exp(−z²/2) on the weight (`_tail_tilt`)."""
    z = float(sps.norm.isf(1e-9))
    bound = math.exp(-z * z / 2.0)
    return Audit(
        name=f"tight-tail/weight-x{scale:g}/delta-1e-09",
        source="test",
        statement="P(Z > z) <= 1e-09",
        claim=ImportanceClaim(1e-9, bound, "mean shift to z"),
        simulate=partial(_tail_tilt, z, scale),
        n=2_000,
        twin=Twin(f"tight-tail/weight-x{scale:g}/half", ImportanceClaim(5e-10, bound, "shift")),
    )


def _tail_tilt(z: float, scale: float, n: int, rng: np.random.Generator) -> FloatArray:
    """``w·1{Z > z}`` for Z ~ N(0, 1) drawn as N(z, 1): w = exp(−zX + z²/2) <= exp(−z²/2).

    ``scale`` multiplies the weight (1: correct; 2: the planted mis-scaled weight).
    """
    x = rng.standard_normal(n) + z
    out: FloatArray = np.where(x > z, scale * np.exp(-z * x + z * z / 2.0), 0.0)
    return out


def _tail_audit(delta: float, scale: float = 1.0) -> Audit:
    z = float(sps.norm.isf(delta))
    bound = 2.0 * math.exp(-z * z / 2.0)
    return Audit(
        name=f"tail/{delta_tag(delta)}",
        source="test",
        statement=f"P(Z > z_delta) <= {delta:g}",
        claim=ImportanceClaim(delta, bound, "mean shift to z"),
        simulate=partial(_tail_tilt, z, scale),
        n=20_000,
        twin=Twin(
            f"tail/{delta_tag(delta)}/half-delta", ImportanceClaim(delta / 2, bound, "shift")
        ),
    )


def test_equality_claim_holds_and_its_halved_twin_is_refuted() -> None:
    """P(Z > z_delta) = delta exactly: the claim holds at 1e-9; the claim at delta/2 is refuted."""
    result = run_audit(_tail_audit(1e-9), seed=2)
    assert result.passed
    extra = result.verdict.extra
    assert float(extra["ratio_lower"]) <= 1.0 <= float(extra["ratio_upper"])
    assert extra["proposal"] == "mean shift to z"
    assert 0.0 < float(extra["ess"]) <= 20_000


def test_verdict_extra_is_read_only_and_pickles() -> None:
    verdict = run_audit(_tail_audit(1e-6), seed=1).verdict
    with pytest.raises(TypeError):
        verdict.extra["ratio"] = 0.0  # type: ignore[index]  # the point: it is read-only
    assert pickle.loads(pickle.dumps(verdict)) == verdict


def test_mis_scaled_weight_is_refuted() -> None:
    """A proposal whose weight is doubled over-estimates P by 2: the claim at delta is refuted."""
    assert run_audit(_tail_audit(1e-9, scale=2.0), seed=2).verdict.refuted


def test_report_writes_importance_fields_and_table_ratio() -> None:
    report = run_audits([_tail_audit(1e-6)], seed=0)
    entry = report.to_json()["claims"]
    assert isinstance(entry, list)
    imp = entry[0]["importance"]
    assert set(imp) >= {"proposal", "weight_bound", "upper", "ratio", "ratio_lower", "ess"}
    assert imp["upper"] >= entry[0]["observed"] >= entry[0]["bound"]
    assert "importance" in entry[0]["twin"]
    assert "P/d" in report.table()
    json.loads(report.dumps())


def test_certified_only_where_the_upper_bound_is_within_delta() -> None:
    """At equality (P = delta) the claim holds but is not certified (upper bound above delta);
    the same runs against a claim of 2·delta certify it, in the JSON and the table."""
    equality = _tail_audit(1e-6)
    assert isinstance(equality.claim, ImportanceClaim)
    claim = ImportanceClaim(2e-6, equality.claim.weight_bound, "z")
    slack = attrs.evolve(equality, name="tail/2-delta", claim=claim)
    report = run_audits([equality, slack], seed=0)
    claims = report.to_json()["claims"]
    assert isinstance(claims, list)
    first, second = (c["importance"] for c in claims)
    assert report.passed
    assert first["upper"] > 1e-6
    assert first["certified"] is False
    assert second["upper"] <= 2e-6
    assert second["certified"] is True
    assert claims[0]["twin"]["importance"]["certified"] is False  # refuted: never certified
    assert report.table().count("holds (certified)") == 1


def _coin(n: int, rng: np.random.Generator) -> npt.NDArray[np.bool_]:
    out: npt.NDArray[np.bool_] = rng.random(n) < 0.5
    return out


def test_registry_calls_delta_factories_once_per_delta() -> None:
    registry = Registry()
    registry.add_at_deltas(lambda suite, delta: _tail_audit(delta), [DEPLOY, DEPLOY_QUICK])
    registry.add(lambda suite: _plain("plain"), [DEPLOY, "plain-only"])
    deploy = [a.name for a in registry.suite(DEPLOY)]
    assert deploy == [f"tail/{delta_tag(d)}" for d in DEPLOY_DELTAS] + ["plain"]
    assert [a.name for a in registry.suite(DEPLOY_QUICK)] == ["tail/delta-1e-09"]
    assert [a.name for a in registry.suite(DEPLOY, [1e-7])] == ["tail/delta-1e-07", "plain"]
    with pytest.raises(InvalidParameter, match="nothing to act on"):
        registry.suite("plain-only", [1e-7])
    for bad in ([], [0.0], [1e-7, 1e-7], [2.0]):
        with pytest.raises(InvalidParameter, match="deltas"):
            registry.suite(DEPLOY, bad)


def _plain(name: str) -> Audit:
    return Audit(
        name, "t", "c", ProbabilityClaim(0.6), _coin, 100, twin=Twin("x", ProbabilityClaim(0.1))
    )


@register_at_deltas("test-deltas")
def _test_deltas(suite: str, delta: float) -> Audit:
    return _tail_audit(delta)


def test_cli_delta_runs_the_suite_at_the_given_deltas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    argv = ["audit", "--suite", "test-deltas", "--delta", "1e-5", "--delta", "1e-8"]
    assert main([*argv, "--json", str(out)]) == 0
    claims = json.loads(out.read_text(encoding="utf-8"))["claims"]
    assert [c["name"] for c in claims] == ["tail/delta-1e-05", "tail/delta-1e-08"]
    assert all(c["importance"]["proposal"] == "mean shift to z" for c in claims)
    assert "P/d" in capsys.readouterr().out


def test_cli_delta_without_delta_audits_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--suite", "quick", "--delta", "1e-9"]) == 2
    assert "nothing to act on" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["audit", "--delta", "2"])


# --- 4b: false-alarm rate on a claim that holds with equality --------------------------------

_RHO, _EQ_DELTA, _REPEATS, _RATE = 0.5, 1e-3, 300, 0.1


def _gaussian_tail_eps() -> float:
    """eps with P(L > eps) = delta exactly for the Gaussian mechanism's loss L ~ N(rho, 2rho)."""
    return _RHO + math.sqrt(2.0 * _RHO) * float(sps.norm.isf(_EQ_DELTA))


def _tilted_normal(eps: float, n: int, rng: np.random.Generator) -> FloatArray:
    """``w·1{L > eps}`` with L drawn from N(eps, 2rho) (the loss law shifted to the threshold).

    ``w = N(rho, 2rho)/N(eps, 2rho) = exp(−(eps − rho)(L − (eps + rho)/2)/(2rho))``, which on
    L > eps is at most ``exp(−(eps − rho)²/(4rho))`` (issue 13, point 2).
    """
    loss = eps + math.sqrt(2.0 * _RHO) * rng.standard_normal(n)
    w = np.exp(-(eps - _RHO) * (loss - (eps + _RHO) / 2.0) / (2.0 * _RHO))
    out: FloatArray = np.where(loss > eps, w, 0.0)
    return out


def _rejections(claimed: float) -> int:
    eps = _gaussian_tail_eps()
    claim = ImportanceClaim(claimed, math.exp(-((eps - _RHO) ** 2) / (4.0 * _RHO)), "tilted normal")
    return sum(
        claim.verdict(_tilted_normal(eps, 1000, np.random.default_rng([5, i])), _RATE).refuted
        for i in range(_REPEATS)
    )


def test_equality_claim_is_rejected_at_rate_at_most_alpha() -> None:
    """The Gaussian's exact probabilistic DP, P(L > eps) = delta (issue 13, point 4b).

    300 seeded audits of 1000 runs at alpha = 0.1 (large, so the rate is observable): the
    rejection count R ~ Binomial(300, r) with r <= 0.1 for a valid bound; the exact one-sided
    binomial test at level 1e-6 must not find r > 0.1.
    """
    assert not _rate_exceeds(_rejections(_EQ_DELTA), _REPEATS, _RATE)


def test_rejection_rate_check_catches_a_false_claim() -> None:
    """Twin: claimed at 0.85·delta (false by 15%), the rate check finds r > 0.1."""
    assert _rate_exceeds(_rejections(0.85 * _EQ_DELTA), _REPEATS, _RATE)
