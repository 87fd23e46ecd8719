"""Whether the console has a terminal to draw on, asked before anything else is opened.

Textual reads keys from stdin and draws on stderr; without a terminal it wrote escape codes
into a pipe or a file and never returned (``sckpt </dev/null``, ``sckpt JOB | head``, cron,
``ssh host sckpt`` without ``-t``).  The console therefore refuses at once, in one line that
says what works without a terminal.
"""

from __future__ import annotations

import os
import sys

_STREAMS = (("stdin", sys.__stdin__), ("stdout", sys.__stdout__), ("stderr", sys.__stderr__))


def _is_terminal(stream: object) -> bool:
    try:
        return os.isatty(stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


def stderr_is_terminal() -> bool:
    """Whether progress lines may go to stderr: a person watches it (not a pipe, a log or
    cron's mail)."""
    return _is_terminal(sys.__stderr__)


def missing_terminal() -> str:
    """The one line saying the console cannot run here, or "" when stdin, stdout and stderr
    are all terminals (the process's own streams, whatever a caller swapped in)."""
    missing = [name for name, stream in _STREAMS if not _is_terminal(stream)]
    if not missing:
        return ""
    which = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
    verb = "is" if len(missing) == 1 else "are"
    return (
        f"the console needs a terminal ({which} {verb} not one): use 'sckpt ls' or "
        "'sckpt ls --json' in a script or a pipe, and 'ssh -t' to open the console remotely"
    )
