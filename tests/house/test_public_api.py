"""The public surface: ``PUBLIC`` (read from ``expost/__init__.pyi``, the one list) is
resolvable, drawn from the rooms of the user's job, complete for each family a user picks from,
and is what the API reference lists."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import expost
import expost.errors
import expost.filters

PUBLIC: list[str] = vars(expost)["__all__"]  # read from the stub at run time (not typed)
HOME: dict[str, str] = vars(expost)["_HOME"]  # public name -> its home module
ROOT = Path(__file__).resolve().parents[2]

# The rooms whose names make up the top level: the user's job (docs/public-surface.md). Engine
# internals (processes, backends, execution, rounding, audit, testing, apps, …) stay in theirs.
TOP_ROOMS = frozenset(
    {
        "boundaries",
        "costs",
        "errors",
        "ex_post_rdp",
        "exact",
        "filters",
        "grids",
        "guarantees",
        "ledger",
        "loss",
        "mechanisms",
        "odometers",
        "pld",
        "session",
        "skellam",
        "stopping",
    }
)


def room(module: str) -> str:
    return module.split(".")[1] if module != "expost" else "expost"


def test_the_public_surface_is_sorted_unique_and_resolves() -> None:
    assert sorted(set(PUBLIC)) == PUBLIC
    assert all(hasattr(expost, name) for name in PUBLIC)


def test_every_top_level_name_comes_from_a_room_of_the_users_job() -> None:
    outside = {n: h for n, h in HOME.items() if h != "expost" and room(h) not in TOP_ROOMS}
    assert outside == {}, f"engine internals at the top level: {outside}"
    submodules = sorted(n for n, h in HOME.items() if h == "expost")
    assert submodules == ["exact", "stopping"]  # the two rooms whose vocabulary users write


def complete_families(public: set[str]) -> list[str]:
    """The names a user picks from one family but the top level lacks: every exception of
    `expost.errors`, every filter and every cost of `expost.filters` (the base class aside)."""
    errors = [
        n
        for n, v in vars(expost.errors).items()
        if isinstance(v, type) and issubclass(v, BaseException) and v.__module__ == "expost.errors"
    ]
    family = [n for n in expost.filters.__all__ if n.endswith(("Filter", "Cost")) and n != "Filter"]
    return sorted(n for n in [*errors, *family] if n not in public)


def test_every_filter_cost_and_error_is_top_level() -> None:
    assert complete_families(set(PUBLIC)) == []
    assert complete_families(set(PUBLIC) - {"RDPFilter"}) == ["RDPFilter"]  # the twin


def test_engine_internals_stay_importable_from_their_modules() -> None:
    from expost.audit import clopper_pearson_lower
    from expost.ledger import LedgerEntry
    from expost.processes import sample_brownian_grid
    from expost.stopping import first_stops

    internals = (clopper_pearson_lower, LedgerEntry, sample_brownian_grid, first_stops)
    assert all(callable(x) for x in internals)
    assert not {x.__name__ for x in internals} & set(PUBLIC)


def test_the_api_reference_is_generated_from_the_public_surface() -> None:
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "docs/gen_api.py")
    assert spec is not None
    assert spec.loader is not None
    gen_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_api)
    page = (ROOT / "docs/api.md").read_text(encoding="utf-8")
    assert page == gen_api.render(), "docs/api.md is stale: run python docs/gen_api.py docs/api.md"
    listed = {line.removeprefix("::: expost.").strip() for line in page.splitlines()}
    for name in PUBLIC:
        if name not in ("__version__", "stopping", "exact"):
            assert name in listed, name
