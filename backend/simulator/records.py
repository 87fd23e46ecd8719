"""What the simulated controller keeps of its jobs and steps: the mutable records
(``JobRec``, ``StepRec``), the records it answers with, and the small rules on one record
(the kept error, "in progress", a checkpoint event in a step's history).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from .. import rules
from ..errors import describe
from ..model import STEP_EXTERN, CheckpointEvent, Job, JobState, Step, StepId
from .catalog import stable_hash, tres
from .construct import fast_init

SIMULATED_RELEASE = "19.05.8"

SIMULATED_VERSION = f"{SIMULATED_RELEASE} (simulated)"

REQUEUE_BEGIN_DELAY = 120
"""slurmctld holds a requeued job back this long (its begin time) before it may start."""

DEFAULT_JOB_CHECKPOINT_DIR = "/var/slurm/checkpoint"

HISTORY_LIMIT = 20

AUTO_INTERVAL = 0
AUTO_BEFORE_END = 1
"""The token of an ``auto`` event: which of a step's automatic checkpoints is due."""


@dataclass(frozen=True, slots=True)
class SavedRecord:
    """A job record saved by create/vacate of a batch job (``<dir>/<jobid>.ckpt``)."""

    path: str
    job_id: int
    uid: int
    user: str
    job: Job


@dataclass(frozen=True, slots=True)
class Listing:
    """One answer to ``load_jobs``/``get_steps``: both come from the same listing."""

    version: int
    """Passed back by the client as ``prev_update``."""
    jobs: tuple[Job, ...]
    steps: tuple[Step, ...]
    by_job: dict[int, tuple[Step, ...]]
    """``StepsResult.by_job``: each job's step records (an unchanged job's tuple is the
    last listing's object)."""


@dataclass(frozen=True, slots=True)
class CheckpointScript:
    """A forced outcome for the next checkpoints of one step (``SimulatorControl``)."""

    duration: float
    code: int = 0


@dataclass(frozen=True, slots=True)
class TransparentStep:
    """A demo step launched under ``sckpt run --transparent``: what the wrapper's state
    files say of it on a real cluster (``CoopEngine.checkpoint_state``), kept by the
    simulated controller so that the demo's engine can show it (``SimulatedEngine``)."""

    name: str
    """Its ``sckpt run --name``: the image directory's leaf ``<job>.<name>``."""
    checkpointer: str
    """``transparent (DMTCP 4.2.0)``."""
    generation: int = 0
    """The number of its last complete image (``g<N>``); 0 before the first."""
    image_dir: str = ""
    """Task 0's last complete image, ``<root>/<job>.<name>/task0/g<N>``."""
    image_bytes: int = 0
    """The last image's size, all tasks together."""
    checkpoint_seconds: float = 0.0
    """How long the last complete checkpoint took."""
    last_time: int = 0
    """When the last complete checkpoint ended."""


class StepRec:
    """A step and its plugin state (mutable; views are rebuilt from it)."""

    __slots__ = (
        "ckpt_count",
        "ckpt_dir",
        "ckpt_start",
        "ckpt_token",
        "ckpt_vacate",
        "disable_count",
        "error_code",
        "error_msg",
        "history",
        "image_dir",
        "last_ckpt",
        "replies",
        "step",
        "tasks_time",
    )

    def __init__(self, step: Step, ckpt_dir: str) -> None:
        self.step = step
        self.ckpt_dir = ckpt_dir
        self.disable_count = 0
        self.ckpt_start = 0
        self.ckpt_token = 0
        self.ckpt_vacate = False
        self.replies = 0
        """checkpoint/ompi's reply count: the running checkpoint has been reported."""
        self.tasks_time = 0
        """slurmstepd's time stamp of the last ``tasks`` request."""
        self.ckpt_count = 0
        self.error_code = 0
        self.error_msg = ""
        self.image_dir = ""
        self.last_ckpt = 0
        self.history: list[CheckpointEvent] | None = None


class JobRec:
    """A job, its steps and what the scheduler will do with it."""

    __slots__ = (
        "app",
        "begin_at",
        "duration",
        "env",
        "fails",
        "job",
        "n_nodes",
        "n_numbered",
        "requeue",
        "steps",
        "token",
    )

    def __init__(self, job: Job, app: int, duration: int, fails: bool, n_numbered: int) -> None:
        self.job = job
        self.app = app
        self.duration = duration
        self.fails = fails
        self.n_numbered = n_numbered
        self.steps: dict[int, StepRec] = {}
        self.token = 0
        self.requeue = False
        self.env: dict[str, str] = {}
        self.n_nodes = 0
        """The node count the job asked for (0 until it first runs: drawn then)."""
        self.begin_at = 0


