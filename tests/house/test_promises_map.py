"""The promise map (docs/promises.md) names files and tests that exist (issue 43, item 5).

Every `path` on the page must exist, and every `path::test_name` must name a test defined in that
file, so that a move or a rename shows up here instead of leaving the map pointing nowhere. The
page's randomness promise is checked here too, by a scan of the library's source.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "promises.md"
NAMED = re.compile(r"`((?:src|tests|proofs|docs|benchmarks)/[^`\s:]*)(?:::(\w+))?`")


def named_paths(text: str) -> list[tuple[str, str | None]]:
    return [(m.group(1), m.group(2)) for m in NAMED.finditer(text)]


def defines(path: Path, test: str) -> bool:
    text = path.read_text(encoding="utf-8")
    return re.search(rf"^\s*def {re.escape(test)}\(", text, re.MULTILINE) is not None


def missing(text: str) -> list[str]:
    out = []
    for path, test in named_paths(text):
        if "*" in path:
            if not list(ROOT.glob(path)):
                out.append(f"{path}: matches no file")
            continue
        target = ROOT / path
        if not target.exists():
            out.append(f"{path}: no such file or folder")
        elif test is not None and not defines(target, test):
            out.append(f"{path}::{test}: no such test in the file")
    return out


def promise_rows(text: str) -> list[str]:
    return [
        line
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith("| promise") and "---" not in line
    ]


def test_every_path_and_test_on_the_promise_map_exists() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert len(named_paths(text)) > 60  # the scan sees the page's paths
    assert missing(text) == []


def test_every_promise_names_a_file_that_keeps_it_and_a_test_that_checks_it() -> None:
    for row in promise_rows(PAGE.read_text(encoding="utf-8")):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 4, row
        kept_by, checked_by = cells[1], cells[2]
        assert kept_by == "—" or named_paths(kept_by), row
        assert "`tests/" in checked_by, row


@pytest.mark.parametrize(
    "planted",
    [
        "`src/expost/no_such_module.py`",
        "`tests/session/test_session.py::test_no_such_test`",
        "`proofs/no_such_proof.py`",
        "`tests/test_no_such_family_*.py`",
    ],
)
def test_planted_twins_are_reported(planted: str) -> None:
    assert len(missing(f"| a promise | {planted} | x | y |")) == 1


def test_the_issue_s_promises_are_on_the_page() -> None:
    text = PAGE.read_text(encoding="utf-8").casefold()
    for promise in (
        "upper bound",
        "refused round is never charged",
        "counting filter admits only rounds dominated",
        "every output an analyst saw is charged",
        "never echo a private value",
        "a ledger always opens",
        "randomness comes only from an explicit source",
        "post-processing",
    ):
        assert promise in text, promise


# The randomness promise: the library draws from no global or implicit source. Allowed: a
# `numpy.random.Generator` passed in or built from a seed, and the OS CSPRNG in the secure bit
# source (and for temporary file names in the SQLite ledger, which touch no release).
GLOBAL_DRAW = re.compile(
    r"(?:\bnp|\bnumpy)\.random\.(?!default_rng\b|Generator\b|SeedSequence\b|PCG64\b|Philox\b"
    r"|BitGenerator\b|SFC64\b|MT19937\b)\w+\s*\("
    r"|^\s*(?:import random\b|from random import)"
    r"|default_rng\(\s*\)",
    re.MULTILINE,
)
OS_ENTROPY = re.compile(r"\bos\.urandom\b|\bsecrets\.|\bSystemRandom\b")
OS_ENTROPY_ALLOWED = {"src/expost/exact/bits.py", "src/expost/ledger/sqlite.py"}


def randomness_faults(path: str, text: str) -> list[str]:
    faults = [f"{path}: {m.group(0).strip()}" for m in GLOBAL_DRAW.finditer(text)]
    if path not in OS_ENTROPY_ALLOWED:
        faults += [f"{path}: {m.group(0)}" for m in OS_ENTROPY.finditer(text)]
    return faults


def test_the_library_draws_no_global_randomness() -> None:
    faults = []
    for path in sorted((ROOT / "src" / "expost").glob("**/*.py")):
        relative = str(path.relative_to(ROOT))
        faults += randomness_faults(relative, path.read_text(encoding="utf-8"))
    assert faults == []


@pytest.mark.parametrize(
    "planted",
    [
        "x = np.random.normal(0, 1)",
        "import random",
        "rng = np.random.default_rng()",
        "key = os.urandom(16)",
        "numpy.random.seed(0)",
    ],
)
def test_the_randomness_scan_catches_planted_draws(planted: str) -> None:
    assert randomness_faults("src/expost/mechanisms/additive.py", planted) != []


def test_the_randomness_scan_accepts_explicit_sources() -> None:
    fine = "rng = np.random.default_rng(seed)\ng: np.random.Generator = rng\nx = rng.normal()\n"
    assert randomness_faults("src/expost/mechanisms/additive.py", fine) == []
