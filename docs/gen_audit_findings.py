"""Write docs/audit-findings.md ("What the audits found") from a JSON audit report.

    expost audit --suite paper --json docs/audit-report.json --seed 0
    expost audit --suite deploy --json docs/deploy-report.json --seed 0
    python docs/gen_audit_findings.py docs/audit-report.json docs/audit-findings.md \\
        --runtime "334 s wall" --machine "2-core Intel Xeon VM, Linux, Python 3.11" \\
        --deploy docs/deploy-report.json --deploy-runtime "70 s wall, same machine"

Everything in the page comes from the report, except the claimed value of each audit (delta,
e-value bound or eps), which the report does not carry: it is read from the audit of the same
name in the ``paper`` suite (shown as "-" if there is none).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from expost.audit import (
    DPClaim,
    EValueClaim,
    ImportanceClaim,
    ProbabilityClaim,
    default_registry,
)
from expost.guarantees import rho_for_dp

__all__ = ["claimed_values", "main", "render"]

Entry = dict[str, Any]

# (title, name prefixes, what the section checks), in page order.
SECTIONS: list[tuple[str, tuple[str, ...], str]] = [
    (
        "Printed versus corrected statements",
        ("apc-thm4", "bnr-cor3.7"),
        (
            "Two statements are audited as printed and as corrected "
            "([errata](theory/index.md#errata-of-the-papers)). The printed forms "
            "must be refuted (`expected: refuted`), the corrected ones must hold."
        ),
    ),
    (
        "Brownian mechanism: ex-post privacy (BNR Thm 3.6, Cor 3.7)",
        ("bm-ex-post",),
        (
            "`uniform`: the adversary knows x and x' and stops at the first released time where the "
            "loss exceeds ψ, so its rate is the claim's whole event P(∃n: L_n > ψ(T_n)). The column "
            "'of claim' says how much of delta the boundary actually uses on this grid: how "
            "conservative it is."
        ),
    ),
    (
        "Backward martingale and e-values (APC Lemma 6.1, eq. 1)",
        ("backward-martingale", "apc-eq1"),
        (
            "E-value claims are tested with a betting test (valid for heavy tails); the bound is a "
            "lower confidence bound on the mean."
        ),
    ),
    (
        "Filters (FAC Thm 1–2, APC Lemma 6.2, Thm 5)",
        ("fac-thm1", "fac-thm2", "apc-lemma6.2", "apc-thm5"),
        (
            "Whole interactions with adaptively sized rounds and an adversarial analyst; the planted "
            "bug claims the smaller eps = rho + sqrt(rho·log(1/delta''))/2."
        ),
    ),
    (
        "Gaussian-DP filter (beyond the papers, THEORY §9)",
        ("gdp-filter",),
        (
            "Whole interactions of Gaussian, Brownian and exponential-mechanism rounds under "
            "`GaussianDPFilter.from_dp(0.5, 0.1)`; the claim is the (eps, delta)-DP statement as a "
            "hockey-stick mean E[(1 − e^(eps − L))+] <= delta (an e-value test). Planted bugs: "
            "Brownian rounds charged Δ²/(2T) instead of Δ²/T; a budget of mu instead of mu²."
        ),
    ),
    (
        "Normal-mixture crossing (BNR Lemma A.3)",
        ("bnr-lemma-a.3",),
        "The one-sided crossing of the two-sided mixture boundary; the planted bug claims delta/4.",
    ),
    (
        "Odometers (FAC Thm 3)",
        ("fac-thm3",),
        "The running loss against the odometer at every prefix; the planted bug halves it.",
    ),
    (
        "ReducedAboveThreshold and Laplace noise reduction (BNR Cor 5.2, Prop 4.2)",
        ("bnr-cor5.2", "bnr-prop4.2"),
        "Laplace noise reduction is audited as a probability-0 claim: one violation refutes it.",
    ),
    (
        "Skellam noise reduction (beyond the papers, THEORY §10)",
        ("skellam-boundary",),
        (
            "The Skellam privacy boundary (a mixture over integer shifts, tuned for ex-post level 1) "
            "under the uniform adversary, the z-score rule and a fixed stop. Planted bugs: the "
            "boundary built for 10·delta; the rate misstated by 2×. Proof: "
            "[Skellam noise reduction](mechanisms/skellam.md)."
        ),
    ),
    (
        "Ex-post RDP and post-processing (beyond the papers, THEORY §11)",
        ("ex-post-rdp", "post-processing"),
        (
            "`ex-post-rdp/bm/...`: E[exp((α−1)(L − α·Δ²/(2T)))] <= 1 for the Brownian mechanism "
            "under adaptive stopping rules (an e-value test; runs tilted by θ = α − 2 for α > 2); "
            "planted bug: rho halved. `post-processing/gaussian-bucket` is a demonstration, "
            "expected refuted: a probabilistic ex-post bound fails after coarsening; "
            "`post-processing/gaussian-bucket-rdp`: ex-post RDP holds on the same outputs. "
            "Details: [Ex-post RDP](ex-post-rdp.md)."
        ),
    ),
    (
        "Mechanisms: DP lower bounds and loss tails",
        ("laplace", "gaussian", "exponential"),
        (
            "For a DP claim, 'observed' is a point estimate of eps from the test half of the runs and "
            "'lower bound' is the distinguishing test's lower confidence bound; the claim stands "
            "while the lower bound stays below the claimed eps."
        ),
    ),
]


# Expected-refuted audits that demonstrate a failure rather than audit a printed statement.
_DEMONSTRATIONS = ("post-processing/",)


def claimed_values(suite: str = "paper") -> dict[str, float]:
    """The claimed value (delta, bound or eps) of every audit in ``suite``, by name."""
    out: dict[str, float] = {}
    for audit in default_registry().suite(suite):
        claim = audit.claim
        if isinstance(claim, ProbabilityClaim):
            out[audit.name] = claim.delta
        elif isinstance(claim, EValueClaim):
            out[audit.name] = claim.bound
        elif isinstance(claim, ImportanceClaim):
            out[audit.name] = claim.delta
        elif isinstance(claim, DPClaim):
            out[audit.name] = claim.eps
    return out


def _number(x: float) -> str:
    return f"{x:.4g}"


def _count(n: int) -> str:
    return {1: "One", 2: "Two", 3: "Three", 4: "Four"}.get(n, str(n))


def _share(observed: float, claimed: float | None) -> str:
    if claimed is None or claimed <= 0.0:
        return "-"
    return f"{100.0 * observed / claimed:.0f}%"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _verdict(entry: Entry) -> str:
    word = str(entry["verdict"])
    expected = entry.get("expected", "holds")
    mark = "as expected" if word == expected else "**UNEXPECTED**"
    return f"{word} ({mark})"


def _twin(entry: Entry) -> str:
    twin = entry.get("twin")
    if not twin:
        return "-"
    caught = "caught" if twin["verdict"] == "refuted" else "**NOT caught**"
    return f"`{twin['name']}`: {caught}, observed {_number(twin['observed'])}"


def _table(entries: list[Entry], claimed: dict[str, float]) -> list[str]:
    lines = [
        (
            "| audit | source | claim | N | observed | claimed | of claim | lower bound | verdict "
            "| planted bug |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        value = claimed.get(e["name"])
        cells = [
            f"`{e['name']}`",
            e["source"],
            e["claim"],
            f"{e['n']:,}",
            _number(e["observed"]),
            "-" if value is None else _number(value),
            _share(e["observed"], value),
            _number(e["bound"]),
            _verdict(e),
            _twin(e),
        ]
        lines.append("| " + " | ".join(_cell(str(c)) for c in cells) + " |")
    return lines


def _boundary_use(entries: list[Entry], claimed: dict[str, float]) -> list[str]:
    """How much of delta each privacy boundary uses against the uniform adversary."""
    lines = []
    for kind in ("mixture", "linear"):
        shares = [
            e["observed"] / claimed[e["name"]]
            for e in entries
            if e["name"].startswith(f"bm-ex-post/{kind}/uniform/") and claimed.get(e["name"])
        ]
        if shares:
            lines.append(
                f"- {kind} boundary: the adversary's violation rate is "
                f"{100 * min(shares):.0f}–{100 * max(shares):.0f}% of delta over "
                f"{len(shares)} sensitivity/dimension settings."
            )
    return lines


def _apc_thm5_erratum() -> str:
    """APC Thm 5's printed eps against Lemma 2.1's, as the rho each admits at (10, 1e-6)."""
    corrected = rho_for_dp(10.0, 1e-6)
    printed = rho_for_dp(10.0, 1e-12)  # 2·sqrt(2·rho·log(1/d)) = 2·sqrt(rho·log(1/d²))
    return (
        "- APC Thm 5 prints eps = rho + 2·sqrt(2·rho·log(1/delta'')), where its proof and Lemma 2.1 "
        "give rho + 2·sqrt(rho·log(1/delta'')). The printed eps is valid (larger) but loose: at the "
        f"Sec. 7 setting (eps, delta'') = (10, 1e-6) it admits rho = {printed:.4f}, Lemma 2.1 "
        f"rho = {corrected:.4f}: the printed form wastes {100 * (1 - printed / corrected):.0f}% of "
        "the budget (computed by `expost.guarantees.rho_for_dp`; the library uses Lemma 2.1, as "
        "APC's own experiments do)."
    )


def _mixture_erratum(entries: list[Entry]) -> list[str]:
    """BNR Lemma A.3's "=": the one-sided crossing probability bracketed by the two audits."""
    by_name = {e["name"]: e for e in entries}
    grid = by_name.get("bnr-lemma-a.3/one-sided-crossing")
    never = by_name.get("bnr-lemma-a.3/printed-equality")
    if grid is None or never is None:
        return []
    return [
        "",
        (
            'BNR Lemma A.3\'s "=", measured: the one-sided crossing probability p of its boundary '
            f"lies between the grid estimate {_number(grid['observed'])} (a lower estimate: the grid "
            "misses crossings between its times) and the bridge-corrected estimate "
            f"{_number(1.0 - float(never['observed']))} (an upper estimate, with upper confidence "
            f"bound {_number(1.0 - float(never['bound']))}), far below delta = 0.1 and close to "
            "delta/2: the boundary is two-sided, so p = (delta + q)/2 with q = P(both sides crossed)."
        ),
    ]


