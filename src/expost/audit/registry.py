"""Named audit suites: factories registered with a decorator, built when a suite is run.

A factory takes the suite name (so it can pick N or grids per suite) and returns one `Audit` or
several. A *delta factory* (``@register_at_deltas("deploy", "deploy-quick")``) takes the suite
name and a delta and is called once per delta of the suite (`DEPLOY_DELTAS` for ``deploy``,
1e-9 for ``deploy-quick``, or the deltas given to `Registry.suite` — ``expost audit --delta``);
its audits' names must carry the delta (`delta_tag`). Every registered audit must have a
planted-bug twin. The default registry loads the library's audits by room the first time it is
asked for a suite: every public module of ``expost.audit.paper`` (the papers' claims at their
deltas: the ``quick`` and ``paper`` suites) and of ``expost.audit.deploy`` (the claims at
deployment deltas: the ``deploy`` suites).
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from expost.audit.core import Audit
from expost.errors import InvalidParameter

__all__ = [
    "DEPLOY",
    "DEPLOY_DELTAS",
    "DEPLOY_QUICK",
    "PAPER",
    "QUICK",
    "REGISTRY",
    "ROOMS",
    "SUITES",
    "AuditFactory",
    "DeltaAuditFactory",
    "Registry",
    "default_registry",
    "delta_tag",
    "register",
    "register_at_deltas",
    "room_modules",
]

QUICK = "quick"
PAPER = "paper"
DEPLOY = "deploy"
DEPLOY_QUICK = "deploy-quick"
SUITES = (QUICK, PAPER, DEPLOY, DEPLOY_QUICK)
DEPLOY_DELTAS = (1e-6, 1e-9, 1e-12)
_SUITE_DELTAS = {DEPLOY: DEPLOY_DELTAS, DEPLOY_QUICK: (1e-9,)}
AuditFactory = Callable[[str], Audit | Iterable[Audit]]
DeltaAuditFactory = Callable[[str, float], Audit | Iterable[Audit]]
_F = TypeVar("_F", bound=AuditFactory)
_D = TypeVar("_D", bound=DeltaAuditFactory)
ROOMS = ("paper", "deploy")
"""The packages of ``expost.audit`` whose every public module registers audits."""


def delta_tag(delta: float) -> str:
    """The suffix that keeps a delta audit's name unique: ``delta-1e-09`` for 1e-9."""
    return f"delta-{delta:g}"


def _deltas(value: object) -> tuple[float, ...]:
    rule = "must be a non-empty sequence of distinct numbers in (0, 1)"
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
        raise InvalidParameter("deltas", value, rule)
    out: list[float] = []
    for d in value:
        if (
            isinstance(d, bool)
            or not isinstance(d, int | float)
            or not (math.isfinite(d) and 0.0 < d < 1.0)
        ):
            raise InvalidParameter("deltas", value, rule)
        out.append(float(d))
    if len(set(out)) != len(out):
        raise InvalidParameter("deltas", value, rule)
    return tuple(out)


