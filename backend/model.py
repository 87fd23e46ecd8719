"""The frozen records every engine returns and the UI and CLI read.

These are sckpt's own, independent of the Slurm release: the libslurm shim flattens each
release's structs into them, the simulated cluster builds them directly.  Special step
numbers use the values of Slurm 20.11 and later; the shim translates older ones.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

# Special step numbers (Slurm >= 20.11 values; sckpt's canonical ones on every release).
NO_VAL = 0xFFFFFFFE
WHOLE_JOB = NO_VAL
"""A target naming the whole job: every running step (``scontrol checkpoint op 123``)."""
STEP_BATCH = 0xFFFFFFFB
STEP_EXTERN = 0xFFFFFFFC
STEP_PENDING = 0xFFFFFFFD
STEP_INTERACTIVE = 0xFFFFFFFA

MAX_TEXT = 1024
"""Longest checkpoint error message (or history text) sckpt keeps: an operator's
``complete --error-msg``, a program's status line and every text read from a state file a
job's owner can write are cut there, so ``--json`` carries at most this much of each."""

_STEP_NAMES = {
    STEP_BATCH: "batch",
    STEP_EXTERN: "extern",
    STEP_PENDING: "pending",
    STEP_INTERACTIVE: "interactive",
}


@dataclass(frozen=True, slots=True, order=True)
class StepId:
    """A job, one of its steps, or (``step == WHOLE_JOB``) the whole job.

    ``str()`` gives the form users type and ``squeue -s`` prints: ``123``, ``123.4``,
    ``123.batch``, ``123.extern``, ``123.interactive``; a task of a job array as squeue
    names it, ``7_3`` and ``7_3.0`` (``array_task_id`` set).

    ``job_id`` is the record's own job id, the one libslurm acts on.  The array fields only
    name it (they are left out of ``==``, hashing and ordering), so ``7_3.0`` is the same
    step as its job's own ``9.0``.  A target typed as ``7_3`` before it is looked up has
    ``job_id`` 0 (``unresolved``): the facade finds the record before any engine sees it.
    """

    job_id: int
    step: int = WHOLE_JOB
    het_comp: int = NO_VAL
    cluster: str = ""
    """The cluster whose controller the target is on, with ``-M`` (several clusters in one
    console); "" names slurm.conf's own cluster.  Not part of ``str()``: Slurm's tools name
    the cluster with ``-M``, never inside a job id."""
    array_job_id: int = field(default=0, compare=False)
    """The job array's id (squeue's ``%F``) when the job is an array task, else 0."""
    array_task_id: int | None = field(default=None, compare=False)
    """The task's index in its array (squeue's ``%K``), else None."""

    @property
    def is_whole_job(self) -> bool:
        return self.step == WHOLE_JOB

    @property
    def unresolved(self) -> bool:
        """Typed as ``ARRAY_TASK`` and not yet looked up: no engine may act on it."""
        return self.job_id == 0 and self.array_task_id is not None

    @property
    def whole_job(self) -> StepId:
        """The job this names (on the same cluster)."""
        return StepId(
            self.job_id,
            cluster=self.cluster,
            array_job_id=self.array_job_id,
            array_task_id=self.array_task_id,
        )

    @property
    def job_text(self) -> str:
        """The job part as squeue prints it: ``123`` or, for an array task, ``7_3``."""
        if self.array_task_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        return str(self.job_id)

    @property
    def is_batch(self) -> bool:
        return self.step == STEP_BATCH

    @property
    def step_text(self) -> str:
        """The part after the dot: ``4``, ``batch``, ``extern``; empty for the whole job."""
        if self.step == WHOLE_JOB:
            return ""
        return _STEP_NAMES.get(self.step, str(self.step))

    def __str__(self) -> str:
        job = self.job_text
        return f"{job}.{self.step_text}" if self.step_text else job


class JobState(enum.StrEnum):
    """Base job states, named as ``squeue --json`` names them."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    PREEMPTED = "PREEMPTED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"

    @property
    def short(self) -> str:
        """squeue's compact code (``R``, ``PD``, ``CD`` ...)."""
        return _SHORT[self]

    @property
    def is_finished(self) -> bool:
        # A frozenset of members: a StrEnum hashes as its (cached) str, where a tuple
        # of class attributes costs three lookups and compares.  The console asks this
        # for every job of every changed listing (10,000 times per refresh at scale).
        return self in FINISHED_STATES


