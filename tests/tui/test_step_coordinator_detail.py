"""The step detail of a ``--transparent`` step says its coordinator kind and, after a
step-wide checkpoint, which task was slowest (issue 33); from the record's own fields
(``records.column``) to the rendered lines."""

from __future__ import annotations

import time

from sckpt.backend.checkpointing.protocol import StepRecord, TaskInfo
from sckpt.backend.checkpointing.records import column
from sckpt.backend.model import Job, JobState, Step, StepId, StepView
from sckpt.tui.widgets.step_detail import StepDetail

LABEL = "transparent (DMTCP 4.2.0)"


def _lines(rec: StepRecord) -> list[str]:
    job = Job(7, "chat", "alice", 1001, "debug", JobState.RUNNING)
    state = column(rec, job)
    step = Step(StepId(7, 0), "chat", "alice", 1001, "debug", "RUNNING", num_tasks=4)
    detail = StepDetail()
    detail.view = StepView(step, state)
    return [line.rstrip() for line in detail.render_detail(time.time()).plain.splitlines()]


def _record(coordinator: str, seconds: dict[str, float]) -> StepRecord:
    tasks = {
        str(n): TaskInfo(n, "node1", 100 + n, 0, "SIGUSR1", "/x", checkpointer=LABEL)
        for n in range(len(seconds))
    }
    return StepRecord(
        7,
        "0",
        1001,
        "chat",
        tasks,
        coordinator=coordinator,
        ckpt_seconds=seconds,
        image_bytes={k: 100_000_000 for k in seconds},
    )


def test_a_step_coordinator_and_its_slowest_task() -> None:
    lines = _lines(_record("step", {"0": 1.2, "1": 3.4, "2": 2.0, "3": 3.1}))
    assert f"{'Checkpointer':<18}{LABEL}, one coordinator per step" in lines
    assert f"{'Last image':<18}400.0 MB, took 3.4 s (slowest: task 1)" in lines


def test_one_task_names_no_slowest_and_per_task_says_so() -> None:
    lines = _lines(_record("task", {"0": 1.2}))
    assert f"{'Checkpointer':<18}{LABEL}, one coordinator per task" in lines
    assert f"{'Last image':<18}100.0 MB, took 1.2 s" in lines
