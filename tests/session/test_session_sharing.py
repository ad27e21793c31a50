"""Threads, copies and pickles (docs/session.md, "Threads, copies and pickles"; issue 37 item 1).

Threads may share a session: every returned release is charged and the sums are exact; a
nested round is refused only in the thread whose round is running; no call waits on another
round's user code. Copies, deep copies and pickles of a session or an open ledger are refused
(`NotCopyable`); a forked child refuses its parent's session. Each guarantee has a planted twin
(the lock removed, the lock held around the whole round, the refusal after the reservation)
that the same check rejects.
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing.reduction
import os
import pickle
import threading
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

import expost as ep
from expost import prepare
from expost.exact.bits import GeneratorBits, SecureBits
from expost.ledger import Ledger
from expost.rounds import Prepared
from expost.spendable import Spendable
from expost.stopping import Released

RHO = 2.0**-10  # sums of these are exact in floats


def _session(rounds: int, **kw: Any) -> ep.PrivateSession:
    return ep.PrivateSession(ep.ZCDPFilter(rounds * RHO), np.random.default_rng(1), **kw)


def _count_draws(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every draw a Gaussian round makes (a refusal after the draw would show here)."""
    draws: list[int] = []
    original = prepare.prepare_gaussian

    def counted(*args: Any) -> Prepared[Any]:
        p = original(*args)
        draw = p.draw

        def counting() -> Any:
            draws.append(1)
            return draw()

        return attrs.evolve(p, draw=counting)

    monkeypatch.setattr(prepare, "prepare_gaussian", counted)
    return draws


def _hammer(s: ep.PrivateSession, threads: int, calls: int) -> int:
    """``threads`` threads × ``calls`` Gaussian releases of RHO each; the releases returned."""
    returned: list[int] = []
    start = threading.Barrier(threads)

    def work() -> None:
        start.wait()
        for _ in range(calls):
            with contextlib.suppress(ep.BudgetExceeded):
                s.gaussian(0.0, 1.0, RHO)
                returned.append(1)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=60)
        assert not t.is_alive(), "a thread did not return"
    return len(returned)


def _assert_every_release_charged(s: ep.PrivateSession, returned: int, draws: int) -> None:
    assert draws == returned  # nothing drawn that was not returned and charged
    assert len(s.history) == returned
    assert [r.index for r in s.history] == list(range(returned))
    spent = s.spent
    assert isinstance(spent, float)
    assert Fraction(spent) == returned * Fraction(RHO)  # exact: every release charged once
    budget = s.filter.guarantee()
    assert isinstance(budget, ep.ZCDP)
    assert spent <= budget.rho


