"""The one interface every engine implements.

An engine owns the conversation with one kind of cluster.  It receives targets that the
facade has already parsed and validated, applies Slurm's rules (the reference's order of
checks), and either returns a frozen record from ``model`` or raises a typed error from
``errors``.  Engines know nothing of read-only mode or the audit log: the facade wraps them.

An engine is made by its factory in ``registry.py`` from the settings and a ``SlurmAPI``;
engines never import the facade that chooses them.
"""

from __future__ import annotations

import inspect
import time
from abc import ABC, abstractmethod

from ..errors import AccountingUnavailable
from ..model import (
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


class Engine(ABC):
    """Jobs, steps, the nine checkpoint operations and the four job-control verbs of one
    cluster."""

    name: str
    """``native``, ``cooperative`` or ``simulated``: shown to the user, written to the audit log."""
    writes_allowed: bool = True
    """False under ``ReadOnlyEngine``: even reads must then change nothing (the cooperative
    engine otherwise records an expired checkpoint in the state file when it reads one)."""

    # What an engine can tell without being asked a question: the facade reads these,
    # never probes for attributes.  Defaults are an engine's without a controller.
    waits_on_controller: bool = False
    """``cluster_info`` asks a controller over the network (up to Slurm's MessageTimeout
    when it is down): the console's UI thread then shows what it knows instead."""
    runs_checkpoints: bool = True
    """It carries out the checkpoint operations; False: each one answers the controller's
    checks, then ESLURM_NOT_SUPPORTED (``LiveEngine``, a modern Slurm without the
    cooperative engine), so the facade asks it nothing before one (``acting.perform``'s
    ``able`` before a ``complete``) and the engine's own refusal is the answer."""
    caller_uid: int | None = None
    """The uid the engine acts as on this host (a real cluster's engine: the user running
    sckpt), whose file permissions a job's output is read with; None: not a real user's."""

    @property
    def acting_user(self) -> str | None:
        """Who the controller sees acting, known without asking it; None: only
        ``cluster_info`` says."""
        return None

    @property
    def cluster_names(self) -> tuple[str, ...]:
        """The clusters ``-M`` chose (``engines/clusters.py``); () for one cluster."""
        return ()

    @abstractmethod
    def cluster_info(self) -> ClusterInfo:
        """Cluster name, Slurm version, switch and proctrack types, acting user."""

    @abstractmethod
    def snapshot(self) -> Snapshot:
        """Jobs with their steps and each step's checkpoint state.

        Engines reuse the controller's "no change since" answer: when nothing changed they
        return the previous jobs with ``changed=False``.  A failure raises
        (``ControllerUnreachable`` ...); the facade turns it into a stale snapshot.
        """

    @abstractmethod
    def ping(self) -> float:
        """One small round trip to the controller, in seconds; raises when it does not
        answer.  The console asks this, not a full listing, while its data is stale."""

    @abstractmethod
    def step_processes(self, target: StepId) -> StepProcesses:
        """The step's pids per node (its proctrack container); loaded on demand."""

    @abstractmethod
    def interconnect(self, target: StepId) -> Interconnect:
        """The switch type and the step's network request."""

    @abstractmethod
    def job_stdio(self, target: StepId) -> JobStdio:
        """The job's output and error paths as ``scontrol show job`` gives them."""

    # The nine checkpoint operations, with the seed man page's arguments.
    @abstractmethod
    def able(self, target: StepId) -> AbleResult:
        """Whether checkpoints can be issued now (raises ``Disabled`` when not)."""

    @abstractmethod
    def error(self, target: StepId) -> CheckpointError:
        """The last checkpoint error (code 0 when none)."""

    @abstractmethod
    def create(self, target: StepId, max_wait: int, image_dir: str | None) -> ActionResult:
        """Checkpoint and continue."""

    @abstractmethod
    def vacate(
        self, target: StepId, max_wait: int, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        """Checkpoint, then terminate the step.

        ``force``: the cooperative engine refuses to end tasks that have no image (a failed
        checkpoint, a program that does not catch its signal, a step not under ``sckpt
        run``) unless it is set.  On Slurm <= 19.05 (native) and in the simulated cluster
        the controller itself ends the step after the attempt, as it always did; they
        accept ``force`` and have nothing to check.
        """

    @abstractmethod
    def restart(
        self, target: StepId, stick: bool, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        """Resume a checkpointed job under the same job id: ``target`` is the job or its
        batch step (the row's ``job_level``: the facade refused any other step first).

        ``force``: the cooperative engine refuses a restart in which a task's recorded image
        is missing or unreadable (the task would start from zero) unless it is set.  The
        native and simulated controllers restart from their own records and accept it.
        """

    @abstractmethod
    def enable(self, target: StepId) -> ActionResult:
        """Decrement the disable counter (never below zero)."""

    @abstractmethod
    def disable(self, target: StepId) -> ActionResult:
        """Increment the disable counter."""

    @abstractmethod
    def complete(
        self, target: StepId, begin_time: int, error_code: int, error_msg: str
    ) -> ActionResult:
        """Report a finished checkpoint; only the highest error code is kept."""

    @abstractmethod
    def tasks(
        self, target: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> ActionResult:
        """Ask the step's tasks on ``nodelist`` to checkpoint themselves."""

    # sckpt run's own checkpoints.
    @abstractmethod
    def auto(
        self, target: StepId, every: int | None, before_end: int | None, off: bool
    ) -> ActionResult:
        """Change the automatic-checkpoint policy of a running step (of each running step
        of a job): ``every`` seconds (``arguments.EVERY_AUTO``: Young and Daly's interval)
        and ``before_end`` seconds, None leaving each as it is; ``off`` clears it.  Only a
        step under ``sckpt run`` has one (the cooperative engine; the demo's simulates it)."""

    # The four job-control verbs (scancel, scontrol hold/release/requeue).
    @abstractmethod
    def cancel(self, target: StepId, signal: int | None) -> ActionResult:
        """End the job or step as scancel does; with ``signal``, only send that signal."""

    @abstractmethod
    def hold(self, target: StepId) -> ActionResult:
        """Hold the job (priority 0), as scontrol hold."""

    @abstractmethod
    def release(self, target: StepId) -> ActionResult:
        """Release a held job, as scontrol release."""

    @abstractmethod
    def requeue(self, target: StepId) -> ActionResult:
        """Requeue a batch job (it ends, then pends again), as scontrol requeue."""

    def now(self) -> float:
        """The engine's clock (the simulated controller's in the demo and tests): accounting
        windows are measured back from it."""
        return time.time()

    # Accounting (slurmdbd): asked only when a person asks, never by ``snapshot``.
    def job_records(self, job_id: int, since: int, until: int = 0) -> tuple[JobRecord, ...]:
        """Every accounting record of a job (each requeue is one); engines without a
        Slurm to ask raise ``AccountingUnavailable``."""
        raise AccountingUnavailable(message=f"the {self.name} engine has no accounting")

    def finished_jobs(self, since: int, until: int = 0) -> tuple[JobRecord, ...]:
        """The jobs that ended in the window, from accounting."""
        raise AccountingUnavailable(message=f"the {self.name} engine has no accounting")

    def checkpoint_events(
        self, job_id: int, work_dir: str, uid: int
    ) -> tuple[StepCheckpointEvent, ...]:
        """The checkpoint history the engine keeps of a job's steps (none by default)."""
        return ()

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release threads and libraries; the default has nothing to release."""


def engine_methods() -> tuple[str, ...]:
    """The public methods of the ``Engine`` interface, in its order: what a layer that only
    forwards (``readonly.ReadOnlyEngine``) defines, derived instead of listed."""
    return tuple(
        name
        for name, member in vars(Engine).items()
        if not name.startswith("_") and inspect.isfunction(member)
    )
