"""``sckpt output JOB``: a job's output file on the command line, as ``tail [-f]`` prints it.

The bytes are written as the file holds them (no decoding, no escaping), so the output can
be piped and compared with the file; only sckpt's own words (why a file cannot be read)
go to stderr.  Following polls the file's size (``backend/job_output.py`` says why) and
asks the controller for the job's state every few seconds: when the job has ended, what it
wrote last is printed and the command exits 0.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from sckpt.backend.job_output import last_lines, stream_path
from sckpt.backend.model import JobStdio, StepId

from sckpt.exit_codes import EXIT_OK, EXIT_REFUSED

from . import output

if TYPE_CHECKING:
    from sckpt.backend.facade import Facade

POLL = 0.5
"""Seconds between two looks at the file's size while following."""
STATE_EVERY = 4
"""Ask the controller for the job's state every this many polls (about 2 s)."""


def print_output(
    facade: Facade,
    target: StepId,
    *,
    stream: str,
    lines: int,
    follow: bool,
    as_json: bool,
) -> int:
    """Print the file's last ``lines`` lines (and, following, what comes after); the exit
    code: 0 shown, 1 the file cannot be read (why is on stderr, or in the JSON)."""
    stdio = facade.job_stdio(target)
    first = facade.read_output(stdio, stream)
    if as_json:
        output.to_stdout(output.dumps(_document(stdio, stream, first.problem, first.offset)))
        return EXIT_REFUSED if first.problem else EXIT_OK
    if first.problem and not (follow and _may_appear(stdio)):
        output.to_stderr(output.failure_line("", first.problem))
        return EXIT_REFUSED
    if first.problem:
        output.to_stderr(output.failure_line("", f"{first.problem}; waiting for it"))
    _write(last_lines(first.data, lines))
    if not follow:
        return EXIT_OK
    offset = first.offset if not first.problem else 0
    polls = 0
    while True:
        time.sleep(POLL)
        polls += 1
        ended = False
        if polls % STATE_EVERY == 0:
            stdio = facade.job_stdio(target)
            ended = stdio.state.is_finished
        more = facade.read_output(stdio, stream, offset)
        if not more.problem:
            if more.reset and offset:
                output.to_stderr(f"sckpt: {more.path}: file truncated")
            if more.skipped:
                output.to_stderr(f"sckpt: {more.path}: {more.skipped} bytes skipped")
            _write(more.data)
            offset = more.offset
        if ended:
            return EXIT_OK if not more.problem else _gone(more.problem)


def _may_appear(stdio: JobStdio) -> bool:
    """Whether the file may still be written (the job has not ended, and has one)."""
    return bool(stdio.std_out) and not stdio.state.is_finished


def _gone(problem: str) -> int:
    output.to_stderr(output.failure_line("", problem))
    return EXIT_REFUSED


def _write(data: bytes) -> None:
    if data:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def _document(stdio: JobStdio, stream: str, problem: str, size: int) -> dict[str, object]:
    """``--json``: where the files are, the job's state, and whether ``stream`` can be read."""
    return {
        "job_id": stdio.job_id,
        "state": stdio.state.value,
        "user": stdio.user,
        "stdout": stdio.std_out,
        "stderr": stdio.std_err,
        "stream": stream,
        "path": stream_path(stdio, stream),
        "readable": not problem,
        "problem": problem or None,
        "size": size if not problem else None,
    }