def _section_of(name: str) -> int:
    for i, (_, prefixes, _) in enumerate(SECTIONS):
        if name.startswith(prefixes):
            return i
    return len(SECTIONS)


def _refuted_by_data(entry: Entry) -> bool:
    """Refuted, and not only by a sample above its own proposal's bound (`AuditResult.passed`)."""
    imp = entry.get("importance", {})
    only_by_bound = "violation" in imp and imp["ratio_lower"] <= 1.0
    return entry["verdict"] == "refuted" and not only_by_bound


def _passed(entry: Entry) -> bool:
    twin_ok = not entry.get("twin") or _refuted_by_data(entry["twin"])
    expected = entry.get("expected", "holds")
    claim_ok = _refuted_by_data(entry) if expected == "refuted" else entry["verdict"] == expected
    return bool(claim_ok and twin_ok)


_DEPLOY_COMMAND = "expost audit --suite deploy --json docs/deploy-report.json --seed 0"


def _base(name: str) -> tuple[str, str]:
    """(claim without its delta suffix, the delta tag) of a deploy audit's name."""
    head, _, tag = name.rpartition("/")
    return (head, tag.removeprefix("delta-")) if tag.startswith("delta-") else (name, "-")


def _figure(x: float | None) -> str:
    """A ratio to three digits; "-" where there is none (no upper bound after a violation) or the
    report wrote null (not finite)."""
    return "-" if x is None else f"{x:.3g}"


