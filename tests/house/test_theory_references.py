"""Every "THEORY §n" and every ARCHITECTURE reference resolves to a page that ships (issue 43, item 4).

"THEORY" is the theory section of the site, docs/theory/: "§n" is the page whose name starts with
the two-digit number n (docs/theory/12-privacy-loss-distributions.md is §12), "§n.m" a heading of
that page that names "§n.m", a lettered item "§n (e)" an item marked **(e)** on it; "THEORY.md"
and "THEORY's" are the section's index; any other mention of THEORY is reported. ARCHITECTURE is
docs/architecture.md: a quoted name is one of its headings (a capitalised name: ARCHITECTURE
("expected" …) quotes a JSON key, not a heading), "principle k" its core idea numbered k. The scan
covers README.md, docs/ (pages and scripts), src/, proofs/, benchmarks/ and tests/; a planted
citation of §99 must be reported.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THEORY = ROOT / "docs" / "theory"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

SEP = r"(?:\s|#|\*)*"  # line breaks, comment markers and emphasis inside a citation
THEORY_CITE = re.compile(
    rf"THEORY(?:\.md)?(?:'s)?{SEP}§{SEP}(?P<first>\d+(?:\.\d+)?)"
    r"(?P<rest>(?:\s*[–-]\s*\d+)?(?:\s*\([a-z]\)(?:\s*[–-]\s*\([a-z]\))?)?"
    r"(?:\s*\([^()§]*\))?(?:\s*(?:,|and)\s*§\s*\d+(?:\.\d+)?(?:\s*\([a-z]\))?(?:\s*\([^()§]*\))?)*)"
)
MORE_SECTIONS = re.compile(r"(?:,|and)\s*§\s*(\d+(?:\.\d+)?)(?:\s*\(([a-z])\))?")
RANGE = re.compile(r"^\s*[–-]\s*(\d+)")
LETTERS = re.compile(r"^(?:\s*[–-]\s*\d+)?\s*\(([a-z])\)(?:\s*[–-]\s*\(([a-z])\))?")
ARCH_NAMED = re.compile(r"ARCHITECTURE(?:\.md)?(?:'s)?[\s,(#]+[\"“]([A-Z0-9][^\"”]*)[\"”]")
ARCH_NUMBERED = re.compile(
    r"ARCHITECTURE(?:\.md)?(?:'s)?\s+principles?\s+(\d+(?:\s*(?:,|and|–|-)\s*\d+)*)"
)
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*(?:\{[^}]*\})?\s*$", re.MULTILINE)


def scanned_files() -> list[Path]:
    files = [ROOT / "README.md"]
    files += sorted((ROOT / "docs").glob("**/*.md")) + sorted((ROOT / "docs").glob("*.py"))
    for folder in ("src", "proofs", "benchmarks", "tests"):
        files += sorted((ROOT / folder).glob("**/*.py"))
    return [f for f in files if f.resolve() != Path(__file__).resolve()]


def theory_pages() -> dict[int, Path]:
    pages: dict[int, Path] = {}
    for page in sorted(THEORY.glob("[0-9][0-9]-*.md")):
        pages[int(page.name[:2])] = page
    return pages


def flat(text: str) -> str:
    """Line breaks, indentation and comment markers inside a sentence become one space."""
    return re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)


def theory_targets(match: re.Match[str]) -> list[tuple[str, str | None]]:
    """(section, letter) pairs one citation names: "§2–3" is §2 and §3, "§12 (a)–(d)" four items."""
    first, rest = match.group("first"), match.group("rest")
    targets: list[tuple[str, str | None]] = [(first, None)]
    span = RANGE.match(rest)
    if span and "." not in first:
        targets += [(str(n), None) for n in range(int(first) + 1, int(span.group(1)) + 1)]
    lettered = LETTERS.match(rest)
    if lettered:
        low, high = lettered.group(1), lettered.group(2) or lettered.group(1)
        targets += [(first, chr(c)) for c in range(ord(low), ord(high) + 1)]
    for more in MORE_SECTIONS.finditer(rest):
        targets.append((more.group(1), more.group(2)))
    return targets


def headings(page: Path) -> list[str]:
    return HEADING.findall(page.read_text(encoding="utf-8"))


def unresolved_theory(text: str, pages: dict[int, Path]) -> list[str]:
    problems = []
    for match in THEORY_CITE.finditer(flat(text)):
        for section, letter in theory_targets(match):
            number = int(section.split(".")[0])
            page = pages.get(number)
            if page is None:
                problems.append(f"§{section}: no page docs/theory/{number:02d}-*.md")
                continue
            body = page.read_text(encoding="utf-8")
            if "." in section and not any(f"§{section}" in h for h in headings(page)):
                problems.append(f"§{section}: no heading naming it on {page.name}")
            if letter is not None and f"**({letter})**" not in body:
                problems.append(f"§{section} ({letter}): no item **({letter})** on {page.name}")
    return problems


def unreadable_theory_mentions(text: str) -> list[str]:
    """Mentions of THEORY in no form the mapping defines (e.g. "THEORY section 4")."""
    flattened = flat(text)
    out = []
    for mention in re.finditer(r"\bTHEORY\b", flattened):
        at = mention.start()
        rest = flattened[at:]
        if THEORY_CITE.match(flattened, at) or rest.startswith(("THEORY.md", "THEORY's")):
            continue
        if rest.startswith("THEORY §n"):  # the notation itself, where a page explains it
            continue
        out.append(rest[:40])
    return out


def architecture_names() -> tuple[set[str], set[int]]:
    names, numbers = set(), set()
    for heading in headings(ARCHITECTURE):
        numbered = re.match(r"(\d+)\.\s+(.*)", heading)
        if numbered:
            numbers.add(int(numbered.group(1)))
            heading = numbered.group(2)
        names.add(heading.strip().casefold())
    return names, numbers


def unresolved_architecture(text: str) -> list[str]:
    names, numbers = architecture_names()
    problems = []
    flattened = flat(text)
    for match in ARCH_NAMED.finditer(flattened):
        if match.group(1).strip().casefold() not in names:
            problems.append(f'ARCHITECTURE "{match.group(1)}": no such heading in architecture.md')
    for match in ARCH_NUMBERED.finditer(flattened):
        for number in re.findall(r"\d+", match.group(1)):
            if int(number) not in numbers:
                problems.append(f"ARCHITECTURE principle {number}: no core idea {number}.")
    return problems


def test_every_theory_section_has_its_page_and_the_index_maps_them() -> None:
    pages = theory_pages()
    assert sorted(pages) == list(range(1, 14))
    index = (THEORY / "index.md").read_text(encoding="utf-8")
    for number, page in pages.items():
        assert f"]({page.name})" in index, f"the index does not link §{number}"
        title = headings(page)[0]
        assert title.startswith(f"§{number} "), f"{page.name} should open with '# §{number} …'"
    assert "THEORY §n" in index  # the index says what the citation form means


def test_every_theory_citation_resolves() -> None:
    pages = theory_pages()
    problems = []
    for path in scanned_files():
        for problem in unresolved_theory(path.read_text(encoding="utf-8"), pages):
            problems.append(f"{path.relative_to(ROOT)}: {problem}")
    assert problems == []


def test_every_mention_of_theory_has_a_form_the_index_defines() -> None:
    problems = []
    for path in scanned_files():
        for mention in unreadable_theory_mentions(path.read_text(encoding="utf-8")):
            problems.append(f"{path.relative_to(ROOT)}: {mention!r}")
    assert problems == []


@pytest.mark.parametrize(
    ("text", "reported"),
    [
        ("see THEORY section 4", 1),
        ("THEORY, part 12", 1),
        ("THEORY §12, THEORY.md §3, THEORY's prototype, THEORY.md, THEORY §n", 0),
    ],
)
def test_an_unreadable_mention_is_reported(text: str, reported: int) -> None:
    assert len(unreadable_theory_mentions(text)) == reported


def test_every_architecture_citation_resolves() -> None:
    assert ARCHITECTURE.exists()
    problems = []
    for path in scanned_files():
        for problem in unresolved_architecture(path.read_text(encoding="utf-8")):
            problems.append(f"{path.relative_to(ROOT)}: {problem}")
    assert problems == []


def test_the_scan_sees_the_citations_the_code_makes() -> None:
    """The scan is not vacuous: it finds the known citations, including line-broken ones."""
    found = 0
    for path in scanned_files():
        found += len(THEORY_CITE.findall(flat(path.read_text(encoding="utf-8"))))
    assert found > 300
    named = set()
    for path in scanned_files():
        named |= {m.group(1) for m in ARCH_NAMED.finditer(flat(path.read_text(encoding="utf-8")))}
    assert {"Filters guard budgets", "Statistical audits"} <= named


@pytest.mark.parametrize(
    ("text", "reported"),
    [
        ("as THEORY §99 shows", 1),
        ("THEORY §12 (z)", 1),
        ("(THEORY\n    # §98)", 1),
        ("THEORY §2–3 and THEORY §11 (ex-post), §99 (no such page)", 1),
        ("THEORY §4.7", 1),
        ("THEORY §12 (a)–(f), THEORY §2–3, THEORY §11 (ex-post RDP), §12", 0),
    ],
)
def test_planted_twins_are_reported(text: str, reported: int) -> None:
    assert len(unresolved_theory(text, theory_pages())) == reported


@pytest.mark.parametrize(
    ("text", "reported"),
    [
        ('(ARCHITECTURE "No such heading")', 1),
        ("ARCHITECTURE principles 7 and 99", 1),
        ('(ARCHITECTURE "Filters\n    guard budgets"; ARCHITECTURE principles 7 and 8)', 0),
        ('ARCHITECTURE, "Statistical audits"', 0),
    ],
)
def test_planted_architecture_twins_are_reported(text: str, reported: int) -> None:
    assert len(unresolved_architecture(text)) == reported


def map_rows_without_their_page(text: str, pages: dict[int, Path]) -> list[str]:
    """Rows of a "## §n" section of the theory map that link no theory page (§n's, where one)."""
    problems, wanted, heading = [], None, ""
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line
            numbers = re.match(r"## §(\d+)(?:–(\d+))?", line)
            wanted = None
            if numbers:
                low, high = int(numbers.group(1)), int(numbers.group(2) or numbers.group(1))
                wanted = {n: pages.get(n) for n in range(low, high + 1)}
        elif wanted is not None and line.startswith("| ") and "---" not in line:
            if line.startswith("| result "):
                continue
            names = [p.name for p in wanted.values() if p is not None]
            target = names if len(wanted) == 1 else [p.name for p in pages.values()]
            if not any(f"](theory/{name}" in line for name in target):
                problems.append(f"{heading[:40]}: {line[:60]}")
    return problems


def test_every_row_of_the_theory_map_links_its_theory_page() -> None:
    text = (ROOT / "docs" / "theory-map.md").read_text(encoding="utf-8")
    assert map_rows_without_their_page(text, theory_pages()) == []
    for section in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        assert "Theory: " in section.split("\n|", 1)[0], section.splitlines()[0]


def test_a_map_row_without_its_page_is_reported() -> None:
    planted = "## §4 Filters\n\n| result | source |\n|---|---|\n| a filter | FAC Thm 1 |\n"
    assert len(map_rows_without_their_page(planted, theory_pages())) == 1
    linked = planted.replace("FAC Thm 1", "FAC Thm 1; [§4](theory/04-filters.md)")
    assert map_rows_without_their_page(linked, theory_pages()) == []


def test_theory_and_architecture_pages_are_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in [*theory_pages().values(), THEORY / "index.md", ARCHITECTURE]:
        assert str(page.relative_to(ROOT / "docs")) in nav
