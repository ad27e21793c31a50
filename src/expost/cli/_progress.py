"""A one-line progress bar for the command line: drawn only on a terminal, at most 10 times a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressLine"]


class ProgressLine:
    """``show(fraction, label)`` redraws ``[####....] label`` in place on ``stream`` (stderr).

    Silent unless the stream is a terminal, so logs and pipes stay clean. A redraw within
    0.1 s of the last is skipped unless ``fraction`` reaches 1; ``close`` clears the line.
    """

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.active = self.stream.isatty()
        self._drawn = -1.0
        self._length = 0

    def show(self, fraction: float, label: str = "") -> None:
        """Draw the bar at ``fraction`` (clipped to [0, 1]) followed by ``label``."""
        now = time.monotonic()
        if not self.active or (fraction < 1.0 and now - self._drawn < 0.1):
            return
        self._drawn = now
        filled = int(self.width * min(max(fraction, 0.0), 1.0))
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {label}"
        self.stream.write("\r" + line.ljust(self._length))
        self._length = len(line)
        self.stream.flush()

    def close(self) -> None:
        """Clear the line."""
        if self.active and self._length:
            self.stream.write("\r" + " " * self._length + "\r")
            self.stream.flush()
            self._length = 0
