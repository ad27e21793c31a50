"""Named audit suites: factories registered with a decorator, built when a suite is run.

A factory takes the suite name (so it can pick N or grids per suite) and returns one `Audit` or
several. Every registered audit must have a planted-bug twin. The default registry loads the
audit modules of this package (every public submodule of ``expost.audit`` other than the
framework's own) the first time it is asked for a suite.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from typing import TypeVar

from expost.audit.core import Audit
from expost.errors import InvalidParameter

__all__ = [
    "PAPER",
    "QUICK",
    "REGISTRY",
    "SUITES",
    "AuditFactory",
    "Registry",
    "default_registry",
    "register",
]

QUICK = "quick"
PAPER = "paper"
SUITES = (QUICK, PAPER)
AuditFactory = Callable[[str], Audit | Iterable[Audit]]
_F = TypeVar("_F", bound=AuditFactory)
_FRAMEWORK = frozenset({"cli", "core", "registry"})


def _suite_name(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise InvalidParameter("suite", value, "must be a non-empty name without outer spaces")
    return value


class Registry:
    """Audit factories by suite. ``@registry.register("quick", "paper")`` adds a factory."""

    def __init__(self) -> None:
        self._factories: dict[str, list[AuditFactory]] = {}

    def add(self, factory: AuditFactory, suites: Iterable[str]) -> None:
        """Register ``factory`` in each of ``suites``."""
        if not callable(factory):
            raise InvalidParameter("factory", factory, "must be callable as factory(suite)")
        names = [_suite_name(s) for s in suites]
        if not names:
            raise InvalidParameter("suites", names, "must name at least one suite")
        for name in names:
            self._factories.setdefault(name, []).append(factory)

    def register(self, *suites: str) -> Callable[[_F], _F]:
        """Decorator form of `add`: ``@register("quick", "paper")``."""

        def decorate(factory: _F) -> _F:
            self.add(factory, suites)
            return factory

        return decorate

    def suites(self) -> tuple[str, ...]:
        """The suite names with at least one factory, sorted."""
        return tuple(sorted(self._factories))

    def suite(self, name: str) -> tuple[Audit, ...]:
        """Build the audits of suite ``name`` in registration order.

        Raises `InvalidParameter` for an unknown suite, a factory that returns something other
        than audits, an audit without a twin, or two audits of the same name.
        """
        if name not in self._factories:
            raise InvalidParameter("suite", name, f"is not one of {list(self.suites())}")
        audits: list[Audit] = []
        for factory in self._factories[name]:
            built = factory(name)
            audits.extend([built] if isinstance(built, Audit) else list(built))
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


REGISTRY = Registry()
register = REGISTRY.register
_loaded = False


def default_registry() -> Registry:
    """`REGISTRY`, after importing every audit module of the ``expost.audit`` package."""
    global _loaded
    if not _loaded:
        import expost.audit as package

        for info in pkgutil.iter_modules(package.__path__):
            if not info.name.startswith("_") and info.name not in _FRAMEWORK:
                importlib.import_module(f"expost.audit.{info.name}")
        _loaded = True
    return REGISTRY
