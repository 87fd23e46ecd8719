"""What ``sckpt run`` asks of a checkpointer: the interface two implementations share.

The wrapper (``wrapper.py``) does everything around a checkpoint: it registers the task,
reads requests, prepares the generation ``g<N>.partial``, reads the status line, completes
the generation and records it.  What differs between checkpointers is only this, and the
wrapper calls nothing else of them:

=================  ===================================  ===================================
operation          the signal the program catches       DMTCP (``--transparent``)
                   (``signal_checkpointer``)            (``transparent.DmtcpCheckpointer``)
=================  ===================================  ===================================
``label``          "" (the console shows the signal)    ``transparent (DMTCP 4.2.0)``
``bind``           nothing                              learn the task's place in its step
``prepare``        nothing                              start (task 0) or find the step's
                                                        coordinator, or the task's own
``command``        PROGRAM                              ``dmtcp_launch``/``dmtcp_restart``
``handler``        ``SigCgt`` in ``/proc/PID/status``   always ``caught``: no signal is sent
``begin``          stop, check the handler, signal      free-space check, ``dmtcp_command``
``poll``           None: the program writes the status  images whole and flushed
                   file itself
``collect``        never called (``poll`` said nothing) move the images into ``g<N>.partial``
``close``          nothing                              end relay and coordinator
=================  ===================================  ===================================

The wrapper picks one (``--transparent`` or not) before it starts anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .store import StepStore


@dataclass(frozen=True)
class TaskPlace:
    """Where a task sits in its step: what a step's coordinator needs to start or find."""

    store: StepStore
    procid: int
    localid: int
    """``SLURM_LOCALID``: the first task of each node runs that node's relay."""
    run: int
    """``SLURM_RESTART_COUNT``: a record's coordinator of an earlier run is not this one's."""
    node: str


class Unavailable(Exception):
    """``prepare`` cannot get ready: the program then runs without checkpoints (the job
    matters more) and the task's record says ``why``, with the system's ``code``."""

    def __init__(self, code: int, why: str) -> None:
        super().__init__(why)
        self.code = code
        self.why = why


class NotSent(Exception):
    """``begin`` did not ask the program for a checkpoint, and must not now.

    ``handler`` is what the program did with its checkpoint signal when looked at ("" when
    it could not be looked at: stopped by someone else, or it would not stop; asked again
    on the next turn); ``why`` says why a program with that handler is not sent it.
    """

    def __init__(self, handler: str = "", why: str = "") -> None:
        super().__init__(why or "not looked at")
        self.handler = handler
        self.why = why


class Checkpointer(Protocol):
    """A way to checkpoint one task's program, as the wrapper uses it."""

    @property
    def label(self) -> str:
        """How the console names it (the task's ``checkpointer``): ``transparent (DMTCP
        4.2.0)``, or "" for the signal the program catches."""
        ...

    last_seconds: float
    """How long the last complete checkpoint took."""

    def prepare(self, task_dir: Path) -> dict[str, str]:
        """Get ready to run the task whose images live in ``task_dir``; the environment
        variables the program needs (``Unavailable`` when it cannot)."""
        ...

    def command(self, program: Sequence[str], restart_dir: str = "") -> list[str]:
        """What to start: PROGRAM, or what resumes it from the image in ``restart_dir``."""
        ...

    def handler(self, pid: int) -> str:
        """What the program ``pid`` does with its checkpoint signal now, as the task's
        record says it (``protocol.HANDLER_*``; "" when it cannot be read)."""
        ...

    coordinator_kind: str
    """``step`` or ``task`` (DMTCP's coordinator per step or per task); "" for a signal."""

    def bind(self, place: TaskPlace) -> None:
        """Where the task sits in its step (its store, rank, node), before ``prepare``."""
        ...

    def begin(self, pid: int, since: float = 0.0) -> tuple[int, str]:
        """Ask for a checkpoint of the program ``pid``: ``(0, "")``, or the code and why it
        could not start (the task's outcome); ``NotSent`` when it was not asked at all.
        ``since``: when the request was made (the step's images are newer)."""
        ...

    def poll(self) -> tuple[int, str] | None:
        """None while the checkpoint runs (or while the program is to say it); then
        ``(0, "")`` or the failure."""
        ...

    def collect(self, into: Path) -> int:
        """Move the finished image into the generation ``into``; its size in bytes."""
        ...

    def close(self) -> None:
        """The task has ended: release what ``prepare`` started."""
        ...
