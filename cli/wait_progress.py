"""``--wait``'s progress line: on a terminal's stderr, the state and the time waited so far.

A checkpoint may take minutes, and ``--wait`` polled without a sign of life.  On a terminal
one line on stderr says where the checkpoint stands (``progress.py``'s words) and for how
long, rewritten in place each poll and erased before the outcome is printed.  To a pipe, a
log or with ``--json`` nothing extra is written: stdout and stderr stay what scripts parse.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from sckpt.backend.model import StepId

from .output import clean

ERASE = "\r\x1b[K"
"""Back to the start of the line, and clear it (ECMA-48 EL): the line is rewritten in place."""


def waited(seconds: float) -> str:
    """``7 s``, ``1m05s``, ``2h03m``: short enough to rewrite every second."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


class WaitProgress:
    """The line for one target's wait; ``enabled`` False (not a terminal, ``--json``): silent."""

    def __init__(
        self,
        operation: str,
        target: StepId,
        stream: TextIO | None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.operation = operation
        self.target = target
        self.stream = stream
        self.clock = clock
        self.started = clock()
        self.shown = False

    def show(self, state: str) -> None:
        """Rewrite the line: ``sckpt: create 42.0: in progress, waited 12 s (Ctrl-C stops
        waiting)``."""
        if self.stream is None:
            return
        line = (
            f"sckpt: {self.operation} {self.target}: {state}, waited "
            f"{waited(self.clock() - self.started)} (Ctrl-C stops waiting)"
        )
        self.stream.write(ERASE + clean(line))
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        """Erase the line, so the outcome and any error start on a clean one."""
        if self.stream is not None and self.shown:
            self.stream.write(ERASE)
            self.stream.flush()
            self.shown = False
