"""The checkpointing modules read time from the clock their owner injects (issue 35, item 8).

Each test drives one module's timing with a ``ManualClock`` whose ``advance`` is the sleep:
the record's times (``protocol.py``), the wait for a program to stop (``signal_checkpointer``),
a task's wait for its step's coordinator (``transparent.py``) and a coordinator that never
starts (``dmtcp_coordinator.py``) run out in fake time, with real processes where the module
looks at them, and no real wait.  The stuck-checkpoint limit is in
tests/cooperative/test_stuck.py; the same rules end to end are in the real-cluster tests.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.checkpointer import TaskPlace, Unavailable
from sckpt.backend.checkpointing.dmtcp import DmtcpInstall
from sckpt.backend.checkpointing.dmtcp_coordinator import START_TIMEOUT
from sckpt.backend.checkpointing.protocol import StepRecord, TaskInfo
from sckpt.backend.checkpointing.signal_checkpointer import STOP_WAIT, SignalCheckpointer
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.checkpointing.transparent import (
    COORDINATOR_WAIT,
    STEP,
    TASK,
    DmtcpCheckpointer,
)
from sckpt.backend.model import StepId
from sckpt.backend.simulator import ManualClock

from tests.helpers import sleeping_process, wait_for

STEP_ID = StepId(7, 0)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    with sleeping_process() as child:
        yield child


def _record() -> StepRecord:
    rec = StepRecord(job_id=7, step="0")
    rec.tasks["0"] = TaskInfo(0, "cn01", 4242, 0, "SIGUSR1", "/img")
    return rec


def test_a_records_times_are_its_callers_clock(clock: ManualClock) -> None:
    rec = _record()
    start = int(clock())
    req = rec.begin_request("root", "/img", 30, "create", clock=clock)
    assert (req.start, req.deadline) == (start, start + 30)
    clock.advance(29)
    assert not rec.expire(clock=clock)  # one second before its deadline
    clock.advance(1)
    assert rec.expire(clock=clock)
    rec.begin_request("root", "/img", 0, "create", clock=clock)
    clock.advance(4)
    assert rec.report(0, 0, "", clock=clock)  # the last task: the request is done
    clock.advance(1)
    rec.log("disable", "root", 0, "counter 1", clock=clock)
    assert [(h["operation"], h["time"]) for h in rec.history] == [
        ("create", start),
        ("done", start + 30),
        ("create", start + 30),
        ("done", start + 34),
        ("disable", start + 35),
    ]


def test_a_corrupt_record_is_set_aside_under_the_callers_time(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = StepStore(tmp_path, STEP_ID, owner=os.getuid())
    store.ensure_directory()
    store.path.write_text("{ not json")
    store.update(lambda r: None, create=True, reset_corrupt=True, clock=clock)
    aside = store.path.with_name(f"{store.path.name}.corrupt-{int(clock())}")
    assert aside.read_text() == "{ not json"


def test_the_wait_for_a_stop_runs_out_on_the_injected_clock(
    sleeper: subprocess.Popen[bytes], clock: ManualClock
) -> None:
    checkpointer = SignalCheckpointer(signal.SIGUSR1, monotonic=clock, sleep=clock.advance)
    start = clock()
    assert not checkpointer.wait_stopped(sleeper.pid)  # never sent SIGSTOP: never stops
    assert clock() - start == pytest.approx(STOP_WAIT, abs=0.002)
    os.kill(sleeper.pid, signal.SIGSTOP)
    assert wait_for(lambda: checkpointer.wait_stopped(sleeper.pid), what="stopped")


def _task_checkpointer(tmp_path: Path, clock: ManualClock, kind: str) -> DmtcpCheckpointer:
    """Task 1 of step 7.0 under ``--transparent``; its DMTCP's coordinator (when it starts
    one) is a program that never writes its port."""
    bin_dir = tmp_path / "dmtcp" / "bin"
    bin_dir.mkdir(parents=True)
    never = bin_dir / "dmtcp_coordinator"
    never.write_text("#!/bin/sh\nexec sleep 30\n")
    never.chmod(0o755)
    install = DmtcpInstall(tmp_path / "dmtcp", "4.2.0", "config")
    checkpointer = DmtcpCheckpointer(
        install,
        tmp_path / "task1",
        coordinator=kind,
        clock=clock,
        monotonic=clock,
        sleep=clock.advance,
    )
    store = StepStore(tmp_path / "state", STEP_ID, owner=os.getuid())
    store.ensure_directory()
    checkpointer.bind(TaskPlace(store, procid=1, localid=0, run=0, node="cn01"))
    return checkpointer


def test_a_task_stops_waiting_for_its_step_coordinator_on_the_injected_clock(
    tmp_path: Path, clock: ManualClock
) -> None:
    checkpointer = _task_checkpointer(tmp_path, clock, STEP)
    start = clock()
    with pytest.raises(Unavailable) as refused:
        checkpointer.prepare(tmp_path / "task1")  # task 0 never publishes its coordinator
    assert refused.value.code == errno.ETIME
    assert "did not appear in the step's record within 60 s" in refused.value.why
    assert clock() - start == pytest.approx(COORDINATOR_WAIT, abs=0.2)


def test_a_task_finds_its_step_coordinator_once_task_0_publishes_it(
    tmp_path: Path, clock: ManualClock
) -> None:
    checkpointer = _task_checkpointer(tmp_path, clock, STEP)
    assert checkpointer.place is not None
    store = checkpointer.place.store
    start = clock()

    def publish(rec: StepRecord) -> None:
        rec.coord_run, rec.coord_public, rec.coord_ports = 0, "10.0.0.1:5000", {"cn01": 4321}

    def sleep(seconds: float) -> None:  # task 0 publishes 5 s (fake) after the wait began
        clock.advance(seconds)
        if clock() - start >= 5 and not store.path.exists():
            store.update(publish, create=True)

    checkpointer.sleep = sleep
    env = checkpointer.prepare(tmp_path / "task1")
    assert env["DMTCP_COORD_PORT"] == "4321"
    assert 5 <= clock() - start < 5.2


def test_a_coordinator_that_never_starts_is_given_up_on_the_injected_clock(
    tmp_path: Path, clock: ManualClock
) -> None:
    """The relay (a forked child) waits ``START_TIMEOUT`` of the transparent checkpointer's
    clock for the coordinator's port: on the fake one it gives up at once, and says so."""
    checkpointer = _task_checkpointer(tmp_path, clock, TASK)
    slept = tmp_path / "slept"

    def sleep(seconds: float) -> None:  # runs in the relay: it writes down what it waited
        clock.advance(seconds)
        with slept.open("a") as out:
            out.write(f"{seconds}\n")

    checkpointer.sleep = sleep
    with pytest.raises(Unavailable) as refused:
        checkpointer.prepare(tmp_path / "task1")
    log = tmp_path / "task1" / "dmtcp" / "coordinator.log"
    assert refused.value.why == (
        f"DMTCP's coordinator cannot start: the DMTCP coordinator did not start (its log: {log})"
    )
    waits = [float(w) for w in slept.read_text().split()]
    assert sum(waits) == pytest.approx(START_TIMEOUT, abs=0.05)
