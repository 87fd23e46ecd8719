"""What the simulated controller keeps, and the rules every part of it reads by.

``ClusterState`` declares the controller's data (its jobs, the events to come, the saved
job records, the listing's version...) and the small rules on it that the other parts
share: who the caller is and may act on (checks 1-6 of the controller, ``rules.py``'s),
where a step's image goes, how long a checkpoint takes.  Each part of the controller is a
subclass that adds one concern, in this order (each module imports only the ones before
it): ``population.Population`` (data generation), ``touches.DemoTouches`` (the demo's
touches), ``events.Timeline`` (time), ``views.Views`` (what is listed and answered),
``jobctl.JobControl`` (scancel/scontrol), ``checkpoint.CheckpointController`` (the
checkpoint API), ``autopolicy.AutoPolicies`` (``sckpt run``'s automatic checkpoints),
``cluster.SimulatedCluster`` (the arguments)."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from pathlib import Path

from .. import rules
from ..checkpointing.protocol import image_leaf
from ..errors import ESLURM_USER_ID_MISSING, AccessDenied, InvalidJobId
from ..model import AutoCheckpoints, Job, JobView, Step, StepId
from ..rules import Caller
from .accounting import Accounting
from .catalog import FAIL_CODES, SLURM_UID, stable_hash, uid_for
from .clock import EventQueue
from .output import DemoOutput
from .plugins import CheckpointPlugin
from .records import (
    CheckpointScript,
    JobRec,
    Listing,
    SavedRecord,
    StepRec,
    TransparentStep,
    step_of,
)


class ClusterState:
    """The simulated controller's data (set by ``SimulatedCluster.__init__``) and the rules
    its parts share."""

    seed: int
    clock: Callable[[], float]
    users: tuple[Caller, ...]
    """The job owners."""
    slurm_user: Caller
    checkpoint_type: str
    plugin: CheckpointPlugin
    prolog_contain: bool
    checkpoint_dir_exists: bool
    job_checkpoint_dir: str
    cluster_name: str
    arrivals: bool
    min_job_age: int
    numbered_steps: int | None
    _lock: threading.RLock
    _rng: random.Random
    _now: float
    """The latest time the controller has seen (its clock never goes back)."""
    _jobs: dict[int, JobRec]
    _families: dict[str, tuple[str, int, int]]
    """Node families: kind -> (prefix, width of the number, count)."""
    _events: EventQueue
    _dbd: Accounting
    _output: DemoOutput | None
    _output_paths: dict[int, tuple[str, str]]
    _listed_jobs: dict[int, Job]
    """Each job's record, in job id order: what ``load_jobs`` lists."""
    _step_records: dict[int, tuple[Step, ...]]
    """Each job's step records as listed, one tuple per job, replaced only when the job
    changes (``StepsResult.by_job``: see ``Views.listing``)."""
    _dirty: set[int]
    """Jobs changed since the listing was last rebuilt."""
    _version: int
    _returned_version: int
    _listed: Listing
    _last_snapshot: tuple[JobView, ...]
    _records: dict[str, SavedRecord]
    """Saved job records by path (the simulated ``<dir>/<jobid>.ckpt`` files)."""
    _scripts: dict[StepId, CheckpointScript]
    """Forced checkpoint outcomes (``SimulatorControl.script_checkpoint``)."""
    _pending_codes: dict[tuple[StepId, int], int]
    """The code each running checkpoint will end with, by (step, checkpoint token)."""
    _next_job_id: int
    _first_job_id: int
    _transparent: dict[int, dict[int, TransparentStep]]
    """Job id -> step number -> the step launched under ``sckpt run --transparent``."""
    _auto: dict[int, dict[int, tuple[AutoCheckpoints, int]]]
    """Job id -> step number -> (its automatic-checkpoint policy, when the next interval
    checkpoint is due: 0 for none).  The policies are shared objects (``touches.py``'s
    few), so a step under one costs a tuple, not a policy of its own."""
    _pending_causes: dict[tuple[StepId, int], str]
    """What started each running automatic checkpoint, by (step, checkpoint token): its
    ``done`` line says it too."""

    def _tick(self) -> None:
        """Apply every event due by now (``events.Timeline``: population, which comes
        before time, submits jobs only after it)."""
        raise NotImplementedError

    def _auto_due(self, rec: JobRec, step: int, when: int, token: int = 0) -> None:
        """An ``auto`` event: a step's automatic checkpoint is due (``autopolicy.py``)."""
        raise NotImplementedError

    def now(self) -> float:
        """The cluster's current time (its clock)."""
        return self.clock()

    def user(self, name: str) -> Caller:
        """The simulated user called ``name`` (root, slurm, a job owner, anyone)."""
        uid = uid_for(name)
        return Caller(uid, name, is_slurm_user=uid == SLURM_UID)

    @property
    def size(self) -> tuple[int, int]:
        """(jobs, steps) currently known."""
        with self._lock:
            return len(self._jobs), sum(len(r.steps) for r in self._jobs.values())

    def _owned(self, caller: Caller, job_id: int, *, update: bool = False) -> JobRec:
        """A job the caller may control (owner, root or SlurmUser), else the refusal.
        ``update``: a change through ``update_job`` (hold, release), which slurmctld
        refuses with ESLURM_USER_ID_MISSING ("Invalid user id", scontrol's words) where
        scancel and requeue get ESLURM_ACCESS_DENIED."""
        rec = self._jobs.get(job_id)
        if rec is None:
            raise InvalidJobId()
        if not (caller.is_root or caller.is_slurm_user or caller.uid == rec.job.uid):
            raise AccessDenied(ESLURM_USER_ID_MISSING if update else None)
        return rec

    def _checks(self, caller: Caller, target: StepId, *, suspended_ok: bool = False) -> JobRec:
        """Checks 1-5 of the controller (``rules.check_job``); the step, check 6, after."""
        rec = self._jobs.get(target.job_id)
        job = rec.job if rec is not None else None
        rules.check_job(target, job, caller, suspended_ok=suspended_ok)
        assert rec is not None
        return rec

    def _targets(self, rec: JobRec, target: StepId) -> list[StepRec]:
        """The steps an operation acts on (``rules.steps_acted_on``)."""
        return rules.steps_acted_on(target, rec.steps.values(), step_of)

    def _image_path(self, rec: JobRec, srec: StepRec, image_dir: str | None) -> str:
        """(image_dir, else the step's checkpoint dir) + /<job>.<step> (or /<job> for batch);
        for a step under ``sckpt run --transparent``, the wrapper's layout instead: task 0's
        next generation, ``<root>/<job>.<name>/task0/g<N>``."""
        root = image_dir or srec.ckpt_dir or rec.job.work_dir
        sid = srec.step.step_id
        marked = self._transparent.get(sid.job_id, {}).get(sid.step)
        if marked is not None:
            leaf = image_leaf(sid, marked.name)
            generation = f"g{marked.generation + 1}"
            if _plain_path(root) and "/" not in leaf:  # what Path makes of it, 5x faster
                return f"{root}/{leaf}/task0/{generation}"
            return str(Path(root) / leaf / "task0" / generation)
        return rules.image_path(root, sid)

    def _checkpoint_outcome(self, rec: JobRec, srec: StepRec) -> tuple[float, int]:
        """How long the next checkpoint of a step takes and which code it ends with."""
        scripted = self._scripts.get(srec.step.step_id)
        if scripted is not None:
            return scripted.duration, scripted.code
        sid = srec.step.step_id
        h = stable_hash(self.seed, sid.job_id, sid.step, srec.ckpt_count)
        # Mostly a few seconds (inside scontrol's default MaxWait of 10 s), sometimes long.
        duration = 2 + h % 7 if (h >> 12) % 6 else 12 + h % 30
        code = FAIL_CODES[(h >> 8) % len(FAIL_CODES)] if (h >> 4) % 9 == 0 else 0
        return float(duration), code

    def _image_done(self, rec: JobRec, srec: StepRec, t: int, seconds: float) -> None:
        """A transparent step's checkpoint ended well: ``srec.image_dir`` is its new last
        image (``_image_path`` named it), of a size drawn from the seed, the step and the
        generation (tens to hundreds of MB a task: a program's resident memory)."""
        sid = srec.step.step_id
        marked = self._transparent.get(sid.job_id, {})
        was = marked.get(sid.step)
        if was is None:
            return
        generation = was.generation + 1
        per_task = (20 + stable_hash(self.seed, sid.job_id, sid.step, generation) % 280) * 1_000_000
        marked[sid.step] = TransparentStep(  # every field: ``replace`` is 3x slower
            name=was.name,
            checkpointer=was.checkpointer,
            generation=generation,
            image_dir=srec.image_dir,
            image_bytes=per_task * max(1, srec.step.num_tasks),
            checkpoint_seconds=seconds,
            last_time=t,
        )
        srec.last_ckpt = t


def _plain_path(path: str) -> bool:
    """Whether ``path`` is absolute and already as ``Path`` writes it (no doubled slash, no
    ``.`` component, no trailing slash): then joining it with ``/`` gives Path's string.
    The demo names ~20,000 image directories so while it builds 100,000 jobs."""
    return (
        path.startswith("/")
        and len(path) > 1
        and "//" not in path
        and "/." not in path
        and not path.endswith("/")
    )
