"""What a ledger's configuration may name and how it is read: the filters, values and costs a
description may hold (`DESCRIBABLE`, `COSTS`), `describe` and its inverse
`filter_from_description` — only those classes, so a ledger never makes the library import
anything by a name read from disk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from expost.costs.model import Mechanism
from expost.errors import InvalidParameter
from expost.filters import (
    ApproxDPFilter,
    BrownianFilter,
    ConcurrentFilter,
    ExPostFilter,
    GaussianDPFilter,
    PLDFilter,
    PrivacyFilter,
    RDPFilter,
    RenyiFilter,
    UnifiedFilter,
    ZCDPFilter,
)
from expost.filters.kinds import KINDS, Kind, decode_cost, encode_cost
from expost.guarantees import ZCDP, ApproxDP, GaussianDP, PureDP

__all__ = ["COSTS", "DESCRIBABLE", "configuration", "describe", "filter_from_description"]

COSTS: Final[Mapping[str, Kind]] = KINDS
"""Every cost a record may name, by its ``type`` (the table of kinds)."""

DESCRIBABLE: Final[Mapping[str, type]] = {
    c.__name__: c
    for c in (
        ZCDPFilter,
        UnifiedFilter,
        BrownianFilter,
        ApproxDPFilter,
        ExPostFilter,
        GaussianDPFilter,
        ConcurrentFilter,
        RDPFilter,
        RenyiFilter,
        PLDFilter,
        ApproxDP,
        ZCDP,
        PureDP,
        GaussianDP,
    )
}
"""Every filter, and every value a filter holds, that a ledger's configuration may name (and
every cost kind of `COSTS`: a `PLDFilter`'s mechanism)."""


def describe(f: Any) -> dict[str, Any]:
    """The filter's configuration (type and parameters, not its history) as JSON."""
    if isinstance(f, Mechanism):
        return encode_cost(f)
    out: dict[str, Any] = {"type": type(f).__name__}
    for a in attrs.fields(type(f)):
        if a.alias == "realised" or a.alias.startswith("_") or not a.init:  # state
            continue
        value = getattr(f, a.name)
        out[a.name] = describe(value) if attrs.has(type(value)) else value
    return out


def filter_from_description(description: Mapping[str, Any]) -> PrivacyFilter:
    """The fresh filter a ledger's configuration describes (the inverse of `describe`: type
    and parameters, nested values likewise; only the classes of `DESCRIBABLE`)."""

    def build(value: Any) -> Any:
        if not isinstance(value, Mapping) or "type" not in value:
            return value
        if str(value["type"]) in COSTS:
            try:
                return decode_cost(value)
            except (TypeError, ValueError) as err:
                raise InvalidParameter("description", dict(value), str(err)) from err
        kind = DESCRIBABLE.get(str(value["type"]))
        if kind is None:
            raise InvalidParameter(
                "description",
                dict(value),
                f"names no filter or value a ledger may hold ({', '.join([*DESCRIBABLE, *COSTS])})",
            )
        try:
            return kind(**{k: build(v) for k, v in value.items() if k != "type"})
        except TypeError as err:
            raise InvalidParameter("description", dict(value), str(err)) from err

    built = build(description)
    if not isinstance(built, PrivacyFilter):
        raise InvalidParameter("description", dict(description), "does not describe a filter")
    return built


def configuration(description: object) -> object:
    """A filter's description without the state an earlier release wrote into it (an
    `RDPFilter`'s ``_carried``): what `describe` writes now."""
    if not isinstance(description, Mapping):
        return description
    return {k: v for k, v in description.items() if not str(k).startswith("_")}
