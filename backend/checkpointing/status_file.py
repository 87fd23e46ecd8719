"""The status line a program writes when its checkpoint ends, read only once it is whole.

Why a module of its own: "whole" is a rule with three cases and a memory between turns
(what the file held, since when), and the wrapper is big enough without it.  The program
writes ``CODE MESSAGE`` to ``$SCKPT_CKPT_DONE``; the wrapper looks every ``ACTIVE_POLL``
while a checkpoint runs.  A line is whole once no process of the program holds the file
open for writing (``processes.held_for_writing``), or it ends with a newline, or its bytes
have not changed for ``STILL_OPEN_QUIET`` seconds: a program that never closes the file
still completes, and one the scheduler held back mid-line is not cut short.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable
from pathlib import Path

from .processes import held_for_writing, process_tree

STILL_OPEN_QUIET = 1.0
"""Seconds a line its writer still holds must stay unchanged to count as written."""


class StatusFile:
    """One task's status file, and what the last look at it saw."""

    def __init__(self, path: Path, monotonic: Callable[[], float]) -> None:
        self.path = path
        self.monotonic = monotonic
        """The wrapper's clock: a test moves it on."""
        self.seen: bytes | None = None
        """The bytes at the last look while the writer still held the file open."""
        self.since = 0.0
        """Since when (``monotonic``) the file has held ``seen``."""

    def whole_line(self, writer: int | None) -> bytes | None:
        """The file's bytes once they are its whole line (``writer``: the program's pid,
        None when it is gone), else None: the next turn looks again.  A file that cannot
        be read is an EIO line that names it."""
        try:
            first = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            first = f"{errno.EIO} cannot read {self.path}: {exc.strerror}".encode()
        if not first.strip() or not self.written(first, writer):
            return None
        # Read again: a writer that wrote its last bytes and closed the file between the
        # read above and the look at its descriptors left more than ``first`` holds.
        with contextlib.suppress(OSError):
            first = self.path.read_bytes() or first
        self.seen = None
        return first

    def written(self, raw: bytes, writer: int | None) -> bool:
        """Whether ``raw`` is the whole line: its writer (the program or one of its
        processes) has closed the file; or, if one keeps it open or its descriptors cannot
        be read, the line ends or has not changed for ``STILL_OPEN_QUIET`` seconds."""
        if writer is None:
            return True
        if held_for_writing(self.path, process_tree(writer)) is False:
            return True
        if raw.endswith(b"\n"):
            return True
        now = self.monotonic()
        if raw != self.seen:
            self.seen, self.since = raw, now
            return False
        return now - self.since >= STILL_OPEN_QUIET
