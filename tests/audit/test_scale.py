"""Issue 14: one chunked execution model (in process, process pool, Dask) and array backends.

Results for a seed must be identical whatever executes the chunks, also when a Dask worker dies
mid-run; the torch backend draws other numbers but the same law, so its verdicts and rates agree
with numpy's. One 2-worker `LocalCluster` serves the module (each start costs seconds here).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt
import pytest

from expost.apps import relative_error as re
from expost.apps.erm import ERMTask, LogisticRegression, run_task
from expost.audit.claims import ProbabilityClaim, Tally
from expost.audit.core import Audit, audit_seed, run_audits
from expost.audit.paper import examples
from expost.audit.paper.brownian import bm_ex_post, bnr_cor37_time_map
from expost.audit.paper.dp_lower_bounds import gaussian_loss_exceeds, gaussian_pdp_exact
from expost.audit.report import AuditReport
from expost.backends import ArrayBackend
from expost.cli import main
from expost.errors import InvalidParameter
from expost.execution import Execution, children, chunk_sizes
from expost.processes import sample_brownian_grid
from expost.processes.brownian import sample_brownian_grid_on
from tests import stats as st

# --- helpers ---------------------------------------------------------------------------------


def _suite() -> list[Audit]:
    """Small real audits, several chunks each: a Gaussian tail, a Brownian ex-post family member."""
    built = [
        examples.gaussian_loss_tail("quick"),
        gaussian_pdp_exact("quick"),
        bm_ex_post("quick")[0],
    ]
    return [attrs.evolve(a, n=3000, chunk_size=1000) for a in built]


def _json(report: AuditReport) -> str:
    data = report.to_json()
    claims = data["claims"]
    assert isinstance(claims, list)
    for claim in claims:
        claim.pop("seconds")
    return json.dumps(data)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A 2-worker Dask LocalCluster (separate single-thread processes) for the module."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as local:
        yield local


def _on(cluster: Any) -> Execution:
    return Execution(scheduler=cluster.scheduler_address)


# --- the chunk layout and the executors ------------------------------------------------------


def test_chunk_sizes_depend_on_n_and_chunk_size_only() -> None:
    assert chunk_sizes(2500, 1000) == [1000, 1000, 500]
    assert chunk_sizes(2000, 1000) == [1000, 1000]
    with pytest.raises(InvalidParameter, match="chunk_size"):
        chunk_sizes(10, 0)


def test_audit_json_is_identical_in_process_on_a_pool_and_on_dask(cluster: Any) -> None:
    one = _json(run_audits(_suite(), seed=5))
    pool = _json(run_audits(_suite(), seed=5, workers=2))
    dask = _json(run_audits(_suite(), seed=5, execution=_on(cluster)))
    assert one == pool == dask
    assert one != _json(run_audits(_suite(), seed=6))  # twin: another seed, other runs


def _dies_once(marker: str, n: int, rng: np.random.Generator) -> npt.NDArray[np.bool_]:
    """The first call anywhere kills its own worker process mid-chunk (SIGKILL, no cleanup)."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return gaussian_loss_exceeds(1.0, 2.0, n, rng)
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable: the process was killed")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_killed_dask_worker_does_not_change_the_result(cluster: Any, tmp_path: Path) -> None:
    base = attrs.evolve(gaussian_pdp_exact("quick"), n=4000, chunk_size=1000, twin=None)
    marker = tmp_path / "killed"
    dying = attrs.evolve(base, simulate=partial(_dies_once, str(marker)), on_backend=None)
    plain = attrs.evolve(base, simulate=partial(gaussian_loss_exceeds, 1.0, 2.0), on_backend=None)
    survived = run_audits([dying], seed=2, execution=_on(cluster))
    assert marker.exists()  # a worker really died mid-chunk ...
    killed = int(marker.read_text())
    client_pids = _worker_pids(cluster)
    assert killed not in client_pids  # ... and was replaced
    assert _json(survived) == _json(run_audits([plain], seed=2))


def _worker_pids(cluster: Any) -> set[int]:
    distributed: Any = pytest.importorskip("dask.distributed")
    with distributed.Client(cluster.scheduler_address) as client:
        client.wait_for_workers(2, timeout=60)
        return set(client.run(os.getpid).values())


def test_children_are_a_fresh_spawn_and_do_not_depend_on_earlier_use() -> None:
    def states(seeds: list[np.random.SeedSequence]) -> list[list[int]]:
        return [s.generate_state(4).tolist() for s in seeds]

    parent = np.random.SeedSequence(7).spawn(3)[2]  # a child: its spawn_key is not empty
    fresh = states(np.random.SeedSequence(7).spawn(3)[2].spawn(5))
    assert states(children(parent, 5)) == fresh
    parent.spawn(2)  # spawn counts what it handed out; children do not
    assert states(children(parent, 5)) == fresh
    assert states(parent.spawn(5)) != fresh  # the stateful twin