ACTIVE_STATES = frozenset({JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED})
"""States of a job that has not finished (what ``squeue`` lists by default)."""

FINISHED_STATES = frozenset(JobState) - ACTIVE_STATES
"""States of a job that has finished (``JobState.is_finished``; a set, so that a whole
listing can be tested in C: ``map(FINISHED_STATES.__contains__, states)``)."""

_SHORT = {
    JobState.PENDING: "PD",
    JobState.RUNNING: "R",
    JobState.SUSPENDED: "S",
    JobState.COMPLETED: "CD",
    JobState.CANCELLED: "CA",
    JobState.FAILED: "F",
    JobState.TIMEOUT: "TO",
    JobState.NODE_FAIL: "NF",
    JobState.PREEMPTED: "PR",
    JobState.BOOT_FAIL: "BF",
    JobState.DEADLINE: "DL",
    JobState.OUT_OF_MEMORY: "OOM",
}


TIME_UNLIMITED = -1
"""``Job.time_limit`` of a job without one (Slurm's INFINITE: squeue says UNLIMITED)."""


@dataclass(frozen=True, slots=True)
class Job:
    """One job as the controller reports it (times are Unix seconds, 0 = not set)."""

    job_id: int
    name: str
    user: str
    uid: int
    partition: str
    state: JobState
    state_reason: str = ""
    nodes: str = ""
    """Nodelist in Slurm's compressed form (``node[1-3]``); empty while pending."""
    num_nodes: int = 0
    num_cpus: int = 0
    num_tasks: int = 0
    submit_time: int = 0
    start_time: int = 0
    end_time: int = 0
    work_dir: str = ""
    comment: str = ""
    held: bool = False
    """Priority 0 (held by user or admin), as after ``scontrol requeuehold``."""
    restart_count: int = 0
    batch: bool = False
    """Whether the job has a batch script (and so a ``.batch`` step)."""
    required_nodes: str = ""
    account: str = ""
    """The job's account (``squeue -A``, ``%a``); empty when the controller has none."""
    array_job_id: int = 0
    """The job array's id when this record is part of one (squeue ``%F``), else 0."""
    array_task_id: int | None = None
    """This record's task (squeue ``%K``); None for an array's pending tasks not yet split
    off (``array_task_str`` says which) and for a job that is no array."""
    array_task_str: str = ""
    """The pending tasks this one record holds, as libslurm gives them: ``1-50%2`` (the
    ``%2`` is the array's limit of tasks running at once); empty for a single task."""
    array_max_tasks: int = 0
    """How many of the array's tasks may run at once (``--array=...%N``); 0: no limit."""
    tres_req: str = ""
    """Requested trackable resources, as squeue ``-O tres`` prints them:
    ``cpu=4,mem=8G,node=1,billing=4,gres/gpu=2`` (what the job asked for)."""
    tres_per_node: str = ""
    """Generic resources asked per node (``--gres``, squeue ``-O tres-per-node``):
    ``gres:gpu:2`` (``gres/gpu:2`` from 23.02 on)."""
    tres_alloc: str = ""
    """Trackable resources allocated to a job that started (empty while pending)."""
    sched_nodes: str = ""
    """The nodes the scheduler plans a pending job on (squeue ``--start``'s SCHEDNODES)."""
    suspend_time: int = 0
    """When the job was last suspended or resumed (Slurm's ``suspend_time``; 0: never)."""
    pre_sus_time: int = 0
    """Seconds it ran before that suspend or resume (Slurm's ``pre_sus_time``)."""
    time_limit: int | None = None
    """The job's time limit in minutes (squeue ``%l``); ``TIME_UNLIMITED`` for none, None
    when it is not set."""
    priority: int = 0
    """Its scheduling priority (squeue ``%Q``); 0 while held."""
    qos: str = ""
    """Its quality of service (squeue ``%q``); empty when Slurm has none."""
    dependency: str = ""
    """What it waits for (squeue ``%E``, ``afterok:12(unfulfilled)``); empty: nothing."""
    min_memory: int = 0
    """The memory it asked for, in MB (squeue ``%m``): per node, or per CPU with
    ``memory_per_cpu``; 0 when it asked for none."""
    memory_per_cpu: bool = False
    """``min_memory`` is per CPU (``--mem-per-cpu``), not per node (``--mem``)."""
    requeue: bool = True
    """Slurm may requeue it (scontrol's ``Requeue=``; ``sbatch --no-requeue``: False)."""

    def time_left(self, now: float) -> int | None:
        """Seconds until the time limit, as squeue's ``%L`` computes it (the limit minus
        ``time_used``; negative once past it); None without a limit (unlimited, not set)."""
        if self.time_limit is None or self.time_limit == TIME_UNLIMITED:
            return None
        return self.time_limit * 60 - self.time_used(now)

    def time_used(self, now: float) -> int:
        """Seconds the job has run, as squeue's ``job_time_used`` computes TIME: 0 before
        it starts, frozen while it is suspended (its end time is then the limit, not an
        end), and without the suspended time once it was resumed.  Every TIME sckpt shows
        comes from here, so ``ls``, ``-o %M``, ``--parsable``, ``-S M`` and the console
        agree."""
        if not self.start_time or self.state is JobState.PENDING:
            return 0
        if self.state is JobState.SUSPENDED:
            return self.pre_sus_time
        running = self.state is JobState.RUNNING or not self.end_time
        end = int(now) if running else self.end_time
        if self.suspend_time:
            return max(0, end - self.suspend_time + self.pre_sus_time)
        return max(0, end - self.start_time)

    @property
    def tres(self) -> str:
        """The job's resources as squeue ``-O tres-alloc`` prints them: allocated once it
        started, else requested (empty when Slurm reports neither)."""
        return self.tres_alloc or self.tres_req

    @property
    def expected_start(self) -> int:
        """When a pending job is expected to start (squeue ``--start``), 0 when Slurm has
        no estimate (held, a dependency, the backfill scheduler has not planned it)."""
        return self.start_time if self.state is JobState.PENDING else 0

    @property
    def label(self) -> str:
        """The job id as squeue prints it: ``123``, ``7_3`` or ``7_[4-50%2]``."""
        return job_label(self)

    @property
    def is_array(self) -> bool:
        return self.array_job_id != 0

    @property
    def array_task_count(self) -> int:
        """How many array tasks this record stands for: 1 for a task (or a plain job), the
        size of its range for pending tasks not yet split off (0 when libslurm cut the
        range short with ``...``)."""
        if not self.array_task_str:
            return 1
        try:
            return len(expand_task_ranges(self.array_task_str))
        except ValueError:
            return 0


