"""Device check for issue 42: the batch release on torch/cupy rows, and the batch benchmark on CUDA.

Runs, in this order, and prints each one's output:

1. ``pytest tests/session/test_batch_arrays.py -rs`` (torch on CPU and CUDA, cupy): on a GPU machine
   the CUDA cases must run, not skip — the script says which ran and which skipped;
2. ``benchmarks/bench_batches.py`` with numpy rows (the baseline, on this machine's CPU);
3. ``benchmarks/bench_batches.py --torch cuda`` when torch sees a CUDA device.

Needs torch (a CUDA build) and array-api-compat (``pip install 'expost[gpu]'``); cupy is
optional (``pip install cupy-cuda12x``). Exit status: 1 if a test failed or, with CUDA present,
a CUDA case was skipped; 0 otherwise. Run from the repository root:
``python benchmarks/gpu_batch_check.py [--steps N]`` (about a minute).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cuda() -> bool:
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        print("torch: not installed")
        return False
    available = bool(torch.cuda.is_available())
    name = torch.cuda.get_device_name(0) if available else "none"
    print(f"torch {torch.__version__}, CUDA device: {name}")
    return available


def _run(args: list[str]) -> tuple[int, str]:
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    out = done.stdout + done.stderr
    print(out)
    return done.returncode, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args(argv)
    cuda = _cuda()
    code, out = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "0",
            "-q",
            "-rs",
            "tests/session/test_batch_arrays.py",
        ]
    )
    failed = code != 0
    skipped_cuda = cuda and "no CUDA device" in out
    bench = [sys.executable, "benchmarks/bench_batches.py", "--steps", str(args.steps)]
    _run(bench)
    if cuda:
        _run([*bench, "--torch", "cuda"])
    print(
        f"tests {'FAILED' if failed else 'passed'}; CUDA cases {'SKIPPED' if skipped_cuda else 'ran' if cuda else 'absent (no CUDA)'}"
    )
    return 1 if failed or skipped_cuda else 0


if __name__ == "__main__":
    sys.exit(main())
