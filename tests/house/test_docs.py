"""Every ```python block in README.md and docs/ runs (blocks of a page share one namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text(encoding="utf-8"))


PAGES = [
    p for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))] if python_blocks(p)
]


def test_readme_and_docs_have_examples() -> None:
    assert ROOT / "README.md" in PAGES
    assert len(PAGES) >= 2


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in python_blocks(page):
        exec(compile(block, str(page), "exec"), namespace)  # noqa: S102 -- running our own docs
