"""One mechanism per idea (issue 28, item 4): `expost.mechanism_table.MECHANISMS` is the only
place the mode picks the mechanism, and each entry's documented cost type is what a session
charges.

Each (release, mode) entry is released once through a `PrivateSession` with the contract test's
good arguments; a spy on `mechanism_for` records the mechanism built, which must be an instance of
the entry's class, and the round's request must be exactly the entry's cost type (the discrete
Gaussian's ZCDPCost, not GaussianCost; the exact exponential mechanism's BoundedRangeCost). A
planted-bug twin swaps two entries' cost types and must be rejected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

import expost.prepare
from expost.errors import InvalidParameter
from expost.filters import BoundedRangeCost, GaussianCost, ZCDPCost
from expost.mechanism_table import MECHANISMS, Choice, ModeName, mechanism_for
from expost.rounds import NOT_EXACT
from tests.session.test_session_contract import SKELLAM_PSI, TABLE, _call, _session

DOCS = Path(__file__).resolve().parents[2] / "docs" / "session.md"
METHOD = {  # Prepared.mechanism name -> the PrivateSession method
    "gaussian": "gaussian",
    "laplace": "laplace",
    "exponential": "exponential_mechanism",
    "above-threshold": "above_threshold",
    "doubling": "doubling",
    "brownian": "brownian",
    "laplace-noise-reduction": "laplace_noise_reduction",
    "skellam": "skellam",
    "reduced-above-threshold": "reduced_above_threshold",
    "subsampled-gaussian": "subsampled_gaussian",
}


def _good(release: str, exact: bool) -> dict[str, Any]:
    kw: dict[str, Any] = TABLE[METHOD[release]]["good"](exact)
    if release == "skellam":  # the ex-post price, not fixed_delta's DPCost
        kw |= {"fixed_delta": None, "boundary": SKELLAM_PSI}
    return kw


def _charged(
    release: str, mode: ModeName, monkeypatch: pytest.MonkeyPatch
) -> tuple[object, object]:
    """(the mechanism built, the request charged) for one release in one mode."""
    built: list[object] = []

    def spy(name: str, m: ModeName) -> Choice:
        choice = mechanism_for(name, m)

        def build(*args: Any) -> Any:
            built.append(choice.build(*args))
            return built[-1]

        return attrs.evolve(choice, build=build)

    monkeypatch.setattr(expost.prepare, "mechanism_for", spy)
    s = _session(METHOD[release], mode == "exact", None)
    _call(s, METHOD[release], _good(release, mode == "exact"))
    return built[-1], s.history[-1].request


def _check(release: str, mode: ModeName, choice: Choice, mp: pytest.MonkeyPatch) -> None:
    mechanism, request = _charged(release, mode, mp)
    assert isinstance(mechanism, choice.mechanism)
    assert type(request) is choice.cost_type, (release, mode, type(request))


@pytest.mark.parametrize(("release", "mode"), sorted(MECHANISMS))
def test_each_entry_charges_its_documented_cost_type(
    release: str, mode: ModeName, monkeypatch: pytest.MonkeyPatch
) -> None:
    _check(release, mode, MECHANISMS[release, mode], monkeypatch)


def test_a_wrong_cost_type_in_the_table_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted-bug twin: the discrete Gaussian documented as GDP (the float Gaussian's type)."""
    wrong = attrs.evolve(MECHANISMS["gaussian", "exact"], cost_type=GaussianCost)
    with pytest.raises(AssertionError):
        _check("gaussian", "exact", wrong, monkeypatch)


def test_the_price_differences_are_the_documented_ones() -> None:
    """The discrete Gaussian is zCDP, not GDP (CKS Thm 4); the other exact siblings keep the
    float price (the exponential mechanism: one class, the same law, BoundedRangeCost)."""
    assert MECHANISMS["gaussian", "float"].cost_type is GaussianCost
    assert MECHANISMS["gaussian", "exact"].cost_type is ZCDPCost
    assert MECHANISMS["doubling", "exact"].cost_type is ZCDPCost
    assert MECHANISMS["exponential", "float"].cost_type is BoundedRangeCost
    for release in ("laplace", "above-threshold", "skellam", "exponential"):
        assert MECHANISMS[release, "exact"].cost_type is MECHANISMS[release, "float"].cost_type


def test_every_release_has_a_float_entry_and_an_exact_one_or_a_refusal() -> None:
    assert {release for release, _ in MECHANISMS} == set(METHOD)
    assert set(METHOD.values()) == set(TABLE) - {"release"}  # release: the caller's mechanism
    for release in METHOD:
        assert (release, "float") in MECHANISMS
        assert ((release, "exact") in MECHANISMS) != (release in NOT_EXACT)
    for release in NOT_EXACT:
        with pytest.raises(InvalidParameter, match="no exact version"):
            mechanism_for(release, "exact")
    with pytest.raises(InvalidParameter, match="not a release method"):
        mechanism_for("gumbel", "float")


def test_the_docs_table_lists_every_entry() -> None:
    """docs/session.md, "One mechanism per idea": one row per entry, with its class and cost."""
    text = DOCS.read_text()
    for (release, _), choice in MECHANISMS.items():
        row = next(
            (
                line
                for line in text.splitlines()
                if line.startswith(f"| `{release}`") and f"`{choice.mechanism.__name__}`" in line
            ),
            None,
        )
        assert row is not None, (release, choice.mechanism.__name__)
        assert choice.cost_type.__name__ in row