_RANGE = re.compile(r"([0-9]{1,10})(?:-([0-9]{1,10})(?::([0-9]{1,10}))?)?")
MAX_ARRAY_TASKS = 4_000_001
"""Slurm's own limit (MaxArraySize is at most 4000001): a range naming more is refused."""


def expand_task_ranges(text: str) -> tuple[int, ...]:
    """``1-5,7,10-20:5%2`` -> (1, 2, 3, 4, 5, 7, 10, 15, 20): the task ids of an array
    range as Slurm writes them (a ``%N`` limit at the end is ignored).  ``ValueError`` for
    anything else, including a range libslurm cut short with ``...``."""
    body = text.partition("%")[0]
    ids: list[int] = []
    for part in body.split(","):
        match = _RANGE.fullmatch(part.strip())
        if match is None:
            raise ValueError(f"not a task range: {part!r}")
        low = int(match[1])
        high = int(match[2]) if match[2] is not None else low
        stride = int(match[3]) if match[3] is not None else 1
        if high < low or stride < 1 or len(ids) + (high - low) // stride >= MAX_ARRAY_TASKS:
            raise ValueError(f"not a task range: {part!r}")
        ids.extend(range(low, high + 1, stride))
    return tuple(ids)


def compress_task_ids(ids: tuple[int, ...] | list[int]) -> str:
    """(1, 2, 3, 5) -> ``1-3,5``: task ids as Slurm writes a range (sorted, runs joined)."""
    parts: list[str] = []
    run: list[int] = []
    for task in sorted(set(ids)):
        if run and task == run[-1] + 1:
            run.append(task)
            continue
        if run:
            parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [task]
    if run:
        parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(parts)


def job_label(job: Job) -> str:
    """squeue's JOBID: ``123``; an array task ``7_3``; pending tasks ``7_[4-50%2]``."""
    if job.array_task_str:
        return f"{job.array_job_id}_[{job.array_task_str}]"
    if job.array_task_id is not None and job.array_job_id:
        return f"{job.array_job_id}_{job.array_task_id}"
    return str(job.job_id)


