"""What ``sckpt run`` asks of a checkpointer: the interface two implementations share.

The wrapper (``wrapper.py``) does everything around a checkpoint: it registers the task,
reads requests, prepares the generation ``g<N>.partial``, reads the status line, completes
the generation and records it.  What differs between checkpointers is only this:

=================  ===================================  ===================================
operation          the signal the program catches       DMTCP (``--transparent``)
                   (built into ``Wrapper``)             (``transparent.DmtcpCheckpointer``)
=================  ===================================  ===================================
``prepare``        nothing                              start the task's private coordinator
``command``        PROGRAM                              ``dmtcp_launch``/``dmtcp_restart``
``begin``          stop, check the handler, signal      free-space check, ``dmtcp_command``
``poll``           the program writes the status file   images whole and flushed
``collect``        the program wrote into the link      move the images into ``g<N>.partial``
``close``          nothing                              end relay and coordinator
=================  ===================================  ===================================

``TransparentWrapper`` drives any ``Checkpointer``; the signal checkpointer is still the
``Wrapper``'s own code (issue 28 may move it behind this interface too).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol


class Checkpointer(Protocol):
    """A way to checkpoint one task's program, as the wrapper uses it."""

    @property
    def label(self) -> str:
        """How the console names it: ``transparent (DMTCP 4.2.0)``."""
        ...

    last_seconds: float
    """How long the last complete checkpoint took."""

    def prepare(self, task_dir: Path) -> dict[str, str]:
        """Get ready to run the task whose images live in ``task_dir``; the environment
        variables the program needs (``OSError`` when it cannot)."""
        ...

    def command(self, program: Sequence[str], restart_dir: str = "") -> list[str]:
        """What to start: PROGRAM, or what resumes it from the image in ``restart_dir``."""
        ...

    def begin(self, pid: int) -> tuple[int, str]:
        """Ask for a checkpoint of the program ``pid``: ``(0, "")``, or why it was not."""
        ...

    def poll(self) -> tuple[int, str] | None:
        """None while the checkpoint runs; then ``(0, "")`` or the failure."""
        ...

    def collect(self, into: Path) -> int:
        """Move the finished image into the generation ``into``; its size in bytes."""
        ...

    def close(self) -> None:
        """The task has ended: release what ``prepare`` started."""
        ...
