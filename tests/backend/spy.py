"""Engines for facade tests: one records every call, one fails on demand."""

from __future__ import annotations

from typing import Any

from sckpt.backend.engines.base import Engine
from sckpt.backend.errors import ControllerUnreachable
from sckpt.backend.model import (
    AbleResult,
    ActionResult,
    CheckpointError,
    ClusterInfo,
    Interconnect,
    Job,
    JobState,
    JobStdio,
    JobView,
    Snapshot,
    StepId,
    StepProcesses,
)


class SpyEngine(Engine):
    """Records ``(operation, target, *args)`` for every call and succeeds."""

    name = "spy"

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo("spy", "0", self.name, "tester")

    def snapshot(self) -> Snapshot:
        self.calls.append(("snapshot",))
        return Snapshot(jobs=(), taken_at=1.0)

    def ping(self) -> float:
        self.calls.append(("ping",))
        return 0.0

    def step_processes(self, target: StepId) -> StepProcesses:
        self.calls.append(("step_processes", target))
        return StepProcesses(target, ())

    def job_stdio(self, target: StepId) -> JobStdio:
        self.calls.append(("job_stdio", target))
        return JobStdio(target.job_id, "", "", JobState.RUNNING, 0, "tester")

    def interconnect(self, target: StepId) -> Interconnect:
        self.calls.append(("interconnect", target))
        return Interconnect(target, "switch/none")

    def able(self, target: StepId) -> AbleResult:
        self.calls.append(("able", target))
        return AbleResult(target)

    def error(self, target: StepId) -> CheckpointError:
        self.calls.append(("error", target))
        return CheckpointError(0, "SLURM_SUCCESS", "")

    def create(self, target: StepId, max_wait: int, image_dir: str | None) -> ActionResult:
        self.calls.append(("create", target, max_wait, image_dir))
        return ActionResult(target, "create")

    def vacate(
        self, target: StepId, max_wait: int, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        self.calls.append(("vacate", target, max_wait, image_dir))
        return ActionResult(target, "vacate")

    def restart(
        self, target: StepId, stick: bool, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        self.calls.append(("restart", target, stick, image_dir))
        return ActionResult(target, "restart")

    def enable(self, target: StepId) -> ActionResult:
        self.calls.append(("enable", target))
        return ActionResult(target, "enable")

    def disable(self, target: StepId) -> ActionResult:
        self.calls.append(("disable", target))
        return ActionResult(target, "disable")

    def cancel(self, target: StepId, signal: int | None) -> ActionResult:
        self.calls.append(("cancel", target, signal))
        return ActionResult(target, "cancel")

    def hold(self, target: StepId) -> ActionResult:
        self.calls.append(("hold", target))
        return ActionResult(target, "hold")

    def release(self, target: StepId) -> ActionResult:
        self.calls.append(("release", target))
        return ActionResult(target, "release")

    def requeue(self, target: StepId) -> ActionResult:
        self.calls.append(("requeue", target))
        return ActionResult(target, "requeue")

    def complete(
        self, target: StepId, begin_time: int, error_code: int, error_msg: str
    ) -> ActionResult:
        self.calls.append(("complete", target, begin_time, error_code, error_msg))
        return ActionResult(target, "complete")

    def tasks(
        self, target: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> ActionResult:
        self.calls.append(("tasks", target, begin_time, image_dir, max_wait, nodelist))
        return ActionResult(target, "tasks")

    def auto(
        self, target: StepId, every: int | None, before_end: int | None, off: bool
    ) -> ActionResult:
        self.calls.append(("auto", target, every, before_end, off))
        return ActionResult(target, "auto")


class FailingEngine(SpyEngine):
    """A one-job cluster whose controller can be made unreachable."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = False
        self.clock = 100.0

    def ping(self) -> float:
        if self.failing:
            raise ControllerUnreachable()
        return 0.0

    def snapshot(self) -> Snapshot:
        self.clock += 1
        if self.failing:
            raise ControllerUnreachable()
        job = Job(1, "j", "u", 1000, "debug", JobState.RUNNING)
        return Snapshot(jobs=(JobView(job),), taken_at=self.clock)
