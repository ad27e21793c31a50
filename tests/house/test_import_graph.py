"""No import circle among expost's modules and no arrow up to the package top level (issue 28, item 5).

The graph has one node per module of ``src/expost`` (a package is its ``__init__``) and an edge
for every import in it — module level, inside functions and under ``TYPE_CHECKING`` alike,
absolute and relative. ``from a.b import c`` points at ``a.b.c`` where that is a module, else at
``a.b``; the parents Python imports on the way (``a``, ``a.b``) are not edges, since every
submodule would otherwise close a circle with a package ``__init__`` that re-exports it. Two
modules that import each other, directly or around a longer loop, are one idea split in two
(``apps.relative_error`` and ``apps.relative_error_exact`` were); the top level ``expost``
re-exports the library, so a module below that imports names from it depends on everything.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path

import pytest

from tests.house.test_no_private_imports import absolute_module, module_name

SRC = Path(__file__).resolve().parents[2] / "src"
TOP = "expost"
ALLOWED_TOP_IMPORTERS = frozenset({"expost", "expost.cli"})  # the top level itself, the command


def imports_of(source: str, here: str, is_package: bool, modules: AbstractSet[str]) -> set[str]:
    """The modules of ``modules`` that ``source`` (module ``here``) imports anywhere in its body."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = absolute_module(node.module, node.level, here, is_package)
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in modules else base)
    return {name for name in found if name in modules and name != here}


def import_graph(root: Path = SRC, package: str = TOP) -> dict[str, set[str]]:
    """Module → the package's modules it imports, for every ``.py`` under ``root/package``."""
    paths = sorted(root.joinpath(package).rglob("*.py"))
    names = {module_name(p, root): p for p in paths}
    return {
        name: imports_of(path.read_text(), name, path.name == "__init__.py", names.keys())
        for name, path in names.items()
    }


def circles(graph: Mapping[str, AbstractSet[str]]) -> list[list[str]]:
    """One circle ``[a, b, …, a]`` through each strongly connected part of more than one module.

    Tarjan's algorithm (iterative) finds the parts; a breadth-first search inside a part gives
    the shortest circle through its first module.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    parts: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None and nxt in graph:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in stack:
                    low[node] = min(low[node], index[nxt])
            elif nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        member = stack.pop()
                        part.append(member)
                        if member == node:
                            break
                    if len(part) > 1:
                        parts.append(sorted(part))
    return sorted(_shortest_circle(graph, set(part), part[0]) for part in parts)


def _shortest_circle(
    graph: Mapping[str, AbstractSet[str]], part: set[str], start: str
) -> list[str]:
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & part):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if nxt not in previous:
                    previous[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"{start} lies on no circle of {sorted(part)}")  # a part has a circle


def top_level_importers(graph: Mapping[str, AbstractSet[str]], top: str = TOP) -> list[str]:
    """The modules, other than the allowed ones, that import the package's top level."""
    return sorted(m for m, out in graph.items() if top in out and m not in ALLOWED_TOP_IMPORTERS)


def command_line_importers(graph: Mapping[str, AbstractSet[str]], cli: str) -> list[str]:
    """The modules outside the command-line package ``cli`` that import a module of it."""

    def inside(name: str) -> bool:
        return name == cli or name.startswith(cli + ".")

    return sorted(m for m, out in graph.items() if not inside(m) and any(map(inside, out)))


GRAPH = import_graph()


def test_the_graph_sees_the_package() -> None:
    assert "expost.session" in GRAPH
    assert "expost.cli" in GRAPH
    assert "expost.errors" in GRAPH["expost.session"]  # a known arrow is seen


def test_no_import_circle() -> None:
    found = circles(GRAPH)
    assert not found, "import circles: " + "; ".join(" -> ".join(c) for c in found)


def test_no_module_imports_the_top_level() -> None:
    found = top_level_importers(GRAPH)
    assert not found, f"modules that import the package top level {TOP!r}: {found}"


def test_the_command_line_is_the_top_layer() -> None:
    found = command_line_importers(GRAPH, "expost.cli")
    assert not found, f"modules below the command line that import it: {found}"


def test_the_planted_import_of_the_command_line_is_found() -> None:
    graph = {
        "pkg.cli": {"pkg.cli.run"},
        "pkg.cli.run": {"pkg.core"},
        "pkg.core": set(),
        "pkg.client": {"pkg.core"},
        "pkg.clients": {"pkg.cli.run"},
    }
    assert command_line_importers(graph, "pkg.cli") == ["pkg.clients"]


# Planted twins: a tiny package on disk with a circle through a relative, a function-level and an
# ``import a.b`` import, and an upward ``import pkg``; each must be seen.
PLANTED = {
    "pkg/__init__.py": "from pkg.a import A\n",
    "pkg/a.py": "from .sub import b\nA = 1\n",
    "pkg/sub/__init__.py": "",
    "pkg/sub/b.py": "def f():\n    import pkg.sub.c\n",
    "pkg/sub/c.py": "from ..a import A\nimport pkg\n",
    "pkg/leaf.py": "from pkg import a, sub\n",
}


@pytest.fixture
def planted(tmp_path: Path) -> dict[str, set[str]]:
    for name, text in PLANTED.items():
        tmp_path.joinpath(name).parent.mkdir(parents=True, exist_ok=True)
        tmp_path.joinpath(name).write_text(text)
    return import_graph(tmp_path, "pkg")


def test_the_planted_circle_is_found(planted: dict[str, set[str]]) -> None:
    assert planted["pkg.leaf"] == {"pkg.a", "pkg.sub"}  # submodules, not the top level
    assert circles(planted) == [["pkg", "pkg.a", "pkg.sub.b", "pkg.sub.c", "pkg"]]
    planted["pkg.sub.c"].discard("pkg")  # the upward arrow closed the big circle; a smaller stays
    assert circles(planted) == [["pkg.a", "pkg.sub.b", "pkg.sub.c", "pkg.a"]]
    planted["pkg.sub.c"].discard("pkg.a")  # broken: no circle (the parent packages are no edges)
    assert circles(planted) == []
    planted["pkg.leaf"].add("pkg.leaf")  # a self-import is no circle of two modules
    assert circles(planted) == []


def test_the_planted_upward_import_is_found(planted: dict[str, set[str]]) -> None:
    assert top_level_importers(planted, "pkg") == ["pkg.sub.c"]
