"""Symbolic (sympy) proofs of the library's closed forms, run by ``expost prove``.

A `Proof` pairs a closed form with a deliberately wrong variant and a check that derives the
result from first principles; `run_proof` verifies the claim and that the wrong variant is
rejected. The proofs live in ``proofs/`` (one module per result); `discover` loads them.
"""

from expost.symbolic.discovery import ProofLoadError, default_proofs_dir, discover
from expost.symbolic.proof import Check, Proof, ProofResult, Step, run_proof

__all__ = [
    "Check",
    "Proof",
    "ProofLoadError",
    "ProofResult",
    "Step",
    "default_proofs_dir",
    "discover",
    "run_proof",
]
