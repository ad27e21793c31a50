"""The table of cost kinds: what each kind records, carries, and how the server prices it.

One row per kind (`KINDS`). The ledger codec (`encode`, `decode`; `expost.ledger.records`), the
PostgreSQL server's record check (`expost.ledger.pg_checks`: fields, positive numbers, kinds
whose delta is 0, how a kind is priced there) and every filter's acceptance text (`accepting`,
`refusal`) derive from it; a filter's decision itself is the cost's own answer (`Mechanism`:
None means "not known"). Adding a mechanism is one class and one row here (and, for a new pair,
its PLD in `expost.pld`). docs/your-own-mechanism.md lists the table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from attrs import frozen

from expost.costs.model import REPRESENTATIONS, Mechanism
from expost.errors import InvalidParameter

__all__ = [
    "FILTERS",
    "KINDS",
    "Kind",
    "accepting",
    "carried",
    "decode_cost",
    "encode_cost",
    "kind_of",
    "refusal",
]


@frozen
class Kind:
    """A row: record ``name`` and ``fields`` (the first required), the constructor ``make``, the
    representations it may carry (`expost.costs.model.REPRESENTATIONS`), the ``positive``
    fields (0 refused) and ``optional`` ones (left out of a record when None), whether its
    ``zero_delta`` is required, and ``server``: the kind the PostgreSQL server prices it as
    ("of": as the cost it wraps; None: refused there). ``legacy`` rows are decoded, never
    written."""

    name: str
    make: Callable[..., Any]
    fields: tuple[str, ...]
    carries: tuple[str, ...]
    positive: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    zero_delta: bool = False
    server: str | None = None
    legacy: bool = False


def _rows() -> tuple[Kind, ...]:
    from expost.costs.wrappers import Composed, PairCost, PoissonSampled
    from expost.filters.costs import (
        BoundedRangeCost,
        BrownianCost,
        DiscreteGaussianCost,
        DiscreteLaplaceCost,
        DPCost,
        ExPostCost,
        GaussianCost,
        LaplaceCost,
        SubsampledGaussianCost,
        ZCDPCost,
    )

    pure = ("pair", "rdp", "zcdp", "gdp", "dp", "ex_post")
    return (
        Kind("ZCDPCost", ZCDPCost, ("rho", "delta"), ("rdp", "zcdp"), ("rho",), server="ZCDPCost"),
        Kind(
            "GaussianCost",
            GaussianCost,
            ("rho", "delta", "sigma"),
            ("pair", "rdp", "zcdp", "gdp"),
            ("rho", "sigma"),
            ("sigma",),
            zero_delta=True,
            server="GaussianCost",
        ),
        Kind("DPCost", DPCost, ("eps", "delta"), pure, ("eps",), server="DPCost"),
        Kind("LaplaceCost", LaplaceCost, ("eps", "delta"), pure, ("eps",), (), True, "DPCost"),
        Kind(
            "DiscreteLaplaceCost",
            DiscreteLaplaceCost,
            ("eps", "scale", "sensitivity"),
            pure,
            ("eps", "scale"),
            server="DPCost",
        ),
        Kind(
            "DiscreteGaussianCost",
            DiscreteGaussianCost,
            ("rho", "sigma", "sensitivity"),
            ("pair", "rdp", "zcdp"),
            ("rho", "sigma"),
            server="ZCDPCost",
        ),
        Kind(
            "BoundedRangeCost",
            BoundedRangeCost,
            ("eps",),
            pure,
            ("eps",),
            server="BoundedRangeCost",
        ),
        Kind(
            "BrownianCost",
            BrownianCost,
            ("time", "sensitivity", "bound", "delta"),
            ("zcdp", "gdp", "ex_post", "brownian", "ex_post_rdp"),
            ("time", "sensitivity"),
            server="BrownianCost",
        ),
        Kind(
            "ExPostCost",
            ExPostCost,
            ("bound", "delta", "eps_max"),
            ("zcdp", "gdp", "dp", "ex_post", "ex_post_rdp"),
            ("eps_max",),
            server="ExPostCost",
        ),
        Kind(
            "PoissonSampled",
            PoissonSampled,
            ("of", "sampling_prob"),
            ("pair", "rdp", "zcdp", "gdp", "dp"),
            ("sampling_prob",),
            server="of",
        ),
        Kind("Composed", Composed, ("costs",), ("pair", "rdp", "zcdp", "gdp", "dp")),
        Kind("PairCost", PairCost, ("p", "q"), pure),
        Kind(
            "SubsampledGaussianCost",
            SubsampledGaussianCost,
            ("rho", "delta", "sampling_prob"),
            ("pair", "rdp", "zcdp", "gdp"),
            ("rho", "sampling_prob"),
            zero_delta=True,
            server="GaussianCost",
            legacy=True,
        ),
    )


class _Table(Mapping[str, Kind]):
    """`KINDS`, built on first use (the cost classes import this package)."""

    _rows: dict[str, Kind] | None = None

    def _all(self) -> dict[str, Kind]:
        if _Table._rows is None:
            _Table._rows = {k.name: k for k in _rows()}
        return _Table._rows

    def __getitem__(self, name: str) -> Kind:
        return self._all()[name]

    def __iter__(self) -> Any:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


KINDS: Final[Mapping[str, Kind]] = _Table()
"""Every cost kind, by record name."""

FILTERS: Final[Mapping[str, tuple[str, ...]]] = {
    "pair": ("PLDFilter",),
    "rdp": ("RenyiFilter", "RDPFilter"),
    "zcdp": ("ZCDPFilter", "UnifiedFilter", "ConcurrentFilter"),
    "gdp": ("GaussianDPFilter",),
    "dp": ("ApproxDPFilter",),
    "ex_post": ("ExPostFilter",),
    "brownian": ("BrownianFilter", "ApproxDPFilter"),
    "ex_post_rdp": ("RDPFilter",),
}
"""The filters that price by each representation."""


def kind_of(cost: object) -> Kind:
    """The row of ``cost``'s class (`InvalidParameter` for a class the table does not list)."""
    for k in KINDS.values():
        if not k.legacy and type(cost) is k.make:
            return k
    raise InvalidParameter("cost", type(cost).__name__, f"must be one of {', '.join(KINDS)}")