def _ratio(entry: Entry) -> str:
    imp = entry.get("importance")
    if not imp:
        return f"{_number(entry['observed'])} ({entry['verdict']})"
    mark = "" if _passed(entry) else " **FAIL**"
    # after a weight-bound violation there is no upper bound, and it is why the claim is refuted
    upper = _figure(imp.get("ratio_upper"))
    refuted = " refuted" if entry["verdict"] == "refuted" else ""
    if "violation" in imp:
        refuted += " (weight bound violated)"
    return f"{_figure(imp['ratio'])} [{imp['ratio_lower']:.3g}, {upper}]{refuted}{mark}"


def _deploy_section(
    deploy: Entry, paper: list[Entry], claimed: dict[str, float], runtime: str
) -> list[str]:
    """The claim × delta table: P(event)/delta with its interval, next to the paper figure."""
    rows: dict[str, dict[str, Entry]] = {}
    for e in deploy["claims"]:
        head, tag = _base(e["name"])
        rows.setdefault(head, {})[tag] = e
    deltas = sorted({t for r in rows.values() for t in r}, key=lambda t: -float(t))
    at_paper = {e["name"]: e for e in paper}
    entries: list[Entry] = deploy["claims"]
    ok = sum(_passed(e) for e in entries)
    lines = [
        "",
        "## At deployment deltas (importance sampling)",
        "",
        f"- deploy command: `{_DEPLOY_COMMAND}`",
        f"- seed: {deploy['seed']}, alpha_audit: {deploy['alpha_audit']:g}",
        f"- deploy runtime: {runtime}",
        "",
        (
            f"**{ok} of {len(entries)} deploy audits as expected.** Each cell is the estimate of "
            "P(event)/delta with its betting confidence interval (each side at level "
            f"1 − {deploy['alpha_audit']:g}): how much of delta the claim really uses at that "
            "delta. 'refuted' marks a printed statement, refuted as expected. The first column is "
            "the paper suite's figure (observed/claimed at its delta, 0.05 for the Brownian "
            "claims). Every planted twin is refuted at the same delta unless a cell says "
            "**FAIL**. Method: [Auditing at small delta](small-delta.md)."
        ),
        "",
        "| claim | paper suite | " + " | ".join(f"delta = {t}" for t in deltas) + " |",
        "|---|---|" + "---|" * len(deltas),
    ]
    for head, cells in rows.items():
        ref = at_paper.get(head)
        value = claimed.get(head)
        paper_cell = "-" if ref is None else _share(ref["observed"], value)
        row = [f"`{head}`", paper_cell, *(_ratio(cells[t]) if t in cells else "-" for t in deltas)]
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return lines