def test_threads_sharing_a_session_charge_every_release(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = _count_draws(monkeypatch)
    s = _session(100)
    returned = _hammer(s, threads=8, calls=20)
    assert returned == 100  # 160 tries, the budget admits exactly 100
    _assert_every_release_charged(s, returned, len(draws))


def test_threads_sharing_a_session_with_a_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draws = _count_draws(monkeypatch)
    path = tmp_path / "l.sqlite"
    s = _session(12, ledger=path, create=True)
    returned = _hammer(s, threads=4, calls=5)
    assert returned == 12
    _assert_every_release_charged(s, returned, len(draws))
    s.close()
    again = _session(12, ledger=path)
    assert again.spent == 12 * RHO  # the ledger holds every round (exact: RHO = 2**-10)
    again.close()


def _race(s: ep.PrivateSession, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """Two threads ask for the whole budget at once; the filter's spend waits (<= 0.5 s) for
    the other thread to arrive, so without the lock both are admitted on the same state.
    (draws, releases returned)."""
    draws = _count_draws(monkeypatch)
    meet = threading.Barrier(2, timeout=0.5)
    spend = ep.ZCDPFilter.spend

    def slow_spend(self: ep.ZCDPFilter, cost: ep.Cost) -> ep.ZCDPFilter:
        with contextlib.suppress(threading.BrokenBarrierError):  # with the lock: nobody comes
            meet.wait()
        return spend(self, cost)

    monkeypatch.setattr(ep.ZCDPFilter, "spend", slow_spend)
    returned: list[int] = []

    def one() -> None:
        with contextlib.suppress(ep.BudgetExceeded):
            s.gaussian(0.0, 1.0, RHO)
            returned.append(1)

    pool = [threading.Thread(target=one) for _ in range(2)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=10)
    return len(draws), len(returned)


def test_a_race_for_the_last_round_admits_one(monkeypatch: pytest.MonkeyPatch) -> None:
    s = _session(1)
    draws, returned = _race(s, monkeypatch)
    assert returned == 1
    _assert_every_release_charged(s, returned, draws)


def test_twin_without_the_lock_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    s = _session(1)
    monkeypatch.setattr(s, "_lock", contextlib.nullcontext())  # the planted bug
    draws, returned = _race(s, monkeypatch)
    with pytest.raises(AssertionError):
        _assert_every_release_charged(s, returned, draws)


# ----------------------------------------------------------------- nested rounds, bounded time


def _round_from_another_thread(s: ep.PrivateSession) -> tuple[bool, list[object]]:
    """A Brownian round whose stopping rule runs a Gaussian round of the same session in
    another thread and waits (<= 2 s) for it. (did that thread return, what it got)."""
    got: list[object] = []
    finished: list[bool] = []

    def rule(released: Released) -> bool:
        t = threading.Thread(target=lambda: got.append(s.gaussian(0.0, 1.0, 0.25)))
        t.start()
        t.join(timeout=2.0)
        finished.append(not t.is_alive())
        return True

    s.brownian(0.0, 1.0, ep.TimeGrid([4.0, 1.0]), stop=rule)  # request 0.5, realised 0.125
    return finished[0], got


def test_a_stopping_rule_may_use_the_session_from_another_thread() -> None:
    s = ep.PrivateSession(ep.ZCDPFilter(1.0), np.random.default_rng(3))
    finished, got = _round_from_another_thread(s)
    assert finished
    assert len(got) == 1
    assert [r.mechanism for r in s.history] == ["gaussian", "brownian"]
    assert s.spent == 0.25 + 0.125  # both charged


class _Serialised(ep.PrivateSession):
    """Planted twin: one lock held around the whole round (user code included)."""

    _whole = threading.RLock()

    def _release(self, prepared: Prepared[Any]) -> Any:
        with self._whole:
            return super()._release(prepared)


def test_twin_holding_the_lock_around_the_round_would_deadlock() -> None:
    s = _Serialised(ep.ZCDPFilter(1.0), np.random.default_rng(3))
    finished, _ = _round_from_another_thread(s)
    assert not finished  # the check above catches it: the other thread did not return


def test_a_refused_nested_round_leaves_the_ledger_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    s = ep.PrivateSession(ep.ZCDPFilter(1.0), np.random.default_rng(4), ledger=path, create=True)
    seen: list[tuple[bytes, bytes, str]] = []

    def greedy(released: Released) -> bool:
        before = path.read_bytes()
        with pytest.raises(ep.InvalidParameter) as refusal:
            s.gaussian(0.0, 1.0, 0.1)
        seen.append((before, path.read_bytes(), str(refusal.value)))
        return True

    s.brownian(0.0, 1.0, ep.TimeGrid([4.0, 1.0]), stop=greedy)
    ((before, after, message),) = seen
    assert after == before  # byte for byte: the refused nested round reserved nothing
    assert "running in this thread" in message
    assert "nothing was spent" in message
    s.close()
    again = ep.PrivateSession(ep.ZCDPFilter(1.0), np.random.default_rng(5), ledger=path)
    assert again.spent == 0.125  # the Brownian round alone
    again.close()


# ----------------------------------------------------------------- copies and pickles

COPIES: list[tuple[str, Callable[[object], object]]] = [
    ("copy", copy.copy),
    ("deepcopy", copy.deepcopy),
    *[(f"pickle-{p}", lambda x, p=p: pickle.dumps(x, protocol=p)) for p in range(6)],
    ("multiprocessing", lambda x: multiprocessing.reduction.ForkingPickler.dumps(x)),
]


@pytest.mark.parametrize(("how", "duplicate"), COPIES, ids=[c[0] for c in COPIES])
def test_a_session_refuses_to_be_copied(how: str, duplicate: Callable[[object], object]) -> None:
    s = _session(10, exact=True)
    s.gaussian(0, 1, RHO)
    _refused(duplicate, s)
    s.gaussian(0, 1, RHO)  # the session itself is unharmed
    assert s.spent == 2 * RHO


@pytest.mark.parametrize(("how", "duplicate"), COPIES, ids=[c[0] for c in COPIES])
def test_an_open_ledger_refuses_to_be_copied(
    tmp_path: Path, how: str, duplicate: Callable[[object], object]
) -> None:
    with (
        Ledger.open(tmp_path / "l", {"k": 1}, create=True) as ledger,
        pytest.raises(ep.NotCopyable, match="Ledger"),
    ):
        duplicate(ledger)


def test_every_ledger_backend_is_spendable() -> None:
    from expost.ledger.postgres import PostgresLedger

    assert issubclass(Ledger, Spendable)
    assert issubclass(PostgresLedger, Spendable)


class _Copyable(ep.PrivateSession):
    """Planted twin: a session with the refusal removed (Python's default copying)."""

    __copy__ = None  # type: ignore[assignment]  # the planted bug: default copying
    __deepcopy__ = None  # type: ignore[assignment]
    __reduce_ex__ = object.__reduce_ex__  # type: ignore[assignment]
    __reduce__ = object.__reduce__  # type: ignore[assignment]


def _refused(duplicate: Callable[[object], object], thing: object) -> None:
    with pytest.raises(ep.NotCopyable, match="cannot be copied or pickled"):
        duplicate(thing)


@pytest.mark.parametrize(("how", "duplicate"), COPIES, ids=[c[0] for c in COPIES])
def test_twin_a_session_that_copies_is_caught(
    how: str, duplicate: Callable[[object], object]
) -> None:
    twin = _Copyable(ep.ZCDPFilter(RHO), np.random.default_rng(0))
    with pytest.raises((pytest.fail.Exception, TypeError, pickle.PicklingError)):  # not refused
        _refused(duplicate, twin)


def test_filters_copy_as_values() -> None:
    f = ep.ZCDPFilter(1.0).spend(ep.ZCDPCost(0.25))
    for twin in (copy.copy(f), copy.deepcopy(f), pickle.loads(pickle.dumps(f))):
        assert twin == f
        assert twin.spent == 0.25


def test_a_copied_secure_bit_source_never_repeats_its_buffer() -> None:
    bits = SecureBits()
    bits.below(2**8, 4)  # fills the buffer
    for twin in (copy.copy(bits), copy.deepcopy(bits), pickle.loads(pickle.dumps(bits))):
        assert isinstance(twin, SecureBits)
        assert twin.block == bits.block
        assert twin._buffer == b""
        assert twin._at == 0


def test_threads_sharing_secure_bits_never_get_the_same_bytes() -> None:
    bits = SecureBits(block=1 << 16)
    out: list[bytes] = []
    start = threading.Barrier(4)

    def take() -> None:
        start.wait()
        out.extend(bits._bytes(8) for _ in range(500))

    pool = [threading.Thread(target=take) for _ in range(4)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert len(set(out)) == len(out) == 2000  # 64-bit chunks: a repeat is a shared slice


def test_generator_bits_is_a_reproducible_source_and_copies_as_one() -> None:
    bits = GeneratorBits(np.random.default_rng(0))
    twin = copy.deepcopy(bits)
    assert list(twin.below(100, 5)) == list(bits.below(100, 5))  # documented: not for releases


def test_a_forked_child_refuses_its_parents_session() -> None:
    s = _session(10)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what using the inherited session did
        code = 1
        try:
            s.gaussian(0.0, 1.0, RHO)
        except ep.NotCopyable as err:
            code = 0 if "forked" in str(err) else 2
        except Exception:  # noqa: BLE001 - the child reports any other outcome as a code
            code = 3
        os.write(write, bytes([code]))
        os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == bytes([0])
    s.gaussian(0.0, 1.0, RHO)  # the parent's session still works
    assert s.spent == RHO
