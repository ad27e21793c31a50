"""Import time of ``expost`` against ``numpy``, each in a fresh interpreter, in the same run.

Each import runs in a new ``python -X importtime -c "import MODULE"`` subprocess, and its time
is the cumulative time that ``-X importtime`` reports for the top-level package (interpreter
start-up excluded). The two imports alternate so that machine load affects both alike; one
warm-up run of each fills the disk cache and a private bytecode cache (``PYTHONPYCACHEPREFIX``,
so that a ``PYTHONDONTWRITEBYTECODE`` environment does not time compilation, as an installed
package would not). Run: ``python benchmarks/bench_import.py
[--repeats N]``. The target is a ratio of at most 2.5 (issue 12); the ratio is printed last.

``import expost`` loads its names on first use (issue 37); ``import expost.session`` is also
timed, for information: what the first use of ``expost.PrivateSession`` loads (numpy included).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

__all__ = ["import_seconds", "main"]

TARGET = 2.5


def import_seconds(module: str, pycache: str) -> float:
    """Seconds that ``import module`` takes in a fresh interpreter, by ``-X importtime``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    for line in run.stderr.splitlines():
        fields = line.split("|")
        if len(fields) == 3 and fields[2].strip() == module:
            return int(fields[1]) * 1e-6
    raise RuntimeError(f"-X importtime reported no line for {module!r}:\n{run.stderr[-2000:]}")


def main(repeats: int = 11) -> float:
    """Print the median import times and return their ratio expost/numpy (printed last)."""
    modules = ("numpy", "expost", "expost.session")
    times: dict[str, list[float]] = {module: [] for module in modules}
    with tempfile.TemporaryDirectory() as pycache:
        for module in modules:  # warm-up: disk cache and bytecode cache
            import_seconds(module, pycache)
        for _ in range(repeats):
            for module in modules:
                times[module].append(import_seconds(module, pycache))
    medians = {module: statistics.median(t) for module, t in times.items()}
    for module in modules:
        print(f"import {module:<14} {medians[module] * 1e3:8.1f} ms (median of {repeats})")
    first_use = medians["expost.session"] / medians["numpy"]
    print(f"first use of expost.PrivateSession / import numpy: {first_use:.2f} (information)")
    ratio = medians["expost"] / medians["numpy"]
    print(f"ratio expost/numpy: {ratio:.2f} (target <= {TARGET})")
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=11)
    main(parser.parse_args().repeats)
