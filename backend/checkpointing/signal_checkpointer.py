"""The signal checkpointer: the program saves itself when it receives its checkpoint signal.

The program cooperates (``examples/counter.py``, the C counter): it catches its checkpoint
signal (``$SCKPT_CKPT_SIGNAL``, SIGUSR1 by default), writes its image through
``$SCKPT_IMAGE_DIR`` and then its status line into ``$SCKPT_CKPT_DONE`` (``protocol.py``).
This class is the ``Checkpointer`` (``checkpointer.py``) that sends that signal, and only
to a program that catches it: SIGUSR1's default action is to terminate, so a program that
does not catch it would be killed by a checkpoint.  What the program does with the signal
is read from ``/proc/PID/status`` (``signal_handler``), recorded by the wrapper at every
poll (the console refuses before anything is sent) and read again, with the program
stopped, right before the signal goes (``begin``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .checkpointer import NotSent
from .protocol import HANDLER_CAUGHT, HANDLER_DEFAULT, HANDLER_IGNORED, handler_blocker


def signal_handler(pid: int, sig: signal.Signals) -> str:
    """What process ``pid`` does with ``sig`` now: ``caught``, ``ignored`` or ``default``.

    Read from ``/proc/PID/status`` (``SigCgt``, ``SigIgn``: hexadecimal masks, bit N-1 for
    signal N), which shows the program the process runs now, whatever it exec'd into.
    ``""`` when the process is gone or the file cannot be read.
    """
    masks: dict[str, int] = {}
    try:
        with Path(f"/proc/{pid}/status").open(encoding="ascii", errors="replace") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("SigCgt", "SigIgn"):
                    masks[key] = int(value.strip(), 16)
    except (OSError, ValueError):
        return ""
    if len(masks) < 2:
        return ""
    bit = 1 << (int(sig) - 1)
    if masks["SigCgt"] & bit:
        return HANDLER_CAUGHT
    if masks["SigIgn"] & bit:
        return HANDLER_IGNORED
    return HANDLER_DEFAULT


class SignalCheckpointer:
    """The ``Checkpointer`` of a program that catches its checkpoint signal."""

    label = ""
    """The console shows the signal and what the program does with it instead."""

    def __init__(
        self,
        ckpt_signal: signal.Signals,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.signal = ckpt_signal
        self.monotonic = monotonic
        self.sleep = sleep
        """What ``STOP_WAIT`` is measured with (the wrapper's ``monotonic``): a test's
        fake clock runs the wait out with no real one
        (tests/backend/test_checkpointing_time.py)."""
        self.last_seconds = 0.0
        """Not measured: the program alone knows when it began to save."""

    def prepare(self, task_dir: Path) -> dict[str, str]:
        """Nothing to start: the wrapper's environment (``$SCKPT_IMAGE_DIR`` ...) is all the
        program needs."""
        return {}

    def command(self, program: Sequence[str], restart_dir: str = "") -> list[str]:
        """PROGRAM itself; it finds its image in ``$SLURM_RESTART_DIR``."""
        return list(program)

    def handler(self, pid: int) -> str:
        """What the program does with its checkpoint signal (``signal_handler``)."""
        return signal_handler(pid, self.signal)

    coordinator_kind = ""

    def bind(self, place: object) -> None:
        """Nothing to learn: the program saves itself."""

    def begin(self, pid: int, since: float = 0.0) -> tuple[int, str]:
        """Send the checkpoint signal, only to a program that catches it (``NotSent``
        otherwise, with what the program does with it).

        Stop, look, signal, continue: the program is stopped (SIGSTOP, every thread), its
        handler read, the signal sent while it is still stopped, then it continues.  A
        stopped process cannot ``exec``, and ``exec`` is what resets a handler, so the
        handler that receives the signal is the one that was read: the window in which a
        program that re-execs itself into a build without the handler was killed is
        closed.  The signal is delivered as the program continues, before it runs anything.
        A program already stopped (``scontrol suspend``, a debugger) is left alone and
        asked again on the next poll: continuing it would undo its stop.
        """
        handler = self._send_if_caught(pid)
        if handler != HANDLER_CAUGHT:
            raise NotSent(handler, handler_blocker(handler, self.signal.name) if handler else "")
        return 0, ""

    def _send_if_caught(self, pid: int) -> str:
        """Stop, look, signal, continue; what the program does with the signal ("" when it
        could not be looked at)."""
        if _stopped(pid):
            return ""
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            return ""
        try:
            if not self.wait_stopped(pid):
                return ""  # still running after STOP_WAIT: not looked at, asked again
            handler = signal_handler(pid, self.signal)
            if handler == HANDLER_CAUGHT:
                os.kill(pid, self.signal)
            return handler
        except ProcessLookupError:
            return ""
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def wait_stopped(self, pid: int) -> bool:
        """Wait until SIGSTOP has stopped every thread of ``pid``; False when it has not
        within ``STOP_WAIT`` of ``monotonic`` (or the process is gone or a zombie)."""
        deadline = self.monotonic() + STOP_WAIT
        while True:
            states = _thread_states(pid)
            if not states or "Z" in states or "X" in states:
                return False
            if all(s == "T" for s in states):
                return True
            if self.monotonic() >= deadline:
                return False
            self.sleep(0.001)

    def poll(self) -> tuple[int, str] | None:
        """None: the program writes its status line itself, and the wrapper reads it."""
        return None

    def collect(self, into: Path) -> int:
        """Nothing to move: the program wrote into the generation through the link."""
        return 0

    def close(self) -> None:
        """Nothing was started."""


STOP_WAIT = 2.0
"""Longest wait for a program to stop (SIGSTOP) before its handler is read; a process in
uninterruptible I/O stops only when that I/O ends."""


def _thread_states(pid: int) -> list[str]:
    """The scheduler state letter of each thread of ``pid`` (``R``, ``S``, ``T`` ...)."""
    states = []
    try:
        tids = [p.name for p in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return []
    for tid in tids:
        try:
            stat_line = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        # "tid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ')'
        states.append(stat_line.rpartition(")")[2].split()[0])
    return states


def _stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped by someone (``T``: a signal, ``t``: a debugger)."""
    return any(s in ("T", "t") for s in _thread_states(pid))
