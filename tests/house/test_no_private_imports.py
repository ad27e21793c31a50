"""No module of expost uses another expost module's underscore names (issue 12, point 4).

Each name has one public home; a private module (``expost._validation``) may hold public names.
Checked: ``from expost.x import _name`` and ``module._name`` where ``module`` was imported from
expost. Dunders and ``__future__`` are exempt.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
MODULES = sorted(SRC.joinpath("expost").rglob("*.py"))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_name(path: Path, root: Path) -> str:
    """``expost.grids`` for ``root/expost/grids.py`` (or ``root/expost/grids/__init__.py``)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def absolute_module(module: str | None, level: int, here: str, is_package: bool) -> str:
    """The absolute name of ``from {'.' * level}{module} import …`` written in module ``here``."""
    if level == 0:
        return module or ""
    base = here.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def private_uses(path: Path, root: Path = SRC) -> list[str]:
    """``from X import _y`` and ``m._y`` (m an imported expost module) in one file under ``root``."""
    here = module_name(path, root)
    tree = ast.parse(path.read_text(), str(path))
    found: list[str] = []
    modules: set[str] = set()  # local names bound to expost modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = absolute_module(node.module, node.level, here, path.name == "__init__.py")
            if source == "__future__" or not source.startswith("expost"):
                continue
            for alias in node.names:
                if _private(alias.name) and source != here:
                    found.append(f"{path.name}:{node.lineno}: from {source} import {alias.name}")
                elif source == "expost" or not _private(alias.name):
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("expost"):
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name | ast.Attribute)
            and ast.unparse(node.value).split(".")[0] in modules
            and ast.unparse(node.value).split(".")[0][:1].islower()
        ):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_uses_another_modules_private_names(path: Path) -> None:
    assert private_uses(path) == []


def test_the_check_sees_both_forms(tmp_path: Path) -> None:
    package = tmp_path / "expost"
    package.mkdir()
    source = package / "planted.py"
    source.write_text(
        "from __future__ import annotations\n"
        "from expost.grids import _read_only, TimeGrid\n"
        "from expost import grids\n"
        "import expost.stopping\n"
        "x = grids._summary\n"
        "y = expost.stopping._times\n"
        "z = TimeGrid.__name__\n"
    )
    found = private_uses(source, tmp_path)
    assert len(found) == 3, found
