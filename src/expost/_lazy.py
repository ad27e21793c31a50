"""The package's public names, read from its stub and loaded on first use (PEP 562).

The top level's public names are written once, in ``expost/__init__.pyi``, as re-exports
``from expost.filters import PLDFilter as PLDFilter``: type checkers read the stub, and
`attach_stub` reads the same lines at import to build the lazy table (the pattern of Scientific
Python's SPEC 1, ``lazy_loader.attach_stub``). Plain string handling, no ``ast`` or ``re``:
no ``pathlib``: ``import expost`` stays as cheap as before.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["attach_stub", "stub_names"]


def _statements(text: str) -> list[str]:
    """The ``from … import …`` statements of a stub, each on one line, comments dropped."""
    lines = [line.split("#", 1)[0].rstrip() for line in text.splitlines()]
    found: list[str] = []
    open_statement: list[str] | None = None
    for line in lines:
        if open_statement is not None:
            open_statement.append(line)
            if ")" in line:
                found.append(" ".join(open_statement))
                open_statement = None
        elif line.startswith("from ") and " import " in line:
            if "(" in line and ")" not in line:
                open_statement = [line]
            else:
                found.append(line)
    return found


def stub_names(text: str) -> dict[str, str]:
    """Public name → the module it is re-exported from, for each ``X as X`` import of ``text``.

    ``from pkg import sub as sub`` names a submodule ``pkg.sub``: its home is ``pkg``. Imports
    without ``as`` (``from typing import Any``) are the stub's own and are not public.
    """
    homes: dict[str, str] = {}
    for statement in _statements(text):
        module, _, names = statement.removeprefix("from ").partition(" import ")
        for item in names.replace("(", " ").replace(")", " ").split(","):
            words = item.split()
            if len(words) == 3 and words[1] == "as" and words[0] == words[2]:
                homes[words[0]] = module.strip()
    return homes


def attach_stub(
    package: str, init_file: str, eager: tuple[str, ...] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str], dict[str, str]]:
    """``(__getattr__, __dir__, __all__, homes)`` for ``package`` from the stub beside
    ``init_file`` (``__init__.pyi``). Names homed in a module of ``eager`` are loaded now (into
    the package's namespace); the others on first access, and then cached there."""
    with open(init_file.removesuffix(".py") + ".pyi", encoding="utf-8") as stub:
        homes = stub_names(stub.read())
    namespace = sys.modules[package].__dict__
    for name, home in homes.items():
        if home in eager:
            namespace[name] = getattr(importlib.import_module(home), name)
    public = sorted([*homes, "__version__"])

    def getattr_(name: str) -> Any:
        """A public name or a submodule (``expost.filters``), imported on first use."""
        home = homes.get(name)
        if home == package:
            value: Any = importlib.import_module(f"{package}.{name}")
        elif home is not None:
            value = getattr(importlib.import_module(home), name)
        elif not name.startswith("__"):
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as err:
                if err.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value  # the next access is a plain lookup
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *public})

    return getattr_, dir_, public, homes
