"""Audits and how they run (ARCHITECTURE "Statistical audits").

An `Audit` is a claim (`expost.audit.claims`), a seeded vectorised simulator and a planted-bug
`Twin`; `run_audits` runs them into an `AuditReport` (`expost.audit.report`).

An `Audit` simulates N independent runs in chunks (`expost.execution`): their sizes and streams
(``SeedSequence.spawn``) are fixed by the audit alone, so results are bit-identical for a seed
whatever executes the chunks (in process, a process pool, a Dask cluster). An audit with a
backend simulator (``on_backend``) can draw its runs with torch or cupy (`expost.backends`);
the others run on numpy whatever backend is asked.
"""

from __future__ import annotations

import functools
import hashlib
import operator
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import open_probability, positive_int, validator
from expost.audit.claims import ProbabilityClaim, Tally
from expost.audit.report import AuditReport, AuditResult, TwinResult
from expost.audit.verdict import Claim, Expected, Verdict
from expost.backends import ArrayBackend, Draws
from expost.errors import InvalidParameter
from expost.execution import Execution, chunk_sizes, map_chunks

__all__ = [
    "ALPHA_AUDIT",
    "Audit",
    "BackendSimulator",
    "Progress",
    "Simulator",
    "Twin",
    "audit_seed",
    "run_audit",
    "run_audits",
]

ALPHA_AUDIT = 1e-6
Simulator = Callable[[int, np.random.Generator], npt.ArrayLike]
BackendSimulator = Callable[[int, Draws], Any]
"""``simulate(n, draws)``: the runs drawn with an array backend's draws (`expost.backends`)."""
Progress = Callable[[int, int, str], None]


def _name(name: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameter(name, value, "must be a non-empty string")


def _claim(name: str, value: object) -> None:
    if not (hasattr(value, "verdict") and hasattr(value, "describe")):
        raise InvalidParameter(name, value, "must be a Claim (ProbabilityClaim, EValueClaim, …)")


def _simulator(name: str, value: object) -> None:
    if not callable(value):
        raise InvalidParameter(name, value, "must be callable as simulate(n, rng)")


def _optional_simulator(name: str, value: object) -> None:
    if value is not None:
        _simulator(name, value)


def _expected(name: str, value: object) -> None:
    if value not in ("holds", "refuted"):
        raise InvalidParameter(name, value, "must be 'holds' or 'refuted'")


@frozen
class Twin:
    """A planted bug (a wrong bound or mechanism) that the audit's test must refute.

    ``simulate=None`` reuses the audit's own samples (a wrong claim about the same runs).
    ``on_backend``: the same simulation on an array backend (see `Audit`).
    """

    name: str = field(validator=validator(_name))
    claim: Claim = field(validator=validator(_claim))
    simulate: Simulator | None = field(default=None, validator=validator(_optional_simulator))
    on_backend: BackendSimulator | None = field(
        default=None, validator=validator(_optional_simulator)
    )


@frozen
class Audit:
    """A claim, a seeded vectorised simulator ``simulate(n, rng) -> samples`` and its planted bug.

    ``statement`` is the claim in words (the report's "claim"); ``source`` cites it ("BNR Thm 3.6").
    ``expected="refuted"`` marks a printed statement that is supposed to fail. Runs are drawn in
    chunks of ``chunk_size``; with several workers ``simulate`` must be picklable (a module-level
    function or a ``functools.partial`` of one). ``on_backend(n, draws)``, if given, draws the
    same law with an array backend's draws and returns a backend array (torch, cupy); without it
    the audit runs on numpy whatever backend is asked.
    """

    name: str = field(validator=validator(_name))
    source: str = field(validator=validator(_name))
    statement: str = field(validator=validator(_name))
    claim: Claim = field(validator=validator(_claim))
    simulate: Simulator = field(validator=validator(_simulator))
    n: int = field(validator=validator(positive_int))
    twin: Twin | None = None
    expected: Expected = field(default="holds", validator=validator(_expected))
    chunk_size: int = field(default=50_000, validator=validator(positive_int))
    on_backend: BackendSimulator | None = field(
        default=None, validator=validator(_optional_simulator)
    )

    def chunks(self) -> list[int]:
        """The chunk sizes, in order; they depend on n and chunk_size only."""
        return chunk_sizes(self.n, self.chunk_size)

    def runs_on(self, backend: ArrayBackend) -> bool:
        """Whether the audit's runs are drawn on ``backend`` (numpy: always)."""
        twin_ok = (
            self.twin is None or self.twin.simulate is None or self.twin.on_backend is not None
        )
        return backend.name == "numpy" or (self.on_backend is not None and twin_ok)


def _seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InvalidParameter("seed", seed, "must be an integer >= 0")
    return int(seed)


def audit_seed(seed: int, name: str) -> np.random.SeedSequence:
    """The seed sequence of the runs named ``name``: fixed by (seed, name) alone.

    So an audit draws the same runs whether it runs alone (``--only``) or in a suite.
    """
    digest = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:16], "little")
    return np.random.SeedSequence([_seed(seed), digest])


def _simulate_chunk(
    simulate: Simulator,
    on_backend: BackendSimulator | None,
    backend: ArrayBackend,
    size: int,
    seed: np.random.SeedSequence,
) -> npt.NDArray[Any]:
    if on_backend is None or backend.name == "numpy":
        out = np.asarray(simulate(size, np.random.default_rng(seed)))
    else:
        out = ArrayBackend.to_numpy(on_backend(size, backend.draws(seed)))
    if out.ndim == 0 or out.shape[0] != size:
        raise InvalidParameter(
            "simulate", simulate, f"returned shape {out.shape} for {size} runs (need {size} rows)"
        )
    return out


