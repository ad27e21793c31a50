"""The audit machinery: validity (false-alarm rate) and power of each test, determinism across
worker counts, the JSON report, and the exit codes of ``expost audit``.

False-alarm checks run M audits of a claim that is exactly true at a small N with
alpha_audit = 0.05 (so the rate is measurable); the rejection count R ~ Binomial(M, r) with
r <= 0.05 when the test is valid, checked with the exact one-sided test of tests.stats at level
1e-6. Each has a planted-bug twin: the same rate check on a false claim, which must find a rate
above 0.05 (the test has power, and the rate check can fail).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import stats as sps

from expost.audit import (
    Audit,
    AuditReport,
    DPClaim,
    EValueClaim,
    ProbabilityClaim,
    Registry,
    Twin,
    audit_seed,
    clopper_pearson_upper,
    eps_lower_bound,
    register,
    run_audit,
    run_audits,
)
from expost.audit.paper import examples
from expost.cli import main
from expost.cli.audit import ProgressBar
from expost.errors import InvalidParameter
from tests import stats

FloatArray = npt.NDArray[np.float64]
LEVEL = 0.05
AUDITS = 1000
N_SMALL = 200


def _rejection_count(claim: object, rows: npt.NDArray[np.generic]) -> int:
    assert isinstance(claim, ProbabilityClaim | EValueClaim | DPClaim)
    return sum(claim.verdict(row, LEVEL).refuted for row in rows)


def _rate_ok(rejections: int, audits: int) -> bool:
    return stats.rate_is_at_most(rejections, audits, LEVEL)


# --- validity (false alarms) and power of each test -------------------------------------------


def test_binomial_test_false_alarm_rate_and_power() -> None:
    rng = np.random.default_rng(101)
    delta = 0.1
    exact = rng.random((2000, N_SMALL)) < delta
    assert _rate_ok(_rejection_count(ProbabilityClaim(delta), exact), 2000)
    planted = rng.random((2000, N_SMALL)) < 1.6 * delta
    assert not _rate_ok(_rejection_count(ProbabilityClaim(delta), planted), 2000)


@settings(max_examples=40, deadline=None)
@given(
    hs.integers(1, 400),
    hs.floats(0.0, 1.0),
    hs.floats(0.001, 0.9),
    hs.sampled_from([1e-6, 1e-3, 0.05]),
)
def test_binomial_verdict_is_the_exact_binomial_test(
    n: int, share: float, delta: float, alpha: float
) -> None:
    hits = round(share * n)
    events = np.arange(n) < hits
    p_value = float(sps.binom.sf(hits - 1, n, delta))
    if not math.isclose(p_value, alpha, rel_tol=1e-6):
        assert ProbabilityClaim(delta).verdict(events, alpha).refuted == (p_value < alpha)


@pytest.mark.parametrize("alpha", [1e-15, 1.2e-16, 1e-3])
def test_upper_clopper_pearson_limits_have_their_tail_mass_at_tiny_alpha(alpha: float) -> None:
    # They were beta.ppf(1 − alpha/2, …): 1 − alpha/2 rounded to a double, so the tail below
    # the limit was 1.11x alpha/2 at alpha = 1e-15 and 1.85x at 1.2e-16.
    n, b = 200_000, 171_858
    upper = clopper_pearson_upper(b, n, alpha)
    assert sps.binom.cdf(b, n, upper) == pytest.approx(alpha, rel=1e-6, abs=0.0)
    a = n // 2  # eps_lower_bound: log(lower) − log(upper), each limit at alpha/2
    lower = float(sps.beta.ppf(alpha / 2, a, n - a + 1))
    upper = math.exp(math.log(lower) - float(eps_lower_bound(a, n, b, n, alpha)))
    assert sps.binom.cdf(b, n, upper) == pytest.approx(alpha / 2, rel=1e-6, abs=0.0)


def _pareto_mean(mean: float, size: tuple[int, int], rng: np.random.Generator) -> FloatArray:
    """Pareto with shape 1.5 (infinite variance), scaled to the given mean (base mean 3)."""
    return mean * (1.0 + rng.pareto(1.5, size)) / 3.0


@pytest.mark.parametrize(
    "draw",
    [
        lambda m, s, r: m * r.exponential(1.0, s),
        _pareto_mean,
    ],
    ids=["exponential", "pareto-1.5"],
)
def test_e_value_test_false_alarm_rate_and_power(
    draw: Callable[[float, tuple[int, int], np.random.Generator], FloatArray],
) -> None:
    rng = np.random.default_rng(202)
    exact = draw(1.0, (AUDITS, N_SMALL), rng)
    assert _rate_ok(_rejection_count(EValueClaim(), exact), AUDITS)
    planted = draw(1.5, (AUDITS, N_SMALL), rng)
    assert not _rate_ok(_rejection_count(EValueClaim(), planted), AUDITS)


def _randomized_response(
    eps: float, shape: tuple[int, int], rng: np.random.Generator
) -> FloatArray:
    """Outputs of randomized response under x (bit 1) and x' (bit 0): exactly eps-DP, tight."""
    keep = math.exp(eps) / (1.0 + math.exp(eps))
    return np.stack([rng.random(shape) < keep, rng.random(shape) >= keep], axis=2).astype(float)