def test_execution_rejects_two_executors_and_names_the_missing_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(InvalidParameter, match="dask_local"):
        Execution(workers=2, dask_local=2)
    with pytest.raises(InvalidParameter, match="scheduler"):
        Execution(scheduler="")
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(ImportError, match=r"pip install 'expost\[dask\]'"):
        Execution(dask_local=2).check()
    Execution(workers=2).check()  # no Dask needed


def test_cli_flags_are_exclusive_and_a_missing_extra_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for argv in (
        ["audit", "--workers", "2", "--dask-local", "2"],
        ["audit", "--scheduler", "tcp://x:1", "--dask-local", "2"],
        ["reproduce", "erm", "--workers", "2", "--scheduler", "tcp://x:1"],
        ["reproduce", "relative-error", "--dask-local", "0"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    monkeypatch.setitem(sys.modules, "torch", None)
    only = ["--only", "gaussian-pdp-exact"]
    assert main(["audit", *only, "--dask-local", "2"]) == 2
    assert "pip install 'expost[dask]'" in capsys.readouterr().err
    assert main(["audit", *only, "--backend", "torch"]) == 2
    assert "pip install 'expost[gpu]'" in capsys.readouterr().err
    out = ["--out", str(tmp_path)]
    relative = ["reproduce", "relative-error", "--trials", "2", "--no-plot", *out]
    assert main([*relative, "--dask-local", "1"]) == 2
    assert main(["reproduce", "erm", "--runs", "2", *out, "--scheduler", "tcp://x:1"]) == 2
    assert capsys.readouterr().err.count("pip install 'expost[dask]'") == 2


def test_cli_report_on_a_dask_cluster_equals_the_in_process_one(
    cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only = ["audit", "--only", "gaussian-pdp-exact", "--only", "apc-thm4/corrected"]
    here, there = tmp_path / "here.json", tmp_path / "there.json"
    assert main([*only, "--json", str(here)]) == 0
    assert main([*only, "--json", str(there), "--scheduler", cluster.scheduler_address]) == 0
    reports = [json.loads(p.read_text()) for p in (here, there)]
    for report in reports:
        for claim in report["claims"]:
            claim.pop("seconds")
    assert reports[0] == reports[1]
    assert main(["audit", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    numpy_only = {line.split()[0] for line in listed if line.endswith("[numpy only]")}
    assert "apc-thm4/corrected" in numpy_only
    assert "gaussian-pdp-exact" not in numpy_only


# --- reproductions ---------------------------------------------------------------------------


def test_relative_error_rows_do_not_depend_on_the_executor(cluster: Any) -> None:
    def rows(seed: int, execution: Execution | None = None) -> object:
        return re.reproduce((8_000, 16_000), 90, seed, execution=execution, chunk=40).rows

    one = rows(4)
    assert one == rows(4, Execution(workers=2)) == rows(4, _on(cluster))
    assert one != rows(5)  # twin


@pytest.fixture(scope="module")
def small_task() -> ERMTask:
    from expost.apps.data import synthetic_classification

    return LogisticRegression(synthetic_classification(np.random.default_rng(0), n=400, d=3))


def _erm(task: ERMTask, seed: int, execution: Execution | None = None) -> dict[str, Any]:
    levels = np.geomspace(0.2, 8.0, 10)
    result = run_task(
        task, levels, 210, np.random.SeedSequence(seed), target=0.6, execution=execution
    )
    return {
        f"{m}/{c}": res.ex_post[c].tolist() + res.stop_loss[c].tolist()
        for m, res in result.methods.items()
        for c in res.ex_post
    }


def test_erm_results_do_not_depend_on_the_executor(small_task: ERMTask, cluster: Any) -> None:
    one = _erm(small_task, 3)
    assert one == _erm(small_task, 3, Execution(workers=2)) == _erm(small_task, 3, _on(cluster))
    assert one != _erm(small_task, 4)  # twin


# --- array backends --------------------------------------------------------------------------


def test_unknown_backend_is_rejected() -> None:
    with pytest.raises(InvalidParameter, match="jax"):
        ArrayBackend("jax")  # type: ignore[arg-type]


def test_torch_brownian_paths_have_the_law_of_numpys() -> None:
    pytest.importorskip("torch")
    times = np.geomspace(4.0, 0.01, 30)
    draws = ArrayBackend("torch").draws(np.random.SeedSequence(1))
    on_torch = ArrayBackend.to_numpy(sample_brownian_grid_on(times, 20_000, 2, draws))
    on_numpy = sample_brownian_grid(times, 20_000, 2, np.random.default_rng(1))
    assert on_torch.shape == on_numpy.shape == (20_000, 30, 2)
    for k in (0, 15, 29):  # B(t_k) and the increment above it, at three times
        assert st.same_law(on_torch[:, k, 0], on_numpy[:, k, 1])
    up = on_torch[:, 10, 0] - on_torch[:, 20, 0]
    assert st.same_law(up, on_numpy[:, 10, 0] - on_numpy[:, 20, 0])
    # twin: paths of a time grid half as large are caught
    assert not st.same_law(on_torch[:, 0, 0], np.sqrt(0.5) * on_numpy[:, 0, 0])
    again = ArrayBackend("torch").draws(np.random.SeedSequence(1))
    repeat = ArrayBackend.to_numpy(sample_brownian_grid_on(times, 20_000, 2, again))
    np.testing.assert_array_equal(on_torch, repeat)  # fixed by the chunk's stream


def _backend_audits() -> list[Audit]:
    chosen = [
        gaussian_pdp_exact("quick"),
        *bm_ex_post("paper")[::3],
        bnr_cor37_time_map("quick")[0],
    ]
    return [attrs.evolve(a, n=20_000, chunk_size=5_000) for a in chosen]


def _rates_agree(a: float, b: float, n: int) -> bool:
    """Two independent proportions of n runs each agree at false-alarm level st.ALPHA."""
    pooled = (a + b) / 2.0
    return bool(abs(a - b) <= st.z_two_sided() * np.sqrt(2.0 * pooled * (1.0 - pooled) / n) + 1e-12)


def test_torch_backend_gives_numpys_verdicts_and_rates() -> None:
    pytest.importorskip("torch")
    audits = _backend_audits()
    assert all(a.runs_on(ArrayBackend("torch")) for a in audits)
    numpy_run = run_audits(audits, seed=1)
    torch_run = run_audits(audits, seed=1, backend=ArrayBackend("torch"))
    assert _json(numpy_run) != _json(torch_run)  # other draws ...
    for a, b in zip(numpy_run.results, torch_run.results, strict=True):
        assert a.passed
        assert b.passed
        assert (a.verdict.word, a.twin is None or a.twin.verdict.word) == (
            b.verdict.word,
            b.twin is None or b.twin.verdict.word,
        )
        assert _rates_agree(a.verdict.observed, b.verdict.observed, a.verdict.n)  # ... same law
        if a.twin is not None and b.twin is not None:
            # planted twin: a twin's rate (a wrong mechanism) is told apart from the claim's
            assert not _rates_agree(a.verdict.observed, b.twin.verdict.observed, a.verdict.n)


def test_audits_without_a_backend_version_run_on_numpy() -> None:
    pytest.importorskip("torch")
    audit = attrs.evolve(examples.gaussian_loss_tail("quick"), n=2000, chunk_size=1000)
    assert not audit.runs_on(ArrayBackend("torch"))
    on_torch = run_audits([audit], seed=3, backend=ArrayBackend("torch"))
    assert _json(on_torch) == _json(run_audits([audit], seed=3))


def test_cupy_backend_draws_when_cupy_is_installed() -> None:
    pytest.importorskip("cupy")
    audit = attrs.evolve(gaussian_pdp_exact("quick"), n=20_000, chunk_size=5_000)
    result = run_audits([audit], seed=1, backend=ArrayBackend("cupy"))
    assert result.passed


def test_probability_audits_are_tallied_per_chunk_with_the_same_verdict() -> None:
    """Chunks of a ProbabilityClaim travel back as (runs, events); the verdict is the one on
    the concatenated runs, drawn here chunk by chunk from the audit's own streams."""
    audit = attrs.evolve(gaussian_pdp_exact("quick"), n=2500, chunk_size=1000)
    seeds = audit_seed(9, audit.name).spawn(3)
    runs = np.concatenate(
        [
            audit.simulate(k, np.random.default_rng(ss))
            for k, ss in zip([1000, 1000, 500], seeds, strict=True)
        ]
    )
    assert run_audits([audit], seed=9).results[0].verdict == audit.claim.verdict(runs, 1e-6)
    claim = ProbabilityClaim(0.05)
    assert Tally(3, 1) + Tally(4, 2) == Tally(7, 3)
    assert claim.verdict_of(claim.tally(runs[:700]) + claim.tally(runs[700:]), 1e-6) == (
        claim.verdict(runs, 1e-6)
    )
    # twin: a tally that loses a chunk gives another verdict
    assert claim.verdict_of(claim.tally(runs[:700]), 1e-6) != claim.verdict(runs, 1e-6)
