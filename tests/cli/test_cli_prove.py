"""``expost prove``: exit codes, table and JSON report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expost.cli import main

BROKEN = """
import sympy as sp
from expost.symbolic import Proof
from expost.symbolic.steps import identity
x = sp.Symbol("x", positive=True)
PROOF = Proof("{name}", "test", "x + x = 2x.", ("x > 0",), {claim}, {wrong},
              lambda c: (identity("x + x = claim", x + x, c),))
"""


def _write(directory: Path, name: str, claim: str, wrong: str) -> None:
    (directory / f"{name}.py").write_text(BROKEN.format(name=name, claim=claim, wrong=wrong))


def _report(path: Path) -> list[dict[str, object]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert set(data) == {"results"}
    results: list[dict[str, object]] = data["results"]
    for r in results:
        assert set(r) == {"name", "source", "verdict", "wrong_variant_rejected", "seconds"}
        assert isinstance(r["name"], str)
        assert isinstance(r["source"], str)
        assert r["verdict"] in {"verified", "failed"}
        assert isinstance(r["wrong_variant_rejected"], bool)
        assert isinstance(r["seconds"], float)
        assert r["seconds"] >= 0.0
    return results


def test_prove_all_passes_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "proofs.json"
    assert main(["prove", "--json", str(out)]) == 0
    results = _report(out)
    assert len(results) >= 12
    assert len({r["name"] for r in results}) == len(results)
    assert all(r["verdict"] == "verified" and r["wrong_variant_rejected"] for r in results)
    table = capsys.readouterr().out
    assert "wrong variant rejected" in table
    assert "apc-lemma-2.1" in table


def test_failed_proof_gives_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, "good", "2 * x", "3 * x")
    _write(tmp_path, "broken", "3 * x", "4 * x")
    out = tmp_path / "r.json"
    assert main(["prove", "--dir", str(tmp_path), "--json", str(out)]) == 1
    verdicts = {r["name"]: r["verdict"] for r in _report(out)}
    assert verdicts == {"good": "verified", "broken": "failed"}
    assert "FAILS" in capsys.readouterr().out


def test_unrejected_wrong_variant_gives_exit_1(tmp_path: Path) -> None:
    _write(tmp_path, "blind", "2 * x", "2 * x")
    out = tmp_path / "r.json"
    assert main(["prove", "--dir", str(tmp_path), "--json", str(out)]) == 1
    (result,) = _report(out)
    assert result["verdict"] == "verified"
    assert result["wrong_variant_rejected"] is False


def test_only_runs_one_proof(tmp_path: Path) -> None:
    _write(tmp_path, "good", "2 * x", "3 * x")
    _write(tmp_path, "broken", "3 * x", "4 * x")
    out = tmp_path / "r.json"
    assert main(["prove", "--dir", str(tmp_path), "--only", "good", "--json", str(out)]) == 0
    assert [r["name"] for r in _report(out)] == ["good"]
    assert main(["prove", "--dir", str(tmp_path), "--only", "nothing"]) == 2


def test_missing_or_empty_directory_gives_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prove", "--dir", str(tmp_path / "missing")]) == 2
    assert "missing" in capsys.readouterr().err
    assert main(["prove", "--dir", str(tmp_path)]) == 2
    assert "no proof modules" in capsys.readouterr().err


def test_unloadable_proof_gives_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.py").write_text("PROOF = 'not a proof'\n")
    assert main(["prove", "--dir", str(tmp_path)]) == 1
    assert "bad.py" in capsys.readouterr().err