def test_dp_test_false_alarm_rate_and_power() -> None:
    rng = np.random.default_rng(303)
    exact = _randomized_response(1.0, (AUDITS, N_SMALL), rng)
    assert _rate_ok(_rejection_count(DPClaim(1.0), exact), AUDITS)
    planted = _randomized_response(2.0, (AUDITS, N_SMALL), rng)
    assert not _rate_ok(_rejection_count(DPClaim(1.0), planted), AUDITS)


def test_e_value_lower_bound_is_consistent_with_the_verdict() -> None:
    x = np.random.default_rng(5).exponential(1.3, 5000)
    holds, refuted = EValueClaim(2.0).verdict(x, 1e-6), EValueClaim(1.0).verdict(x, 1e-6)
    assert not holds.refuted
    assert refuted.refuted
    assert holds.bound == pytest.approx(refuted.bound)
    assert 1.0 < refuted.bound < 1.3


def test_dp_bound_is_zero_for_identical_laws() -> None:
    y = np.random.default_rng(6).standard_normal((4000, 2))
    verdict = DPClaim(0.0).verdict(y, 1e-6)
    assert verdict.bound == 0.0
    assert not verdict.refuted


# --- the example audits: claims hold, planted bugs are caught ---------------------------------


@pytest.mark.parametrize(
    "factory",
    [examples.gaussian_loss_tail, examples.backward_martingale_e_value, examples.laplace_eps_dp],
)
def test_example_audits_hold_and_catch_their_planted_bug(factory: Callable[[str], Audit]) -> None:
    result = run_audit(factory("quick"), seed=11)
    assert result.verdict.word == "holds"
    assert result.twin is not None
    assert result.twin.verdict.refuted
    assert result.passed


# --- determinism ------------------------------------------------------------------------------


def _small_suite() -> list[Audit]:
    built = [
        examples.gaussian_loss_tail("quick"),
        examples.backward_martingale_e_value("quick"),
        examples.laplace_eps_dp("quick"),
    ]
    return [attrs.evolve(a, n=6000, chunk_size=1000) for a in built]


def _without_seconds(report: AuditReport) -> dict[str, object]:
    data = report.to_json()
    claims = data["claims"]
    assert isinstance(claims, list)
    for claim in claims:
        claim.pop("seconds")
    return data


def test_results_are_bit_identical_across_worker_counts() -> None:
    one = run_audits(_small_suite(), seed=7, workers=1)
    two = run_audits(_small_suite(), seed=7, workers=2)
    assert json.dumps(_without_seconds(one)) == json.dumps(_without_seconds(two))
    other = run_audits(_small_suite(), seed=8, workers=1)
    assert json.dumps(_without_seconds(one)) != json.dumps(_without_seconds(other))


