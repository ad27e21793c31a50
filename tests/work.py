"""Work, counted instead of timed: bounded-work tests that cannot fail on a loaded machine.

A timed assert (CPU or wall seconds) fails when the machine is busy (issue 41, item 7; speed
claims live in benchmarks/). `counted` measures a call's work deterministically: every Python
and builtin function call it makes (`cProfile`'s call counts: each turn of a loop in Python
code makes at least one call) and the peak of memory it allocates (`tracemalloc`, to which
numpy reports its arrays), so a loop over a parameter and a table sized by a parameter both
show. The same call on the same inputs counts the same on any machine, loaded or not.
"""

from __future__ import annotations

import cProfile
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import attrs


@attrs.define
class Work:
    """A call's work: function calls made and peak bytes allocated (above what it started with)."""

    calls: int = 0
    peak_bytes: int = 0

    def within(self, bound: Work) -> bool:
        return self.calls <= bound.calls and self.peak_bytes <= bound.peak_bytes


@contextmanager
def counted(*, memory: bool = True) -> Iterator[Work]:
    """Counts the work of the ``with`` block: this thread's calls and, unless ``memory`` is
    False (it costs as much time as counting calls), every thread's peak memory. A loop whose
    body calls nothing (no function, no builtin) is not counted; every loop of the library's
    calls something."""
    work = Work()
    started = memory and not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    if memory:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
    profile = cProfile.Profile()
    profile.enable()
    try:
        yield work
    finally:
        profile.disable()
        work.calls = sum(entry.callcount for entry in profile.getstats())
        if memory:
            work.peak_bytes = max(0, tracemalloc.get_traced_memory()[1] - base)
        if started:
            tracemalloc.stop()


def work_of(call: Callable[[], object], *, memory: bool = True) -> tuple[Work, object]:
    """``call()``'s work and its value, or the exception it raised (returned, not raised)."""
    with counted(memory=memory) as work:
        try:
            out: object = call()
        except Exception as err:  # noqa: BLE001  # the caller checks what was raised
            out = err
    return work, out
