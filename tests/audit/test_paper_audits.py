"""The paper and quick audit suites: structure, small runs, the CLI end to end, the findings page.

The audits are themselves statistical checks with planted-bug twins; here each quick audit is
run at a small N with a fixed seed: a true claim is refuted with probability at most
alpha_audit = 1e-6, and every twin's violation rate is far enough above its claim (at least
twice the claimed delta, or an e-value mean above 1.5) to be refuted at N = 4000. DP claims keep
their quick N (40,000 pairs, a fraction of a second): the distinguishing test bounds a ratio of
probabilities on half of the runs, and for the exponential twin (P = 0.1 vs 0.0148 on 2,000 test
pairs) Clopper–Pearson bounds at alpha/2 = 5e-7 give only log(0.067/0.030) = 0.8 < eps = 1.
"""

from __future__ import annotations

import importlib.util
import json
import math
import pickle
from pathlib import Path
from types import ModuleType

import attrs
import pytest

from expost.audit import Audit, DPClaim, default_registry, run_audit
from expost.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAPER_AUDITS = default_registry().suite("paper")
QUICK_AUDITS = default_registry().suite("quick")
DEPLOY_AUDITS = default_registry().suite("deploy")
PRINTED = ("apc-thm4/printed", "bnr-cor3.7-time-map/printed", "bnr-lemma-a.3/printed-equality")
CORRECTED = (
    "apc-thm4/corrected",
    "bnr-cor3.7-time-map/corrected",
    "bnr-lemma-a.3/one-sided-crossing",
)
POST_PROCESSED = ("post-processing/gaussian-bucket",)  # THEORY §11: expected refuted
SMALL_N = 4000


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_audit_findings", ROOT / "docs/gen_audit_findings.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_paper_audit_has_a_twin_a_source_and_a_unique_name() -> None:
    names = [a.name for a in PAPER_AUDITS]
    assert len(names) == len(set(names))
    for a in PAPER_AUDITS:
        assert a.twin is not None
        assert a.twin.name != a.name
        assert a.source.strip()
        assert a.statement.strip()


def test_quick_is_a_subset_of_paper_covering_every_area() -> None:
    paper = {a.name for a in PAPER_AUDITS}
    quick = {a.name for a in QUICK_AUDITS}
    assert quick <= paper
    for prefix in (
        "bm-ex-post/mixture",
        "bm-ex-post/linear",
        "backward-martingale-stopped",
        "apc-eq1-ville",
        "apc-thm5-unified-filter",
        "gdp-filter",
        "fac-thm3-odometer",
        "bnr-cor5.2",
        "bnr-prop4.2",
        "laplace-l1-eps-dp",
        "gaussian-pdp-exact",
        "exponential-eps-dp",
        *PRINTED,
        *CORRECTED,
    ):
        assert any(n.startswith(prefix) for n in quick), prefix


def test_the_paper_suite_covers_every_claim_of_the_issue() -> None:
    names = {a.name for a in PAPER_AUDITS}
    for kind in ("mixture", "linear"):
        for rule in ("uniform", "z-score", "fixed"):
            assert any(n.startswith(f"bm-ex-post/{kind}/{rule}/") for n in names)
    assert {
        f"bm-ex-post/linear/uniform/sens-{s}/d-{d}" for s in ("0.5", "1", "3") for d in (1, 3)
    } <= names
    for name in (
        "fac-thm1-zcdp-filter",
        "fac-thm2-dp-filter",
        "apc-lemma6.2-brownian-filter",
        "apc-thm5-unified-filter",
        "gdp-filter/twin-bm-charged-rho",
        "gdp-filter/twin-budget-mu",
        "fac-thm3-odometer/filter",
        "fac-thm3-odometer/mixture",
        "fac-thm3-odometer/stitched",
        "apc-eq1-odometer",
        "bnr-prop4.2-laplace-noise-reduction/d-3",
    ):
        assert name in names


def test_printed_statements_are_expected_to_fail_and_corrected_ones_to_hold() -> None:
    by_name = {a.name: a for a in PAPER_AUDITS}
    for name in PRINTED:
        assert by_name[name].expected == "refuted"
    for name in CORRECTED:
        assert by_name[name].expected == "holds"
    for name in POST_PROCESSED:
        assert by_name[name].expected == "refuted"
    refuted = {a.name for a in PAPER_AUDITS if a.expected == "refuted"}
    assert refuted == set(PRINTED) | set(POST_PROCESSED)


def test_simulators_are_picklable() -> None:
    """``--workers N`` sends simulators to other processes."""
    for a in PAPER_AUDITS:
        assert a.twin is not None
        pickle.dumps(a.simulate)
        if a.twin.simulate is not None:
            pickle.dumps(a.twin.simulate)


