"""One DP-SGD step at the cost of its batch: `PrivateSession.poisson_batch` (issue 42).

``batch = session.poisson_batch(n, sampling_prob=q, sigma=σ, sensitivity=C)`` reserves one
`SubsampledGaussianCost` (σ, q) round — it is charged from the moment its rows are known — and
draws a Poisson sample of range(n) (`expost.mechanisms.poisson_sample`: each row kept
independently with probability floor(q·2⁵³)/2⁵³ <= q, in O(q·n) expected time). The caller
computes the per-example gradients of exactly the rows ``batch.indices`` and hands them to
``batch.release(rows)``, which clips each row to ℓ2 norm C, sums, adds N(0, (σ·C)²) per
coordinate (drawn from the session's generator) and settles the round. A batch releases once;
one never released stays charged; rows of the wrong number, dimension or kind are refused and
nothing further is spent (the batch can still be released with the right rows).

The guarantee covers the noisy sums only (THEORY §13, "Batches whose indices the caller
sees"): they keep the Poisson-subsampled Gaussian guarantee under add/remove neighbours
(THEORY §12) when (1) each row's gradient depends on that row and public state (the model)
alone, (2) nothing computed from the rows — the indices, their number, gradients, losses —
steers anything published or any later choice (σ, C, q, whether to continue), (3) nothing
leaks the indices (logs, timing, memory), (4) the sampler's randomness is secret, (5) the rows
received number exactly the sampled indices (checked here), and (6) any scaling uses public
constants: divide the sum by the expected batch q·n, never by the realised count (n itself
is private under add/remove; use a public stand-in). Publishing the indices costs δ >= q per
step. The indices therefore never reach the ledger, the history, a repr or a message.

Rows may be numpy, torch or cupy arrays (the array API through array-api-compat, as
`expost.backends`; torch and cupy are optional): the check, the clipping and the sum run in
float64 on the rows' device; the sum (d numbers) is brought to the host, the noise added there,
and the noisy sum returned as a float64 array of the rows' library on the rows' device (numpy
for numpy rows and array-likes).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import frozen

from expost._validation import FLOAT_LIMIT, positive_int
from expost.backends import GPU_EXTRA, ArrayBackend
from expost.errors import InvalidParameter
from expost.filters import Cost
from expost.mechanism_table import mechanism_for
from expost.mechanisms.poisson_sample import poisson_indices
from expost.mechanisms.subsampled import MAX_RECORDS, SubsampledGaussianMechanism, clip_rows
from expost.rounds import Mode
from expost.spendable import Spendable

__all__ = ["MAX_ROWS", "PoissonBatch", "PreparedBatch", "prepare_poisson_batch"]

MAX_ROWS = 1 << 53
"""The largest n a batch samples from (row indices stay exact in float64 and int64)."""
_NOTHING = "; nothing further was spent (the batch stays charged and may still be released)"
_FEW = "must be at most MAX_RECORDS / 2 (the expected batch q·n; the sum of the clipped rows "


@frozen
class PreparedBatch:
    """A checked batch round: its ``request`` (reserved before ``open`` draws the indices) and
    ``open(settle)``, which draws them and returns the batch; ``settle(noisy_sum)`` is called
    once, by the release."""

    mechanism: str
    request: Cost
    open: Callable[[Callable[[Any], None]], PoissonBatch]


def prepare_poisson_batch(
    mode: Mode,
    n: object,
    sampling_prob: object,
    sigma: object,
    sensitivity: object,
    nested: bool = False,
) -> PreparedBatch:
    """The batch round of `PrivateSession.poisson_batch`, checked (nothing drawn or reserved);
    refused in secure mode, as `subsampled_gaussian` is (`expost.rounds.NOT_EXACT`), and when
    ``nested`` (a round of the session is running in this thread: a stopping rule may not start
    another, as for every round)."""
    if nested:
        raise InvalidParameter(
            "mechanism", "poisson-batch", "a round of this session is running in this thread"
        )
    build = mechanism_for("subsampled-gaussian", mode.name).build
    mechanism: SubsampledGaussianMechanism = build(sensitivity, sigma, sampling_prob)
    rows = positive_int("n", n)
    if rows > MAX_ROWS:
        raise InvalidParameter("n", n, f"must be at most 2**53 = {MAX_ROWS}")
    if rows * mechanism.sampling_prob > MAX_RECORDS / 2:
        raise InvalidParameter("sampling_prob", sampling_prob, _FEW + "stays finite)")
    rng = mode.generator

    def open_batch(settle: Callable[[Any], None]) -> PoissonBatch:
        indices = poisson_indices(rows, mechanism.threshold, rng)
        return PoissonBatch(rows, mechanism, indices, rng, settle)

    return PreparedBatch("poisson-batch", mechanism.cost(), open_batch)


def _namespace(rows: object) -> Any:
    """The array namespace of torch or cupy ``rows`` (array-api-compat); numpy otherwise."""
    if type(rows).__module__.split(".")[0] not in ("torch", "cupy"):
        return np
    try:
        compat = importlib.import_module("array_api_compat")
    except ImportError as exc:
        raise ImportError(f"torch or cupy rows need array-api-compat: {GPU_EXTRA}") from exc
    return compat.array_namespace(rows)


def _refused(x: Any, rule: str) -> InvalidParameter:
    """The refusal of rows ``x``, which names their library, dimensions, columns and dtype,
    never their number (the batch's size is private)."""
    columns = "" if x.ndim != 2 else f" with {x.shape[1]} columns"
    what = f"a {type(x).__module__.split('.')[0]} array of {x.ndim} dimensions{columns}, {x.dtype}"
    return InvalidParameter("rows", what, rule + _NOTHING)


class PoissonBatch(Spendable):
    """One reserved DP-SGD step: private ``indices``, released once by `release` (module
    docstring). Its repr shows the public parameters only; a copy or a pickle (which could
    release the step twice) raises `NotCopyable`."""

    _COPY_ADVICE = "release the batch where it was drawn; draw another with poisson_batch"

    def __init__(
        self,
        n: int,
        mechanism: SubsampledGaussianMechanism,
        indices: npt.NDArray[np.int64],
        rng: np.random.Generator,
        settle: Callable[[Any], None],
    ) -> None:
        indices.setflags(write=False)
        self._n, self._mechanism, self._indices = n, mechanism, indices
        self._rng, self._settle = rng, settle
        self._lock = threading.Lock()
        self._released = False
        self._pid = os.getpid()  # a forked child holds a copy: refused, as for any copy

    @property
    def indices(self) -> npt.NDArray[np.int64]:
        """The sampled rows of range(n), sorted (read-only). Private: compute their gradients
        and nothing else from them (module docstring)."""
        return self._indices

    @property
    def released(self) -> bool:
        """Whether `release` has run (a batch releases once)."""
        return self._released

    def __repr__(self) -> str:
        m = self._mechanism
        return (
            f"PoissonBatch(n={self._n}, sampling_prob={m.sampling_prob!r}, sigma={m.sigma!r}, "
            f"sensitivity={m.sensitivity!r}, released={self._released})"
        )

    def _rows(self, rows: object, xp: Any) -> Any:
        """``rows`` checked as (k, d) (or (k,): d = 1), k = len(indices), finite, of magnitude
        at most 2**1000, as float64 on their device; refused without naming k."""
        try:
            x: Any = np.asarray(rows) if xp is np else rows
        except ValueError as exc:  # ragged lists; numpy's message would give their lengths
            rule = "must be an array of real numbers (rows of one length)" + _NOTHING
            raise InvalidParameter("rows", type(rows).__name__, rule) from exc
        if xp is np:
            numeric = x.dtype.kind in "iuf"
        else:
            numeric = xp.isdtype(x.dtype, ("real floating", "integral"))
        if not numeric:
            raise _refused(x, "must hold real numbers (not bool)")
        x = xp.reshape(x, (-1, 1)) if x.ndim == 1 else x
        if x.ndim != 2 or x.shape[1] == 0:
            raise _refused(x, "must be a (k, d) or (k,) array")
        if x.shape[0] != self._indices.size:
            raise _refused(x, "must have one row per index of the batch, in order")
        x = xp.astype(x, xp.float64)
        if self._indices.size and not bool(xp.all(xp.isfinite(x))):
            raise _refused(x, "must be finite (a NaN or inf found)")
        if self._indices.size and float(xp.max(xp.abs(x))) > FLOAT_LIMIT:
            raise _refused(x, "must have magnitude at most 2**1000")
        return x

    def release(self, rows: object) -> Any:
        """Σ over the rows of each row clipped to ℓ2 norm C, plus N(0, (σ·C)²) per coordinate,
        as a float64 vector of length d of the rows' library on their device; settles the
        round. ``rows``: the per-example gradients of exactly ``indices``, in that order."""
        if os.getpid() != self._pid:
            self._refuse_copy()
        xp = _namespace(rows)
        x = self._rows(rows, xp)
        with self._lock:
            if self._released:
                raise InvalidParameter("batch", self, "has been released: a batch releases once")
            self._released = True
        m = self._mechanism
        if self._indices.size:
            total = xp.sum(clip_rows(x, m.sensitivity, xp), axis=0)
            host = np.asarray(ArrayBackend.to_numpy(total), dtype=np.float64)
        else:
            host = np.zeros(x.shape[1])
        noisy = host + self._rng.normal(0.0, m.noise_std, host.shape)
        out = noisy if xp is np else xp.asarray(noisy, device=_device(x))
        self._settle(out)
        return out


def _device(x: Any) -> Any:
    return importlib.import_module("array_api_compat").device(x)
