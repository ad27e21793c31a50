"""Importing expost stays light: heavy dependencies load on first use (issue 12).

Each import runs in a fresh interpreter. Timing is not asserted here; it is measured by
``benchmarks/bench_import.py``.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import expost
import expost.errors
from expost._lazy import stub_names

PUBLIC: list[str] = vars(expost)["__all__"]  # read from the stub at run time (not typed)
HOME: dict[str, str] = vars(expost)["_HOME"]  # public name -> its home module

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


# ----------------------------------------------------------------------------- the lazy top level

LIGHT = {"expost", "expost._lazy", "expost.errors"}  # all ``import expost`` may load of it


def test_import_expost_loads_only_the_error_types() -> None:
    # The import-time target (<= 2.5x ``import numpy``), checked by what is loaded, not by a clock:
    # the names load on first use (PEP 562 ``__getattr__``).
    loaded = _loaded_after("import expost")
    assert _under(loaded, "expost") == sorted(LIGHT)
    for package in ("numpy", "attrs", "attr", "sqlite3", "mpmath", *HEAVY):
        assert _under(loaded, package) == [], f"'import expost' imports {package}"


def test_a_name_loads_its_module_on_first_use() -> None:
    loaded = _loaded_after("import expost\nexpost.InvalidParameter")
    assert _under(loaded, "expost") == sorted(LIGHT)  # the errors are there already
    loaded = _loaded_after("import expost\nexpost.PrivateSession")
    assert {"expost.session", "expost.filters"} <= loaded
    assert "numpy" in loaded
    loaded = _loaded_after("import expost\nexpost.filters.ZCDPFilter")  # a submodule, too
    assert "expost.filters" in loaded


def test_every_public_name_is_its_home_modules_object() -> None:
    for name in PUBLIC:
        if name == "__version__":
            continue
        home = HOME[name]
        value = getattr(expost, name)
        if home == "expost":  # a submodule: ``expost.exact``
            assert value is importlib.import_module(f"expost.{name}")
        else:
            assert value is getattr(importlib.import_module(home), name), name
            assert name in importlib.import_module(home).__all__, name  # public in its home
    assert set(PUBLIC) <= set(dir(expost))
    eager = {n for n, home in HOME.items() if home == "expost.errors"}
    assert eager
    assert eager <= set(vars(expost))


def test_an_unknown_name_is_an_attribute_error() -> None:
    unknown = "NoSuchName"  # type checkers refuse ``expost.NoSuchName`` already (the stub)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        getattr(expost, unknown)
    assert not hasattr(expost, "no_such_module")
    assert not hasattr(expost, "__wrapped__")


STUB = Path(expost.__file__).with_suffix(".pyi").read_text(encoding="utf-8")


def reexports(source: str) -> dict[str, str]:
    """Name → module of each ``from module import name as name`` in ``source``, by ``ast``:
    what a type checker reads as the stub's re-exports."""
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname == alias.name and node.module is not None:
                    found[alias.name] = node.module
    return found


def test_the_loader_reads_the_stub_as_type_checkers_do() -> None:
    assert stub_names(STUB) == reexports(STUB) == HOME  # one list, read alike
    assert sorted(PUBLIC) == sorted([*reexports(STUB), "__version__"])
    assert sorted(PUBLIC) == PUBLIC


def test_the_stub_reader_handles_every_import_form() -> None:
    planted = (
        '"""from nowhere import Fake as Fake"""\n'  # a docstring line, not an import
        "from typing import Any\n"  # the stub's own import, not public
        "from a.b import (  # comment\n"
        "    C as C,\n"
        "    D as D,  # note\n"
        "    E,\n"
        "    F as G,\n"
        ")\n"
        "from a import sub as sub\n"
        "from h import I as I, J as J\n"
    )
    expected = {"C": "a.b", "D": "a.b", "sub": "a", "I": "h", "J": "h"}
    assert stub_names(planted) == expected
    assert reexports(planted) == expected  # the twin: Python's own parser agrees
    assert stub_names(planted.replace("D as D", "D as Dee")) != expected  # a broken line is seen