def render(
    report: Entry,
    claimed: dict[str, float],
    *,
    command: str,
    runtime: str,
    machine: str,
    deploy: Entry | None = None,
    deploy_runtime: str = "not recorded",
) -> str:
    """The markdown page for ``report`` (the JSON of ``expost audit --json``).

    ``deploy``: the report of the ``deploy`` suite, rendered as a claim × delta table.
    """
    entries: list[Entry] = report["claims"]
    total = sum(float(e["seconds"]) for e in entries)
    ok = sum(_passed(e) for e in entries)
    printed = [
        e
        for e in entries
        if e.get("expected") == "refuted" and not e["name"].startswith(_DEMONSTRATIONS)
    ]
    lines = [
        "# What the audits found",
        "",
        "<!-- generated by docs/gen_audit_findings.py from the JSON report; do not edit -->",
        "",
        f"- command: `{command}`",
        f"- seed: {report['seed']}, alpha_audit: {report['alpha_audit']:g}",
        f"- runtime: {runtime} (the audits' own times add up to {total:.0f} s)",
        f"- machine: {machine}",
        "",
        (
            f"**{ok} of {len(entries)} audits as expected**: every claim has its expected verdict and "
            f"{'every' if ok == len(entries) else 'not every'} planted bug was refuted. Each test has "
            f"false-alarm level {report['alpha_audit']:g}; 'lower bound' is its lower confidence "
            "bound on the audited quantity, and a claim is refuted iff that bound exceeds the "
            "claimed value. How the audits work: [Statistical audits](audits.md)."
        ),
        "",
        "## The four errata of the papers",
        "",
        (
            f"{_count(len(printed))} printed statements are false: audited as printed, they are "
            "refuted."
        ),
        "",
    ]
    for e in printed:
        lines.append(
            f"- `{e['name']}` ({e['source']}): {e['claim']} — observed {_number(e['observed'])} "
            f"(lower bound {_number(e['bound'])}): **{e['verdict']}**."
        )
    lines += ["", "One printed statement is valid but loose:", "", _apc_thm5_erratum()]
    lines += _mixture_erratum(entries)
    use = _boundary_use(entries, claimed)
    if use:
        lines += ["", "## How conservative the privacy boundaries are", "", *use]
    buckets: dict[int, list[Entry]] = {}
    for e in entries:
        buckets.setdefault(_section_of(e["name"]), []).append(e)
    for i in sorted(buckets):
        title, _, words = SECTIONS[i] if i < len(SECTIONS) else ("Other audits", (), "")
        lines += ["", f"## {title}", ""]
        if words:
            lines += [words, ""]
        lines += _table(buckets[i], claimed)
    if deploy is not None:
        lines += _deploy_section(deploy, entries, claimed, deploy_runtime)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Read the report, write the page; exit 0."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report", type=Path)
    p.add_argument("page", type=Path)
    p.add_argument(
        "--command",
        default="expost audit --suite paper --json docs/audit-report.json --seed 0",
    )
    p.add_argument("--runtime", default="not recorded")
    p.add_argument(
        "--machine",
        default=f"{platform.machine()}, {platform.system()}, Python {platform.python_version()}",
    )
    p.add_argument("--deploy", type=Path, default=None, help="the deploy suite's JSON report")
    p.add_argument("--deploy-runtime", default="not recorded")
    args = p.parse_args(argv)
    report = json.loads(args.report.read_text(encoding="utf-8"))
    deploy = None if args.deploy is None else json.loads(args.deploy.read_text(encoding="utf-8"))
    page = render(
        report,
        claimed_values(),
        command=args.command,
        runtime=args.runtime,
        machine=args.machine,
        deploy=deploy,
        deploy_runtime=args.deploy_runtime,
    )
    args.page.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