def _tally_chunk(
    simulate: Simulator,
    on_backend: BackendSimulator | None,
    backend: ArrayBackend,
    size: int,
    seed: np.random.SeedSequence,
) -> Tally:
    """A chunk reduced where it ran: only (runs, events) travel back and stay in memory."""
    return ProbabilityClaim.tally(_simulate_chunk(simulate, on_backend, backend, size, seed))


@frozen
class _Context:
    """What every chunk of a run shares: seed, level, executor, backend, progress tick."""

    seed: int
    alpha: float
    executor: Executor
    backend: ArrayBackend
    tick: Callable[[], None]


Samples = npt.NDArray[Any] | Tally


def _draw(
    simulate: Simulator,
    on_backend: BackendSimulator | None,
    audit: Audit,
    name: str,
    tally: bool,
    ctx: _Context,
) -> Samples:
    """The runs of ``name``, concatenated in chunk order, or (``tally``) their summed `Tally`."""
    backend = ctx.backend if audit.runs_on(ctx.backend) else ArrayBackend()
    sizes = audit.chunks()
    seeds = audit_seed(ctx.seed, name).spawn(len(sizes))
    chunks = [
        (simulate, on_backend, backend, size, ss) for size, ss in zip(sizes, seeds, strict=True)
    ]
    if tally:
        return functools.reduce(
            operator.add, map_chunks(_tally_chunk, chunks, ctx.executor, ctx.tick)
        )
    return np.concatenate(map_chunks(_simulate_chunk, chunks, ctx.executor, ctx.tick), axis=0)


def _verdict(claim: Claim, samples: Samples, alpha: float) -> Verdict:
    if isinstance(samples, Tally):
        assert isinstance(claim, ProbabilityClaim)  # only they are tallied (_tallied)
        return claim.verdict_of(samples, alpha)
    return claim.verdict(samples, alpha)


def _tallied(*claims: Claim) -> bool:
    """Chunks are reduced to a `Tally` when every claim on their runs is a `ProbabilityClaim`."""
    return all(isinstance(c, ProbabilityClaim) for c in claims)


def _alpha_audit(alpha_audit: object) -> float:
    return open_probability("alpha_audit", alpha_audit)


def _run(audit: Audit, ctx: _Context) -> AuditResult:
    start = time.perf_counter()
    t = audit.twin
    shared = [audit.claim] + ([t.claim] if t is not None and t.simulate is None else [])
    samples = _draw(audit.simulate, audit.on_backend, audit, audit.name, _tallied(*shared), ctx)
    verdict = _verdict(audit.claim, samples, ctx.alpha)
    twin = None
    if t is not None:
        if t.simulate is not None:
            samples = _draw(t.simulate, t.on_backend, audit, t.name, _tallied(t.claim), ctx)
        twin = TwinResult(t.name, _verdict(t.claim, samples, ctx.alpha))
    seconds = time.perf_counter() - start
    return AuditResult(
        audit.name, audit.source, audit.statement, verdict, seconds, audit.expected, twin
    )


def _tasks(audit: Audit) -> int:
    own = len(audit.chunks())
    return own * (2 if audit.twin is not None and audit.twin.simulate is not None else 1)


def _execution(execution: Execution | None, workers: int) -> Execution:
    w = positive_int("workers", workers)
    if execution is None:
        return Execution(workers=w)
    if w != 1:
        raise InvalidParameter("workers", workers, "must be 1 when an execution is given")
    return execution


def run_audits(
    audits: Sequence[Audit],
    *,
    seed: int = 0,
    alpha_audit: float = ALPHA_AUDIT,
    workers: int = 1,
    progress: Progress | None = None,
    execution: Execution | None = None,
    backend: ArrayBackend | None = None,
) -> AuditReport:
    """Run audits in order; the chunks of each audit run on ``execution``'s executor.

    ``workers=N`` is short for ``execution=Execution(workers=N)`` (a local process pool). The
    verdicts do not depend on the execution (chunks and their seeds are fixed per audit); with
    a ``backend`` other than numpy, audits that support it draw their runs there (same law,
    other draws). ``progress(done, total, name)`` is called after every chunk.
    """
    alpha = _alpha_audit(alpha_audit)
    where = _execution(execution, workers)
    array_backend = (ArrayBackend() if backend is None else backend).check()
    seed = _seed(seed)
    names = [a.name for a in audits]
    if len(set(names)) != len(names):
        raise InvalidParameter("audits", names, "must have distinct names")
    total = sum(_tasks(a) for a in audits)
    done = 0
    results = []
    with where.executor() as executor:
        for audit in audits:

            def tick(name: str = audit.name) -> None:
                nonlocal done
                done += 1
                if progress is not None:
                    progress(done, total, name)

            ctx = _Context(seed, alpha, executor, array_backend, tick)
            results.append(_run(audit, ctx))
    return AuditReport(tuple(results), seed, alpha)


def run_audit(
    audit: Audit,
    *,
    seed: int = 0,
    alpha_audit: float = ALPHA_AUDIT,
    workers: int = 1,
    execution: Execution | None = None,
    backend: ArrayBackend | None = None,
) -> AuditResult:
    """Run one audit (and its twin); see `run_audits`."""
    report = run_audits(
        [audit],
        seed=seed,
        alpha_audit=alpha_audit,
        workers=workers,
        execution=execution,
        backend=backend,
    )
    return report.results[0]