def _suite_name(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise InvalidParameter("suite", value, "must be a non-empty name without outer spaces")
    return value


class Registry:
    """Audit factories by suite. ``@registry.register("quick", "paper")`` adds a factory."""

    def __init__(self) -> None:
        self._factories: dict[str, list[AuditFactory | _AtDeltas]] = {}

    def add(self, factory: AuditFactory, suites: Iterable[str]) -> None:
        """Register ``factory`` in each of ``suites``."""
        if not callable(factory):
            raise InvalidParameter("factory", factory, "must be callable as factory(suite)")
        names = [_suite_name(s) for s in suites]
        if not names:
            raise InvalidParameter("suites", names, "must name at least one suite")
        for name in names:
            self._factories.setdefault(name, []).append(factory)

    def add_at_deltas(self, factory: DeltaAuditFactory, suites: Iterable[str]) -> None:
        """Register the delta factory ``factory(suite, delta)`` in each of ``suites``."""
        if not callable(factory):
            raise InvalidParameter("factory", factory, "must be callable as factory(suite, delta)")
        names = [_suite_name(s) for s in suites]
        if not names:
            raise InvalidParameter("suites", names, "must name at least one suite")
        for name in names:
            self._factories.setdefault(name, []).append(_AtDeltas(factory))

    def register_at_deltas(self, *suites: str) -> Callable[[_D], _D]:
        """Decorator form of `add_at_deltas`: ``@register_at_deltas("deploy", "deploy-quick")``."""

        def decorate(factory: _D) -> _D:
            self.add_at_deltas(factory, suites)
            return factory

        return decorate

    def has_deltas(self, name: str) -> bool:
        """Whether suite ``name`` has delta factories (so ``--delta`` acts on it)."""
        return any(isinstance(f, _AtDeltas) for f in self._factories.get(name, []))

    def register(self, *suites: str) -> Callable[[_F], _F]:
        """Decorator form of `add`: ``@register("quick", "paper")``."""

        def decorate(factory: _F) -> _F:
            self.add(factory, suites)
            return factory

        return decorate

    def origins(self, name: str) -> tuple[str, ...]:
        """The modules that registered the factories of suite ``name``, in registration order."""
        return tuple(
            (f.factory if isinstance(f, _AtDeltas) else f).__module__
            for f in self._factories.get(name, [])
        )

    def suites(self) -> tuple[str, ...]:
        """The suite names with at least one factory, sorted."""
        return tuple(sorted(self._factories))

    def suite(self, name: str, deltas: Sequence[float] | None = None) -> tuple[Audit, ...]:
        """Build the audits of suite ``name`` in registration order.

        Plain factories are called once; delta factories once per delta: ``deltas`` when given,
        else `DEPLOY_DELTAS` for ``deploy``, (1e-9,) for ``deploy-quick`` and `DEPLOY_DELTAS`
        for any other suite. Raises `InvalidParameter` for an unknown suite, ``deltas`` for a
        suite without delta factories (or not distinct numbers in (0, 1)), a factory that returns
        something other than audits, an audit without a twin, or two audits of the same name.
        """
        if name not in self._factories:
            raise InvalidParameter("suite", name, f"is not one of {list(self.suites())}")
        if deltas is not None:
            chosen = _deltas(deltas)
            if not self.has_deltas(name):
                with_deltas = [s for s in self.suites() if self.has_deltas(s)]
                raise InvalidParameter(
                    "deltas",
                    list(chosen),
                    f"has nothing to act on: suite {name!r} has no delta-parameterised audits "
                    f"(suites that do: {with_deltas})",
                )
        else:
            chosen = _SUITE_DELTAS.get(name, DEPLOY_DELTAS)
        audits: list[Audit] = []
        for factory in self._factories[name]:
            if isinstance(factory, _AtDeltas):
                for delta in chosen:
                    audits.extend(_audits(factory.factory(name, delta)))
            else:
                audits.extend(_audits(factory(name)))
        for a in audits:
            if not isinstance(a, Audit):
                raise InvalidParameter("factory", a, "must return an Audit or audits")
            if a.twin is None:
                raise InvalidParameter(a.name, a, "a registered audit needs a planted-bug twin")
        names = [a.name for a in audits]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise InvalidParameter("suite", name, f"has audits with the same name: {duplicated}")
        return tuple(audits)


class _AtDeltas:
    """A delta factory in a suite's list (told apart from plain factories by its type)."""

    def __init__(self, factory: DeltaAuditFactory) -> None:
        self.factory = factory


def _audits(built: Audit | Iterable[Audit]) -> list[Audit]:
    return [built] if isinstance(built, Audit) else list(built)


REGISTRY = Registry()
register = REGISTRY.register
register_at_deltas = REGISTRY.register_at_deltas
_loaded = False


def room_modules() -> tuple[str, ...]:
    """The audit modules of the library: every public module of each room in `ROOMS`."""
    here = Path(__file__).parent  # the rooms, found without importing them from below
    return tuple(
        f"expost.audit.{room}.{info.name}"
        for room in ROOMS
        for info in pkgutil.iter_modules([str(here / room)])
        if not info.name.startswith("_")
    )


def default_registry() -> Registry:
    """`REGISTRY`, after importing every audit module of the rooms (`room_modules`)."""
    global _loaded
    if not _loaded:
        for module in room_modules():
            importlib.import_module(module)
        _loaded = True
    return REGISTRY
