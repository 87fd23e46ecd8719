"""A DMTCP checkpoint that does not finish: what was stuck, what can free it, and when to stop.

What DMTCP 4.2.0 does (its sources, and what we tried on a frozen 2-task step):

* a checkpoint is a chain of coordinator barriers (``DMT:SUSPEND``, ``DMT:CHECKPOINT``,
  ``DMT:WriteCkpt``; ``dmtcpworker.cpp``), with the program's threads stopped from the
  suspend barrier until the image is written.  No barrier has a timeout, and the
  coordinator has no command that abandons a checkpoint once begun;
* a process that is itself stopped (``SIGSTOP``, a debugger, job control: state ``T``)
  never reaches the next barrier, so every other process of the computation waits,
  stopped, with it.  ``SIGCONT`` frees that case: the checkpoint then completes;
* the socket drain (``kernelbufferdrainer.cpp``) polls until the peer's cookie arrives,
  for ever (it only warns "Still draining socket... perhaps remote host is not running
  under DMTCP?" every 10 s).  Two computations draining one connection at once (per-task
  coordinators) deadlock there; ``peers.py`` refuses that case beforehand.  We tried what
  could free it: ``SIGCONT`` changes nothing (nothing is stopped by a signal), killing the
  coordinator changes nothing (the drain never reads the coordinator) and a process that
  reaches its next barrier without its coordinator ends (``waitForBarrier`` fails, then
  ``JASSERT``): **nothing short of ending the program unfreezes it.**

So at the limit (the request's MaxWait, less a margin so this outcome, not the console's
generic timeout, is the step's error; with ``--wait``, which gives none, ``CEILING``) the
wrapper ``SIGCONT``s the stopped processes of the task (the one thing that helps), waits
``AFTER_CONTINUE`` seconds more, and if the images are still not whole and DMTCP wrote
nothing meanwhile, records ETIME naming what was stuck: each process, its state, where its
threads wait, and DMTCP's last warning from its own log (a checkpoint still writing a large
image is slow, not stuck: it is left to finish, as before).  The program is then left as it
is: still stopped inside DMTCP when nothing freed it (README says so), never killed by sckpt;
scancel (SIGTERM) still ends it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..config import ENV_DMTCP_CEILING

CEILING = 900.0
"""Seconds a transparent checkpoint may take when its request gives no MaxWait (``--wait``):
``$SCKPT_DMTCP_CEILING`` changes it (10 to 86400)."""
ENV_CEILING = ENV_DMTCP_CEILING
MARGIN = 4.0
"""Act this long before the request's deadline (at most a third of MaxWait)."""
AFTER_CONTINUE = 2.0
"""How long a checkpoint freed by SIGCONT is given to finish before ETIME is recorded."""
_WARNING_MARK = "REASON='"


@runtime_checkable
class Limited(Protocol):
    """A checkpointer that ends its own stuck checkpoints (the transparent one)."""

    give_up_at: float


def ceiling() -> float:
    """``CEILING``, or ``$SCKPT_DMTCP_CEILING`` when it is a number of seconds in range."""
    with contextlib.suppress(ValueError):
        chosen = float(os.environ.get(ENV_CEILING, "") or CEILING)
        if 10 <= chosen <= 86400:
            return chosen
    return CEILING


def arm(
    checkpointer: object,
    deadline: int,
    max_wait: int,
    clock: Callable[[], float] = time.time,
) -> None:
    """Tell a ``Limited`` checkpointer when to give up on the checkpoint it is asked for:
    shortly before the request's ``deadline``, or ``ceiling()`` from now (the wrapper's
    ``clock``) without one."""
    if not isinstance(checkpointer, Limited):
        return
    if deadline:
        checkpointer.give_up_at = deadline - min(MARGIN, max_wait / 3)
    else:
        checkpointer.give_up_at = clock() + ceiling()


