"""Read-only mode: an engine wrapper whose mutating operations never reach the engine.

The facade refuses mutating calls itself (so it can audit the refusal), and it also wraps
the engine in ``ReadOnlyEngine``: a second, independent guard, so that no code path that
holds the engine (a future helper, a bug in the facade) can reach libslurm or the
cooperative store while read-only mode is on.  Reading (snapshot, able, error, processes,
interconnect) goes through unchanged.
"""

from __future__ import annotations

from .engines.base import Engine
from .errors import ReadOnlyError
from .model import (
    AbleResult,
    ActionResult,
    CheckpointError,
    ClusterInfo,
    Interconnect,
    JobRecord,
    JobStdio,
    Snapshot,
    StepCheckpointEvent,
    StepId,
    StepProcesses,
)


def refusal(operation: str, target: StepId | str) -> ReadOnlyError:
    """The error every refused mutating call raises (the same text everywhere); with
    ``-M`` it names the target's cluster."""
    where = f" on cluster {target.cluster}" if isinstance(target, StepId) and target.cluster else ""
    return ReadOnlyError(
        f"{operation} {target}{where} refused: sckpt is in read-only mode",
        "start sckpt without --read-only (and read_only = false in the config) to act",
    )


class ReadOnlyEngine(Engine):
    """Delegates reads to ``inner``; raises ``ReadOnlyError`` for every mutating operation."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.name = inner.name
        self.writes_allowed = False
        inner.writes_allowed = False  # its reads must not write either (state file expiry)

    def cluster_info(self) -> ClusterInfo:
        return self.inner.cluster_info()

    def resolve_target(self, target: StepId) -> StepId:
        return self.inner.resolve_target(target)

    def snapshot(self) -> Snapshot:
        return self.inner.snapshot()

    def ping(self) -> float:
        return self.inner.ping()

    def job_stdio(self, target: StepId) -> JobStdio:
        return self.inner.job_stdio(target)

    def step_processes(self, target: StepId) -> StepProcesses:
        return self.inner.step_processes(target)

    def interconnect(self, target: StepId) -> Interconnect:
        return self.inner.interconnect(target)

    def able(self, target: StepId) -> AbleResult:
        return self.inner.able(target)

    def error(self, target: StepId) -> CheckpointError:
        return self.inner.error(target)

    def now(self) -> float:
        return self.inner.now()

    def job_records(self, job_id: int, since: int, until: int = 0) -> tuple[JobRecord, ...]:
        return self.inner.job_records(job_id, since, until)

    def finished_jobs(self, since: int, until: int = 0) -> tuple[JobRecord, ...]:
        return self.inner.finished_jobs(since, until)

    def checkpoint_events(
        self, job_id: int, work_dir: str, uid: int
    ) -> tuple[StepCheckpointEvent, ...]:
        return self.inner.checkpoint_events(job_id, work_dir, uid)

    def create(self, target: StepId, max_wait: int, image_dir: str | None) -> ActionResult:
        raise refusal("create", target)

    def vacate(
        self, target: StepId, max_wait: int, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        raise refusal("vacate", target)

    def restart(
        self, target: StepId, stick: bool, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        raise refusal("restart", target)

    def enable(self, target: StepId) -> ActionResult:
        raise refusal("enable", target)

    def disable(self, target: StepId) -> ActionResult:
        raise refusal("disable", target)

    def complete(
        self, target: StepId, begin_time: int, error_code: int, error_msg: str
    ) -> ActionResult:
        raise refusal("complete", target)

    def tasks(
        self, target: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> ActionResult:
        raise refusal("tasks", target)

    def cancel(self, target: StepId, signal: int | None) -> ActionResult:
        raise refusal("cancel", target)

    def hold(self, target: StepId) -> ActionResult:
        raise refusal("hold", target)

    def release(self, target: StepId) -> ActionResult:
        raise refusal("release", target)

    def requeue(self, target: StepId) -> ActionResult:
        raise refusal("requeue", target)

    def close(self) -> None:
        self.inner.close()
