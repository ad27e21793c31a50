"""An audit suite's results: `AuditResult` per audit, `AuditReport` with its JSON and table.

The JSON keys are ARCHITECTURE's ("Statistical audits"); a report passes iff every claim has its
expected verdict and every planted bug was refuted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from attrs import frozen

from expost.audit.verdict import Expected, Verdict

__all__ = ["AuditReport", "AuditResult", "TwinResult"]


@frozen
class TwinResult:
    """The planted bug's verdict (it should be refuted)."""

    name: str
    verdict: Verdict


@frozen
class AuditResult:
    """One audit's verdict, its twin's, and the wall time of both."""

    name: str
    source: str
    statement: str
    verdict: Verdict
    seconds: float
    expected: Expected = "holds"
    twin: TwinResult | None = None

    @property
    def passed(self) -> bool:
        """The verdict is the expected one and the planted bug (if any) was refuted.

        An expected refutation (of the twin, or of a claim expected to be refuted) does not count
        when it comes only from a sample above the verdict's *own* weight bound: that says the
        proposal's bound B is mis-derived, not that the claim is false.
        """
        return not self.problems()

    def problems(self) -> list[str]:
        """Why the audit did not pass, one line per reason (empty when it passed)."""
        out = []
        v = self.verdict
        if v.word != self.expected:
            out.append(
                f"{self.name}: expected {self.expected}, got {v.word} "
                f"(lower bound {v.bound:.6g} vs claimed {v.claimed:.6g}; {v.detail})"
            )
        elif self.expected == "refuted" and _broken(v):
            out.append(f"{self.name}: refuted only by its own proposal's bound ({v.detail})")
        if self.twin is not None and not self.twin.verdict.refuted:
            t = self.twin.verdict
            out.append(
                f"{self.name}: planted bug {self.twin.name} NOT caught "
                f"(lower bound {t.bound:.6g} <= claimed {t.claimed:.6g}; {t.detail})"
            )
        elif self.twin is not None and _broken(self.twin.verdict):
            out.append(
                f"{self.name}: planted bug {self.twin.name} refuted only by its own proposal's "
                f"bound, so its weight bound is mis-derived ({self.twin.verdict.detail})"
            )
        return out

    def to_json(self) -> dict[str, object]:
        """The report entry: keys as in ARCHITECTURE ("expected" only when "refuted").

        A verdict with ``extra`` figures (importance-sampled claims) adds them under
        ``"importance"``, for the claim and for its twin; ``"violation"`` there says which sample
        broke the weight bound (the verdict is then "refuted" and there is no upper bound), and
        ``"certified"`` whether the upper confidence bound on P is <= delta (the claim is then
        confirmed at level 1 − alpha, not merely "not refuted").
        A figure that is not finite (a weight that overflowed) is written as null.
        """
        twin: dict[str, object] | None = None
        if self.twin is not None:
            twin = {
                "name": self.twin.name,
                "verdict": self.twin.verdict.word,
                "observed": self.twin.verdict.observed,
                "bound": self.twin.verdict.bound,
            }
            if self.twin.verdict.extra:
                twin["importance"] = _importance(self.twin.verdict)
            twin = _strict(twin)
        entry: dict[str, object] = {
            "name": self.name,
            "source": self.source,
            "claim": self.statement,
            "n": self.verdict.n,
            "observed": self.verdict.observed,
            "bound": self.verdict.bound,
            "verdict": self.verdict.word,
            "seconds": self.seconds,
            "twin": twin,
        }
        if self.verdict.extra:
            entry["importance"] = _importance(self.verdict)
        if self.expected == "refuted":
            entry["expected"] = "refuted"
        return _strict(entry)


def _strict(entry: Mapping[str, object]) -> dict[str, object]:
    """The entry with non-finite floats as None (strict JSON has no Infinity or NaN)."""
    return {
        k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in entry.items()
    }


_HEADER = ("audit", "source", "claim", "N", "observed", "lower bound", "verdict", "twin", "s")


def _certified(v: Verdict) -> bool:
    """An importance-sampled claim whose upper confidence bound on P is within its delta."""
    upper = v.extra.get("upper")
    return isinstance(upper, float) and upper <= v.claimed


def _importance(v: Verdict) -> dict[str, object]:
    """An importance-sampled verdict's figures for the JSON report, with ``"certified"``."""
    return _strict(v.extra) | {"certified": _certified(v)}


def _broken(v: Verdict) -> bool:
    """Refuted only because a sample broke the importance weight bound (the interval alone
    would not refute)."""
    return "violation" in v.extra and v.bound <= v.claimed


def _word(v: Verdict) -> str:
    """The verdict, marked when a sample broke an importance claim's weight bound or when its
    upper bound certifies it."""
    mark = " (weight bound violated)" if "violation" in v.extra else ""
    return v.word + (mark or (" (certified)" if _certified(v) else ""))


def _row(r: AuditResult) -> tuple[str, ...]:
    v = r.verdict
    verdict = _word(v) + ("" if r.expected == "holds" else " (expected)")
    twin = (
        "-" if r.twin is None else _word(r.twin.verdict) if r.twin.verdict.refuted else "NOT CAUGHT"
    )
    observed = f"{v.observed:.4g}"
    if "ratio" in v.extra:  # an importance-sampled claim: P/delta with its interval
        x = v.extra
        upper = f"{x['ratio_upper']:.3g}" if "ratio_upper" in x else "-"
        observed += f" (P/d {x['ratio']:.3g} [{x['ratio_lower']:.3g}, {upper}])"
    cells = (r.name, r.source, r.statement, str(v.n), observed, f"{v.bound:.4g}")
    return (*cells, verdict, twin, f"{r.seconds:.1f}")


@frozen
class AuditReport:
    """The results of a suite, with the seed and level they were run at."""

    results: tuple[AuditResult, ...]
    seed: int
    alpha_audit: float

    @property
    def passed(self) -> bool:
        """Every claim has its expected verdict and every planted bug was caught."""
        return all(r.passed for r in self.results)

    @property
    def exit_code(self) -> int:
        """0 when `passed`, else 1."""
        return 0 if self.passed else 1

    def to_json(self) -> dict[str, object]:
        """``{"claims": [...], "seed", "alpha_audit"}``."""
        return {
            "claims": [r.to_json() for r in self.results],
            "seed": self.seed,
            "alpha_audit": self.alpha_audit,
        }

    def dumps(self) -> str:
        """The JSON report as text."""
        return json.dumps(self.to_json(), indent=2, allow_nan=False) + "\n"

    def table(self) -> str:
        """A fixed-width table, a summary line, and one line per problem."""
        rows = [_HEADER, *(_row(r) for r in self.results)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        ok = sum(r.passed for r in self.results)
        lines.append(
            f"\n{ok}/{len(self.results)} audits passed (claim as expected, planted bug refuted) "
            f"at alpha_audit = {self.alpha_audit:g}, seed = {self.seed}"
        )
        lines += [f"FAIL {p}" for r in self.results for p in r.problems()]
        return "\n".join(lines)
