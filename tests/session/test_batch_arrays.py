"""`PoissonBatch.release` on torch and cupy rows (optional: skipped without them; CUDA cases
skipped without a GPU; benchmarks/gpu_batch_check.py runs them on a GPU machine).

The noise comes from the session's numpy generator, so two sessions with one seed draw the
same indices and the same noise: the release of the same rows on another library must equal
numpy's up to the order of the float64 sums (1e-12 relative).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from expost import InvalidParameter, PrivateSession, ZCDPFilter


def _libraries() -> list[Any]:
    cases: list[Any] = [pytest.param("torch", "cpu", id="torch-cpu")]
    cases.append(pytest.param("torch", "cuda", id="torch-cuda"))
    cases.append(pytest.param("cupy", "cuda", id="cupy"))
    return cases


def _array(library: str, device: str, values: np.ndarray, dtype: str) -> Any:
    pytest.importorskip("array_api_compat")
    if library == "torch":
        torch = pytest.importorskip("torch")
        if device == "cuda" and not torch.cuda.is_available():
            pytest.skip("no CUDA device")
        return torch.tensor(values, dtype=getattr(torch, dtype), device=device)
    cupy = pytest.importorskip("cupy")
    try:
        return cupy.asarray(values.astype(dtype))
    except Exception as exc:  # noqa: BLE001 -- cupy without a usable device
        pytest.skip(f"cupy has no device: {exc}")


def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__.startswith("torch"):
        return np.asarray(x.detach().cpu().numpy())
    return np.asarray(x.get())


def _step(seed: int) -> tuple[PrivateSession, Any, np.ndarray]:
    s = PrivateSession(ZCDPFilter(100.0), np.random.default_rng(seed))
    batch = s.poisson_batch(2_000, sampling_prob=0.05, sigma=0.7, sensitivity=1.5)
    rows = np.random.default_rng(99).normal(0.0, 2.0, size=(batch.indices.size, 7))
    return s, batch, rows


@pytest.mark.parametrize(("library", "device"), _libraries())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_release_on_another_library_equals_numpys(library: str, device: str, dtype: str) -> None:
    _, reference_batch, rows = _step(3)
    rows = rows.astype(dtype).astype(np.float64)  # the values the other library holds
    expected = reference_batch.release(rows)
    s, batch, _ = _step(3)
    assert np.array_equal(batch.indices, reference_batch.indices)
    x = _array(library, device, rows, dtype)
    out = batch.release(x)
    assert type(out).__module__.split(".")[0] == library
    assert str(out.dtype).endswith("float64")
    assert tuple(out.shape) == (7,)
    if library == "torch":
        assert out.device.type == device
    np.testing.assert_allclose(_to_numpy(out), expected, rtol=1e-12, atol=1e-12)
    assert len(s.history) == 1


@pytest.mark.parametrize(("library", "device"), _libraries())
def test_wrong_rows_are_refused_on_another_library(library: str, device: str) -> None:
    s, batch, rows = _step(4)
    x = _array(library, device, np.vstack([rows, rows[:1]]), "float64")
    with pytest.raises(InvalidParameter, match="nothing further was spent"):
        batch.release(x)
    bad = rows.copy()
    bad[0, 0] = np.inf
    with pytest.raises(InvalidParameter, match="finite"):
        batch.release(_array(library, device, bad, "float64"))
    assert not batch.released
    assert s.filter.rounds == 1


def test_torch_rows_without_array_api_compat_name_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch = pytest.importorskip("torch")
    _, batch, rows = _step(5)
    monkeypatch.setitem(sys.modules, "array_api_compat", None)
    with pytest.raises(ImportError, match="expost\\[gpu\\]"):
        batch.release(torch.tensor(rows))
    assert not batch.released