def test_an_audit_draws_the_same_runs_alone_or_in_a_suite() -> None:
    suite = run_audits(_small_suite(), seed=3)
    alone = run_audit(_small_suite()[1], seed=3)
    assert suite.results[1].verdict == alone.verdict


def test_chunk_layout_depends_on_the_audit_only() -> None:
    audit = attrs.evolve(_small_suite()[0], n=2500, chunk_size=1000)
    assert audit.chunks() == [1000, 1000, 500]
    a, b = audit_seed(1, "x").spawn(2), audit_seed(1, "x").spawn(2)
    assert [s.generate_state(2).tolist() for s in a] == [s.generate_state(2).tolist() for s in b]
    assert (
        audit_seed(1, "x").generate_state(2).tolist()
        != audit_seed(1, "y").generate_state(2).tolist()
    )


# --- bad input --------------------------------------------------------------------------------


def _coin(n: int, rng: np.random.Generator) -> npt.NDArray[np.bool_]:
    return rng.random(n) < 0.1


def test_bad_claims_and_audits_are_rejected() -> None:
    with pytest.raises(InvalidParameter, match="delta"):
        ProbabilityClaim(1.0)
    with pytest.raises(InvalidParameter, match="bound"):
        EValueClaim(0.0)
    with pytest.raises(InvalidParameter, match="eps"):
        DPClaim(math.nan)
    with pytest.raises(InvalidParameter, match="n"):
        Audit("a", "s", "c", ProbabilityClaim(0.1), _coin, 0)
    with pytest.raises(InvalidParameter, match="simulate"):
        Audit("a", "s", "c", ProbabilityClaim(0.1), None, 10)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="claim"):
        Audit("a", "s", "c", 0.1, _coin, 10)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="expected"):
        Audit("a", "s", "c", ProbabilityClaim(0.1), _coin, 10, expected="maybe")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="samples"):
        ProbabilityClaim(0.1).verdict(np.array([0.0, 1.0]), 0.05)
    with pytest.raises(InvalidParameter, match="samples"):
        EValueClaim().verdict(np.array([1.0, -1.0]), 0.05)
    with pytest.raises(InvalidParameter, match="samples"):
        DPClaim(1.0).verdict(np.zeros((10, 3)), 0.05)
    with pytest.raises(InvalidParameter, match="alpha"):
        ProbabilityClaim(0.1).verdict(np.array([True]), 0.0)
    with pytest.raises(InvalidParameter, match="workers"):
        run_audits([], workers=0)
    with pytest.raises(InvalidParameter, match="seed"):
        run_audits([], seed=-1)


def test_simulator_with_wrong_row_count_is_rejected() -> None:
    audit = Audit("a", "s", "c", ProbabilityClaim(0.1), lambda n, rng: rng.random(n + 1) < 0.5, 10)
    with pytest.raises(InvalidParameter, match="simulate"):
        run_audit(audit)


def test_registry_needs_twins_and_distinct_names() -> None:
    registry = Registry()
    registry.add(lambda suite: Audit("a", "s", "c", ProbabilityClaim(0.1), _coin, 10), ["x"])
    with pytest.raises(InvalidParameter, match="twin"):
        registry.suite("x")
    with pytest.raises(InvalidParameter, match="suite"):
        registry.suite("nope")
    twin = Twin("a/bug", ProbabilityClaim(0.0))
    dup = Registry()
    dup.add(lambda suite: [_tiny("a", twin), _tiny("a", twin)], ["y"])
    with pytest.raises(InvalidParameter, match="same name"):
        dup.suite("y")


# --- report and command line -----------------------------------------------------------------


def _tiny(name: str, twin: Twin, claim: float = 0.1, expected: str = "holds") -> Audit:
    return Audit(
        name,
        "test",
        f"P(coin) <= {claim}",
        ProbabilityClaim(claim),
        _coin,
        2000,
        twin,
        expected,  # type: ignore[arg-type]
        chunk_size=500,
    )


