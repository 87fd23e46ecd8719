"""The native engine: Slurm's own checkpoint API (libslurm 19.05 and older) via the binding.

Listing is ``LiveEngine``'s.  The nine operations go straight to ``slurm_checkpoint_*``:
the controller applies its own rules and order of checks, so this engine adds none (the
facade has already validated the input).  Targets map one to one: the whole job is
``NO_VAL``, ``.batch`` the batch script (the binding translates sckpt's canonical step
numbers to the release's).

The snapshot asks the controller ``able`` and ``error`` for each running step, because
that is the only way the API reports checkpoint state.  To keep a refresh bounded on big
clusters only the first ``max_probes`` running steps are asked per refresh (the others
show ``unknown``); the answers are reused until the job/step list changes or
``probe_ttl`` seconds pass.

Registered with the facade under the name ``native`` (``create_engine`` below).
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import ESLURM_DISABLED, ESLURM_NOT_SUPPORTED, SlurmError, describe
from ..model import (
    AbleResult,
    ActionResult,
    CheckpointError,
    CheckpointKind,
    CheckpointState,
    Job,
    JobState,
    Snapshot,
    Step,
    StepId,
)
from .base import Engine, EngineRequest
from .live import LiveEngine


class NativeEngine(LiveEngine):
    """``slurm_checkpoint_*`` through the binding; the controller enforces the rules."""

    name = "native"
    volatile_states = True

    def __init__(self, binding: Any, max_probes: int = 200, probe_ttl: float = 2.0) -> None:
        super().__init__(binding)
        self.max_probes = max_probes
        self.probe_ttl = probe_ttl
        self._probes: dict[StepId, tuple[float, CheckpointState]] = {}
        self._probed = 0

    # ------------------------------------------------------------------ snapshot

    def checkpoint_state(self, job: Job, step: Step) -> CheckpointState:
        if job.state is JobState.SUSPENDED:
            return CheckpointState(CheckpointKind.DISABLED, reason="job suspended")
        if job.state is not JobState.RUNNING:
            return CheckpointState(CheckpointKind.DONE, reason=f"job {job.state.value.lower()}")
        now = time.monotonic()
        cached = self._probes.get(step.step_id)
        if cached is not None and now - cached[0] < self.probe_ttl:
            return cached[1]
        if self._probed >= self.max_probes:
            return cached[1] if cached else CheckpointState(CheckpointKind.UNKNOWN)
        self._probed += 1
        state = self._probe(step.step_id)
        self._probes[step.step_id] = (now, state)
        return state

    def _probe(self, step: StepId) -> CheckpointState:
        """``able`` then ``error`` for one step, as the console's checkpoint column."""
        last = None
        try:
            code, message = self.binding.ckpt_error(step)
            if code:
                last = CheckpointError(code, describe(code)[0], message)
        except SlurmError:
            last = None
        try:
            since = int(self.binding.ckpt_able(step))
        except SlurmError as refused:
            if refused.code == ESLURM_DISABLED:
                return CheckpointState(CheckpointKind.DISABLED, last_error=last)
            if refused.code == ESLURM_NOT_SUPPORTED:
                return CheckpointState(
                    CheckpointKind.NOT_SUPPORTED, reason=refused.hint or refused.message
                )
            return CheckpointState(CheckpointKind.UNKNOWN, reason=str(refused), last_error=last)
        if since:
            return CheckpointState(
                CheckpointKind.IN_PROGRESS, in_progress_since=since, last_error=last
            )
        return CheckpointState(CheckpointKind.ABLE, last_error=last)

    def snapshot(self) -> Snapshot:
        with self._lock:
            self._probed = 0
            return super().snapshot()

    # ------------------------------------------------------------------ operations

    def _forget(self, target: StepId) -> None:
        with self._lock:
            for key in [k for k in self._probes if k.job_id == target.job_id]:
                del self._probes[key]

    def able(self, target: StepId) -> AbleResult:
        return AbleResult(target, int(self.binding.ckpt_able(target)))

    def error(self, target: StepId) -> CheckpointError:
        code, message = self.binding.ckpt_error(target)
        return CheckpointError(code, describe(code)[0], message)

    def create(self, target: StepId, max_wait: int, image_dir: str | None) -> ActionResult:
        self.binding.ckpt_create(target, max_wait, image_dir)
        self._forget(target)
        return ActionResult(target, "create", f"max_wait {max_wait}s")

    def vacate(
        self, target: StepId, max_wait: int, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        self.binding.ckpt_vacate(target, max_wait, image_dir)
        self._forget(target)
        return ActionResult(target, "vacate", f"max_wait {max_wait}s")

    def restart(self, target: StepId, stick: bool, image_dir: str | None) -> ActionResult:
        self.binding.ckpt_restart(target, stick, image_dir)
        self._forget(target)
        return ActionResult(target, "restart", "on the same nodes" if stick else "")

    def enable(self, target: StepId) -> ActionResult:
        self.binding.ckpt_enable(target)
        self._forget(target)
        return ActionResult(target, "enable")

    def disable(self, target: StepId) -> ActionResult:
        self.binding.ckpt_disable(target)
        self._forget(target)
        return ActionResult(target, "disable")

    def complete(
        self, target: StepId, begin_time: int, error_code: int, error_msg: str
    ) -> ActionResult:
        self.binding.ckpt_complete(target, begin_time, error_code, error_msg)
        self._forget(target)
        return ActionResult(target, "complete")

    def tasks(
        self, target: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> ActionResult:
        nodes = nodelist
        if not nodes:
            with self._lock:
                self.refresh()
                steps = [
                    s
                    for s in self._steps_by_job.get(target.job_id, ())
                    if target.is_whole_job or s.step_id.step == target.step
                ]
            nodes = ",".join(s.nodes for s in steps if s.nodes)
        self.binding.ckpt_tasks(target, begin_time, image_dir, max_wait, nodes)
        self._forget(target)
        return ActionResult(target, "tasks", f"nodes {nodes}")


def create_engine(request: EngineRequest) -> Engine:
    """The facade's factory for ``engine = "native"``."""
    return NativeEngine(request.binding)
