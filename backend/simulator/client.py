"""The simulated controller's client library: what libslurm is to a real slurmctld."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .. import operations
from ..errors import ESLURM_USER_ID_MISSING, AccessDenied, SlurmError, error_for
from ..model import JobRecord, JobStdio, StepId, StepProcesses
from ..rules import Caller
from ..slurm_api import ControllerConfig, JobsResult, StepsResult
from .checkpoint import CheckpointController
from .jobctl import JobControl
from .records import SIMULATED_RELEASE
from .state import ClusterState
from .views import Views

T = TypeVar("T")


class SimulatedSlurm:
    """The simulated controller's client library for one user: a ``SlurmAPI``.

    What libslurm is to a real slurmctld: the engines call it exactly as they call the cffi
    binding, so ``sckpt --demo`` runs the native engine over this controller.  Like the
    real library it answers with the controller's code and message only (no hints: the
    engines explain refusals themselves, the same way on a real cluster).
    """

    def __init__(
        self,
        cluster: object,
        parts: tuple[ClusterState, Views, JobControl, CheckpointController],
        caller: Caller,
    ) -> None:
        self.cluster = cluster
        """The ``SimulatedCluster`` it connects to (the demo's engine reads it there)."""
        self.state, self.views, self.jobctl, self.checkpoints = parts
        self.caller = caller

    @property
    def caller_uid(self) -> int:
        return self.caller.uid

    @property
    def caller_name(self) -> str:
        return self.caller.name

    @property
    def header_version(self) -> str:
        return SIMULATED_RELEASE

    @property
    def has_checkpoint_api(self) -> bool:
        return True

    @property
    def clock(self) -> Callable[[], float]:
        """The controller's clock (a ``ManualClock`` in tests): the engines read time here."""
        return self.state.clock

    def _answer(self, call: Callable[[], T], *, acting: bool = False, part: bool = False) -> T:
        """Run a controller call; a refusal comes back bare, as libslurm returns it.
        ``acting``: a call the binding checks with ``check(acting=True)`` (job control,
        a step's pids), whose non-owner refusal is ``AccessDenied`` with its hint there
        too; a checkpoint call's is Slurm's bare error (as 19.05 prints it).  The cluster
        is built whole first, unless ``part`` (a read the console may have answered from a
        cluster's first part while the rest is built: ``staging.py``)."""
        self.state.staging.ready(part=part)
        try:
            return call()
        except SlurmError as exc:
            if acting and exc.code == ESLURM_USER_ID_MISSING:  # as check(acting=True)
                raise AccessDenied(
                    exc.code, hint="you are neither the job's owner nor an operator"
                ) from None
            raise error_for(exc.code) from None

    # -- reads
    def load_jobs(self, prev_update: int = 0) -> JobsResult:
        self.state.staging.ready(part=True)
        listed = self.views.listing()
        if prev_update and prev_update == listed.version:
            return JobsResult(False, prev_update)
        return JobsResult(True, listed.version, listed.jobs)

    def get_steps(self, prev_update: int = 0) -> StepsResult:
        self.state.staging.ready(part=True)
        listed = self.views.listing()
        if prev_update and prev_update == listed.version:
            return StepsResult(False, prev_update)
        return StepsResult(True, listed.version, listed.steps, listed.by_job)

    def job_stdio(self, job_id: int) -> JobStdio:
        return self._answer(lambda: self.views.job_stdio(job_id))

    def step_pids(self, step: StepId) -> StepProcesses:
        return self._answer(lambda: self.checkpoints.step_processes(self.caller, step), acting=True)

    def ctl_conf(self) -> ControllerConfig:
        return self.views.controller_config()

    def checkpoint_symbols(self) -> dict[str, bool]:
        return dict.fromkeys(operations.CHECKPOINT_NAMES, True)

    def ping(self) -> float:
        return 0.0

    # -- accounting (the simulated slurmdbd)
    def job_records(
        self, job_id: int, since: int, until: int = 0, cluster: str = ""
    ) -> tuple[JobRecord, ...]:
        self.state.staging.ready()
        return self.views.accounting(job_id, since, until)

    def finished_jobs(self, since: int, until: int = 0, cluster: str = "") -> tuple[JobRecord, ...]:
        self.state.staging.ready()
        return self.views.accounting(0, since, until, finished=True)

    # -- job control
    def signal_step(self, step: StepId, signal: int) -> None:
        self._answer(
            lambda: self.jobctl.signal_step(self.caller, step, signal, end=False), acting=True
        )

    def kill_step(self, step: StepId, signal: int = 9) -> None:
        self._answer(
            lambda: self.jobctl.signal_step(self.caller, step, signal, end=True), acting=True
        )

    def kill_job(self, job_id: int, signal: int = 9) -> None:
        self._answer(lambda: self.jobctl.kill_job(self.caller, job_id, signal), acting=True)

    def requeue(self, job_id: int, hold: bool = False) -> None:
        self._answer(lambda: self.jobctl.requeue_job(self.caller, job_id, hold), acting=True)

    def hold(self, job_id: int) -> None:
        self._answer(lambda: self.jobctl.hold_job(self.caller, job_id), acting=True)

    def release(self, job_id: int) -> None:
        self._answer(lambda: self.jobctl.release(self.caller, job_id), acting=True)

    def hold_task(self, array_job_id: int, task: int, hold: bool = True) -> None:
        self._answer(
            lambda: self.jobctl.hold_task(self.caller, array_job_id, task, hold), acting=True
        )

    def set_required_nodes(self, job_id: int, nodelist: str) -> None:
        self._answer(
            lambda: self.jobctl.set_required_nodes(self.caller, job_id, nodelist), acting=True
        )

    def set_begin_time(self, job_id: int, when: int = 0) -> None:
        self._answer(lambda: self.jobctl.set_begin_time(self.caller, job_id, when), acting=True)

    # -- the checkpoint API
    def ckpt_able(self, step: StepId) -> int:
        able = self._answer(lambda: self.checkpoints.able(self.caller, step), part=True)
        return able.in_progress_since

    def ckpt_disable(self, step: StepId) -> None:
        self._answer(lambda: self.checkpoints.disable(self.caller, step))

    def ckpt_enable(self, step: StepId) -> None:
        self._answer(lambda: self.checkpoints.enable(self.caller, step))

    def ckpt_create(self, step: StepId, max_wait: int, image_dir: str | None = None) -> None:
        self._answer(lambda: self.checkpoints.create(self.caller, step, max_wait, image_dir))

    def ckpt_vacate(self, step: StepId, max_wait: int, image_dir: str | None = None) -> None:
        self._answer(lambda: self.checkpoints.vacate(self.caller, step, max_wait, image_dir))

    def ckpt_restart(self, step: StepId, stick: bool = False, image_dir: str | None = None) -> None:
        self._answer(lambda: self.checkpoints.restart(self.caller, step, stick, image_dir))

    def ckpt_complete(
        self, step: StepId, begin_time: int, error_code: int, error_msg: str = ""
    ) -> None:
        self._answer(
            lambda: self.checkpoints.complete(self.caller, step, begin_time, error_code, error_msg)
        )

    def ckpt_error(self, step: StepId) -> tuple[int, str]:
        err = self._answer(lambda: self.checkpoints.error(self.caller, step), part=True)
        return err.code, err.message

    def ckpt_tasks(
        self, step: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> None:
        tasks = self.checkpoints.tasks
        self._answer(lambda: tasks(self.caller, step, begin_time, image_dir, max_wait, nodelist))
