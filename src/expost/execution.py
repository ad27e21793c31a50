"""Chunked, seed-stable execution: one layout of the work, several executors (issue 14).

A simulation of ``n`` independent runs is cut into chunks whose sizes depend on ``n`` and the
chunk size alone (`chunk_sizes`); chunk i draws from the i-th child of the work's
`numpy.random.SeedSequence` (``SeedSequence.spawn``), so its draws are fixed by (seed, i).
Chunks are submitted to a `concurrent.futures.Executor` and their results reduced in chunk
order (`map_chunks`), so a result for a seed is bit-identical whatever runs the chunks:

- in process (the default, `Execution()`),
- a local process pool (``Execution(workers=N)``),
- a Dask cluster: an existing one (``Execution(scheduler="tcp://…")``) or a `LocalCluster`
  started for the run (``Execution(dask_local=N)``). Dask's own executor
  (``Client.get_executor``) schedules the chunks; a chunk lost with a worker is rerun by the
  scheduler, and a chunk that raised is retried, from the same stream, so the result is the same.

Dask is an optional extra: ``pip install 'expost[dask]'``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any, ParamSpec, TypeVar

import numpy as np
from attrs import field, frozen

from expost._validation import positive_int, validator
from expost.errors import InvalidParameter

__all__ = [
    "DASK_EXTRA",
    "Execution",
    "InProcessExecutor",
    "children",
    "chunk_sizes",
    "map_chunks",
]

DASK_EXTRA = "pip install 'expost[dask]'"
RETRIES = 3
"""Dask retries of a chunk that raised (a lost worker's chunks are rescheduled regardless)."""

_R = TypeVar("_R")
_P = ParamSpec("_P")


def chunk_sizes(n: int, chunk_size: int) -> list[int]:
    """Sizes of the chunks of ``n`` runs: full chunks of ``chunk_size``, then the rest."""
    full, rest = divmod(positive_int("n", n), positive_int("chunk_size", chunk_size))
    return [chunk_size] * full + ([rest] if rest else [])


def children(seed: np.random.SeedSequence, n: int) -> list[np.random.SeedSequence]:
    """The ``n`` children a fresh ``seed.spawn(n)`` gives, without spawning.

    ``spawn`` counts the children it has handed out, so a second call on the same object gives
    others; these depend on the seed alone, however often it is used.
    """
    key = tuple(seed.spawn_key)
    return [
        np.random.SeedSequence(seed.entropy, spawn_key=(*key, i), pool_size=seed.pool_size)
        for i in range(positive_int("n", n))
    ]


class InProcessExecutor(Executor):
    """Runs each submitted call at once, in this process (the default executor).

    A call that raises raises from ``submit`` itself, as a plain loop would.
    """

    def submit(self, fn: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_R]:
        future: Future[_R] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def map_chunks(
    fn: Callable[..., _R],
    chunks: Sequence[tuple[Any, ...]],
    executor: Executor,
    done: Callable[[], None] = lambda: None,
) -> list[_R]:
    """``[fn(*args) for args in chunks]`` on ``executor``, in chunk order; ``done()`` per chunk.

    Every chunk is submitted first, so workers share them; results are collected in order.
    """
    futures = [executor.submit(fn, *args) for args in chunks]
    out = []
    for future in futures:
        out.append(future.result())
        done()
    return out


def _optional_positive(name: str, value: object) -> None:
    if value is not None:
        positive_int(name, value)


def _address(name: str, value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise InvalidParameter(name, value, "must be a scheduler address such as tcp://host:8786")


def _dask() -> Any:
    """``dask.distributed``, or an ImportError naming the extra."""
    try:
        from dask import distributed
    except ImportError as exc:
        raise ImportError(f"Dask execution needs dask[distributed]: {DASK_EXTRA}") from exc
    return distributed


@frozen
class Execution:
    """Where the chunks run: in process, ``workers`` local processes, or a Dask cluster.

    At most one of ``workers > 1``, ``scheduler`` (address of a running Dask scheduler) and
    ``dask_local`` (workers of a `LocalCluster` started for the run, one thread each, in
    separate processes) may be set. Results do not depend on the choice (module docstring).
    """

    workers: int = field(default=1, validator=validator(positive_int))
    scheduler: str | None = field(default=None, validator=validator(_address))
    dask_local: int | None = field(default=None, validator=validator(_optional_positive))

    def __attrs_post_init__(self) -> None:
        chosen = [
            name
            for name, on in (
                ("workers", self.workers > 1),
                ("scheduler", self.scheduler is not None),
                ("dask_local", self.dask_local is not None),
            )
            if on
        ]
        if len(chosen) > 1:
            raise InvalidParameter(
                chosen[1], getattr(self, chosen[1]), f"cannot be combined with {chosen[0]}"
            )

    def check(self) -> Execution:
        """Import Dask now if it is needed (ImportError naming ``expost[dask]`` if missing)."""
        if self.scheduler is not None or self.dask_local is not None:
            _dask()
        return self

    def describe(self) -> str:
        """The executor in words, e.g. ``2 local processes``."""
        if self.scheduler is not None:
            return f"Dask scheduler {self.scheduler}"
        if self.dask_local is not None:
            return f"Dask LocalCluster of {self.dask_local} workers"
        return "in process" if self.workers == 1 else f"{self.workers} local processes"

    @contextlib.contextmanager
    def executor(self) -> Iterator[Executor]:
        """The executor for one run; pools and clusters it starts are closed on exit."""
        if self.scheduler is None and self.dask_local is None:
            if self.workers == 1:
                yield InProcessExecutor()
                return
            with ProcessPoolExecutor(max_workers=self.workers) as pool:
                yield pool
            return
        distributed = _dask()
        with contextlib.ExitStack() as stack:
            if self.scheduler is not None:
                address: Any = self.scheduler
            else:
                address = stack.enter_context(
                    distributed.LocalCluster(
                        n_workers=self.dask_local,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=None,
                    )
                )
            client = stack.enter_context(distributed.Client(address))
            executor: Executor = client.get_executor(pure=False, retries=RETRIES)
            yield executor
