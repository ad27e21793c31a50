"""A proof: a closed form, a deliberately wrong variant, and a check deriving it from first principles.

`run_proof` runs the check on the claimed form (every step must hold) and on the wrong
variant (some step must fail, which shows the check can tell them apart).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

from attrs import field, frozen

from expost.errors import InvalidParameter

__all__ = ["Check", "Proof", "ProofResult", "Step", "run_proof"]


@frozen
class Step:
    """One verified (or refuted) step of a derivation; the description says how it was checked."""

    description: str
    holds: bool


Check = Callable[[Any], tuple[Step, ...]]


def _text(_instance: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameter(attribute.name, value, "must be a non-empty string")


def _name(instance: Any, attribute: Any, value: Any) -> None:
    _text(instance, attribute, value)
    if any(c.isspace() for c in value):
        raise InvalidParameter(attribute.name, value, "must be a short id without spaces")


def _as_tuple(value: Iterable[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _texts(_instance: Any, attribute: Any, value: Any) -> None:
    if not all(isinstance(v, str) and v.strip() for v in value):
        raise InvalidParameter(attribute.name, value, "must be non-empty strings")


def _sympy(_instance: Any, attribute: Any, value: Any) -> None:
    import sympy as sp  # lazy: `expost --help` does not need sympy

    if not isinstance(value, sp.Basic):
        raise InvalidParameter(attribute.name, value, "must be a sympy expression")


def _callable(_instance: Any, attribute: Any, value: Any) -> None:
    if not callable(value):
        raise InvalidParameter(attribute.name, value, "must be callable: claim -> tuple[Step, ...]")


@frozen
class Proof:
    """A result of THEORY.md with the closed form the library uses and a check deriving it.

    ``claim`` and ``wrong_claim`` are sympy expressions (a `sympy.Tuple` where the result has
    several parts, e.g. a mean and a variance); ``check(form)`` derives the result from first
    principles and returns its steps, each saying whether it holds for ``form``.
    """

    name: str = field(validator=_name)
    source: str = field(validator=_text)
    statement: str = field(validator=_text)
    assumptions: tuple[str, ...] = field(converter=_as_tuple, validator=_texts)
    claim: Any = field(validator=_sympy)
    wrong_claim: Any = field(validator=_sympy)
    check: Check = field(validator=_callable)


@frozen
class ProofResult:
    """The outcome of `run_proof`: verified (every step holds for the claim) and whether the
    wrong variant was rejected (some step fails for it)."""

    name: str
    source: str
    verified: bool
    wrong_variant_rejected: bool
    steps: tuple[Step, ...]
    wrong_steps: tuple[Step, ...]
    seconds: float

    @property
    def verdict(self) -> Literal["verified", "failed"]:
        """``"verified"`` if every step holds for the claimed form, else ``"failed"``."""
        return "verified" if self.verified else "failed"

    @property
    def passed(self) -> bool:
        """Verified, and the wrong variant rejected."""
        return self.verified and self.wrong_variant_rejected


def _steps(check: Check, form: Any) -> tuple[Step, ...]:
    try:
        steps = tuple(check(form))
    except Exception as exc:  # noqa: BLE001 - a crashing check proves nothing: a failed step
        return (Step(f"the check raised {type(exc).__name__}: {exc}", False),)
    if not steps:
        return (Step("the check returned no steps", False),)
    return steps


def run_proof(proof: Proof) -> ProofResult:
    """Run ``proof.check`` on the claim and on the wrong variant, timing both."""
    if not isinstance(proof, Proof):
        raise InvalidParameter("proof", proof, "must be a Proof")
    start = time.perf_counter()
    steps = _steps(proof.check, proof.claim)
    wrong_steps = _steps(proof.check, proof.wrong_claim)
    return ProofResult(
        name=proof.name,
        source=proof.source,
        verified=all(s.holds for s in steps),
        wrong_variant_rejected=not all(s.holds for s in wrong_steps),
        steps=steps,
        wrong_steps=wrong_steps,
        seconds=time.perf_counter() - start,
    )
