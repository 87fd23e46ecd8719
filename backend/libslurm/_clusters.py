"""One cluster of several (``-M``): the binding's calls, each sent to that cluster's controller.

Why a view and not a second binding: libslurm chooses the controller of a call by its global
``working_cluster_rec`` (``squeue -M`` sets it before each cluster's calls), so the calls of
every cluster must run on the binding's one thread, each with the global set for its own
duration (``Binding.routed``).  A ``ClusterBinding`` is what an engine is given instead of the
binding: it has the very methods of ``SlurmAPI``, so the live, cooperative and native engines
run unchanged, one engine per cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model import JobRecord, JobStdio, StepId, StepProcesses
from ..slurm_api import AccountingConfig, ClusterRoute, ControllerConfig, JobsResult, StepsResult

if TYPE_CHECKING:
    from . import _build
    from ._binding import Binding, ConfigSource


class ClusterBinding:
    """``SlurmAPI`` for one cluster registered in slurmdbd (see the module's docstring)."""

    def __init__(self, binding: Binding, route: ClusterRoute) -> None:
        self.base = binding
        self.route = route

    @property
    def cluster(self) -> str:
        return self.route.name

    # -- facts (no controller asked)
    @property
    def caller_uid(self) -> int:
        return self.base.caller_uid

    @property
    def caller_name(self) -> str:
        return self.base.caller_name

    @property
    def header_version(self) -> str:
        return self.base.header_version

    @property
    def plan(self) -> _build.BuildPlan:
        return self.base.plan

    @property
    def config(self) -> ConfigSource:
        return self.base.config

    @property
    def module_path(self) -> Path:
        return self.base.module_path

    @property
    def has_checkpoint_api(self) -> bool:
        return self.base.has_checkpoint_api

    def checkpoint_symbols(self) -> dict[str, bool]:
        return self.base.checkpoint_symbols()

    def describe(self, code: int) -> tuple[str, str] | None:
        return self.base.describe(code)

    # -- everything else goes to the cluster's controller
    def _call(self, name: str, *args: Any) -> Any:
        return self.base.routed(self.route, getattr(self.base, name), *args)

    def load_jobs(self, prev_update: int = 0) -> JobsResult:
        result: JobsResult = self._call("load_jobs", prev_update)
        return result

    def get_steps(self, prev_update: int = 0) -> StepsResult:
        result: StepsResult = self._call("get_steps", prev_update)
        return result

    def job_stdio(self, job_id: int) -> JobStdio:
        result: JobStdio = self._call("job_stdio", job_id)
        return result

    # -- accounting: one slurmdbd for every cluster, asked for this cluster's records
    def accounting_config(self) -> AccountingConfig:
        return self.base.accounting_config()

    def job_records(
        self, job_id: int, since: int, until: int = 0, cluster: str = ""
    ) -> tuple[JobRecord, ...]:
        return self.base.job_records(job_id, since, until, cluster=cluster or self.route.name)

    def finished_jobs(self, since: int, until: int = 0, cluster: str = "") -> tuple[JobRecord, ...]:
        return self.base.finished_jobs(since, until, cluster=cluster or self.route.name)

    def step_pids(self, step: StepId) -> StepProcesses:
        result: StepProcesses = self._call("step_pids", step)
        return result

    def ctl_conf(self) -> ControllerConfig:
        result: ControllerConfig = self._call("ctl_conf")
        return result

    def ping(self) -> float:
        result: float = self._call("ping")
        return result

    def signal_step(self, step: StepId, signal: int) -> None:
        self._call("signal_step", step, signal)

    def kill_step(self, step: StepId, signal: int = 9) -> None:
        self._call("kill_step", step, signal)

    def kill_job(self, job_id: int, signal: int = 9) -> None:
        self._call("kill_job", job_id, signal)

    def requeue(self, job_id: int, hold: bool = False) -> None:
        self._call("requeue", job_id, hold)

    def hold(self, job_id: int) -> None:
        self._call("hold", job_id)

    def release(self, job_id: int) -> None:
        self._call("release", job_id)

    def set_required_nodes(self, job_id: int, nodelist: str) -> None:
        self._call("set_required_nodes", job_id, nodelist)

    def set_begin_time(self, job_id: int, when: int = 0) -> None:
        self._call("set_begin_time", job_id, when)

    def ckpt_able(self, step: StepId) -> int:
        result: int = self._call("ckpt_able", step)
        return result

    def ckpt_disable(self, step: StepId) -> None:
        self._call("ckpt_disable", step)

    def ckpt_enable(self, step: StepId) -> None:
        self._call("ckpt_enable", step)

    def ckpt_create(self, step: StepId, max_wait: int, image_dir: str | None = None) -> None:
        self._call("ckpt_create", step, max_wait, image_dir)

    def ckpt_vacate(self, step: StepId, max_wait: int, image_dir: str | None = None) -> None:
        self._call("ckpt_vacate", step, max_wait, image_dir)

    def ckpt_restart(self, step: StepId, stick: bool = False, image_dir: str | None = None) -> None:
        self._call("ckpt_restart", step, stick, image_dir)

    def ckpt_complete(
        self, step: StepId, begin_time: int, error_code: int, error_msg: str = ""
    ) -> None:
        self._call("ckpt_complete", step, begin_time, error_code, error_msg)

    def ckpt_error(self, step: StepId) -> tuple[int, str]:
        result: tuple[int, str] = self._call("ckpt_error", step)
        return result

    def ckpt_tasks(
        self, step: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> None:
        self._call("ckpt_tasks", step, begin_time, image_dir, max_wait, nodelist)
