"""A job's output file, as the console's ``o`` and ``sckpt output`` show it: its tail, then
what was appended since (``tail -f``).

Bounded on purpose: a job may write gigabytes, and the console runs over SSH on a login
node, so a read never takes more than ``TAIL_BYTES`` (the older part is skipped and said
to be).  Following polls the file's size (``read_output(path, offset)``) instead of
watching it with inotify: output files often live on NFS or Lustre, where inotify does not
see writes made on compute nodes, and one ``fstat`` a second costs nothing.

A file that cannot be shown says why, in the words an operator acts on: the job has no
output file (an ``srun``/``salloc`` job writes to its terminal), it is not written yet
(pending, or on a node's local disk), or it cannot be read (permission denied).  When sckpt
runs as root on behalf of another user, the file is checked against that user's permission
bits (``checkpointing/access.file_read_problem``), so the operator sees what the user would.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

from .checkpointing.access import file_read_problem
from .model import JobState, JobStdio

TAIL_BYTES = 64 * 1024
"""At most this much of a file is read at once: the first look, and each poll after."""

STREAMS = ("stdout", "stderr")


@dataclass(frozen=True, slots=True)
class OutputRead:
    """One read of an output file: the bytes, where the next read starts, or why not."""

    path: str
    data: bytes = b""
    offset: int = 0
    """The file's size when read: pass it back to read only what is appended."""
    skipped: int = 0
    """Bytes left out before ``data`` (older than the tail shown, or written too fast)."""
    reset: bool = False
    """The file shrank (rewritten or truncated): ``data`` replaces what was shown."""
    problem: str = ""
    """Why nothing could be read ("" when the read worked)."""


def stream_path(stdio: JobStdio, stream: str) -> str:
    """The path of ``stream`` (``stdout`` or ``stderr``) of the job."""
    return stdio.std_err if stream == "stderr" else stdio.std_out


def read_output(
    path: str,
    offset: int | None = None,
    *,
    state: JobState | None = None,
    as_uid: int | None = None,
    max_bytes: int = TAIL_BYTES,
) -> OutputRead:
    """Read ``path`` from ``offset`` (None: its tail), at most ``max_bytes``; never raises.

    ``state`` is the job's, for the words of a missing file; ``as_uid``: check the file
    against that user's permission bits first (root acting for someone else).
    """
    if not path:
        return OutputRead(
            path,
            problem="job has no output file (its output goes to the "
            "terminal of the srun or salloc that started it)",
        )
    if as_uid is not None:
        code, why = file_read_problem(path, as_uid)
        if code == errno.EACCES:
            return OutputRead(path, problem=f"cannot read {path}: permission denied ({why})")
        if code and code != errno.ENOENT:
            return OutputRead(path, problem=f"cannot read {path}: {why}")
    try:
        # O_NONBLOCK: an output path may be a FIFO, whose open would wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return OutputRead(path, problem=_missing(path, state))
    except PermissionError:
        return OutputRead(path, problem=f"cannot read {path}: permission denied")
    except OSError as exc:
        return OutputRead(path, problem=f"cannot read {path}: {exc.strerror or exc}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return OutputRead(path, problem=f"cannot read {path}: not a regular file")
        size = st.st_size
        reset = offset is not None and size < offset
        start = 0 if offset is None or reset else offset
        skipped = 0
        if size - start > max_bytes:
            skipped = size - max_bytes - start
            start = size - max_bytes
        data = os.pread(fd, size - start, start) if size > start else b""
    except OSError as exc:
        return OutputRead(path, problem=f"cannot read {path}: {exc.strerror or exc}")
    finally:
        os.close(fd)
    end = start + len(data)
    if skipped and offset is None:
        # A tail starts at a line: drop the part of a line cut by the bound.
        cut = data.find(b"\n")
        if 0 <= cut < len(data) - 1:
            skipped += cut + 1
            data = data[cut + 1 :]
    return OutputRead(path, data, end, skipped, reset or (offset is None))


def _missing(path: str, state: JobState | None) -> str:
    if state is JobState.PENDING:
        return f"not written yet: {path} (the job has not started)"
    if state is not None and state.is_finished:
        return (
            f"no such file: {path} (the job ended; the file was removed or moved, "
            "or is on a node's local disk)"
        )
    return f"not written yet: {path}"


def last_lines(data: bytes, lines: int) -> bytes:
    """The last ``lines`` lines of ``data`` (``tail -n``): a final newline ends a line."""
    if lines <= 0:
        return b""
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    at = end
    for _ in range(lines):
        at = data.rfind(b"\n", 0, at)
        if at < 0:
            return data
    return data[at + 1 :]


def acting_uid_to_check(caller_uid: int) -> int | None:
    """The uid to check a file against before reading it, or None to let the kernel decide.

    Only root acting on behalf of another user needs the check: any other process reads
    with its own rights, which are the acting user's.
    """
    if os.geteuid() == 0 and caller_uid != 0:
        return caller_uid
    return None
