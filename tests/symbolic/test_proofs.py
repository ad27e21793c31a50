"""Every discovered proof verifies its claim and rejects its wrong variant; the machinery can fail."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest
import sympy as sp

from expost.errors import InvalidParameter
from expost.symbolic import (
    Proof,
    ProofLoadError,
    ProofResult,
    Step,
    default_proofs_dir,
    discover,
    run_proof,
)
from expost.symbolic.gaussian import integrate_exp_quadratic
from expost.symbolic.steps import (
    identity,
    library_matches,
    log_identity,
    numeric_identity,
    positive,
)

PROOFS_DIR = default_proofs_dir()
assert PROOFS_DIR is not None
PROOFS = discover(PROOFS_DIR)
BY_NAME = {p.name: p for p in PROOFS}
REQUIRED = {
    "gaussian-loss-moments",
    "gaussian-renyi",
    "apc-thm-3",
    "apc-lemma-2.1",
    "rho-star",
    "bm-loss-mgf",
    "apc-lemma-6.1",
    "brownian-bridge",
    "levy-time-inversion",
    "fac-thm-3-filter-odometer",
    "bnr-thm-d.1",
    "laplace-loss",
    "gdp-duality",
    "gdp-gaussian-brownian-prices",
    "gdp-pure-dp",
    "gdp-bounded-range",
    "skellam-gaussian-limit",
    "skellam-log-concave",
    "skellam-thinning-martingale",
    "ex-post-rdp-brownian",
    "counting-filter",
    "computed-domination",
    "checked-grid",
}
TUPLE_PARTS = [
    (p.name, i) for p in PROOFS if isinstance(p.claim, sp.Tuple) for i in range(len(p.claim))
]

x = sp.Symbol("x", positive=True)


def _sample(expr: sp.Basic, rng: np.random.Generator) -> dict[sp.Symbol, sp.Rational]:
    """A random point: positive symbols in (1.1, 3) (so α > 1 too), others in (−2, 2)."""
    return {
        s: sp.Rational(f"{rng.uniform(1.1, 3.0) if s.is_positive else rng.uniform(-2.0, 2.0):.6f}")
        for s in expr.free_symbols
    }


@pytest.fixture(scope="module")
def results() -> dict[str, ProofResult]:
    return {p.name: run_proof(p) for p in PROOFS}


def test_discovery_finds_every_required_result() -> None:
    assert set(BY_NAME) >= REQUIRED
    assert len(BY_NAME) == len(PROOFS)


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_proof_verified_and_wrong_variant_rejected(
    name: str, results: dict[str, ProofResult]
) -> None:
    result = results[name]
    failing = [s.description for s in result.steps if not s.holds]
    assert result.verified, failing
    assert result.wrong_variant_rejected
    assert result.verdict == "verified"
    assert result.passed


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_wrong_variant_is_really_wrong(name: str) -> None:
    """The rejected variant differs numerically from the claim, so rejecting it is not a sympy gap."""
    proof = BY_NAME[name]
    rng = np.random.default_rng(11)
    parts = zip(
        proof.claim if isinstance(proof.claim, sp.Tuple) else (proof.claim,),
        proof.wrong_claim if isinstance(proof.wrong_claim, sp.Tuple) else (proof.wrong_claim,),
        strict=True,
    )
    for right, wrong in parts:
        gaps = [abs(sp.N((right - wrong).subs(_sample(right - wrong, rng)))) for _ in range(5)]
        assert max(gaps) > 1e-6


@pytest.mark.parametrize(("name", "part"), TUPLE_PARTS)
def test_each_part_of_a_tuple_claim_is_checked(name: str, part: int) -> None:
    """Replacing one part of the claim by its wrong variant alone already fails a step."""
    proof = BY_NAME[name]
    mixed = sp.Tuple(
        *(
            w if i == part else c
            for i, (c, w) in enumerate(zip(proof.claim, proof.wrong_claim, strict=True))
        )
    )
    assert not all(s.holds for s in proof.check(mixed))


def test_indistinguishable_variant_is_reported_not_rejected() -> None:
    proof = BY_NAME["gaussian-loss-moments"]
    result = run_proof(attrs.evolve(proof, wrong_claim=proof.claim))
    assert result.verified
    assert not result.wrong_variant_rejected
    assert not result.passed


def _doubling(claim: sp.Basic) -> tuple[Step, ...]:
    return (identity("x + x = claim", x + x, claim),)


def test_wrong_claim_fails_verification() -> None:
    proof = Proof("doubling", "test", "x + x = 2x.", ("x > 0",), 3 * x, 2 * x, _doubling)
    result = run_proof(proof)
    assert not result.verified
    assert result.verdict == "failed"
    assert not result.wrong_variant_rejected


def test_crashing_or_empty_check_is_a_failed_step() -> None:
    def crash(_claim: sp.Basic) -> tuple[Step, ...]:
        raise ZeroDivisionError("boom")

    crashing = run_proof(Proof("crash", "test", "s.", (), 2 * x, 3 * x, crash))
    assert not crashing.verified
    assert "ZeroDivisionError" in crashing.steps[0].description
    empty = run_proof(Proof("empty", "test", "s.", (), 2 * x, 3 * x, lambda _c: ()))
    assert not empty.verified


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", ""),
        ("name", "has space"),
        ("source", "  "),
        ("assumptions", ("ok", "")),
        ("claim", 2.0),
        ("wrong_claim", "3*x"),
        ("check", None),
    ],
)
def test_proof_rejects_bad_fields(field: str, value: object) -> None:
    good = {
        "name": "ok",
        "source": "test",
        "statement": "s.",
        "assumptions": ("x > 0",),
        "claim": 2 * x,
        "wrong_claim": 3 * x,
        "check": _doubling,
    }
    with pytest.raises(InvalidParameter) as info:
        Proof(**{**good, field: value})
    assert info.value.name == field


def test_run_proof_rejects_non_proof() -> None:
    with pytest.raises(InvalidParameter):
        run_proof("gaussian-renyi")  # type: ignore[arg-type]


def test_identity_and_sign_steps() -> None:
    a, b = sp.symbols("a b", positive=True)
    assert identity("ok", (a + b) ** 2, a**2 + 2 * a * b + b**2).holds
    assert not identity("wrong", (a + b) ** 2, a**2 + b**2).holds
    assert identity("tuple", sp.Tuple(a, b), sp.Tuple(a, b)).holds
    assert not identity("lengths", sp.Tuple(a, b), sp.Tuple(a)).holds
    assert positive("a + b > 0", a + b).holds
    assert not positive("a − b > 0 unknown", a - b).holds
    assert log_identity("exp", sp.exp(a) * sp.exp(b), sp.exp(a + b)).holds
    assert not log_identity("exp", sp.exp(a) * sp.exp(b), sp.exp(a - b)).holds


def test_numeric_step_holds_only_for_true_identities() -> None:
    a = sp.Symbol("a", positive=True)
    lhs = sp.sqrt((sp.sqrt(a + 1) - sp.sqrt(a)) ** 2)
    assert numeric_identity("ok", lhs, sp.sqrt(a + 1) - sp.sqrt(a), {a: (0.1, 5.0)}).holds
    # Differs by about 1e-30: caught at 50 digits, invisible in double precision.
    assert not numeric_identity("tiny", lhs, lhs + sp.Float("1e-30"), {a: (0.1, 5.0)}).holds
    assert not numeric_identity("unbound", a + x, a + x, {a: (0.1, 5.0)}).holds


def test_library_step_tolerance() -> None:
    assert library_matches("third", 1.0 / 3.0, sp.Rational(1, 3)).holds
    assert not library_matches("third", 1.0 / 3.0 + 1e-9, sp.Rational(1, 3)).holds


def test_gaussian_integral_refuses_divergent_or_non_quadratic() -> None:
    y = sp.Symbol("y", real=True)
    assert integrate_exp_quadratic(-(y**2), y) == sp.sqrt(sp.pi)
    with pytest.raises(ValueError, match="negative"):
        integrate_exp_quadratic(y**2, y)
    with pytest.raises(ValueError, match="quadratic"):
        integrate_exp_quadratic(-(y**4), y)


GOOD_PROOF = """
import sympy as sp
from expost.symbolic import Proof
from expost.symbolic.steps import identity
x = sp.Symbol("x", positive=True)
PROOF = Proof("{name}", "test", "x + x = 2x.", ("x > 0",), 2 * x, 3 * x,
              lambda c: (identity("x + x = claim", x + x, c),))
