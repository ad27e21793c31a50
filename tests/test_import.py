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

LIGHT = {"expost", "expost.errors"}  # all that ``import expost`` may load of the library


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
    for name in expost.__all__:
        if name == "__version__":
            continue
        home = expost._HOME.get(name)
        value = getattr(expost, name)
        if home is not None:
            assert value is getattr(importlib.import_module(home), name), name
        elif name in ("exact", "stopping"):
            assert value is importlib.import_module(f"expost.{name}")
        else:
            assert value is getattr(expost.errors, name), name  # loaded eagerly
    assert set(expost.__all__) <= set(dir(expost))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        _ = expost.NoSuchName
    assert not hasattr(expost, "no_such_module")
    assert not hasattr(expost, "__wrapped__")


def typed_imports(source: str) -> dict[str, tuple[str, ...]]:
    """Module -> names imported under ``if TYPE_CHECKING:`` in ``source`` (submodules of
    ``expost`` itself left out: they load as submodules)."""
    found: dict[str, tuple[str, ...]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for item in node.body:
                if isinstance(item, ast.ImportFrom) and item.module not in (None, "expost"):
                    found[item.module] = (
                        *found.get(item.module, ()),
                        *(a.name for a in item.names),
                    )
    return found


INIT = Path(expost.__file__).read_text(encoding="utf-8")


def test_the_type_checking_imports_are_the_lazy_table() -> None:
    typed = typed_imports(INIT)
    assert typed == expost._LAZY  # what checkers see is what __getattr__ loads
    lazy = {name for names in expost._LAZY.values() for name in names}
    eager = {n for n in expost.__all__ if n in vars(expost.errors)}
    assert lazy | eager | {"exact", "stopping", "__version__"} == set(expost.__all__)


def test_a_planted_disagreement_is_found() -> None:
    # a name the table loads but type checkers would not see
    typed = "from expost.exact import GeneratorBits, SecureBits"
    assert INIT.count(typed) == 1
    planted = typed_imports(INIT.replace(typed, "from expost.exact import GeneratorBits"))
    assert planted != expost._LAZY
    assert planted["expost.exact"] == ("GeneratorBits",)
