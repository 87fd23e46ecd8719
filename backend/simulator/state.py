"""What the simulated controller keeps, and the rules every part of it reads by.

``ClusterState`` is the controller's data that its parts share (its settings, its jobs, which
of them changed since the listing was last rebuilt, the listing's version, the steps under
``sckpt run``) and the small rules on it they all apply: who the caller is and may act on
(checks 1-6 of the controller, ``rules.py``'s) and which steps an operation acts on.  The
parts each hold it and keep their own data themselves (``cluster.py`` says which part is
which); none of them is a subclass of another.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from .. import rules
from ..errors import ESLURM_USER_ID_MISSING, AccessDenied, InvalidJobId
from ..model import AutoCheckpoints, StepId
from ..rules import Caller
from .catalog import SLURM_UID, SLURM_USER, uid_for
from .plugins import CheckpointPlugin, plugin_for
from .records import JobRec, StepRec, TransparentStep, step_of
from .staging import Staging


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """How the simulated cluster was built (``SimulatedCluster``'s arguments say what each
    means); read by every part, changed by none."""

    seed: int
    users: tuple[Caller, ...]
    """The job owners."""
    checkpoint_type: str
    prolog_contain: bool
    checkpoint_dir_exists: bool
    job_checkpoint_dir: str
    cluster_name: str
    arrivals: bool
    min_job_age: int
    numbered_steps: int | None


class ClusterState:
    """The simulated controller's shared data and the rules its parts share."""

    def __init__(
        self, settings: ClusterSettings, clock: Callable[[], float], first_job_id: int
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.plugin: CheckpointPlugin = plugin_for(settings.checkpoint_type)
        self.slurm_user = Caller(SLURM_UID, SLURM_USER, is_slurm_user=True)
        self.lock = threading.RLock()
        """Held by every call into the controller (the parts never take another)."""
        self.jobs: dict[int, JobRec] = {}
        self.dirty: set[int] = set()
        """Jobs changed since the listing was last rebuilt (``views.Views``)."""
        self.version = 0
        """Moves whenever anything changed (the listing's ``last_job_update``)."""
        self.next_job_id = first_job_id
        self.first_job_id = first_job_id
        self.transparent: dict[int, dict[int, TransparentStep]] = {}
        """Job id -> step number -> the step launched under ``sckpt run --transparent``."""
        self.auto: dict[int, dict[int, tuple[AutoCheckpoints, int]]] = {}
        """Job id -> step number -> (its automatic-checkpoint policy, when the next interval
        checkpoint is due: 0 for none).  The policies are shared objects (``touches.py``'s
        few), so a step under one costs a tuple, not a policy of its own."""
        self.now = clock()
        """The latest time the controller has seen (its clock never goes back)."""
        self.staging = Staging()
        """A cluster built in two parts: whether the rest is still to come (``staging.py``)."""

    def user(self, name: str) -> Caller:
        """The simulated user called ``name`` (root, slurm, a job owner, anyone)."""
        uid = uid_for(name)
        return Caller(uid, name, is_slurm_user=uid == SLURM_UID)

    def owned(self, caller: Caller, job_id: int, *, update: bool = False) -> JobRec:
        """A job the caller may control (owner, root or SlurmUser), else the refusal.
        ``update``: a change through ``update_job`` (hold, release), which slurmctld
        refuses with ESLURM_USER_ID_MISSING ("Invalid user id", scontrol's words) where
        scancel and requeue get ESLURM_ACCESS_DENIED."""
        rec = self.jobs.get(job_id)
        if rec is None:
            raise InvalidJobId()
        if not (caller.is_root or caller.is_slurm_user or caller.uid == rec.job.uid):
            raise AccessDenied(ESLURM_USER_ID_MISSING if update else None)
        return rec

    def checks(self, caller: Caller, target: StepId, *, suspended_ok: bool = False) -> JobRec:
        """Checks 1-5 of the controller (``rules.check_job``); the step, check 6, after."""
        rec = self.jobs.get(target.job_id)
        job = rec.job if rec is not None else None
        rules.check_job(target, job, caller, suspended_ok=suspended_ok)
        assert rec is not None
        return rec

    def targets(self, rec: JobRec, target: StepId) -> list[StepRec]:
        """The steps an operation acts on (``rules.steps_acted_on``)."""
        return rules.steps_acted_on(target, rec.steps.values(), step_of)