def _state(pid: int) -> str:
    """The process's one-letter state (``R``, ``S``, ``T`` ...), "" when it is gone."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    return ""


def _comm(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/comm").read_text().strip()
    return "?"


def continue_stopped(tree: Sequence[int]) -> list[int]:
    """SIGCONT every stopped process of ``tree`` (the one thing that frees DMTCP)."""
    continued = []
    for pid in tree:
        if _state(pid) in ("T", "t"):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)
                continued.append(pid)
    return continued


def worker_warning(pid: int, since: float) -> str:
    """DMTCP's last warning in the process's own worker log (found through its open file
    descriptors) written since ``since``; "" when there is none."""
    with contextlib.suppress(OSError):
        for fd in os.scandir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = Path(fd.path).readlink()
                if not target.name.startswith("dmtcpworker.") or target.stat().st_mtime < since:
                    continue
                lines = [
                    ln for ln in target.read_text(errors="replace").splitlines() if "Warning" in ln
                ]
                if lines:
                    return _plain(lines[-1])
    return ""


def _plain(line: str) -> str:
    """A DMTCP log line in words: ``Still draining socket... (fd 5)`` from its
    ``REASON='JWARNING(false) failed; (... sockfd() = 5); ...Message: Still draining ...'``."""
    said = line.partition(_WARNING_MARK)[2] or line
    said = said.replace("\x1b[0m", "").rstrip("'")
    message = said.partition("Message: ")[2].strip()
    fd = re.search(r"sockfd\(\) = (\d+)", said)
    if message:
        said = message + (f" (fd {fd.group(1)})" if fd else "")
    return " ".join(said.split())[:240]


def _threads(pid: int) -> str:
    """``3 threads: futex_do_wait x2, poll_schedule_timeout`` (where each thread waits)."""
    waits: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for task in os.scandir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                where = Path(task.path, "wchan").read_text().strip() or "running"
                where = where.split(".")[0]
                waits[where] = waits.get(where, 0) + 1
    said = ", ".join(f"{w} x{n}" if n > 1 else w for w, n in sorted(waits.items()))
    count = sum(waits.values())
    return f"{count} thread{'s' if count > 1 else ''}: {said}" if waits else "gone"


def describe(tree: Sequence[int], since: float, continued: Sequence[int]) -> str:
    """What was stuck, one clause per process of the task's tree."""
    parts = []
    for pid in tree:
        state = _state(pid)
        if not state:
            continue
        what = f"pid {pid} ({_comm(pid)})"
        if pid in continued:
            what += " was stopped (state T) before DMTCP's next barrier; sent SIGCONT"
        else:
            what += f" state {state}, {_threads(pid)}"
        warning = worker_warning(pid, since)
        if warning:
            what += f"; DMTCP: {warning}"
        parts.append(what)
    return "; ".join(parts[:8]) or "no process of the task is left"


def written(spool: Path) -> int:
    """Bytes DMTCP has written into ``spool`` so far (its images, whole or ``.temp``): a
    checkpoint whose count still grows is slow, not stuck."""
    total = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(spool):
            with contextlib.suppress(OSError):
                total += entry.stat().st_size
    return total


class Watch:
    """One checkpoint's limit: ``check`` at each poll until it finishes or gives up.

    At ``give_up_at`` it SIGCONTs the task's stopped processes and notes how much image was
    written; ``AFTER_CONTINUE`` seconds later the checkpoint is stuck when nothing more was
    written.  One still writing is left alone (MaxWait's ETIME is recorded by whoever sees the
    deadline, and its image is kept when it completes, as before).  ``clock`` is the
    time of day the limit is read against (tests/cooperative/test_stuck.py moves it on)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.continued: list[int] = []
        self.looked_at = 0.0
        self.seen = -1

    def check(
        self,
        give_up_at: float,
        began: float,
        tree_of: Callable[[], Sequence[int]],
        written_of: Callable[[], int],
    ) -> tuple[int, str] | None:
        """None while the checkpoint may still finish; ``(ETIME, what was stuck)`` once
        it has passed its limit and has written nothing for ``AFTER_CONTINUE`` seconds."""
        now = self.clock()
        if not give_up_at or now < give_up_at or now < self.looked_at + AFTER_CONTINUE:
            return None
        tree, size = tree_of(), written_of()
        if not self.looked_at or size != self.seen:
            self.looked_at, self.seen = now, size
            self.continued += continue_stopped(tree)
            return None  # look again AFTER_CONTINUE seconds later
        waited = int(now - began)
        stuck = describe(tree, began - 1, self.continued)
        then = (
            "it may still finish (that image is not used)"
            if self.continued
            else "DMTCP 4.2.0 cannot abandon a checkpoint, so the program stays stopped "
            "inside it until the job ends (README: Checkpoint any program)"
        )
        return errno.ETIME, f"DMTCP's checkpoint did not finish in {waited} s: {stuck}; {then}"
