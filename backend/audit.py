"""The audit log: one JSON line per mutating attempt, allowed or refused.

Why it is written this way:

* **Atomic lines with concurrent writers.**  Every record is encoded first and written with
  a single ``write(2)`` on a descriptor opened ``O_APPEND``, while holding an exclusive
  ``flock``.  ``O_APPEND`` makes the kernel place each write at the current end of file;
  the lock additionally keeps writers on filesystems with weaker append guarantees (NFS)
  from interleaving.  Two processes writing 1,000 lines each give 2,000 intact lines
  (tests/backend/test_audit.py).
* **Refuse before acting, not after.**  ``reserve()`` opens (and creates) the log before
  the engine is called; if that fails and the log is required, the action is refused with
  ``AuditLogError`` and Slurm is never asked.  The line itself is written after the action
  (it holds the result and the duration) through the descriptor opened by ``reserve()``,
  so a file that was writable a moment ago is still the one written.  What remains
  possible is a failure of that final write (disk full): the action has then happened,
  and the facade says exactly that in the error it raises, with the result.
  A two-line scheme ("attempt" then "result") was rejected: it doubles the log and
  readers would have to pair lines; one line per attempt is what auditors grep.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import AuditLogError


def _real_user() -> tuple[str, int]:
    uid = os.getuid()
    try:
        return pwd.getpwuid(uid).pw_name, uid
    except KeyError:
        return str(uid), uid


@dataclass
class AuditReservation:
    """An open descriptor on the log, taken before acting; ``None`` fd = could not open."""

    fd: int | None
    problem: str = ""


class AuditLog:
    """Appends JSON lines to ``path``; ``required`` decides whether failures refuse actions."""

    def __init__(self, path: str | os.PathLike[str], required: bool = True) -> None:
        self.path = Path(path)
        self.required = required
        self.user, self.uid = _real_user()
        self.host = socket.gethostname()

    def reserve(self) -> AuditReservation:
        """Open the log for appending (creating it and its directory, mode 0600/0700).

        Raises ``AuditLogError`` when the log cannot be opened, or its filesystem has no
        room for a record (full disk), and it is required; otherwise returns a reservation
        that may carry the problem for the caller to show.
        """
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            problem = f"cannot open audit log {self.path}: {exc.strerror or exc}"
        else:
            problem = _space_problem(fd, self.path)
            if not problem:
                return AuditReservation(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.required:
            raise AuditLogError(
                f"action refused: {problem}",
                "free space or fix the path or permissions, or set audit_log / audit_required "
                "in the config",
            ) from None
        return AuditReservation(None, problem)

    def record(
        self,
        *,
        engine: str,
        operation: str,
        target: str,
        arguments: Mapping[str, Any],
        code: int | None,
        name: str,
        message: str,
        duration: float,
        acting_user: str = "",
    ) -> dict[str, Any]:
        """Build one audit record (a plain dict, JSON-ready)."""
        rec: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "user": self.user,
            "uid": self.uid,
            "host": self.host,
            "engine": engine,
            "operation": operation,
            "target": target,
            "arguments": dict(arguments),
            "result": {"code": code, "name": name, "message": message},
            "duration": round(duration, 6),
        }
        sudo_user = os.environ.get("SUDO_USER")
        if sudo_user:
            rec["sudo_user"] = sudo_user
        if acting_user and acting_user != self.user:
            rec["acting_user"] = acting_user
        return rec

    def write(self, reservation: AuditReservation, record: Mapping[str, Any]) -> str:
        """Append one line through the reserved descriptor; return "" or the problem text.

        Never raises: the caller decides what a failure means (the action already happened).
        """
        if reservation.fd is None:
            return reservation.problem or f"audit log {self.path} was not opened"
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        fd = reservation.fd
        reservation.fd = None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                written = os.write(fd, line)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            if written != len(line):
                return f"audit log {self.path}: short write ({written} of {len(line)} bytes)"
            return ""
        except OSError as exc:
            return f"cannot write audit log {self.path}: {exc.strerror or exc}"
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)

    def release(self, reservation: AuditReservation) -> None:
        """Close a reservation that will not be written (never needed in normal flow)."""
        if reservation.fd is not None:
            with contextlib.suppress(OSError):
                os.close(reservation.fd)
            reservation.fd = None


MIN_FREE_BYTES = 64 * 1024
"""Free space the log's filesystem must have before an action is allowed.

Why: ``open`` succeeds on a full disk (the file or a free inode exists); only the later
``write`` fails with ENOSPC, and by then the action has happened.  A record is well under
4 KiB, so 64 KiB leaves room for several writers at once; the check is made on the opened
descriptor, so it is the log's own filesystem that is measured.
"""


def _space_problem(fd: int, path: Path) -> str:
    """Empty when the log's filesystem has room for a record, else what is wrong."""
    try:
        st = os.fstatvfs(fd)
    except OSError:
        return ""  # cannot tell: the write itself will report a failure
    if st.f_blocks == 0:
        return ""  # pseudo or network filesystems that do not report sizes
    # write(2) by root may use the blocks reserved for root; other users may not.
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    free = blocks * st.f_frsize
    if free < MIN_FREE_BYTES:
        return f"no space left for audit log {path} ({free} bytes free)"
    return ""


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Parse every line of an audit log (for tests and ``sckpt audit``-style tools)."""
    out: list[dict[str, Any]] = []
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            out.append(json.loads(line))
    return out


def monotonic() -> float:
    """The clock durations are measured with (a function so tests can read the intent)."""
    return time.monotonic()
