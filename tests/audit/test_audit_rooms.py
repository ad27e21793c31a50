"""The audits live in two rooms, found by room (issue 43, item 1).

``expost.audit.paper`` holds the papers' claims at their deltas (the ``quick`` and ``paper``
suites), ``expost.audit.deploy`` the claims at deployment deltas (the ``deploy`` suites); the
registry imports every public module of both (`room_modules`). A module elsewhere that registers
an audit would silently never run, and a room module that registers none is not an audit.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

import expost.audit
from expost.audit import DEPLOY, DEPLOY_QUICK, PAPER, QUICK, Registry, default_registry
from expost.audit.core import Audit
from expost.audit.registry import room_modules

ROOM_OF_SUITE = {QUICK: "paper", PAPER: "paper", DEPLOY: "deploy", DEPLOY_QUICK: "deploy"}


def misplaced(registry: Registry, modules: tuple[str, ...]) -> list[str]:
    """``suite: module`` for each library factory registered outside its suite's room, and
    ``module: registers no audit`` for each room module in ``modules`` that registers none."""
    found = []
    seen: set[str] = set()
    for suite in registry.suites():
        room = f"expost.audit.{ROOM_OF_SUITE.get(suite, '?')}."
        for origin in registry.origins(suite):
            seen.add(origin)
            if origin.startswith("expost.") and not origin.startswith(room):
                found.append(f"{suite}: {origin}")
    found += [f"{m}: registers no audit" for m in modules if m not in seen]
    return sorted(set(found))


def every_audit_package_module() -> list[str]:
    """Every module under ``expost.audit``, rooms and framework alike."""
    prefix = expost.audit.__name__ + "."
    return [info.name for info in pkgutil.walk_packages(expost.audit.__path__, prefix)]


def test_every_audit_is_in_its_room_and_every_room_module_registers_one() -> None:
    registry = default_registry()
    for name in every_audit_package_module():  # a flat audit module would register here
        importlib.import_module(name)
    modules = room_modules()
    assert len(modules) >= 20, modules  # both rooms are seen
    assert {m.split(".")[2] for m in modules} == {"paper", "deploy"}
    assert misplaced(registry, modules) == []


def _factory_from(module: str) -> Callable[[str], Audit]:
    def factory(suite: str) -> Audit:
        raise AssertionError("never built")

    factory.__module__ = module
    return factory


def test_a_planted_misplaced_audit_and_an_empty_room_module_are_found() -> None:
    registry = Registry()
    registry.add(_factory_from("expost.audit.flat_audit"), [PAPER])  # left outside the rooms
    registry.add(_factory_from("expost.audit.paper.small_delta"), [DEPLOY_QUICK])  # wrong room
    registry.add(_factory_from("expost.audit.paper.fine"), [QUICK])
    registry.add(_factory_from("its.module"), [PAPER])  # a downstream project's own audits
    rooms = ("expost.audit.paper.small_delta", "expost.audit.paper.fine", "expost.audit.deploy.x")
    assert misplaced(registry, rooms) == [
        "deploy-quick: expost.audit.paper.small_delta",
        "expost.audit.deploy.x: registers no audit",
        "paper: expost.audit.flat_audit",
    ]
    assert misplaced(registry, rooms[1:2]) != []  # the twin: only the right room passes
    fine = Registry()
    fine.add(_factory_from("expost.audit.paper.fine"), [QUICK, PAPER])
    assert misplaced(fine, rooms[1:2]) == []
