"""Importing expost stays light: heavy dependencies load on first use (issue 12).

Each import runs in a fresh interpreter. Timing is not asserted here; it is measured by
``benchmarks/bench_import.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import expost

HEAVY = ("scipy.stats", "scipy.optimize", "sympy", "matplotlib")


def _loaded_after(statement: str) -> set[str]:
    """The modules in ``sys.modules`` after ``statement`` in a fresh interpreter."""
    source = str(Path(expost.__file__).resolve().parents[1])  # this checkout's expost
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH")) if p)
    code = f"import sys\n{statement}\nprint('\\n'.join(sys.modules))"
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": path},
    )
    return set(run.stdout.split())


def _under(modules: set[str], package: str) -> list[str]:
    return sorted(m for m in modules if m == package or m.startswith(package + "."))


@pytest.mark.parametrize(
    "statement",
    [
        "import expost",
        "import expost.apps.relative_error",
        "import expost.audit",
        "import expost.symbolic",
        "import expost.cli",
    ],
)
def test_import_loads_no_heavy_dependency(statement: str) -> None:
    loaded = _loaded_after(statement)
    for package in HEAVY:
        assert _under(loaded, package) == [], f"{statement!r} imports {package}"


def test_import_expost_loads_no_scipy_at_all() -> None:
    # Even scipy.special costs more than numpy itself; the import-time target needs it lazy.
    assert _under(_loaded_after("import expost"), "scipy") == []


def test_cli_help_does_not_import_sympy() -> None:
    statement = (
        "import contextlib, io\n"
        "from expost.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])"
    )
    assert _under(_loaded_after(statement), "sympy") == []