def with_allocation(
    job: Job,
    state: JobState,
    reason: str,
    nodes: str,
    n_nodes: int,
    cpus: int,
    start: int,
    end: int,
) -> Job:
    """``job`` placed on nodes (every field given: ``replace`` is 3x slower)."""
    return make_job(
        job.job_id,
        job.name,
        job.user,
        job.uid,
        job.partition,
        state,
        reason,
        nodes,
        n_nodes,
        cpus,
        cpus,
        job.submit_time,
        start,
        end,
        job.work_dir,
        job.comment,
        False,
        job.restart_count,
        job.batch,
        job.required_nodes,
        job.account,
        job.array_job_id,
        job.array_task_id,
        job.array_task_str,
        job.array_max_tasks,
        job.tres_req or tres(job.partition, n_nodes, cpus),
        job.tres_per_node,
        tres(job.partition, n_nodes, cpus) if state is not JobState.PENDING else "",
        "",
        0,
        0,
        job.time_limit,
        job.priority,
        job.qos,
        job.dependency,
        job.min_memory,
        job.memory_per_cpu,
    )


def pending_again(job: Job, reason: str, **changes: Any) -> Job:
    """``job`` back to PENDING for another run (requeued, or restarted from its record):
    off its nodes, no start or end yet, one more restart; ``changes`` besides."""
    return replace(
        job,
        state=JobState.PENDING,
        state_reason=reason,
        nodes="",
        num_nodes=0,
        start_time=0,
        end_time=0,
        restart_count=job.restart_count + 1,
        **changes,
    )


_JOB_ORDER = (
    "job_id name user uid partition state state_reason nodes num_nodes num_cpus num_tasks "
    "submit_time start_time end_time work_dir comment held restart_count batch required_nodes "
    "account array_job_id array_task_id array_task_str array_max_tasks tres_req tres_per_node "
    "tres_alloc sched_nodes suspend_time pre_sus_time time_limit priority qos dependency "
    "min_memory memory_per_cpu requeue"
)

_STEP_ORDER = (
    "step_id name user uid partition state nodes num_tasks num_cpus start_time run_time network "
    "submit_line"
)
if " ".join(f.name for f in fields(Job)) != _JOB_ORDER or (
    " ".join(f.name for f in fields(Step)) != _STEP_ORDER
):  # pragma: no cover - fails loudly the day model.py reorders its fields
    raise ImportError("model.Job/Step fields changed: update the positional calls in simulator/")

make_job = fast_init(Job)
"""``Job(...)`` with every field positional, ~45 % cheaper (``construct.py``)."""
make_step = fast_init(Step)
"""``Step(...)`` likewise."""
make_step_id = fast_init(StepId)
"""``StepId(...)`` likewise."""


def record_event(
    srec: StepRec,
    t: int,
    operation: str,
    by: str,
    code: int,
    image_dir: str = "",
    cause: str = "",
    message: str = "",
) -> None:
    """Add a checkpoint event to the step's history (the last ``HISTORY_LIMIT`` are kept);
    ``cause`` says what started a checkpoint (``interval`` ... for a step's own policy)."""
    history = srec.history if srec.history is not None else []
    said = message or (strerror(code) if code else "")
    history.append(CheckpointEvent(t, operation, by, code, said, image_dir, cause))
    if len(history) > HISTORY_LIMIT:
        del history[: len(history) - HISTORY_LIMIT]
    srec.history = history


def numbered_of(rec: JobRec) -> list[StepRec]:
    """The job's numbered steps (srun's), not its batch or extern step."""
    return [s for k, s in rec.steps.items() if k < STEP_EXTERN - 16]


def strerror(code: int) -> str:
    """The message Slurm's strerror gives for a code (errno text for small codes)."""
    return describe(code)[1]


def keep_highest(srec: StepRec, code: int, message: str) -> None:
    """A completion report (``rules.kept_error``) on a step's plugin state."""
    srec.error_code, srec.error_msg = rules.kept_error(
        srec.error_code, srec.error_msg, code, message
    )


def step_of(srec: StepRec) -> Step:
    return srec.step


def untouched(srec: StepRec) -> bool:
    """Never disabled, started or failed: the shared plain ``able`` state applies.

    checkpoint/ompi starts a checkpoint without a history event (a create refused while
    disabled still stamps it), so the start time is checked too.
    """
    return (
        srec.history is None
        and not srec.disable_count
        and not srec.error_code
        and not srec.ckpt_start
    )


def in_progress(srec: StepRec) -> bool:
    """A checkpoint began and has not been reported (BLCR never counts replies)."""
    return bool(srec.ckpt_start) and not srec.replies


def srun_parent_pid(rec: JobRec) -> int:
    """The pid srun's forked child reports as the message (the batch shell's, on a node)."""
    return 1000 + stable_hash(rec.job.job_id, 0x5A) % 60000
