"""Every import points down: the rooms of expost stand on floors (issue 21 "Also", issue 43).

A room is a top-level module or package of ``src/expost`` (``expost.filters``), except that the
audits' two rooms (``expost.audit.paper``, ``expost.audit.deploy``) stand apart from their
framework (``expost.audit``). A module may import its own room and the rooms of lower floors,
never a room on its own floor or above: that keeps the vocabulary (errors, rounding, grids,
guarantees, losses, PLDs) free of what is built on it (``privacy_time`` once imported
``BatchTranscript``; ``apps`` and ``audit`` once imported each other: the statistics both need
are in `expost.confidence`, on the ground floor). Every import counts:
module level, inside functions and under ``TYPE_CHECKING`` (the graph of
``tests/house/test_import_graph.py``). A new room must be given a floor here.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet

import pytest

from tests.house.test_import_graph import GRAPH

FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors", "confidence", "_lazy"),  # no library import at all
    ("_faults",),  # describes faults of private inputs (errors only)
    ("exact", "rounding", "spendable", "symbolic"),  # integers, safe rounding
    ("_validation",),  # argument checks (exact: integer checks)
    (  # the mathematics: what mechanisms, filters and audits are made of
        "backends",
        "boundaries",
        "execution",
        "grids",
        "guarantees",
        "loss",
        "pld",
        "rdp_curves",
        "stopping",
    ),
    ("ex_post_rdp", "odometers", "processes", "realised_privacy", "skellam"),
    ("gdp_conversions",),  # the GDP of a pure-DP round (scipy special functions)
    ("costs",),  # the open cost model: representations, pairs, wrappers
    ("filters",),  # costs and the filters that price them
    # the rounding registry reads the table of kinds for each cost kind's own entries
    ("interop", "ledger", "mechanisms", "rounding_registry", "rounds"),
    ("mechanism_table", "own_round", "privacy_spent"),
    ("batches", "prepare"),
    ("session",),
    ("apps",),
    ("audit",),  # the audit framework: above everything it audits, below the audits
    ("studies", "testing"),
    ("audit.paper",),  # the papers' claims (dp_sgd audits an application)
    ("audit.deploy",),  # deployment deltas: reuse the paper room's simulators
    ("expost",),  # the top level: re-exports the public surface
    ("cli",),  # the command runs everything (and reads the version from the top level)
)
FLOOR = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}


def room_of(module: str) -> str:
    """``filters`` for ``expost.filters.pld``; ``audit.paper`` for ``expost.audit.paper.x``."""
    parts = module.split(".")
    if len(parts) == 1:
        return parts[0]
    if parts[1] == "audit" and len(parts) > 2 and parts[2] in ("paper", "deploy"):
        return f"audit.{parts[2]}"
    return parts[1]


def upward_imports(
    graph: Mapping[str, AbstractSet[str]], floor: Mapping[str, int] = FLOOR
) -> list[str]:
    """``a -> b`` for each import of a module ``b`` in another room on ``a``'s floor or above."""
    found = []
    for module, imported in graph.items():
        here = room_of(module)
        for other in imported:
            there = room_of(other)
            if there != here and floor[there] >= floor[here]:
                found.append(f"{module} (floor {floor[here]}) -> {other} (floor {floor[there]})")
    return sorted(found)


def test_every_room_has_a_floor() -> None:
    rooms = {room_of(m) for m in GRAPH}
    assert {"filters", "audit", "audit.paper", "audit.deploy", "cli"} <= rooms  # the scan sees
    assert sorted(rooms - FLOOR.keys()) == [], "rooms without a floor: add them to FLOORS"
    assert sorted(FLOOR.keys() - rooms) == [], "floors name rooms that no longer exist"
    assert sum(map(len, FLOORS)) == len(FLOOR)  # no room on two floors


def test_every_import_points_down() -> None:
    found = upward_imports(GRAPH)
    assert found == [], "imports of a room on the same floor or above:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        ("expost.grids", "expost.mechanisms.transcript"),  # the old privacy_time import
        ("expost.apps.lnr_composition", "expost.audit.claims"),  # the old apps <-> audit arrow
        ("expost.audit.tilting", "expost.audit.deploy.brownian"),  # framework -> its room
        ("expost.audit.paper.threshold", "expost.audit.deploy.threshold"),  # paper -> deploy
        ("expost.filters.pld", "expost.ledger"),  # same floor, different room
    ],
)
def test_a_planted_upward_import_is_found(module: str, imported: str) -> None:
    graph = {module: {imported}, imported: set()}
    expected = f"{module} (floor {FLOOR[room_of(module)]}) -> {imported} "
    assert upward_imports(graph) == [expected + f"(floor {FLOOR[room_of(imported)]})"]
    if FLOOR[room_of(module)] != FLOOR[room_of(imported)]:  # the same arrow pointing down
        assert upward_imports({imported: {module}, module: set()}) == []


def test_imports_within_a_room_are_free() -> None:
    graph = {"expost.filters.pld": {"expost.filters.base"}, "expost.filters.base": set()}
    assert upward_imports(graph) == []