"""


def test_discover_loads_sorted_and_skips_private(tmp_path: Path) -> None:
    (tmp_path / "b.py").write_text(GOOD_PROOF.format(name="second"))
    (tmp_path / "a.py").write_text(GOOD_PROOF.format(name="first"))
    (tmp_path / "_helper.py").write_text("raise RuntimeError('never imported')\n")
    (tmp_path / "notes.txt").write_text("not a proof\n")
    assert [p.name for p in discover(tmp_path)] == ["first", "second"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("PROOF = 3\n", "must define PROOF"),
        ("import no_such_module_here\n", "import failed"),
        ("def broken(:\n", "import failed"),
    ],
)
def test_discover_reports_bad_modules(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "bad.py").write_text(text)
    with pytest.raises(ProofLoadError, match=match):
        discover(tmp_path)


def test_discover_rejects_duplicates_and_missing_directory(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(GOOD_PROOF.format(name="same"))
    (tmp_path / "b.py").write_text(GOOD_PROOF.format(name="same"))
    with pytest.raises(ProofLoadError, match="same"):
        discover(tmp_path)
    with pytest.raises(InvalidParameter):
        discover(tmp_path / "missing")


def test_default_directory_is_the_checkout_or_installed_copy() -> None:
    assert PROOFS_DIR is not None
    assert (PROOFS_DIR / "gaussian_integral.py").is_file()
