"""What a Slurm offers the engines: the typed protocol, and the records it answers with.

Why a protocol: two things implement it.  The cffi binding (``backend.libslurm``) talks to a
real slurmctld; the simulated cluster (``backend/simulator``) *is* an in-process Slurm 19.05
controller with a checkpoint plugin.  Engines take a ``SlurmAPI`` and cannot tell which one
they were given, so the demo and the console tests run the very engine code that a real
cluster runs, and the controller's rules are the simulator's business, not an engine's.
One ``SlurmAPI`` is one controller: with ``-M`` each cluster's engine is given its own
(``libslurm.Binding.on_cluster``).

Step ids are sckpt's canonical ones (``model.STEP_BATCH`` ...) on every release.  Refusals
raise ``errors`` types carrying the Slurm code; an unreachable controller raises
``ControllerUnreachable``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .model import Job, JobRecord, JobStdio, Step, StepId, StepProcesses


@dataclass(frozen=True, slots=True)
class JobsResult:
    """``load_jobs``: the full list, or ``changed=False`` (SLURM_NO_CHANGE_IN_DATA)."""

    changed: bool
    last_update: int
    """Pass back as ``prev_update`` next time."""
    jobs: tuple[Job, ...] = ()


@dataclass(frozen=True, slots=True)
class StepsResult:
    """``get_steps``: the full list, or ``changed=False``."""

    changed: bool
    last_update: int
    steps: tuple[Step, ...] = ()
    by_job: Mapping[int, tuple[Step, ...]] | None = None
    """The same steps grouped by job, when the answer is kept that way: the simulated
    controller keeps one tuple per job, the very same object from answer to answer while
    that job's steps do not change, so an engine regroups only the jobs whose tuple is new
    (the demo lists 100,000 steps on every changed refresh).  None (libslurm's flat
    array): the engine groups ``steps`` itself."""


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """Facts from ``slurm_load_ctl_conf``."""

    cluster_name: str
    version: str
    """slurmctld's version."""
    switch_type: str
    proctrack_type: str
    select_type: str
    slurm_user: str
    control_host: str
    slurmctld_port: int
    prolog_contain: bool
    """PrologFlags=Contain: jobs get an ``.extern`` step."""
    checkpoint_type: str
    """CheckpointType (Slurm <= 19.05 only; empty otherwise)."""
    last_update: int


@dataclass(frozen=True, slots=True)
class AccountingConfig:
    """Where the controller sends accounting (``AccountingStorage*`` of slurm.conf), and
    under which cluster name."""

    storage_type: str
    """``accounting_storage/slurmdbd`` when slurmdbd keeps the jobs; else none (or empty)."""
    host: str = ""
    backup_host: str = ""
    port: int = 0
    cluster: str = ""
    """The controller's ClusterName: the cluster whose records are this controller's."""

    @property
    def uses_slurmdbd(self) -> bool:
        return self.storage_type.endswith("/slurmdbd")

    @property
    def where(self) -> str:
        """``host:port`` of slurmdbd, as the controller names it."""
        return f"{self.host or 'localhost'}:{self.port or DEFAULT_SLURMDBD_PORT}"


DEFAULT_SLURMDBD_PORT = 6819
"""Slurm's default AccountingStoragePort (slurmdbd's DbdPort)."""


@dataclass(frozen=True, slots=True)
class ClusterRoute:
    """A cluster as slurmdbd knows it (``sacctmgr show cluster``): ``-M`` sends its calls to
    that cluster's slurmctld, at the host and port it registered."""

    name: str
    control_host: str
    control_port: int


@runtime_checkable
class SlurmAPI(Protocol):
    """The calls of libslurm sckpt uses, as one user of one cluster."""

    @property
    def caller_uid(self) -> int:
        """The uid the controller authenticates requests as (munge's, for a real one)."""

    @property
    def caller_name(self) -> str:
        """That user's login name."""

    @property
    def header_version(self) -> str:
        """The Slurm release the calls were built for (``19.05.8`` ...)."""

    @property
    def has_checkpoint_api(self) -> bool:
        """Whether all nine ``slurm_checkpoint_*`` calls exist (Slurm <= 19.05)."""

    # -- reads
    def load_jobs(self, prev_update: int = 0) -> JobsResult: ...

    def get_steps(self, prev_update: int = 0) -> StepsResult: ...

    def job_stdio(self, job_id: int) -> JobStdio:
        """One job's output and error paths, expanded as scontrol shows them."""
        ...

    def step_pids(self, step: StepId) -> StepProcesses: ...

    def ctl_conf(self) -> ControllerConfig: ...

    def ping(self) -> float:
        """One small round trip to the controller (seconds); raises when it does not answer."""
        ...

    def checkpoint_symbols(self) -> dict[str, bool]: ...

    # -- accounting (slurmdbd): only when a person asks, never on the refresh path
    def job_records(
        self, job_id: int, since: int, until: int = 0, cluster: str = ""
    ) -> tuple[JobRecord, ...]:
        """Every record of a job (each requeue is one), as ``sacct --duplicates -j JOB``.

        ``since``/``until`` bound the window (Unix seconds; ``until`` 0: now); ``cluster``
        "" is the controller's own.  Raises ``AccountingUnavailable`` without slurmdbd.
        """
        ...

    def finished_jobs(self, since: int, until: int = 0, cluster: str = "") -> tuple[JobRecord, ...]:
        """The jobs that ended in the window (their latest record each), without steps."""
        ...

    # -- job control (today's primitives)
    def signal_step(self, step: StepId, signal: int) -> None: ...

    def kill_step(self, step: StepId, signal: int = 9) -> None: ...

    def kill_job(self, job_id: int, signal: int = 9) -> None:
        """``scancel JOB``: SIGKILL ends the whole job; another signal reaches its steps."""

    def requeue(self, job_id: int, hold: bool = False) -> None: ...

    def hold(self, job_id: int) -> None:
        """``scontrol hold``: priority 0 (a held job does not start)."""

    def release(self, job_id: int) -> None: ...

    def hold_task(self, array_job_id: int, task: int, hold: bool = True) -> None:
        """``scontrol hold|release 7_5`` for a task still pending in its array's record
        (which has no job id of its own): the controller splits it off first."""

    def set_required_nodes(self, job_id: int, nodelist: str) -> None: ...

    def set_begin_time(self, job_id: int, when: int = 0) -> None:
        """When a pending job may start (0: now), as ``scontrol update StartTime=``."""

    # -- the historical checkpoint API
    def ckpt_able(self, step: StepId) -> int: ...

    def ckpt_disable(self, step: StepId) -> None: ...

    def ckpt_enable(self, step: StepId) -> None: ...

    def ckpt_create(self, step: StepId, max_wait: int, image_dir: str | None = None) -> None: ...

    def ckpt_vacate(self, step: StepId, max_wait: int, image_dir: str | None = None) -> None: ...

    def ckpt_restart(
        self, step: StepId, stick: bool = False, image_dir: str | None = None
    ) -> None: ...

    def ckpt_complete(
        self, step: StepId, begin_time: int, error_code: int, error_msg: str = ""
    ) -> None: ...

    def ckpt_error(self, step: StepId) -> tuple[int, str]: ...

    def ckpt_tasks(
        self, step: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> None: ...