def job_order(job: Job) -> tuple[int, int]:
    """squeue's job id order (``-S i``): an array's tasks together under the array's id, by
    task, its pending tasks' record after them; other jobs by their own id."""
    if job.array_task_id is None:
        return (job.job_id, NO_VAL)
    return (job.array_job_id, job.array_task_id)


def job_step_id(job: Job, step: int = WHOLE_JOB, cluster: str = "") -> StepId:
    """The id of ``job`` (or of its step ``step``), naming its array task when it is one."""
    if job.array_job_id and job.array_task_id is not None:
        return StepId(
            job.job_id,
            step,
            cluster=cluster,
            array_job_id=job.array_job_id,
            array_task_id=job.array_task_id,
        )
    return StepId(job.job_id, step, cluster=cluster)


def label_steps(job: Job, steps: Sequence[Step]) -> tuple[Step, ...]:
    """``steps`` with ids that name ``job``'s array task (``7_3.0``), as squeue ``-s``
    prints them; unchanged (the same objects) for a job that is no array task."""
    if job.array_task_id is None or not job.array_job_id:
        return tuple(steps)
    return tuple(
        replace(
            s,
            step_id=replace(
                s.step_id, array_job_id=job.array_job_id, array_task_id=job.array_task_id
            ),
        )
        for s in steps
    )


@dataclass(frozen=True, slots=True)
class JobStdio:
    """Where a job's standard output and error go, as ``scontrol show job`` says (StdOut=,
    StdErr=): Slurm's defaults applied and its patterns (``%j %u %x %A %a %N``) expanded.

    Asked for one job when an operator wants its output, not in every refresh.  An empty
    path: the job has no such file (an ``salloc``/``srun`` job writes to its terminal).
    """

    job_id: int
    std_out: str
    std_err: str
    state: JobState
    uid: int
    user: str
    batch: bool = False


@dataclass(frozen=True, slots=True)
class Step:
    """One job step (``.batch``, ``.extern`` and numbered steps alike)."""

    step_id: StepId
    name: str
    user: str
    uid: int
    partition: str
    state: str
    """Step state as Slurm names it (RUNNING, COMPLETING, ...)."""
    nodes: str = ""
    num_tasks: int = 0
    num_cpus: int = 0
    start_time: int = 0
    run_time: int = 0
    network: str = ""
    """The step's interconnect request (``srun --network``), from the switch plugin's view."""
    submit_line: str = ""
    """The srun command line that launched the step (Slurm 21.08 and later; "" before, and
    for the batch and extern steps): whether it runs ``sckpt run`` whatever srun named it."""


class CheckpointKind(enum.StrEnum):
    """What the console shows in a step's checkpoint column."""

    ABLE = "able"
    DISABLED = "disabled"
    IN_PROGRESS = "in_progress"
    NOT_SUPPORTED = "not_supported"
    PENDING = "pending"
    """Not applicable: the job has not started."""
    ENDED = "ended"
    """Not applicable: the job or step has finished ("ended", not "done": a checkpoint's
    outcome is ``completed`` in ``progress.py``'s words, and "done" read as that)."""
    UNKNOWN = "unknown"
    """Not asked yet (for instance: too many steps to ask in one refresh)."""
    STARTING = "starting"
    """A step launched as ``srun sckpt run`` whose wrapper has not registered it yet."""


@dataclass(frozen=True, slots=True)
class CheckpointError:
    """The last checkpoint error of a step: the highest code reported, with its message."""

    code: int
    name: str
    message: str


@dataclass(frozen=True, slots=True)
class CheckpointEvent:
    """One line of a step's checkpoint history (engines that keep one)."""

    time: int
    operation: str
    by: str
    code: int
    message: str = ""
    image_dir: str = ""
    cause: str = ""
    """What started a checkpoint's lines: ``operator``, or the step's own policy
    (``interval``, ``before end``, ``SIGTERM``); "" for other lines and other engines."""


RUN_BY = "sckpt run"
"""Who the history names for a step's own checkpoints, and who set a policy from ``sckpt
run``'s options (an operator's ``sckpt auto`` names the operator)."""


