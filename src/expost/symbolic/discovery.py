"""Finding and loading the proof modules (``proofs/*.py``, each defining ``PROOF: Proof``)."""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
from pathlib import Path

from expost.errors import ExpostError, InvalidParameter
from expost.symbolic.proof import Proof

__all__ = ["ProofLoadError", "default_proofs_dir", "discover"]


class ProofLoadError(ExpostError):
    """A proof module could not be imported, or does not define a valid ``PROOF``."""


def default_proofs_dir() -> Path | None:
    """The installed proofs (``expost/_proofs`` in a wheel), else the checkout's ``proofs/``."""
    installed = importlib.resources.files("expost") / "_proofs"
    if installed.is_dir():
        return Path(str(installed))
    checkout = Path(__file__).resolve().parents[3] / "proofs"  # src/expost/symbolic/this
    return checkout if checkout.is_dir() else None


def _load(path: Path) -> Proof:
    spec = importlib.util.spec_from_file_location(f"_expost_proof_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ProofLoadError(f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ProofLoadError(f"{path}: import failed: {type(exc).__name__}: {exc}") from exc
    proof = getattr(module, "PROOF", None)
    if not isinstance(proof, Proof):
        raise ProofLoadError(f"{path}: must define PROOF, an expost.symbolic.Proof")
    return proof


def discover(directory: str | os.PathLike[str]) -> list[Proof]:
    """Load ``PROOF`` from every ``*.py`` in ``directory`` (files starting with ``_`` skipped), by file name.

    Raises InvalidParameter if ``directory`` is not a directory, ProofLoadError if a module fails
    to load or two proofs share a name.
    """
    path = Path(directory)
    if not path.is_dir():
        raise InvalidParameter("directory", str(directory), "must be an existing directory")
    proofs = [_load(f) for f in sorted(path.glob("*.py")) if not f.name.startswith("_")]
    names = [p.name for p in proofs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ProofLoadError(f"{path}: several proofs are named {', '.join(duplicates)}")
    return proofs
