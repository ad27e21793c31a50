"""Sources of exactly uniform integers: the one primitive every exact sampler uses.

``below(n, size)`` returns ``size`` i.i.d. integers, each exactly uniform on [0, n). For
n <= 2**62 the result is an int64 array; for larger n it is an object array of Python
ints, built from 62-bit chunks by rejection (each round accepts with probability > 1/2).

- `SecureBits`: the operating system's CSPRNG (``os.urandom``), the default for releases.
  A draw below n reads 8 bytes, keeps the top ceil(log2 n) bits and rejects values >= n,
  vectorised with numpy: expected bytes per draw <= 16, exactly 8 when n is a power of 2.
- `GeneratorBits`: a seeded ``numpy.random.Generator``, for reproducible tests and audits
  (``Generator.integers`` is exactly uniform: it also uses rejection, Lemire's method).
  Same seed, same integers.

The samplers are the same code for both sources.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from typing import Protocol

import numpy as np
import numpy.typing as npt

from expost.errors import InvalidParameter

#: Largest n for which ``below`` returns an int64 array (larger n: Python ints).
SMALL = 2**62
_CHUNK_BITS = 62


class BitSource(Protocol):
    """A source of i.i.d. exactly uniform integers."""

    def below(self, n: int, size: int) -> npt.NDArray[np.int64]:
        """``size`` integers uniform on [0, n); int64 for n <= 2**62, else an object array."""
        ...


def _check(n: int, size: int) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidParameter("n", n, "must be an integer >= 1")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise InvalidParameter("size", size, "must be an integer >= 0")


class _Source(ABC):
    """Shared dispatch: small n from the source's native draw, large n from 62-bit chunks."""

    @abstractmethod
    def _small(self, n: int, size: int) -> npt.NDArray[np.int64]:
        """``size`` uniform integers below n <= SMALL from the source's native draw."""

    def below(self, n: int, size: int) -> npt.NDArray[np.int64]:
        _check(n, size)  # before int(): '7' or True are not integers
        n, size = int(n), int(size)
        if n <= SMALL:
            return self._small(n, size)
        return self._big(n, size)

    def _big(self, n: int, size: int) -> npt.NDArray[np.int64]:
        bits = n.bit_length()
        chunks = -(-bits // _CHUNK_BITS)
        drop = chunks * _CHUNK_BITS - bits
        out = np.empty(size, dtype=object)
        pending = np.arange(size)
        while pending.size:
            raw = self._small(SMALL, chunks * pending.size).reshape(pending.size, chunks)
            value = np.zeros(pending.size, dtype=object)
            for j in range(chunks):
                value = (value << _CHUNK_BITS) + raw[:, j].astype(object)
            value = value >> drop
            ok = value < n
            out[pending[ok]] = value[ok]
            pending = pending[~ok]
        return out


class SecureBits(_Source):
    """The OS CSPRNG (``os.urandom``) by rejection on raw bytes: the default for releases.

    A draw below n takes the top k = ceil(log2 n) bits of the smallest word (1, 2, 4 or 8
    bytes) holding them and rejects values >= n; each round reads enough words for the
    expected acceptance rate n/2**k (>= 1/2) plus a margin, so one read usually suffices.
    A power of two n = 2**k reads exactly one word per draw (no rejection). Small requests are served from a buffer of ``block`` bytes
    read from the OS at once (one system call per block instead of one per draw); the
    buffer is discarded in a forked child (the pid is checked), so two processes never
    share random bytes; threads take bytes from it under a lock, so two threads never get the
    same bytes; a copy or an unpickled source starts with an empty buffer of its own (it is
    another handle on the OS CSPRNG). Large requests read the OS directly.
    """

    def __init__(self, block: int = 1 << 12) -> None:
        if isinstance(block, bool) or not isinstance(block, int) or block < 0:
            raise InvalidParameter("block", block, "must be an integer >= 0")
        self.block = block
        self._buffer = b""
        self._at = 0
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[type[SecureBits], tuple[int]]:
        """A copy (or an unpickled source) is a fresh source: it never repeats buffered bytes."""
        return SecureBits, (self.block,)

    def _bytes(self, count: int) -> bytes:
        """``count`` fresh bytes from the OS, through the buffer when ``count`` is small."""
        if count > self.block // 4:
            return os.urandom(count)
        if self._pid != os.getpid():  # forked (maybe while a thread held the lock): start over
            self._buffer, self._at, self._pid = b"", 0, os.getpid()
            self._lock = threading.Lock()
        with self._lock:
            if self._at + count > len(self._buffer):
                self._buffer, self._at = os.urandom(self.block), 0
            out = self._buffer[self._at : self._at + count]
            self._at += count
            return out

    def _small(self, n: int, size: int) -> npt.NDArray[np.int64]:
        if n == 1 or size == 0:
            return np.zeros(size, dtype=np.int64)
        k = (n - 1).bit_length()
        word = np.dtype(
            next(
                w
                for w in (np.uint8, np.uint16, np.uint32, np.uint64)
                if np.dtype(w).itemsize * 8 >= k
            )
        )
        shift = word.type(word.itemsize * 8 - k)
        if n == 1 << k:  # every k-bit value is accepted
            raw = np.frombuffer(self._bytes(word.itemsize * size), dtype=word)
            return (raw >> shift).astype(np.int64)
        out = np.empty(0, dtype=np.int64)
        while out.size < size:
            need = size - out.size
            words = need + (need * ((1 << k) - n)) // n + 16 + need // 64
            raw = np.frombuffer(self._bytes(word.itemsize * words), dtype=word) >> shift
            out = np.concatenate([out, raw[raw < n].astype(np.int64)])
        return out[:size]


class GeneratorBits(_Source):
    """A seeded numpy ``Generator``: reproducible draws for tests and audits (not for releases)."""

    def __init__(self, rng: np.random.Generator) -> None:
        if not isinstance(rng, np.random.Generator):
            raise InvalidParameter("rng", rng, "must be a numpy.random.Generator")
        self.rng = rng

    def _small(self, n: int, size: int) -> npt.NDArray[np.int64]:
        return self.rng.integers(0, n, size=size, dtype=np.int64)
