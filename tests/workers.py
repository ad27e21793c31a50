"""Real worker processes for the multi-process tests (ledger and session)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

WATCHDOG_S = 60.0


class Workers:
    """Starts a worker script as processes; kills any still running at teardown."""

    def __init__(self, script: Path) -> None:
        self.script = script
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, *args: object) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, str(self.script), *map(str, args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        watchdog = threading.Timer(WATCHDOG_S, proc.kill)
        watchdog.daemon = True
        watchdog.start()
        self.procs.append(proc)
        return proc

    @staticmethod
    def line(proc: subprocess.Popen[str]) -> str:
        assert proc.stdout is not None
        text = proc.stdout.readline()
        if not text:
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"worker {proc.args!r} ended early: {err}")
        return text.strip()

    @staticmethod
    def finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
        """The rest of stdout and stderr once ``proc`` ends (killed or not), then wait for it.

        Not ``communicate()``: it reads the pipe's file descriptor and would lose the lines that
        ``line``'s buffered reader has already taken from the pipe but not returned.
        """
        assert proc.stdout is not None
        assert proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait()
        return out, err

    def released(self, *commands: tuple[object, ...]) -> list[subprocess.Popen[str]]:
        """One worker per argument tuple, each told to go once all are ready, so that they race."""
        procs = [self.start(*args) for args in commands]
        for proc in procs:
            assert self.line(proc) == "ready"
        for proc in procs:
            self.send(proc)
        return procs

    @staticmethod
    def send(proc: subprocess.Popen[str]) -> None:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