_CAUGHT = Twin("bug/delta-0", ProbabilityClaim(0.0))
_MISSED = Twin("bug/not-a-bug", ProbabilityClaim(0.5))


@register("test-tiny-ok")
def _tiny_ok(suite: str) -> list[Audit]:
    return [_tiny("coin", _CAUGHT), _tiny("coin-printed", _CAUGHT, 0.01, "refuted")]


@register("test-tiny-missed-twin")
def _tiny_missed(suite: str) -> Audit:
    return _tiny("coin", _MISSED)


@register("test-tiny-refuted")
def _tiny_refuted(suite: str) -> Audit:
    return _tiny("coin", _CAUGHT, 0.01)


def _check_schema(data: dict[str, object]) -> list[dict[str, object]]:
    assert set(data) == {"claims", "seed", "alpha_audit"}
    assert isinstance(data["seed"], int)
    assert isinstance(data["alpha_audit"], float)
    claims = data["claims"]
    assert isinstance(claims, list)
    keys = {"name", "source", "claim", "n", "observed", "bound", "verdict", "seconds", "twin"}
    for c in claims:
        assert set(c) in (keys, keys | {"expected"})
        assert c.get("expected", "refuted") == "refuted"
        assert isinstance(c["name"], str)
        assert isinstance(c["source"], str)
        assert isinstance(c["claim"], str)
        assert isinstance(c["n"], int)
        assert all(isinstance(c[k], float) for k in ("observed", "bound", "seconds"))
        assert c["verdict"] in ("holds", "refuted")
        assert set(c["twin"]) == {"name", "verdict", "observed", "bound"}
        assert c["twin"]["verdict"] in ("holds", "refuted")
    return claims


def test_cli_passing_suite_exit_0_with_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "audit.json"
    assert main(["audit", "--suite", "test-tiny-ok", "--json", str(out), "--seed", "4"]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    claims = _check_schema(data)
    assert data["seed"] == 4
    assert data["alpha_audit"] == 1e-6
    assert [c["name"] for c in claims] == ["coin", "coin-printed"]
    assert "expected" not in claims[0]
    assert claims[1]["expected"] == "refuted"
    assert claims[1]["verdict"] == "refuted"
    captured = capsys.readouterr()
    assert "2/2 audits passed" in captured.out
    assert captured.err == ""


def test_cli_exit_1_when_a_twin_is_missed_or_a_claim_refuted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["audit", "--suite", "test-tiny-missed-twin"]) == 1
    assert "planted bug bug/not-a-bug NOT caught" in capsys.readouterr().out
    assert main(["audit", "--suite", "test-tiny-refuted"]) == 1
    assert "expected holds, got refuted" in capsys.readouterr().out


def test_cli_only_runs_the_named_audit(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    assert main(["audit", "--suite", "test-tiny-ok", "--only", "coin", "--json", str(out)]) == 0
    assert [c["name"] for c in json.loads(out.read_text())["claims"]] == ["coin"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--suite", "no-such-suite"],
        ["--suite", "test-tiny-ok", "--only", "no-such-audit"],
        ["--module", "no_such_module_for_expost"],
    ],
)
def test_cli_bad_usage_returns_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", *argv]) == 2
    assert "expost audit:" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--seed", "-1"], ["--workers", "x"]])
def test_cli_bad_arguments_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["audit", *argv])
    assert info.value.code == 2


def test_cli_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--list"]) == 0
    assert "laplace-eps-dp" in capsys.readouterr().out


class _Terminal:
    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass


class _Pipe(_Terminal):
    def isatty(self) -> bool:
        return False


def test_progress_bar_only_on_a_terminal() -> None:
    tty, pipe = _Terminal(), _Pipe()
    for stream in (tty, pipe):
        bar = ProgressBar(stream)  # type: ignore[arg-type]
        bar(1, 4, "coin")
        bar(4, 4, "coin")
    assert "1/4 chunks" in tty.text
    assert "\r" in tty.text
    assert pipe.text == ""
