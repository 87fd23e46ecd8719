"""The demo's job output files: what a simulated job writes, so that ``o`` and ``sckpt
output`` show something on the demo (every job said "not written yet").

Real files, in a directory of the demo's own (``SimulatedCluster(output_dir=...)``; the
facade makes one per demo process and removes it at exit), read by the same code that reads
a real job's file (``backend/job_output.py``).  A file is written the first time its job's
paths are asked for, with the lines the job would have printed since it started (the last
``BACKLOG`` of them), then appended to as the simulated clock moves, one line every
``EVERY`` seconds, until the job ends.  Content is a pure function of the job and the time,
so two demo processes write the same lines.
"""

from __future__ import annotations

import os
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..model import Job, JobState

EVERY = 5
"""Seconds of simulated time between two lines of a job's output."""
BACKLOG = 200
"""Lines written at most when a file is first made (a job may have run for a day)."""


@dataclass
class _Written:
    path: Path
    next_line: int
    """The number of the next line to write: it is printed at ``start + n * EVERY``."""
    ended: bool = False


def _stamp(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def _line(job: Job, exe: str, t: int) -> str:
    """What ``exe`` of ``job`` prints at time ``t``: a step counter and two numbers that
    drift, as a simulation's log does."""
    n = (t - job.start_time) // EVERY
    wobble = zlib.crc32(f"{job.job_id}:{n}".encode()) % 1000 / 1000
    energy = -1000.0 - job.job_id % 97 - n * 0.013 + wobble * 0.01
    rate = 90.0 + 20.0 * wobble
    return f"{_stamp(t)}  {exe}: step {n * 100:>9}  E = {energy:12.4f}  {rate:5.1f} steps/s\n"


class DemoOutput:
    """Writes the simulated jobs' ``slurm-JOB.out`` files under ``directory``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._files: dict[int, _Written] = {}

    def path(self, job_id: int) -> str:
        """Where job ``job_id`` writes (``StdOut`` and ``StdErr``, as Slurm's default)."""
        return str(self.directory / f"slurm-{job_id}.out")

    def update(self, job: Job, exe: str, now: int) -> None:
        """Bring the job's file up to ``now`` (its end, once it ended); made when first
        asked for.  A job that has not started writes nothing (``not written yet``)."""
        if job.state is JobState.PENDING or not job.start_time:  # a pending job's start
            return  # time is only its expected one
        upto = min(now, job.end_time) if job.state.is_finished and job.end_time else now
        written = self._files.get(job.job_id)
        if written is None:
            ran = (upto - job.start_time) // EVERY
            written = _Written(Path(self.path(job.job_id)), max(1, ran - BACKLOG + 1))
            written.path.write_text(
                f"{_stamp(job.start_time)}  sckpt demo: job {job.job_id} ({job.name}) of "
                f"{job.user} on {job.nodes or '-'}: simulated output\n"
            )
            written.path.chmod(0o644)
            self._files[job.job_id] = written
        if written.ended:
            return
        lines = []
        while job.start_time + written.next_line * EVERY <= upto:
            lines.append(_line(job, exe, job.start_time + written.next_line * EVERY))
            written.next_line += 1
        if job.state.is_finished:
            lines.append(f"{_stamp(upto)}  sckpt demo: job {job.job_id} {job.state.value}\n")
            written.ended = True
        if lines:
            with written.path.open("a") as out:
                out.write("".join(lines))

    @property
    def known(self) -> set[int]:
        """The jobs whose file has been made."""
        return set(self._files)