@pytest.mark.parametrize("audit", QUICK_AUDITS, ids=lambda a: a.name)
def test_quick_audit_at_small_n(audit: Audit) -> None:
    n = audit.n if isinstance(audit.claim, DPClaim) else min(audit.n, SMALL_N)
    small = attrs.evolve(audit, n=n, chunk_size=1000 if n <= SMALL_N else audit.chunk_size)
    result = run_audit(small, seed=7)
    v = result.verdict
    assert v.n == small.n
    assert math.isfinite(v.observed)
    assert math.isfinite(v.bound)
    assert v.refuted == (v.bound > v.claimed)
    assert v.word == audit.expected
    assert audit.twin is not None
    assert result.twin is not None
    assert result.twin.name == audit.twin.name
    assert result.twin.verdict.refuted, result.problems()
    assert result.passed


def test_quick_suite_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "quick.json"
    assert main(["audit", "--suite", "quick", "--json", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    claims = {c["name"]: c for c in report["claims"]}
    assert set(claims) == {a.name for a in QUICK_AUDITS}
    for a in QUICK_AUDITS:
        entry = claims[a.name]
        assert a.twin is not None
        assert entry["twin"]["name"] == a.twin.name
        assert entry["twin"]["verdict"] == "refuted"
        assert entry["verdict"] == a.expected
        assert entry.get("expected", "holds") == a.expected
    page = _generator().render(
        report, _generator().claimed_values("quick"), command="c", runtime="r", machine="m"
    )
    assert page.startswith("# What the audits found")
    for name in (*PRINTED, *claims):
        assert f"`{name}`" in page
    assert f"**{len(claims)} of {len(claims)} audits as expected**" in page


def test_generator_flags_a_failed_planted_bug() -> None:
    entry = {
        "name": "x",
        "source": "s",
        "claim": "c | d",
        "n": 10,
        "observed": 0.5,
        "bound": 0.1,
        "verdict": "holds",
        "seconds": 1.0,
        "twin": {"name": "x/bug", "verdict": "holds", "observed": 0.2, "bound": 0.1},
    }
    page = _generator().render(
        {"claims": [entry], "seed": 0, "alpha_audit": 1e-6},
        {"x": 0.25},
        command="c",
        runtime="r",
        machine="m",
    )
    assert "**0 of 1 audits as expected**" in page
    assert "**NOT caught**" in page
    assert "200%" in page  # observed / claimed
    assert "c \\| d" in page


def test_committed_findings_page_matches_the_committed_report() -> None:
    report = json.loads((ROOT / "docs/audit-report.json").read_text(encoding="utf-8"))
    page = (ROOT / "docs/audit-findings.md").read_text(encoding="utf-8")
    names = [c["name"] for c in report["claims"]]
    assert set(names) == {a.name for a in PAPER_AUDITS}
    assert all(c["twin"] is not None for c in report["claims"])
    for c in report["claims"]:
        assert f"`{c['name']}`" in page
        assert f"`{c['twin']['name']}`" in page
    body = page.split("- machine:", 1)[1].split("\n", 1)[1]
    header = dict(
        line[2:].split(": ", 1)
        for line in page.splitlines()
        if line.startswith(("- command", "- runtime", "- machine", "- deploy runtime"))
    )
    deploy = json.loads((ROOT / "docs/deploy-report.json").read_text(encoding="utf-8"))
    assert {c["name"] for c in deploy["claims"]} <= {a.name for a in DEPLOY_AUDITS}
    regenerated = _generator().render(
        report,
        _generator().claimed_values(),
        command=header["command"].strip("`"),
        runtime=header["runtime"].split(" (the audits")[0],
        machine=header["machine"],
        deploy=deploy,
        deploy_runtime=header["deploy runtime"],
    )
    assert regenerated.split("- machine:", 1)[1].split("\n", 1)[1] == body


def test_generator_renders_the_deploy_table() -> None:
    def entry(delta: str, twin: str) -> dict[str, object]:
        imp = {"ratio": 0.5, "ratio_lower": 0.4, "ratio_upper": 0.6}
        return {
            "name": f"apc-eq1-ville/delta-{delta}",
            "verdict": "holds",
            "observed": 1e-9,
            "importance": imp,
            "twin": {"name": "t", "verdict": twin, "observed": 0.0, "bound": 0.0},
        }

    paper = {"name": "apc-eq1-ville", "observed": 0.025, "verdict": "holds", "twin": None}
    deploy = {"claims": [entry("1e-06", "refuted"), entry("1e-09", "holds")], "seed": 0}
    deploy["alpha_audit"] = 1e-6
    lines = _generator()._deploy_section(deploy, [paper], {"apc-eq1-ville": 0.05}, "r")
    row = next(line for line in lines if line.startswith("| `apc-eq1-ville`"))
    assert row == "| `apc-eq1-ville` | 50% | 0.5 [0.4, 0.6] | 0.5 [0.4, 0.6] **FAIL** |"
    assert "**1 of 2 deploy audits as expected.**" in "\n".join(lines)
