"""The lower layers never import the upper ones (issue 21, "Also").

Processes (paths), grids, stopping rules, guarantees and losses are the vocabulary that
mechanisms, filters, the session and the applications are built from; an import the other way
ties a sampler to a result type (``privacy_time`` once imported ``BatchTranscript``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "expost"
LOWER = [
    *sorted(SRC.joinpath("processes").glob("*.py")),
    *sorted(SRC.joinpath("skellam").glob("*.py")),  # the Skellam home: used by mechanisms, audits
    *sorted(SRC.joinpath("grids").glob("*.py")),
    *sorted(SRC.joinpath("pld").glob("*.py")),  # PLDs: used by filters, audits and apps alike
    *(SRC / name for name in ("stopping.py", "guarantees.py", "loss.py")),
]
UPPER = ("mechanisms", "filters", "session", "odometers", "audit", "apps", "testing", "cli")


def upward_imports(source: str) -> list[str]:
    """The ``expost.<upper>`` modules that ``source`` imports (absolute imports)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        found += [n for n in names if n.split(".")[:2][-1] in UPPER and n.startswith("expost.")]
    return found


@pytest.mark.parametrize("path", LOWER, ids=lambda p: str(p.relative_to(SRC)))
def test_lower_layer_imports_no_upper_layer(path: Path) -> None:
    assert upward_imports(path.read_text()) == []


def test_the_check_sees_an_upward_import() -> None:  # planted twin: the old privacy_time import
    old = "from expost.mechanisms.transcript import BatchTranscript\nimport expost.filters.costs\n"
    assert upward_imports(old) == ["expost.mechanisms.transcript", "expost.filters.costs"]
    assert upward_imports("from expost.grids import ClippedGrids\n") == []
