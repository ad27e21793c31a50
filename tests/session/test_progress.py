"""The shared command-line progress line: only on a terminal, rate-limited, cleared on close."""

from __future__ import annotations

import io

from expost.cli._progress import ProgressLine


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_silent_when_not_a_terminal() -> None:
    pipe = io.StringIO()
    line = ProgressLine(pipe)
    line.show(0.5, "half")
    line.show(1.0, "done")
    line.close()
    assert pipe.getvalue() == ""


def test_draws_in_place_and_clears() -> None:
    tty = _Terminal()
    line = ProgressLine(tty, width=10)
    line.show(0.5, "half")
    assert tty.getvalue() == "\r[#####.....] half"
    line.show(0.6, "skipped")  # within 0.1 s of the last redraw
    assert "skipped" not in tty.getvalue()
    line.show(1.0, "done")  # the end is always drawn
    assert tty.getvalue().endswith("[##########] done")
    line.close()
    assert tty.getvalue().endswith("\r" + " " * len("[##########] done") + "\r")


def test_fraction_is_clipped() -> None:
    tty = _Terminal()
    ProgressLine(tty, width=4).show(7.0, "")
    assert "[####]" in tty.getvalue()
