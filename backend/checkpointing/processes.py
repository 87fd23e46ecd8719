"""The program's processes as ``/proc`` shows them: its tree, and whether one of them still
writes a file.

Why a module of its own: the wrapper reads the status line a program writes only once the
writer has closed the file (the event a fixed pause used to stand for), and the transparent
checkpointer needs the same tree for DMTCP's memory estimate; neither should import the
other (the wrapper loads DMTCP's code only with ``--transparent``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

_WRITE_MODES = (os.O_WRONLY, os.O_RDWR)


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from ``/proc/*/stat`` parent links)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def held_for_writing(path: Path, pids: Iterable[int]) -> bool | None:
    """Whether one of ``pids`` has ``path`` open for writing (its ``/proc/PID/fd`` link and
    the access mode in ``fdinfo``); ``None`` when no process's descriptors could be read,
    so the caller knows it does not know (it must not take that for "closed")."""
    wanted = str(path.resolve())
    readable = False
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.scandir(f"/proc/{pid}/fd"):
                readable = True
                with contextlib.suppress(OSError, ValueError):
                    if str(Path(fd.path).readlink()) == wanted and _writes(pid, fd.name):
                        return True
    return False if readable else None


def _writes(pid: int, fd: str) -> bool:
    """``flags:`` in ``/proc/PID/fdinfo/FD`` (octal) opens the file for writing."""
    for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
        if line.startswith("flags:"):
            return int(line.split()[1], 8) & os.O_ACCMODE in _WRITE_MODES
    return False
