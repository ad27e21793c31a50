"""``expost prove``: run every symbolic proof in ``proofs/`` and print a result-by-result table.

Exit codes: 0 every proof verified and every wrong variant rejected; 1 otherwise (or a proof
module failed to load); 2 no proofs found, or ``--only`` names no proof.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from expost.errors import InvalidParameter
from expost.symbolic.discovery import ProofLoadError, default_proofs_dir, discover
from expost.symbolic.proof import Proof, ProofResult, run_proof

__all__ = ["add_parser", "format_table", "results_json", "run"]

_HEADER = ("result", "source", "verdict", "wrong variant rejected", "seconds")


def add_parser(sub: Any) -> None:
    """Register ``expost prove``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "prove",
        help="run every symbolic proof check",
        description="Derive each closed form with sympy and check that its wrong variant is rejected.",
    )
    p.add_argument("--dir", type=Path, default=None, help="directory of proof modules")
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the results here")
    p.add_argument("--only", default=None, metavar="NAME", help="run only the proof of this name")
    p.set_defaults(run=run)


def _row(r: ProofResult) -> tuple[str, ...]:
    rejected = "yes" if r.wrong_variant_rejected else "no"
    return (r.name, r.source, r.verdict, rejected, f"{r.seconds:.2f}")


def format_table(results: Sequence[ProofResult]) -> str:
    """A fixed-width table, one row per result, with the steps of every proof that did not pass."""
    rows = [_HEADER, *(_row(r) for r in results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for r in results:
        if not r.passed:
            lines.append(f"\n{r.name}: steps for the claim / for the wrong variant")
            lines += [f"  [{'ok' if s.holds else 'FAILS'}] {s.description}" for s in r.steps]
            lines += [f"  [{'ok' if s.holds else 'FAILS'}] {s.description}" for s in r.wrong_steps]
    return "\n".join(lines)


def results_json(results: Sequence[ProofResult]) -> dict[str, list[dict[str, object]]]:
    """``{"results": [{"name", "source", "verdict", "wrong_variant_rejected", "seconds"}]}``."""
    return {
        "results": [
            {
                "name": r.name,
                "source": r.source,
                "verdict": r.verdict,
                "wrong_variant_rejected": r.wrong_variant_rejected,
                "seconds": r.seconds,
            }
            for r in results
        ]
    }


def _load(directory: Path | None) -> list[Proof] | int:
    where = directory if directory is not None else default_proofs_dir()
    if where is None:
        print("expost prove: no proofs directory found; pass --dir DIR", file=sys.stderr)
        return 2
    try:
        proofs = discover(where)
    except InvalidParameter as exc:
        print(f"expost prove: {exc}", file=sys.stderr)
        return 2
    except ProofLoadError as exc:
        print(f"expost prove: {exc}", file=sys.stderr)
        return 1
    if not proofs:
        print(f"expost prove: no proof modules (*.py defining PROOF) in {where}", file=sys.stderr)
        return 2
    return proofs


def run(args: argparse.Namespace) -> int:
    """Run the proofs; see the module docstring for the exit codes."""
    proofs = _load(args.dir)
    if isinstance(proofs, int):
        return proofs
    if args.only is not None:
        chosen = [p for p in proofs if p.name == args.only]
        if not chosen:
            names = ", ".join(p.name for p in proofs)
            print(
                f"expost prove: no proof named {args.only!r}; there are: {names}", file=sys.stderr
            )
            return 2
        proofs = chosen
    results = [run_proof(p) for p in proofs]
    print(format_table(results))
    total = sum(r.seconds for r in results)
    passed = sum(r.passed for r in results)
    print(
        f"\n{passed}/{len(results)} proofs verified with their wrong variant rejected ({total:.1f} s)"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(results_json(results), indent=2) + "\n", encoding="utf-8")
    return 0 if passed == len(results) else 1
