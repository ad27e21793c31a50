"""No module of src/expost over 500 lines (issue 28, "Done when"): one concept a module.

A module that grows past the limit holds more than one idea; split it by concept and keep the
public import path (a package that re-exports, as `expost.grids` and `expost.boundaries` do).
"""

from __future__ import annotations

from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "expost"
LIMIT = 500
MODULES = sorted(SRC.rglob("*.py"))


def lines(path: Path) -> int:
    """The number of lines of a text file (a last line without a newline counts)."""
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_package_is_seen() -> None:
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_module_is_at_most_500_lines(path: Path) -> None:
    assert lines(path) <= LIMIT, f"{path.relative_to(SRC)}: {lines(path)} lines > {LIMIT}"


def test_the_count_sees_a_long_module(tmp_path: Path) -> None:  # planted twin
    long = tmp_path / "long.py"
    long.write_text("x = 1\n" * LIMIT + "y = 2")  # 501 lines, the last without a newline
    assert lines(long) == LIMIT + 1