@dataclass(frozen=True, slots=True)
class AutoCheckpoints:
    """A step's automatic-checkpoint policy and where it stands (``sckpt run --every`` ...)."""

    every: int = 0
    """Seconds between interval checkpoints (0: none; with ``auto``, the current one)."""
    auto: bool = False
    """The interval follows Young and Daly's rule from the measured checkpoint cost."""
    before_end: int = 0
    """Checkpoint this long before the job's end, then requeue it (0: no)."""
    max_restarts: int = 0
    next_due: int = 0
    """When the next interval checkpoint is due (0: none)."""
    end_time: int = 0
    """The job's end time as the step last read it (0: unknown)."""
    chain_end: str = ""
    """Why the requeue chain ended ("" while it goes on)."""
    set_by: str = ""
    """``RUN_BY`` (its options, the config, the environment), or the operator whose
    ``sckpt auto`` changed it."""

    @property
    def active(self) -> bool:
        return bool(self.every or self.auto or self.before_end)


@dataclass(frozen=True, slots=True)
class CheckpointState:
    """A step's checkpoint state, as ``able`` and ``error`` would report it, plus context."""

    kind: CheckpointKind
    disable_count: int = 0
    """The disable counter; 0 with ``DISABLED`` when the engine cannot read it (native)."""
    in_progress_since: int = 0
    reason: str = ""
    """Why not supported / not applicable, in words."""
    last_error: CheckpointError | None = None
    image_dir: str = ""
    last_checkpoint_time: int = 0
    history: tuple[CheckpointEvent, ...] = ()
    checkpointer: str = ""
    """``transparent (DMTCP 4.2.0)`` for a step under ``sckpt run --transparent``; ""
    otherwise (the program's own checkpoint, or Slurm's plugin)."""
    image_bytes: int = 0
    """Size of the last complete image, all tasks together (0: not known)."""
    checkpoint_seconds: float = 0.0
    """How long the last complete checkpoint took (its slowest task; 0: not known)."""
    coordinator: str = ""
    """``step`` (one DMTCP coordinator: a checkpoint is one cut of every task) or ``task``
    under ``sckpt run --transparent``; "" otherwise or not known."""
    slowest_task: int = -1
    """The task whose part of the last checkpoint took longest (``checkpoint_seconds``), when
    the step has more than one task measured; -1 otherwise."""
    start_notes: tuple[str, ...] = ()
    """How each task of this run of the step started (``task 0: resumed from generation
    3 (PATH)``, ``task 1: started fresh: ...``), where the engine knows (cooperative)."""
    auto: AutoCheckpoints | None = None
    """The step's automatic checkpoints, where it has a policy (None: only on request)."""
    outside: tuple[str, ...] = ()
    """Connections to outside the step named at its last transparent checkpoint (``task 0
    pid 42 (app): TCP 10.0.0.1:5000 -> 10.0.0.9:5432``): DMTCP does not restore them."""

    @property
    def failed_code(self) -> int:
        """The code of the step's last checkpoint error, 0 when its last one did not fail
        (Slurm keeps the highest code reported until the next checkpoint starts)."""
        return self.last_error.code if self.last_error is not None else 0


@dataclass(frozen=True, slots=True)
class StepView:
    """A step with its checkpoint state."""

    step: Step
    checkpoint: CheckpointState


@dataclass(frozen=True, slots=True)
class JobView:
    """A job with its steps (only running jobs have any)."""

    job: Job
    steps: tuple[StepView, ...] = ()
    cluster: str = ""
    """The cluster the job is on, with ``-M``; "" for slurm.conf's own (no ``-M``)."""
    stale: bool = False
    """With ``-M``: the job's cluster did not answer the latest refresh (its last data)."""


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """Facts shown in the header and by ``sckpt doctor``."""

    cluster_name: str
    slurm_version: str
    engine: str
    """``native``, ``cooperative`` or ``simulated``."""
    acting_user: str
    switch_type: str = ""
    proctrack_type: str = ""
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one refresh knows, and how fresh it is.

    ``changed`` is False when the engine answered "no change since last time" (Slurm's
    SLURM_NO_CHANGE_IN_DATA): ``jobs`` is then the previous data, unchanged.
    ``stale`` is True when the latest refresh failed; ``stale_since`` says when the data
    last was fresh and ``error`` why it is not.
    """

    jobs: tuple[JobView, ...]
    taken_at: float
    changed: bool = True
    stale: bool = False
    stale_since: float = 0.0
    error: str = ""
    clusters: tuple[ClusterFreshness, ...] = ()
    """With ``-M``: each cluster's freshness (one being down leaves the others fresh)."""


