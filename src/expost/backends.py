"""Array backends for path simulation: numpy (default), torch (CPU or CUDA), cupy (issue 14).

A backend turns a chunk's `numpy.random.SeedSequence` into a seeded stream of draws on its own
device (`ArrayBackend.draws`): numpy uses ``default_rng(ss)``; torch a ``torch.Generator``
seeded with ``ss.generate_state(1)``; cupy ``cupy.random.default_rng`` with the same integer.
So each backend's draws are fixed by (seed, chunk) — but they differ between backends: results
on torch agree with numpy in law (the verdicts agree), not bit for bit. Arithmetic goes through
the array API namespace of array-api-compat (``Draws.xp``). torch and cupy are optional:
``pip install 'expost[gpu]'`` (torch and array-api-compat; cupy is installed for its CUDA
version by hand, e.g. ``pip install cupy-cuda12x``).
"""

from __future__ import annotations

import importlib
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from attrs import field, frozen

from expost._validation import validator
from expost.errors import InvalidParameter

__all__ = ["BACKENDS", "GPU_EXTRA", "ArrayBackend", "BackendName", "Draws"]

BackendName = Literal["numpy", "torch", "cupy"]
BACKENDS: tuple[BackendName, ...] = ("numpy", "torch", "cupy")
GPU_EXTRA = "pip install 'expost[gpu]'"
_INSTALL = {"torch": GPU_EXTRA, "cupy": "pip install cupy-cuda12x array-api-compat (CUDA only)"}


def _backend_name(name: str, value: object) -> None:
    if value not in BACKENDS:
        raise InvalidParameter(name, value, f"must be one of {', '.join(BACKENDS)}")


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"the {name} backend needs {name}: {_INSTALL[name]}") from exc


def _seed(ss: np.random.SeedSequence) -> int:
    """A 63-bit integer seed fixed by ``ss`` (torch's manual_seed takes a signed 64-bit int)."""
    return int(ss.generate_state(1, np.uint64)[0] >> np.uint64(1))


@frozen(eq=False)
class Draws:
    """Seeded standard normals and the array namespace of one chunk on one backend."""

    xp: Any
    _normal: Any
    _asarray: Any

    def normal(self, shape: tuple[int, ...]) -> Any:
        """Independent N(0, 1) float64 draws of ``shape`` on the backend's device."""
        return self._normal(shape)

    def asarray(self, values: npt.ArrayLike) -> Any:
        """``values`` as a float64 array on the backend's device."""
        return self._asarray(np.asarray(values, dtype=np.float64))


@frozen
class ArrayBackend:
    """An array library and device for simulation: ``numpy``, ``torch`` or ``cupy``.

    ``device`` is torch's device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``); numpy and cupy
    ignore it (cupy uses its current CUDA device).
    """

    name: BackendName = field(default="numpy", validator=validator(_backend_name))
    device: str = "cpu"

    def check(self) -> ArrayBackend:
        """Import the backend now (ImportError naming the extra if it is missing)."""
        if self.name != "numpy":
            _module(self.name)
            _module_compat()
        return self

    def draws(self, ss: np.random.SeedSequence) -> Draws:
        """The seeded draws of the chunk whose stream is ``ss``."""
        if self.name == "numpy":
            rng = np.random.default_rng(ss)
            return Draws(np, rng.standard_normal, np.asarray)
        compat = _module_compat()
        if self.name == "torch":
            torch = _module("torch")
            gen = torch.Generator(device=self.device).manual_seed(_seed(ss))

            def normal(shape: tuple[int, ...]) -> Any:
                return torch.randn(shape, generator=gen, dtype=torch.float64, device=self.device)

            def to_torch(values: npt.NDArray[np.float64]) -> Any:
                return torch.tensor(values, device=self.device)

            return Draws(compat.array_namespace(normal((0,))), normal, to_torch)
        cupy = _module("cupy")
        crng = cupy.random.default_rng(_seed(ss))
        return Draws(
            compat.array_namespace(cupy.empty(0)),
            lambda shape: crng.standard_normal(shape, dtype=cupy.float64),
            cupy.asarray,
        )

    @staticmethod
    def to_numpy(values: Any) -> npt.NDArray[Any]:
        """A backend array copied to host memory as a numpy array."""
        if isinstance(values, np.ndarray):
            return values
        compat = _module_compat()
        if compat.is_torch_array(values):
            return np.asarray(values.detach().cpu().numpy())
        if compat.is_cupy_array(values):
            return np.asarray(values.get())
        return np.asarray(values)


def _module_compat() -> Any:
    try:
        return importlib.import_module("array_api_compat")
    except ImportError as exc:
        raise ImportError(f"array backends need array-api-compat: {GPU_EXTRA}") from exc