def encode_cost(cost: object) -> dict[str, Any]:
    """A cost as a record: its kind's name as ``type`` and its fields (nested costs likewise;
    ``optional`` fields left out when None)."""
    k = kind_of(cost)
    out: dict[str, Any] = {"type": k.name}
    for name in k.fields:
        value = getattr(cost, name)
        if value is None and name in k.optional:
            continue
        if isinstance(value, Mechanism):
            value = encode_cost(value)
        elif isinstance(value, tuple):
            value = [encode_cost(v) if isinstance(v, Mechanism) else v for v in value]
        out[name] = value
    return out


def decode_cost(record: Mapping[str, Any]) -> Any:
    """The cost a record describes; `InvalidParameter` (or `TypeError`) for a bad record."""
    fields = dict(record)
    k = KINDS.get(str(fields.pop("type", None)))
    if k is None or not set(fields) <= set(k.fields):
        raise InvalidParameter("record", dict(record), f"names no cost kind ({', '.join(KINDS)})")
    for name, value in fields.items():
        if isinstance(value, Mapping):
            fields[name] = decode_cost(value)
        elif isinstance(value, list):
            fields[name] = [decode_cost(v) if isinstance(v, Mapping) else v for v in value]
    return k.make(**fields)


def accepting(*representations: str) -> str:
    """The kinds that may carry any of ``representations`` (a filter's acceptance text)."""
    names = [
        k.name for k in KINDS.values() if not k.legacy and set(k.carries) & set(representations)
    ]
    return ", ".join(names)


def carried(cost: object) -> tuple[str, ...]:
    """The representations ``cost`` carries (its own answers, not its kind's column)."""
    if not isinstance(cost, Mechanism):
        return ()
    probes: dict[str, Callable[[], object]] = {
        "pair": cost.pair,
        "rdp": lambda: cost.rdp(2.0),
        "zcdp": cost.zcdp,
        "gdp": cost.gdp,
        "dp": cost.dp,
        "ex_post": cost.ex_post,
        "brownian": cost.brownian,
        "ex_post_rdp": lambda: cost.ex_post_rdp(2.0),
    }
    out = []
    for name, probe in probes.items():
        try:
            if probe() is not None:
                out.append(name)
        except (
            InvalidParameter,
            ArithmeticError,
            ValueError,
        ):  # e.g. a product that cannot be subsampled
            continue
    return tuple(out)


def refusal(filter_name: str, cost: object, *representations: str, note: str = "") -> str:
    """Why ``filter_name``, which prices by ``representations``, refuses ``cost`` (and a
    filter's ``note``), and which filters could price it."""
    wanted = " or ".join(REPRESENTATIONS[r] for r in representations)
    could = sorted({f for r in carried(cost) for f in FILTERS[r]} - {filter_name})
    where = f"; filters that could price it: {', '.join(could)}" if could else ""
    return (
        f"cannot charge {cost!r}: it does not carry {wanted} (accepts only "
        f"{accepting(*representations)}{note}){where}"
    )