@dataclass(frozen=True, slots=True)
class ClusterFreshness:
    """How fresh one cluster's part of a ``-M`` snapshot is."""

    name: str
    stale: bool = False
    last_fresh: float = 0.0
    """When its controller last answered (0: never)."""
    error: str = ""


@dataclass(frozen=True, slots=True)
class NodePids:
    """The processes of a step on one node: the proctrack container's view."""

    node: str
    pids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StepProcesses:
    """A step's process container, node by node (``slurm_job_step_get_pids``)."""

    step_id: StepId
    nodes: tuple[NodePids, ...]
    proctrack_type: str = ""


@dataclass(frozen=True, slots=True)
class Interconnect:
    """A step's interconnect: the switch plugin in use and the step's network request."""

    step_id: StepId
    switch_type: str
    network: str = ""


@dataclass(frozen=True, slots=True)
class AbleResult:
    """``able``: checkpoints can be issued; ``in_progress_since`` is 0 when none runs."""

    target: StepId
    in_progress_since: int = 0
    notes: tuple[str, ...] = ()
    """What else a person asking should know: a task that started from zero after a
    restart (its image was missing), or runs without checkpoint support."""


@dataclass(frozen=True, slots=True)
class ResumeState:
    """One look at a restarted job: its state and how each task of its steps started."""

    target: StepId
    state: JobState
    notes: tuple[str, ...] = ()
    """``5.0 task 0: resumed from generation 3 (PATH)``, one per task that said so."""
    resumed: bool = True
    """False when a task said it started from zero or runs without checkpoint support."""


@dataclass(frozen=True, slots=True)
class ActionResult:
    """The outcome of a mutating operation that Slurm accepted."""

    target: StepId
    operation: str
    detail: str = ""
    per_step: tuple[tuple[StepId, int], ...] = field(default=())
    """Whole-job requests: the code each running step answered."""
    notes: tuple[str, ...] = ()
    """What else the person must be told, one line each: a transparent checkpoint's
    connections DMTCP will not restore (``peers.py``)."""


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One accounting record of a job, as slurmdbd keeps it (``sacct --duplicates``).

    Each requeue or restart of a job leaves a record of its own under the same job id, so a
    job's history is a list of these.  Times are Unix seconds (0: not set, e.g. ``end_time``
    of a record still running); ``state`` is Slurm's name with its flags folded in, as sacct
    prints it (``REQUEUED``, ``CANCELLED``, ``NODE_FAIL`` ...).
    """

    job_id: int
    cluster: str
    name: str
    user: str
    uid: int
    partition: str
    state: str
    exit_code: int = 0
    """The batch script's (or job's) exit status, sacct's ``ExitCode`` before the colon."""
    signal: int = 0
    """The signal that ended it, sacct's ``ExitCode`` after the colon (0: none)."""
    submit_time: int = 0
    eligible_time: int = 0
    start_time: int = 0
    end_time: int = 0
    nodes: str = ""
    account: str = ""
    work_dir: str = ""
    restart_count: int | None = None
    """Slurm's own restart count of the record (24.11 and later); None when not recorded."""
    cancelled_by: int | None = None
    """The uid that cancelled it (sacct's ``CANCELLED by UID``); None when not cancelled."""
    array_job_id: int = 0
    array_task_id: int | None = None
    het_job_id: int = 0
    het_job_offset: int | None = None


@dataclass(frozen=True, slots=True)
class StepCheckpointEvent:
    """A checkpoint event of one of the job's steps (the cooperative store's history)."""

    step_id: StepId
    event: CheckpointEvent


@dataclass(frozen=True, slots=True)
class JobHistory:
    """A job's records from accounting, oldest first, with its steps' checkpoint events.

    ``since``/``limit`` are the bounds the query ran with; ``truncated`` says that more
    records matched than ``limit`` (the newest ``limit`` are kept).
    """

    job_id: int
    cluster: str
    records: tuple[JobRecord, ...]
    checkpoints: tuple[StepCheckpointEvent, ...] = ()
    since: int = 0
    limit: int = 0
    truncated: bool = False
    skipped: int = 0
    """How many older records ``limit`` left out (so the first shown is run ``skipped``)."""


@dataclass(frozen=True, slots=True)
class FinishedJobs:
    """Jobs that ended in a window, from accounting (newest first, at most ``limit``)."""

    records: tuple[JobRecord, ...]
    since: int
    limit: int
    truncated: bool = False
    taken_at: float = 0.0
