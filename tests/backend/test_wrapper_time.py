"""The wrapper's timing decisions read its injected clock (issue 35, item 8).

A status line whose writer (the program, a real process here) still holds the file open
counts as written once it ends its line, or once its bytes have not changed for
``STILL_OPEN_QUIET`` seconds; the grace defers a request.  Both are driven here by moving
the wrapper's ``monotonic`` on, with no real wait.  The same rules end to end, with real
programs under a real step, are in tests/cooperative/test_wrapper.py.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.processes import held_for_writing
from sckpt.backend.checkpointing.protocol import StepRecord, TaskInfo
from sckpt.backend.checkpointing.status_file import STILL_OPEN_QUIET
from sckpt.backend.checkpointing.wrapper import Wrapper, build_parser
from sckpt.backend.config import ENV_WORK_DIR

from tests.helpers import wait_for


class Clock:
    """A monotonic clock a test moves on."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def wrapper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Wrapper, Clock]]:
    """Task 1 of step 7.0 (no autopilot), its program a real process that holds the status
    file open for writing and never closes it."""
    for name, value in {
        "SLURM_JOB_ID": "7",
        "SLURM_STEP_ID": "0",
        "SLURM_PROCID": "1",
        ENV_WORK_DIR: str(tmp_path),
    }.items():
        monkeypatch.setenv(name, value)
    args = build_parser().parse_args(["--grace", "5", "--", "true"])
    clock = Clock()
    w = Wrapper(args, ["true"], monotonic=clock)
    w.store.ensure_directory()
    done = w.done_path
    holder = f"import time; f = open({str(done)!r}, 'ab'); time.sleep(60)"
    w.child = subprocess.Popen([sys.executable, "-c", holder])
    try:
        wait_for(lambda: done.exists() and held_for_writing(done, [w.child.pid]), what="opened")  # type: ignore[union-attr]
        yield w, clock
    finally:
        w.child.kill()
        w.child.wait()


def test_a_line_still_open_counts_once_unchanged_for_the_quiet_time(
    wrapper: tuple[Wrapper, Clock],
) -> None:
    w, clock = wrapper
    pid = w.child.pid  # type: ignore[union-attr]
    assert not w.status.written(b"0 half a mess", pid)
    clock.now += STILL_OPEN_QUIET / 2
    assert not w.status.written(b"0 half a message", pid)  # it changed: counted from now
    clock.now += STILL_OPEN_QUIET * 0.9
    assert not w.status.written(b"0 half a message", pid)
    clock.now += STILL_OPEN_QUIET * 0.1
    assert w.status.written(b"0 half a message", pid)
    assert w.status.written(b"0 a whole line\n", pid)  # an ended line at once


def test_a_request_inside_the_grace_waits_for_the_clock(wrapper: tuple[Wrapper, Clock]) -> None:
    w, clock = wrapper
    w.started = clock.now

    def ask(rec: StepRecord) -> None:
        rec.tasks["1"] = TaskInfo(1, "cn01", 4242, 0, "SIGUSR1", "/img")
        rec.begin_request("root", "", 0, "create", 100).pending = [1]

    w.store.update(ask, create=True)
    clock.now += 4.9
    w.check_request()
    rec = w.store.read()
    assert w.deferred and rec is not None and rec.in_progress is not None
    assert rec.in_progress.pending == [1]  # not answered inside the grace
    clock.now += 0.1
    w.check_request()
    # Past the grace it is taken up: this program does not catch the signal, so the
    # task answers at once that it was not signalled.
    rec = w.store.read()
    assert not w.deferred and rec is not None and rec.in_progress is None
    assert "program does not catch SIGUSR1" in rec.last_results["1"][1]
