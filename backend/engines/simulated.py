"""The simulated cluster: an in-process Slurm 19.05 controller with a checkpoint plugin.

Why it exists: no Slurm release still supported has the checkpoint API, so the console's
demo (``sckpt --demo``), its UI tests and the rule tests need a cluster that follows the
historical rules (``shared/reference/checkpoint-semantics.md``).  ``SimulatedCluster`` is the
controller; ``connect(user)`` gives its client library, ``SimulatedSlurm``, a ``SlurmAPI``
like the cffi binding, so the demo is the native engine over it (several connections, one
per user, may share one controller: that is how the tests check access).  The rules
themselves are ``backend/rules.py``'s; the controller calls them.

Plugins (``checkpoint_type``): ``checkpoint/blcr`` (the default: the reference's rules),
``checkpoint/ompi`` (what the real 19.05 test cluster runs, as ``tests/differential/OMPI.md``
found it; the differential tests hold it equal to that controller) and ``checkpoint/none``.

Rules, in the controller's order of checks (``_checks``):

1. no such job -> ESLURM_INVALID_JOB_ID
2. caller neither owner nor root -> ESLURM_ACCESS_DENIED (job-level requests: SlurmUser too)
3. pending -> ESLURM_JOB_PENDING
4. suspended -> ESLURM_DISABLED (job-level request: ESLURM_JOB_SUSPENDED)
5. not running -> ESLURM_ALREADY_DONE
6. no such step -> ESLURM_INVALID_JOB_ID
7. the plugin (checkpoint/blcr here; checkpoint/none answers ESLURM_NOT_SUPPORTED).

"Job-level" requests are the whole job (``123``) and the batch script (``123.batch``): in
Slurm 19.05 ``SLURM_BATCH_SCRIPT`` *was* ``NO_VAL``, so both reached the controller's
job-level path (SlurmUser allowed, ESLURM_JOB_SUSPENDED, job record saved by create/vacate,
restart accepted).  They differ in what the plugin acts on: the whole job acts on every
RUNNING step and reports the highest code; ``123.batch`` acts on the batch step alone.

Plugin (BLCR) behaviour: disable/enable are a counter (enable at 0 stays 0); able is
ESLURM_DISABLED while the counter is non-zero; create/vacate are ESLURM_DISABLED while
disabled, EALREADY while one runs, otherwise they reset the error and run for at most
``max_wait`` seconds (0 = no limit) in simulated time; at the end the error code/message
record the result (ETIME when max_wait ran out).  vacate then terminates the step (the
batch step's end ends the job).  ``complete`` keeps only the highest error code.
Restart: whole job/batch only (else ESLURM_NOT_SUPPORTED), ESLURM_JOB_NOT_FINISHED while
the job runs, ENOENT without the saved record ``<dir>/<jobid>.ckpt``, EINVAL when the
record is for another job, EPERM for a non-owner who is neither root nor SlurmUser; the
job is resubmitted under the same id, pinned to its old nodes with ``stick``, and its
tasks get ``SLURM_RESTART_DIR``.

Time: the cluster reads an injectable clock (``ManualClock`` for tests: it only moves on
``advance``).  Events (job start/end, checkpoint end, new submissions) sit in a heap and
are applied lazily on every call, in time order, so the outcome does not depend on how
often anyone looks.  Everything random comes from ``random.Random(seed)`` or from a hash
of ids, so the same seed, size and clock give the same cluster.

Scale: 100,000 jobs and ~300,000 steps.  Views (``JobView``) are built once and rebuilt
only for jobs that changed, so ``snapshot()`` costs one tuple of the cached views.
"""

from __future__ import annotations

import contextlib
import errno as _errno
import gc
import heapq
import pwd
import random
import signal as _signal
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from itertools import chain
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

from .. import operations, rules
from ..checkpointing.dmtcp import DmtcpInstall, checkpointer_label
from ..checkpointing.protocol import image_leaf
from ..errors import (
    ESLURM_ALREADY_DONE,
    ESLURM_BATCH_ONLY,
    ESLURM_DISABLED,
    ESLURM_JOB_FINISHED,
    ESLURM_JOB_NOT_PENDING,
    ESLURM_NOT_SUPPORTED,
    ESLURM_TRANSITION_STATE_NO_UPDATE,
    ESLURM_USER_ID_MISSING,
    ESLURMD_JOB_NOTRUNNING,
    ESLURMD_STEP_SUSPENDED,
    AccessDenied,
    AlreadyDone,
    Disabled,
    InvalidJobId,
    JobPending,
    NoSuchImage,
    NotSupported,
    SlurmError,
    UsageError,
    describe,
    error_for,
)
from ..hostlist import compress_range, expand_hostlist
from ..model import (
    STEP_BATCH,
    STEP_EXTERN,
    AbleResult,
    ActionResult,
    CheckpointError,
    CheckpointEvent,
    CheckpointKind,
    CheckpointState,
    Interconnect,
    Job,
    JobRecord,
    JobState,
    JobStdio,
    JobView,
    NodePids,
    Snapshot,
    Step,
    StepCheckpointEvent,
    StepId,
    StepProcesses,
    StepView,
    compress_task_ids,
    expand_task_ranges,
    label_steps,
)
from ..rules import Caller
from ..slurm_api import ControllerConfig, JobsResult, StepsResult
from .demo_output import DemoOutput

DEMO_EPOCH = 1_780_000_000.0
T = TypeVar("T")
SIMULATED_RELEASE = "19.05.8"
CHECKPOINT_TYPES = ("checkpoint/blcr", "checkpoint/ompi", "checkpoint/none")
SIMULATED_VERSION = f"{SIMULATED_RELEASE} (simulated)"
REQUEUE_BEGIN_DELAY = 120
"""slurmctld holds a requeued job back this long (its begin time) before it may start."""
_DEADLY = frozenset({_signal.SIGKILL, _signal.SIGTERM, _signal.SIGINT})
"""The signals that end a simulated task (its programs install no handler for them)."""

"""2026-05-28 20:26:40 UTC: the start of ``ManualClock`` unless told otherwise."""
DEFAULT_JOB_CHECKPOINT_DIR = "/var/slurm/checkpoint"
DEMO_USERS = ("alice", "bob", "carol", "dmitri", "erin", "farid", "grace")
SLURM_USER = "slurm"
SLURM_UID = 64030
HISTORY_LIMIT = 20
DEMO_HISTORY_JOBS = 40
"""The demo's jobs with an hourly checkpoint history (``_demo_hourly``)."""
TRANSPARENT_ONE_IN = 10
"""One running job in this many (chosen by a hash of the seed and its id) runs its steps
under ``sckpt run --transparent`` in the demo (``_demo_transparent``)."""
DEMO_DMTCP = DmtcpInstall(Path("/var/cache/sckpt/dmtcp-4.2.0"), "4.2.0", "cache")
"""The DMTCP the demo's transparent steps pretend to run under (only its label is shown)."""
ETIME = _errno.ETIME
BIG_CLUSTER = 10_000
"""From this many jobs on, the built records are hidden from the cyclic GC (gc.freeze)."""

# (job name, step executable, partition kind)
_APPS: tuple[tuple[str, str, str], ...] = (
    ("lammps-eq", "lmp_mpi", "cpu"),
    ("gromacs-md", "gmx_mpi", "cpu"),
    ("vasp-relax", "vasp_std", "cpu"),
    ("wrf-forecast", "wrf.exe", "cpu"),
    ("train-resnet50", "python", "gpu"),
    ("namd-apoa1", "namd2", "cpu"),
    ("cp2k-aimd", "cp2k.psmp", "cpu"),
    ("openfoam-motorbike", "simpleFoam", "cpu"),
    ("bwa-align", "bwa", "cpu"),
    ("nwchem-dft", "nwchem", "cpu"),
    ("qe-scf", "pw.x", "cpu"),
    ("paraview-render", "pvbatch", "cpu"),
    ("alphafold-msa", "python", "gpu"),
    ("cesm-b1850", "cesm.exe", "cpu"),
    ("ray-tune", "python", "gpu"),
    ("gatk-haplo", "gatk", "bigmem"),
    ("velvet-assembly", "velvetg", "bigmem"),
)
_CPU_PARTITIONS = ("batch", "batch", "batch", "debug", "long")
_UNFINISHED = frozenset({"PENDING", "RUNNING", "SUSPENDED", "REQUEUED"})
"""Record states of runs that did not end the job (the finished-jobs window skips them)."""
_CPU_NODES = (1, 1, 1, 2, 2, 4, 8)
_NUMBERED = (1, 2, 3, 3, 4, 5)
_COMMENTS = (
    "project CHEM-0042",
    "rerun of the failed March batch",
    "ticket #1187: slow I/O on /scratch",
    "ask alice before cancelling",
)
"""``sbatch --comment`` texts; one job in three carries one (see ``_demo_comment``)."""
_PENDING_REASONS = ("Priority", "Resources", "Priority", "Resources", "Dependency", "JobHeldUser")
_FAIL_CODES = (_errno.ENOSPC, _errno.EIO, _errno.ENOMEM, _errno.EACCES)
_STATE_WEIGHTS = (
    (JobState.PENDING, 14),
    (JobState.RUNNING, 64),
    (JobState.SUSPENDED, 3),
    (JobState.COMPLETED, 11),
    (JobState.FAILED, 4),
    (JobState.CANCELLED, 4),
)
_REQUIRED_STATES = tuple(state for state, _ in _STATE_WEIGHTS)


class ManualClock:
    """A clock that moves only when told to: deterministic tests and screenshots."""

    def __init__(self, start: float = DEMO_EPOCH) -> None:
        self._now = float(start)

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward (never backward: Slurm's times never go back)."""
        if seconds < 0:
            raise ValueError("a ManualClock only moves forward")
        self._now += seconds


@dataclass(frozen=True, slots=True)
class SavedRecord:
    """A job record saved by create/vacate of a batch job (``<dir>/<jobid>.ckpt``)."""

    path: str
    job_id: int
    uid: int
    user: str
    job: Job


_PAST_STATES = (JobState.COMPLETED,) * 6 + (
    JobState.FAILED,
    JobState.TIMEOUT,
    JobState.CANCELLED,
    JobState.OUT_OF_MEMORY,
)
"""How the seeded past's jobs ended (``_past_record``): mostly completed."""


@dataclass(frozen=True, slots=True)
class _Listing:
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
    """A forced outcome for the next checkpoints of one step (test hook)."""

    duration: float
    code: int = 0


def _h(*parts: int) -> int:
    """A stable hash of ids: outcomes that do not depend on call order."""
    return zlib.crc32(b"/".join(str(p).encode() for p in parts))


def _numbered(rec: _JobRec) -> list[_StepRec]:
    """The job's numbered steps (srun's), not its batch or extern step."""
    return [s for k, s in rec.steps.items() if k < STEP_EXTERN - 16]


def uid_for(name: str) -> int:
    """The uid of a simulated user: fixed for the demo users, else from passwd, else hashed."""
    if name == "root":
        return 0
    if name == SLURM_USER:
        return SLURM_UID
    if name in DEMO_USERS:
        return 1001 + DEMO_USERS.index(name)
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return 50000 + zlib.crc32(name.encode()) % 10000


class _Bits:
    """Many small choices from one big random draw (generation of 100,000 jobs in seconds)."""

    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value

    def take(self, n: int) -> int:
        """A number in ``range(n)`` (mixed-radix digits of the draw)."""
        value = self.value
        self.value = value // n
        return value % n


_NODE_MEMORY = {"gpu": "512G", "bigmem": "2T"}
_NODE_GPUS = {"gpu": 4}


def _tres(partition: str, n_nodes: int, cpus: int) -> str:
    """A TRES string as Slurm writes one (``cpu=64,mem=250G,node=1,billing=64``, then
    ``gres/gpu=4`` on GPU nodes): what the simulated job asked for or was given."""
    n = max(1, n_nodes)
    memory = _NODE_MEMORY.get(partition, "250G")
    amount, unit = int(memory[:-1]) * n, memory[-1]
    text = f"cpu={max(1, cpus)},mem={amount}{unit},node={n},billing={max(1, cpus)}"
    gpus = _NODE_GPUS.get(partition, 0) * n
    return f"{text},gres/gpu={gpus}" if gpus else text


def _gres(partition: str) -> str:
    """``--gres`` of a simulated job, as 22.05's squeue ``-O tres-per-node`` writes it."""
    gpus = _NODE_GPUS.get(partition, 0)
    return f"gres:gpu:{gpus}" if gpus else ""


def _with_allocation(
    job: Job,
    state: JobState,
    reason: str,
    nodes: str,
    n_nodes: int,
    cpus: int,
    start: int,
    end: int,
) -> Job:
    """``job`` placed on nodes (a direct constructor call: ``replace`` is 3x slower)."""
    return Job(
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
        job.tres_req or _tres(job.partition, n_nodes, cpus),
        job.tres_per_node,
        _tres(job.partition, n_nodes, cpus) if state is not JobState.PENDING else "",
        "",
    )


_JOB_ORDER = (
    "job_id name user uid partition state state_reason nodes num_nodes num_cpus num_tasks "
    "submit_time start_time end_time work_dir comment held restart_count batch required_nodes "
    "account array_job_id array_task_id array_task_str array_max_tasks tres_req tres_per_node "
    "tres_alloc sched_nodes"
)
_STEP_ORDER = (
    "step_id name user uid partition state nodes num_tasks num_cpus start_time run_time network"
)
if " ".join(f.name for f in fields(Job)) != _JOB_ORDER or (
    " ".join(f.name for f in fields(Step)) != _STEP_ORDER
):  # pragma: no cover - fails loudly the day model.py reorders its fields
    raise ImportError("model.Job/Step fields changed: update the positional calls in simulated.py")


@dataclass(frozen=True, slots=True)
class TransparentStep:
    """A demo step launched under ``sckpt run --transparent``: what the wrapper's state
    files say of it on a real cluster (``CoopEngine.checkpoint_state``), kept by the
    simulated controller so that the demo's engine can show it (``DemoEngine``)."""

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


_NO_TRANSPARENT: Mapping[int, TransparentStep] = MappingProxyType({})


class _StepRec:
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


class _JobRec:
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
        self.steps: dict[int, _StepRec] = {}
        self.token = 0
        self.requeue = False
        self.env: dict[str, str] = {}
        self.n_nodes = 0
        """The node count the job asked for (0 until it first runs: drawn then)."""
        self.begin_at = 0


_ABLE = CheckpointState(kind=CheckpointKind.ABLE)


class SimulatedCluster:
    """A deterministic in-process cluster following Slurm 19.05's checkpoint rules.

    Arguments: ``seed`` and ``n_jobs`` fix the generated cluster; ``clock`` (default
    ``time.time``; pass ``ManualClock()`` for tests) is read on every call; ``users`` are the
    job owners (default ``DEMO_USERS``); ``checkpoint_type`` ``"checkpoint/blcr"`` (works)
    or ``"checkpoint/none"`` (every op ESLURM_NOT_SUPPORTED after the state checks);
    ``job_checkpoint_dir`` is slurm.conf's JobCheckpointDir ("" = none configured);
    ``arrivals`` submits a new job every few minutes so the demo stays alive;
    ``demo_touches`` disables a few steps, starts one checkpoint and leaves one error so
    the demo shows every state; ``min_job_age`` is how long a job that finishes during
    the simulation stays known (slurm.conf's MinJobAge; jobs generated as finished stay);
    ``numbered_steps`` fixes how many numbered steps a batch job runs (default: 1-5 drawn
    per job), for benchmarks that need many steps per job; ``arrays`` adds the demo's job
    arrays after the generated jobs (``_demo_arrays``: running tasks, a pending range with
    a run limit, a held array), so the other jobs keep their ids and fields; ``output_dir``
    (the demo's) gives batch jobs real output files there (``demo_output.py``; "" = none,
    the paths alone, as before).
    """

    def __init__(
        self,
        seed: int = 42,
        n_jobs: int = 48,
        clock: Callable[[], float] | None = None,
        *,
        users: Sequence[str] = DEMO_USERS,
        checkpoint_type: str = "checkpoint/blcr",
        prolog_contain: bool = True,
        checkpoint_dir_exists: bool = True,
        job_checkpoint_dir: str = DEFAULT_JOB_CHECKPOINT_DIR,
        cluster_name: str = "demo",
        arrivals: bool = True,
        demo_touches: bool = True,
        min_job_age: int = 3600,
        first_job_id: int = 184_201,
        numbered_steps: int | None = None,
        output_dir: str = "",
        arrays: bool = False,
    ) -> None:
        if n_jobs < 0:
            raise UsageError("n_jobs must be 0 or more")
        if not users:
            raise UsageError("the simulated cluster needs at least one user")
        self.seed = seed
        self.clock: Callable[[], float] = clock if clock is not None else time.time
        self._output_paths: dict[int, tuple[str, str]] = {}
        self._output = DemoOutput(output_dir) if output_dir else None
        self.users = tuple(Caller(uid_for(name), name) for name in users)
        self.slurm_user = Caller(SLURM_UID, SLURM_USER, is_slurm_user=True)
        if checkpoint_type not in CHECKPOINT_TYPES:
            raise UsageError(f"checkpoint_type must be one of {', '.join(CHECKPOINT_TYPES)}")
        self.checkpoint_type = checkpoint_type
        self._ompi = checkpoint_type == "checkpoint/ompi"
        self.prolog_contain = prolog_contain
        self.checkpoint_dir_exists = checkpoint_dir_exists
        self.job_checkpoint_dir = job_checkpoint_dir
        self.cluster_name = cluster_name
        self.arrivals = arrivals
        self.min_job_age = min_job_age
        if numbered_steps is not None and numbered_steps < 0:
            raise UsageError("numbered_steps must be 0 or more")
        self.numbered_steps = numbered_steps
        self._lock = threading.RLock()
        self._rng = random.Random(seed)
        self._jobs: dict[int, _JobRec] = {}
        self._listed_jobs: dict[int, Job] = {}
        """Each job's record, in job id order: what ``load_jobs`` lists."""
        self._step_records: dict[int, tuple[Step, ...]] = {}
        """Each job's step records as listed, one tuple per job, replaced only when the job
        changes (``StepsResult.by_job``: see ``listing``)."""
        self._dirty: set[int] = set()
        self._events: list[tuple[float, int, str, int, int, int]] = []
        self._seq = 0
        self._version = 0
        self._returned_version = -1
        self._listed = _Listing(-1, (), (), {})
        self._last_snapshot: tuple[JobView, ...] = ()
        self._records: dict[str, SavedRecord] = {}
        self._scripts: dict[StepId, CheckpointScript] = {}
        self._pending_codes: dict[tuple[StepId, int], int] = {}
        self._next_job_id = first_job_id
        self._first_job_id = first_job_id
        self._transparent: dict[int, dict[int, TransparentStep]] = {}
        """Job id -> step number -> the step launched under ``sckpt run --transparent``."""
        self._acct: dict[int, list[JobRecord]] = {}
        """Accounting: each job's closed runs (requeued or ended), as slurmdbd keeps them."""
        self._past_ids = range(0)
        """Jobs that ended before the demo began, known only to accounting (seeded)."""
        self._past_now = 0
        """When the seeded past was drawn (its end times count back from it)."""
        # Node families: (prefix, width, count, partitions)
        cpu = max(32, n_jobs // 3)
        width = max(3, len(str(cpu)))
        self._families = {
            "cpu": ("cn", width, cpu),
            "gpu": (
                "gpu",
                2 if n_jobs < 400 else len(str(max(8, n_jobs // 40))),
                max(8, n_jobs // 40),
            ),
            "bigmem": (
                "bigmem",
                2 if n_jobs < 400 else len(str(max(2, n_jobs // 200))),
                max(2, n_jobs // 200),
            ),
        }
        self._now = self.clock()
        # The records form no reference cycles, and the cyclic collector walking a
        # million young objects again and again costs half the time of a 100,000-job
        # build: pause it while building, and for big clusters move what was built out
        # of its sight (gc.freeze; the objects are still freed by reference counting).
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._generate(n_jobs)
            self._seed_accounting(n_jobs)
            if demo_touches:
                self._demo_touches()
            if arrays:
                self._demo_arrays()
            self._rebuild_dirty()
            if n_jobs >= BIG_CLUSTER:
                gc.freeze()
        finally:
            if enabled:
                gc.enable()

    # ------------------------------------------------------------------ generation

    def _push(self, when: float, kind: str, job_id: int, step: int = 0, token: int = 0) -> None:
        self._seq += 1
        heapq.heappush(self._events, (when, self._seq, kind, job_id, step, token))

    def _allocate(
        self, kind: str, bits: _Bits, required: str = "", n_nodes: int = 0
    ) -> tuple[str, int, int, str]:
        """A contiguous block of nodes: (nodelist, node count, cpus per node, first node).

        ``n_nodes`` (not 0): that many, as the job asked when it was submitted; a job that
        runs again after a requeue or a restart keeps its shape (``_JobRec.n_nodes``).
        """
        prefix, width, count = self._families[kind]
        cpn = 64 if kind == "cpu" else 32
        if required:
            names = expand_hostlist(required)
            return required, len(names), cpn, names[0]
        if n_nodes:
            n = n_nodes
        else:
            n = _CPU_NODES[bits.take(len(_CPU_NODES))] if kind == "cpu" else 1 + bits.take(2)
        n = min(n, count)
        first = 1 + bits.take(count - n + 1)
        return (
            compress_range(prefix, first, first + n - 1, width),
            n,
            cpn,
            f"{prefix}{first:0{width}d}",
        )

    @staticmethod
    def _demo_comment(job_id: int) -> str:
        """A job's comment, from its id alone: the random draws (and so every other field of
        a seeded cluster) stay what they were before jobs had comments."""
        return _COMMENTS[(job_id // 3) % len(_COMMENTS)] if job_id % 3 == 0 else ""

    def _new_job(self, rng: random.Random, state: JobState, now: float) -> _JobRec:
        """One job in ``state``; every choice comes from one draw of ``rng`` (fast, stable)."""
        bits = _Bits(rng.getrandbits(192))
        job_id = self._next_job_id
        self._next_job_id += 1
        user = self.users[bits.take(len(self.users))]
        app = bits.take(len(_APPS))
        name, _exe, kind = _APPS[app]
        partition = _CPU_PARTITIONS[bits.take(len(_CPU_PARTITIONS))] if kind == "cpu" else kind
        home = "/home" if bits.take(10) < 6 else "/scratch"
        batch = bits.take(100) < 85
        duration = 600 + bits.take(36 * 3600 - 600)
        n_numbered = _NUMBERED[bits.take(len(_NUMBERED))] if batch else 1
        if batch and self.numbered_steps is not None:
            n_numbered = self.numbered_steps
        fails = bits.take(10) == 0
        submit = int(now) - 30 - bits.take(6 * 3600)
        reason = ""
        held = False
        if state is JobState.PENDING:
            reason = _PENDING_REASONS[bits.take(len(_PENDING_REASONS))]
            held = reason == "JobHeldUser"
        work_dir = f"{home}/{user.name}/{name}"
        if state in (JobState.RUNNING, JobState.SUSPENDED):
            # Built once, directly in its final state (100,000 jobs: every object counts).
            start = max(submit + 5, int(now) - 60 - bits.take(20 * 3600))
            if start + duration <= now:  # running means it ends in the future
                duration = int(now) - start + 120 + bits.take(8 * 3600)
            placed = self._allocate(kind, bits)
            cpus = placed[1] * placed[2]
            # Positional arguments: 40% cheaper than keywords for a 20-field dataclass
            # (the field order is checked when this module is imported).
            job = Job(
                job_id,
                name,
                user.name,
                user.uid,
                partition,
                state,
                "",
                placed[0],
                placed[1],
                cpus,
                cpus,
                submit,
                start,
                start + duration,
                work_dir,
                self._demo_comment(job_id),
                False,
                0,
                batch,
                "",
                tres_req=_tres(partition, placed[1], cpus),
                tres_per_node=_gres(partition),
                tres_alloc=_tres(partition, placed[1], cpus),
            )
            rec = _JobRec(job, app, duration, fails, n_numbered)
            rec.n_nodes = placed[1]
            self._jobs[job_id] = rec
            self._make_steps(rec, placed, start, suspended=state is JobState.SUSPENDED)
            return rec
        job = Job(
            job_id=job_id,
            name=name,
            user=user.name,
            uid=user.uid,
            partition=partition,
            state=JobState.PENDING,
            state_reason=reason,
            submit_time=submit,
            work_dir=work_dir,
            comment=self._demo_comment(job_id),
            batch=batch,
            held=held,
            tres_req=_tres(partition, 1, 32 if kind == "gpu" else 64),
            tres_per_node=_gres(partition),
        )
        rec = _JobRec(job, app, duration, fails, n_numbered)
        self._jobs[job_id] = rec
        self._dirty.add(job_id)
        if state is JobState.PENDING:
            if reason in ("Priority", "Resources"):
                expected = now + 20 + bits.take(880)
                self._push(expected, "start", job_id, token=rec.token)
                # The backfill scheduler's estimate, as squeue --start shows it.
                rec.job = replace(rec.job, start_time=int(expected))
        else:
            start = submit + 5 + bits.take(1200)
            end = min(int(now) - 5, start + 30 + bits.take(4 * 3600))
            start = min(start, end)
            nodes, n_nodes, cpn, _first = self._allocate(kind, bits)
            rec.job = _with_allocation(
                job,
                state,
                "NonZeroExitCode" if state is JobState.FAILED else "",
                nodes,
                n_nodes,
                n_nodes * cpn,
                start,
                end,
            )
        return rec

    def _start(self, rec: _JobRec, start: int, bits: _Bits, suspended: bool = False) -> None:
        """PENDING -> RUNNING at ``start``: nodes, the batch/extern/numbered steps, the end."""
        kind = _APPS[rec.app][2]
        placed = self._allocate(kind, bits, rec.job.required_nodes, rec.n_nodes)
        rec.n_nodes = placed[1]
        state = JobState.SUSPENDED if suspended else JobState.RUNNING
        rec.job = _with_allocation(
            rec.job,
            state,
            "",
            placed[0],
            placed[1],
            placed[1] * placed[2],
            start,
            start + rec.duration,
        )
        self._make_steps(rec, placed, start, suspended)

    def _make_steps(
        self, rec: _JobRec, placed: tuple[str, int, int, str], start: int, suspended: bool
    ) -> None:
        """The steps of a job that just started, and the event that ends it."""
        job = rec.job
        _name, exe, kind = _APPS[rec.app]
        nodes, n_nodes, cpn, first_node = placed
        cpus = n_nodes * cpn
        rec.token += 1
        jid = job.job_id
        user, uid, partition, work_dir = job.user, job.uid, job.partition, job.work_dir
        step_state = "SUSPENDED" if suspended else "RUNNING"
        steps: dict[int, _StepRec] = {}
        # squeue's order: batch, extern, then the numbered steps.
        if job.batch:
            steps[STEP_BATCH] = _StepRec(
                Step(
                    StepId(jid, STEP_BATCH),
                    "batch",
                    user,
                    uid,
                    partition,
                    step_state,
                    first_node,
                    1,
                    cpn,
                    start,
                ),
                work_dir,
            )
        if self.prolog_contain:
            steps[STEP_EXTERN] = _StepRec(
                Step(
                    StepId(jid, STEP_EXTERN),
                    "extern",
                    user,
                    uid,
                    partition,
                    step_state,
                    nodes,
                    n_nodes,
                    n_nodes,
                    start,
                ),
                work_dir,
            )
        network = "ib" if kind == "cpu" and n_nodes > 1 else ""
        for number in range(rec.n_numbered):
            steps[number] = _StepRec(
                Step(
                    StepId(jid, number),
                    exe,
                    user,
                    uid,
                    partition,
                    step_state,
                    nodes,
                    cpus,
                    cpus,
                    start + 2 + number * 30,
                    0,
                    network,
                ),
                work_dir,
            )
        rec.steps = steps
        self._dirty.add(jid)
        self._push(float(start + rec.duration), "end", jid, token=rec.token)

    def _generate(self, n_jobs: int) -> None:
        rng = self._rng
        now = self._now
        states = rng.choices(
            [s for s, _ in _STATE_WEIGHTS], weights=[w for _, w in _STATE_WEIGHTS], k=n_jobs
        )
        # Every state at least once (when there are enough jobs), at spread positions.
        for k, state in enumerate(_REQUIRED_STATES):
            if n_jobs >= len(_REQUIRED_STATES) and state not in states:
                states[(k * 7) % n_jobs] = state
        for state in states:
            self._new_job(rng, state, now)
        if self.arrivals:
            self._push(now + rng.randint(45, 180), "arrive", 0)

    def _demo_touches(self) -> None:
        """Make the demo show every checkpoint state: disabled, in progress, an old error."""
        running = [r for r in self._jobs.values() if r.job.state is JobState.RUNNING]
        if not running:
            return
        now = int(self._now)
        rng = random.Random(self.seed + 1)
        picks = rng.sample(running, min(len(running), 6))
        for i, rec in enumerate(picks):
            numbered = [s for k, s in rec.steps.items() if k < STEP_EXTERN - 16]
            srec = numbered[0] if numbered else next(iter(rec.steps.values()))
            if i in (0, 1):
                srec.disable_count = i + 1
                self._event(srec, now - 600 * (i + 1), "disable", rec.job.user, 0)
            elif i == 2:
                srec.ckpt_start = now - 4
                srec.ckpt_count = 1
                srec.ckpt_token = 1
                srec.image_dir = self._image_path(rec, srec, None)
                self._event(srec, now - 4, "create", rec.job.user, 0, srec.image_dir)
                self._push(float(now + 26), "ckpt_done", rec.job.job_id, srec.step.step_id.step, 1)
            elif i == 3:
                failed_at = max(now - 1800, (now + srec.step.start_time) // 2)  # once it ran
                srec.error_code = _errno.ENOSPC
                srec.error_msg = _strerror(_errno.ENOSPC)
                srec.last_ckpt = failed_at
                srec.image_dir = self._image_path(rec, srec, None)
                self._event(srec, failed_at, "create", rec.job.user, _errno.ENOSPC, srec.image_dir)
            elif i == 4:
                srec.last_ckpt = now - 900
                srec.image_dir = self._image_path(rec, srec, "/scratch/ckpt")
                self._event(srec, now - 900, "create", rec.job.user, 0, srec.image_dir)
            self._dirty.add(rec.job.job_id)
        self._demo_hourly(running, picks, now)
        self._demo_transparent(running, picks, now)

    def _demo_hourly(self, running: list[_JobRec], picks: list[_JobRec], now: int) -> None:
        """A checkpoint history, as a job checkpointed hourly (by a cron job or by its owner)
        would have: ``history`` and the step detail show events for every running job that
        ran an hour, not only for the touched ones.  At most ``DEMO_HISTORY_JOBS`` jobs, so
        a cluster of 100,000 jobs stays as light as before."""
        touched = {rec.job.job_id for rec in picks}
        chosen = [r for r in running if r.job.job_id not in touched]
        for rec in chosen[:DEMO_HISTORY_JOBS]:
            numbered = [s for k, s in rec.steps.items() if k < STEP_EXTERN - 16]
            if not numbered:
                continue
            srec = numbered[0]
            first = srec.step.start_time + 3600
            times = list(range(first, now - 60, 3600))[-HISTORY_LIMIT:]
            if not times:
                continue
            srec.image_dir = self._image_path(rec, srec, None)
            for t in times:
                self._event(srec, t, "create", rec.job.user, 0, srec.image_dir)
            srec.last_ckpt = times[-1]
            self._dirty.add(rec.job.job_id)

    def _demo_transparent(self, running: list[_JobRec], picks: list[_JobRec], now: int) -> None:
        """One running job in ``TRANSPARENT_ONE_IN`` (a hash of the seed and its id, so no
        other job's draws change) runs its numbered steps under ``sckpt run --transparent``:
        the console shows them as it shows such steps on a real cluster.  The first user
        (the acting user's place, ``demo_users_for``) has at least one such job, since the
        console shows only the caller's own steps' checkpoint state."""
        touched = {rec.job.job_id for rec in picks}
        eligible = [r for r in running if r.job.job_id not in touched and _numbered(r)]
        for rec in eligible:
            if not _h(self.seed, rec.job.job_id, 26) % TRANSPARENT_ONE_IN:
                self._mark_transparent(rec, now, len(self._transparent) < DEMO_HISTORY_JOBS)
        first = self.users[0].name
        if not any(
            rec.job.user == first for rec in eligible if rec.job.job_id in self._transparent
        ):
            # Their newest running job: the oldest ones, at the top of the list, keep what
            # the demo showed before (the README's picture, the snapshot tests).
            mine = next((rec for rec in reversed(eligible) if rec.job.user == first), None)
            if mine is not None:
                self._mark_transparent(mine, now, True)

    def _mark_transparent(self, rec: _JobRec, now: int, history: bool) -> None:
        """The job's numbered steps run under ``sckpt run --transparent``; a step that ran
        an hour has an hourly image history (``g1``, ``g2``...), the last with its size.
        Without ``history`` (past the first ``DEMO_HISTORY_JOBS`` jobs) only the last image
        is recorded, so that a cluster of 100,000 jobs builds about as fast as before."""
        numbered = _numbered(rec)
        marked: dict[int, TransparentStep] = {}
        for srec in numbered:
            step = srec.step
            # Each step its own --name, as sckpt run asks of several steps of one job.
            name = step.name if len(numbered) == 1 else f"{step.name}-{step.step_id.step}"
            marked[step.step_id.step] = TransparentStep(name, checkpointer_label(DEMO_DMTCP))
        self._transparent[rec.job.job_id] = marked
        for srec in numbered:
            first = srec.step.start_time + 3600
            times = range(first, now - 60, 3600)
            kept = times[-HISTORY_LIMIT:] if history else times[-1:]
            if len(times) > len(kept):  # generations before the ones recorded here
                srec.ckpt_count += len(times) - len(kept)
                marked[srec.step.step_id.step] = replace(
                    marked[srec.step.step_id.step], generation=len(times) - len(kept)
                )
            srec.history = None  # a transparent step's images, not the plugin's
            srec.last_ckpt = 0
            for t in kept:
                srec.ckpt_count += 1
                took = self._checkpoint_outcome(rec, srec)[0]
                srec.image_dir = self._image_path(rec, srec, None)
                self._event(srec, t - int(took), "create", rec.job.user, 0, srec.image_dir)
                self._event(srec, t, "done", "", 0, srec.image_dir)
                self._image_done(rec, srec, t, took)
        self._dirty.add(rec.job.job_id)

    def _image_done(self, rec: _JobRec, srec: _StepRec, t: int, seconds: float) -> None:
        """A transparent step's checkpoint ended well: ``srec.image_dir`` is its new last
        image (``_image_path`` named it), of a size drawn from the seed, the step and the
        generation (tens to hundreds of MB a task: a program's resident memory)."""
        sid = srec.step.step_id
        marked = self._transparent.get(sid.job_id, {})
        was = marked.get(sid.step)
        if was is None:
            return
        generation = was.generation + 1
        per_task = (20 + _h(self.seed, sid.job_id, sid.step, generation) % 280) * 1_000_000
        marked[sid.step] = replace(
            was,
            generation=generation,
            image_dir=srec.image_dir,
            image_bytes=per_task * max(1, srec.step.num_tasks),
            checkpoint_seconds=seconds,
            last_time=t,
        )
        srec.last_ckpt = t

    def transparent_steps(self, job_id: int) -> Mapping[int, TransparentStep]:
        """The job's steps launched under ``sckpt run --transparent``, by step number
        (the demo's; none on a cluster built without ``demo_touches``)."""
        with self._lock:
            marked = self._transparent.get(job_id)
            return MappingProxyType(dict(marked)) if marked else _NO_TRANSPARENT

    # ------------------------------------------------------------------ time

    def advance(self, seconds: float) -> None:
        """Test hook: move a ``ManualClock`` forward and apply what happened meanwhile."""
        clock = self.clock
        if not isinstance(clock, ManualClock):
            raise TypeError("advance() needs the cluster to run on a ManualClock")
        with self._lock:
            clock.advance(seconds)
            self._tick()

    def now(self) -> float:
        """The cluster's current time (its clock)."""
        return self.clock()

    def _tick(self) -> None:
        """Apply every event due by now, in time order."""
        now = self.clock()
        if now > self._now:
            self._now = now
        events = self._events
        while events and events[0][0] <= now:
            when, _seq, kind, job_id, step, token = heapq.heappop(events)
            self._apply(when, kind, job_id, step, token)
        if self._output is not None:
            for job_id in self._output.known:
                self._write_output(job_id)

    def _write_output(self, job_id: int) -> None:
        """Bring the job's demo output file up to now (made when first asked for)."""
        rec = self._jobs.get(job_id)
        if rec is None or self._output is None:
            return
        with contextlib.suppress(OSError):  # the demo's directory is gone: no output
            self._output.update(rec.job, _APPS[rec.app][1], int(self._now))

    def _apply(self, when: float, kind: str, job_id: int, step: int, token: int) -> None:
        t = int(when)
        if kind == "arrive":
            rng = self._rng
            new = self._new_job(rng, JobState.PENDING, when)
            expected = when + rng.randint(20, 240)
            new.job = replace(
                new.job,
                submit_time=t,
                state_reason="Priority",
                held=False,
                start_time=int(expected),
            )
            self._push(expected, "start", new.job.job_id, token=new.token)
            self._push(when + rng.randint(45, 180), "arrive", 0)
            self._version += 1
            return
        rec = self._jobs.get(job_id)
        if rec is None:
            return
        if kind == "start":
            if rec.token != token or rec.job.state is not JobState.PENDING or rec.job.held:
                return
            self._start(rec, t, _Bits(self._rng.getrandbits(128)))
        elif kind == "end":
            if rec.token != token or rec.job.state is not JobState.RUNNING:
                return
            self._end_job(rec, t, JobState.FAILED if rec.fails else JobState.COMPLETED)
        elif kind == "purge":
            if rec.token != token or not rec.job.state.is_finished:
                return
            self._keep_final_record(rec.job)
            del self._jobs[job_id]
            self._transparent.pop(job_id, None)
            self._dirty.add(job_id)
        elif kind == "ckpt_done":
            srec = rec.steps.get(step)
            code = self._pending_codes.pop((StepId(job_id, step), token), 0)
            if srec is None or srec.ckpt_token != token or not srec.ckpt_start:
                return
            self._finish_checkpoint(rec, srec, t, code)
        self._version += 1

    def _checkpoint_outcome(self, rec: _JobRec, srec: _StepRec) -> tuple[float, int]:
        """How long the next checkpoint of a step takes and which code it ends with."""
        scripted = self._scripts.get(srec.step.step_id)
        if scripted is not None:
            return scripted.duration, scripted.code
        sid = srec.step.step_id
        h = _h(self.seed, sid.job_id, sid.step, srec.ckpt_count)
        # Mostly a few seconds (inside scontrol's default MaxWait of 10 s), sometimes long.
        duration = 2 + h % 7 if (h >> 12) % 6 else 12 + h % 30
        code = _FAIL_CODES[(h >> 8) % len(_FAIL_CODES)] if (h >> 4) % 9 == 0 else 0
        return float(duration), code

    def _finish_checkpoint(self, rec: _JobRec, srec: _StepRec, t: int, code: int) -> None:
        """A checkpoint ends: start_time back to 0, the result recorded, vacate terminates."""
        started, srec.ckpt_start = srec.ckpt_start, 0
        _keep_highest(srec, code, "")
        srec.last_ckpt = t
        self._event(srec, t, "done", "", code, srec.image_dir)
        if not code:
            self._image_done(rec, srec, t, float(t - started))
        self._dirty.add(rec.job.job_id)
        if srec.ckpt_vacate:
            srec.ckpt_vacate = False
            self._terminate_step(rec, srec, t)

    def _terminate_step(self, rec: _JobRec, srec: _StepRec, t: int) -> None:
        """SIGTERM after vacate: the step goes; the batch step (or the last step) ends the job."""
        sid = srec.step.step_id
        rec.steps.pop(sid.step, None)
        self._dirty.add(sid.job_id)
        left = [k for k in rec.steps if k != STEP_EXTERN]
        if sid.step == STEP_BATCH or not left:
            self._end_job(rec, t, JobState.CANCELLED, reason="Vacated")

    def _end_job(self, rec: _JobRec, t: int, state: JobState, reason: str = "") -> None:
        rec.token += 1
        rec.steps = {}
        self._dirty.add(rec.job.job_id)
        if rec.requeue:
            rec.requeue = False
            self._account(rec.job, t, "REQUEUED")
            rec.job = replace(
                rec.job,
                state=JobState.PENDING,
                state_reason="BeginTime",
                nodes="",
                num_nodes=0,
                end_time=0,
                start_time=0,
                restart_count=rec.job.restart_count + 1,
            )
            self._push(float(t + 30), "start", rec.job.job_id, token=rec.token)
            return
        if state is JobState.FAILED and not reason:
            reason = "NonZeroExitCode"
        rec.job = replace(rec.job, state=state, end_time=t, state_reason=reason)
        self._account(rec.job, t, state.value, exit_code=1 if state is JobState.FAILED else 0)
        # Like MinJobAge: the controller forgets finished jobs after a while (and a
        # restart then recreates the job from its saved record).
        self._push(float(t + self.min_job_age), "purge", rec.job.job_id, token=rec.token)

    # ------------------------------------------------------------------ accounting

    def _record(self, job: Job, end: int, state: str, exit_code: int = 0) -> JobRecord:
        return JobRecord(
            job_id=job.job_id,
            cluster=self.cluster_name,
            name=job.name,
            user=job.user,
            uid=job.uid,
            partition=job.partition,
            state=state,
            exit_code=exit_code,
            submit_time=job.submit_time,
            eligible_time=job.submit_time,
            start_time=job.start_time,
            end_time=end,
            nodes=job.nodes or "None assigned",
            account=job.account,
            work_dir=job.work_dir,
            restart_count=job.restart_count,
        )

    def _account(self, job: Job, end: int, state: str, exit_code: int = 0) -> None:
        """Close the job's current run in accounting, as slurmctld reports it to slurmdbd."""
        self._acct.setdefault(job.job_id, []).append(self._record(job, end, state, exit_code))

    def _keep_final_record(self, job: Job) -> None:
        """A finished job the controller forgets (MinJobAge) stays in accounting."""
        closed = self._acct.get(job.job_id, [])
        if not any(r.end_time == job.end_time and r.submit_time == job.submit_time for r in closed):
            exit_code = 1 if job.state is JobState.FAILED else 0
            self._account(job, job.end_time, job.state.value, exit_code)

    def _seed_accounting(self, n_jobs: int) -> None:
        """A past for the demo: some running jobs were requeued before (a requeue, then a
        node failure), and jobs that ended during the last day are known only to
        accounting (the controller forgot them).  Drawn from ``_h`` of the job ids, not
        from the generator's random stream, so the listing is what it was without them."""
        now = int(self._now)
        for job_id, rec in sorted(self._jobs.items()):
            job = rec.job
            if job.state is not JobState.RUNNING or _h(job_id, 7) % 4:
                continue
            runs = 1 + _h(job_id, 8) % 2
            first_submit = job.submit_time - runs * 1800 - 600
            for k in range(runs):
                start = first_submit + 60 + k * 1800
                earlier = replace(
                    job,
                    submit_time=first_submit if k == 0 else start - 120,
                    start_time=start,
                    restart_count=k,
                )
                state = "REQUEUED" if k == 0 else "NODE_FAIL"
                self._account(earlier, start + 900 + _h(job_id, k) % 600, state)
            rec.job = replace(job, restart_count=runs)
        count = max(4, n_jobs // 4) if n_jobs else 0
        self._past_ids = range(max(1, self._first_job_id - count), self._first_job_id)
        self._past_now = now

    def _past_record(self, job_id: int) -> JobRecord:
        """The accounting record of a job of the seeded past (one of ``_past_ids``), made
        when asked: at 100,000 jobs its 25,000 records kept in memory were ~11 MB of the
        demo's for an ``f`` press or a ``history`` now and then."""
        user = self.users[_h(job_id, 1) % len(self.users)]
        name = _APPS[_h(job_id, 2) % len(_APPS)][0]
        state = _PAST_STATES[_h(job_id, 3) % len(_PAST_STATES)]
        end = self._past_now - 600 - _h(job_id, 4) % (20 * 3600)
        start = end - 120 - _h(job_id, 5) % (6 * 3600)
        node = f"cn{1 + _h(job_id, 6) % 32:03d}"
        job = Job(
            job_id=job_id,
            name=name,
            user=user.name,
            uid=user.uid,
            partition=_CPU_PARTITIONS[_h(job_id, 9) % len(_CPU_PARTITIONS)],
            state=state,
            nodes=node,
            num_nodes=1,
            submit_time=start - 30 - _h(job_id, 10) % 900,
            start_time=start,
            end_time=end,
            work_dir=f"/home/{user.name}/{name}",
            batch=True,
        )
        return self._record(job, end, state.value, 1 if state is JobState.FAILED else 0)

    def accounting(
        self, job_id: int, since: int, until: int = 0, finished: bool = False
    ) -> tuple[JobRecord, ...]:
        """What slurmdbd answers: a job's records (``job_id``), or the jobs that ended in
        the window (``finished``), closed runs and each known job's current run."""
        with self._lock:
            self._tick()
            end_of_window = until or int(self._now)
            past = self._past_ids
            ids = [job_id] if job_id else sorted(set(self._acct) | set(self._jobs) | set(past))
            out: list[JobRecord] = []
            for jid in ids:
                records = list(self._acct.get(jid, ()))
                if jid in past:
                    records.insert(0, self._past_record(jid))
                rec = self._jobs.get(jid)
                if rec is not None and not rec.job.state.is_finished:
                    records.append(self._record(rec.job, 0, rec.job.state.value))
                elif rec is not None:
                    final = rec.job
                    if not any(r.end_time == final.end_time for r in records):
                        code = 1 if final.state is JobState.FAILED else 0
                        records.append(self._record(final, final.end_time, final.state.value, code))
                for r in records:
                    if finished:
                        if r.state in _UNFINISHED or not since <= r.end_time <= end_of_window:
                            continue
                    elif r.submit_time > end_of_window or (r.end_time and r.end_time < since):
                        continue
                    out.append(r)
            return tuple(out)

    # ------------------------------------------------------------------ views

    def _event(
        self, srec: _StepRec, t: int, operation: str, by: str, code: int, image_dir: str = ""
    ) -> None:
        history = srec.history if srec.history is not None else []
        history.append(
            CheckpointEvent(t, operation, by, code, _strerror(code) if code else "", image_dir)
        )
        if len(history) > HISTORY_LIMIT:
            del history[: len(history) - HISTORY_LIMIT]
        srec.history = history

    def _ckpt_view(self, rec: _JobRec, srec: _StepRec) -> CheckpointState:
        # A plain running step (no history, counter 0, no error) shares one state object.
        if _untouched(srec) and rec.job.state is JobState.RUNNING and self._plugin_supported():
            return _ABLE
        by_job = rules.column_for_job(rec.job)
        if by_job is not None:
            kind, reason = by_job
        else:
            plugin = rules.Plugin.WORKS if self._plugin_supported() else rules.Plugin.NONE
            kind = rules.column_for_step(srec.disable_count, _in_progress(srec), plugin)
            reason = {
                CheckpointKind.NOT_SUPPORTED: f"CheckpointType is {self.checkpoint_type}",
                CheckpointKind.IN_PROGRESS: "vacate" if srec.ckpt_vacate else "create",
                CheckpointKind.DISABLED: f"disabled {srec.disable_count}x",
            }.get(kind, "")
        last = None
        if srec.error_code:
            name, _msg = describe(srec.error_code)
            last = CheckpointError(srec.error_code, name, srec.error_msg)
        return CheckpointState(
            kind=kind,
            disable_count=srec.disable_count,
            in_progress_since=srec.ckpt_start if _in_progress(srec) else 0,
            reason=reason,
            last_error=last,
            image_dir=srec.image_dir,
            last_checkpoint_time=srec.last_ckpt,
            history=tuple(srec.history or ()),
        )

    def _rebuild_dirty(self) -> None:
        """Bring the listing (each job's record and step records, in id order) up to date
        with the jobs that changed."""
        if not self._dirty:
            return
        listed = self._listed_jobs
        everything = not listed  # the first build: every job, already in id order
        enabled = gc.isenabled()
        if everything:
            gc.disable()  # no cycles here either; see _generate
        order = list(self._jobs) if everything else sorted(self._dirty)
        for job_id in order:
            rec = self._jobs.get(job_id)
            if rec is None:
                listed.pop(job_id, None)
                self._step_records.pop(job_id, None)
                continue
            # Steps are stored in squeue's order (batch, extern, 0, 1 ...).
            self._step_records[job_id] = tuple(srec.step for srec in rec.steps.values())
            if job_id not in listed and listed and job_id < next(reversed(listed)):
                # A job id older than the newest (never happens for new submissions): resort.
                listed[job_id] = rec.job
                self._listed_jobs = dict(sorted(listed.items()))
                listed = self._listed_jobs
            else:
                listed[job_id] = rec.job
        if everything and enabled:
            gc.enable()
        self._dirty.clear()
        self._version += 1

    def snapshot(self) -> Snapshot:
        """Every job with its steps and their checkpoint state, as the simulator knows them
        (the tests' oracle).  Built when asked, not kept: the demo's console reads the
        controller through ``connect``, and views of 300,000 steps kept here for nobody
        were ~30 MB of the demo's memory at 100,000 jobs."""
        with self._lock:
            self._tick()
            self._rebuild_dirty()
            changed = self._version != self._returned_version
            if changed:
                self._last_snapshot = tuple(
                    self._view(self._jobs[job_id]) for job_id in self._listed_jobs
                )
                self._returned_version = self._version
            return Snapshot(jobs=self._last_snapshot, taken_at=self.clock(), changed=changed)

    def _view(self, rec: _JobRec) -> JobView:
        view = self._ckpt_view
        steps = rec.steps.values()
        if rec.job.array_task_id is None:
            return JobView(rec.job, tuple(StepView(s.step, view(rec, s)) for s in steps))
        labelled = label_steps(rec.job, [s.step for s in steps])
        return JobView(
            rec.job,
            tuple(StepView(st, view(rec, s)) for st, s in zip(labelled, steps, strict=True)),
        )

    def listing(self) -> _Listing:
        """What ``load_jobs``/``get_steps`` answer.

        The counter moves whenever anything changed (like slurmctld's ``last_job_update``,
        it never moves back), so a client passing it back gets "no change" until then.
        """
        with self._lock:
            self._tick()
            self._rebuild_dirty()
            if self._listed.version != self._version + 1:
                # C-level passes over kept per-job tuples: the demo lists its 100,000
                # steps on every changed refresh, in the console's own process.  The
                # copy of the per-job tuples is the answer's own (later changes do not
                # reach it), and an unchanged job's tuple is the last answer's object.
                self._listed = _Listing(
                    self._version + 1,
                    tuple(self._listed_jobs.values()),
                    tuple(
                        chain.from_iterable(map(self._step_records.__getitem__, self._listed_jobs))
                    ),
                    dict(self._step_records),
                )
            return self._listed

    def connect(self, user: str) -> SimulatedSlurm:
        """This controller's client library, acting as ``user`` (a ``SlurmAPI``)."""
        return SimulatedSlurm(self, self.user(user))

    def controller_config(self) -> ControllerConfig:
        """What ``slurm_load_ctl_conf`` answers."""
        return ControllerConfig(
            cluster_name=self.cluster_name,
            version=SIMULATED_VERSION,
            switch_type="switch/none",
            proctrack_type="proctrack/cgroup",
            select_type="select/cons_res",
            slurm_user=SLURM_USER,
            control_host="localhost",
            slurmctld_port=6817,
            prolog_contain=True,
            checkpoint_type=self.checkpoint_type,
            last_update=int(self._now),
        )

    # ------------------------------------------------------------------ job control

    def checkpoint_events(self, job_id: int) -> tuple[StepCheckpointEvent, ...]:
        """Every checkpoint event the controller keeps of the job's steps, oldest first
        (the last ``HISTORY_LIMIT`` per step; a job no longer known has none)."""
        with self._lock:
            self._tick()
            rec = self._jobs.get(job_id)
            if rec is None:
                return ()
            found = [
                StepCheckpointEvent(srec.step.step_id, event)
                for srec in rec.steps.values()
                for event in srec.history or ()
            ]
        return tuple(sorted(found, key=lambda e: (e.event.time, e.step_id)))

    def set_output_paths(self, job_id: int, std_out: str, std_err: str = "") -> None:
        """Test hook: where job ``job_id`` writes (as ``sbatch -o/-e`` would set it); the
        console tests point it at files they write."""
        with self._lock:
            self._output_paths[job_id] = (std_out, std_err or std_out)

    def job_stdio(self, job_id: int) -> JobStdio:
        """``scontrol show job``'s StdOut/StdErr: Slurm's default for a batch job
        (``WORK_DIR/slurm-JOB.out``, errors to the same file), none for an interactive one.
        Anyone may ask, as on a Slurm without PrivateData=jobs."""
        with self._lock:
            self._tick()
            rec = self._jobs.get(job_id)
            if rec is None:
                raise InvalidJobId()
            job = rec.job
            default = f"{job.work_dir}/slurm-{job_id}.out" if job.batch else ""
            if self._output is not None and job.batch:
                default = self._output.path(job_id)
                self._write_output(job_id)
            out, err = self._output_paths.get(job_id, (default, default))
            user = next((u.name for u in self.users if u.uid == job.uid), job.user)
            return JobStdio(job_id, out, err, job.state, job.uid, user, job.batch)

    def _owned(self, caller: Caller, job_id: int) -> _JobRec:
        """A job the caller may control (owner, root or SlurmUser), else the refusal."""
        rec = self._jobs.get(job_id)
        if rec is None:
            raise InvalidJobId()
        if not (caller.is_root or caller.is_slurm_user or caller.uid == rec.job.uid):
            raise AccessDenied()
        return rec

    def signal_step(self, caller: Caller, target: StepId, signal: int, end: bool) -> None:
        """``slurm_signal_job_step`` / ``slurm_kill_job_step``: a deadly signal (or ``end``)
        ends the step; any other signal reaches the tasks, which simulate no handler."""
        with self._lock:
            self._tick()
            rec = self._owned(caller, target.job_id)
            if rec.job.state.is_finished:
                raise AlreadyDone()
            srec = rec.steps.get(target.step)
            if srec is None:
                raise InvalidJobId()
            if end or signal in _DEADLY:
                self._terminate_step(rec, srec, int(self._now))
            self._version += 1

    def kill_job(self, caller: Caller, job_id: int, signal: int) -> None:
        """``slurm_kill_job`` (scancel JOB), slurmctld's ``job_signal`` without flags: SIGKILL
        cancels a pending, suspended or running job (CANCELLED); another signal reaches a
        running job's steps (a deadly one ends them, the batch step's end ends the job) and
        cannot be sent to a job that is not running."""
        with self._lock:
            self._tick()
            rec = self._owned(caller, job_id)
            if rec.job.state.is_finished:
                raise AlreadyDone()
            now = int(self._now)
            if signal == _signal.SIGKILL:
                rec.requeue = False
                self._end_job(rec, now, JobState.CANCELLED)
            elif rec.job.state is not JobState.RUNNING:
                raise error_for(ESLURM_TRANSITION_STATE_NO_UPDATE)
            elif signal in _DEADLY:
                for srec in list(rec.steps.values()):
                    if rec.job.state is JobState.RUNNING:
                        self._terminate_step(rec, srec, now)
            self._version += 1

    def hold_job(self, caller: Caller, job_id: int) -> None:
        """``scontrol hold`` (priority 0), as slurmctld's ``update_job`` takes it: a pending
        or running job is held (an operator's hold is JobHeldAdmin, an owner's JobHeldUser;
        a running job keeps running); a finished one is refused."""
        with self._lock:
            self._tick()
            rec = self._owned(caller, job_id)
            if rec.job.state.is_finished:
                raise error_for(ESLURM_JOB_FINISHED)
            operator = caller.is_root or caller.is_slurm_user
            if rec.job.held and not operator:
                return  # "setting priority to current value": nothing changes
            reason = "JobHeldAdmin" if operator else "JobHeldUser"
            if rec.job.state is JobState.PENDING:
                rec.token += 1  # the start it was waiting for is off
                rec.job = replace(rec.job, held=True, state_reason=reason)
            else:
                rec.job = replace(rec.job, held=True)
            self._dirty.add(job_id)
            self._version += 1

    def requeue_job(self, caller: Caller, job_id: int, hold: bool) -> None:
        """``slurm_requeue``: end a batch job and put it back to PENDING (held with ``hold``);
        like slurmctld, the job may start again only after a begin time two minutes on."""
        with self._lock:
            self._tick()
            rec = self._owned(caller, job_id)
            if not rec.job.batch:
                raise error_for(ESLURM_BATCH_ONLY)
            if rec.job.state is JobState.PENDING:
                raise JobPending()
            now = int(self._now)
            if not rec.job.state.is_finished:
                self._account(rec.job, now, "REQUEUED")
            rec.token += 1
            rec.steps = {}
            rec.job = replace(
                rec.job,
                state=JobState.PENDING,
                state_reason="JobHeldUser" if hold else "BeginTime",
                nodes="",
                num_nodes=0,
                start_time=0,
                end_time=0,
                held=hold,
                restart_count=rec.job.restart_count + 1,
            )
            rec.begin_at = now + REQUEUE_BEGIN_DELAY
            if not hold:
                self._push(float(rec.begin_at), "start", job_id, token=rec.token)
                rec.job = replace(rec.job, start_time=int(rec.begin_at))  # its begin time
            self._dirty.add(job_id)
            self._version += 1

    def _pending(self, caller: Caller, job_id: int) -> _JobRec:
        rec = self._owned(caller, job_id)
        if rec.job.state is not JobState.PENDING:
            raise error_for(ESLURM_JOB_NOT_PENDING)
        return rec

    def _reschedule(self, rec: _JobRec) -> None:
        """Start a pending, unheld job at its begin time (or now)."""
        rec.token += 1
        if not rec.job.held:
            when = max(float(rec.begin_at), self._now)
            self._push(when, "start", rec.job.job_id, token=rec.token)
        self._dirty.add(rec.job.job_id)
        self._version += 1

    def release(self, caller: Caller, job_id: int) -> None:
        """``scontrol release`` (priority INFINITE), as slurmctld's ``update_job`` takes it:
        a held job may start again; an admin hold only an operator releases (the owner is
        refused, as slurmctld refuses a priority change it does not allow); a job that is
        not held is left as it is; a finished one is refused."""
        with self._lock:
            self._tick()
            rec = self._owned(caller, job_id)
            if rec.job.state.is_finished:
                raise error_for(ESLURM_JOB_FINISHED)
            if not rec.job.held:
                return  # "already released, ignoring request"
            operator = caller.is_root or caller.is_slurm_user
            if not operator and rec.job.state_reason == "JobHeldAdmin":
                raise AccessDenied()
            if rec.job.state is not JobState.PENDING:
                rec.job = replace(rec.job, held=False)
                self._dirty.add(job_id)
                self._version += 1
                return
            reason = "BeginTime" if rec.begin_at > self._now else "Priority"
            rec.job = replace(rec.job, held=False, state_reason=reason)
            self._reschedule(rec)

    def set_begin_time(self, caller: Caller, job_id: int, when: int) -> None:
        """``scontrol update StartTime=``: 0 means now."""
        with self._lock:
            self._tick()
            rec = self._pending(caller, job_id)
            rec.begin_at = when or int(self._now)
            if rec.begin_at <= self._now and rec.job.state_reason == "BeginTime":
                rec.job = replace(rec.job, state_reason="Priority")
            self._reschedule(rec)

    def set_required_nodes(self, caller: Caller, job_id: int, nodelist: str) -> None:
        """``scontrol update ReqNodeList=``, on a pending job."""
        with self._lock:
            self._tick()
            rec = self._pending(caller, job_id)
            rec.job = replace(rec.job, required_nodes=nodelist)
            self._dirty.add(job_id)
            self._version += 1

    # ------------------------------------------------------------------ test hooks

    def job(self, job_id: int) -> Job:
        """The current record of one job (test hook)."""
        with self._lock:
            self._tick()
            rec = self._jobs.get(job_id)
            if rec is None:
                raise InvalidJobId(hint=f"no job {job_id}")
            return rec.job

    def step_state(self, target: StepId) -> CheckpointState:
        """The checkpoint state of one step, as the snapshot shows it (test hook)."""
        with self._lock:
            self._tick()
            rec = self._jobs.get(target.job_id)
            srec = rec.steps.get(target.step) if rec is not None else None
            if rec is None or srec is None:
                raise InvalidJobId(hint=f"no step {target}")
            return self._ckpt_view(rec, srec)

    def job_environment(self, job_id: int) -> dict[str, str]:
        """Environment the job's tasks get from the cluster (``SLURM_RESTART_DIR``)."""
        with self._lock:
            rec = self._jobs.get(job_id)
            return dict(rec.env) if rec is not None else {}

    def jobs_where(self, predicate: Callable[[Job], bool]) -> list[Job]:
        """Jobs matching ``predicate``, by id (test hook for picking a job in a state)."""
        with self._lock:
            self._tick()
            return [r.job for r in self._jobs.values() if predicate(r.job)]

    def records(self) -> dict[str, SavedRecord]:
        """Saved job records by path (the simulated ``<dir>/<jobid>.ckpt`` files)."""
        with self._lock:
            return dict(self._records)

    def put_record(self, path: str, record: SavedRecord) -> None:
        """Place a saved record at ``path`` (a copied or foreign file: restart's EINVAL)."""
        with self._lock:
            self._records[path] = record

    def remove_record(self, path: str) -> None:
        """Delete a saved record (restart's ENOENT)."""
        with self._lock:
            self._records.pop(path, None)

    def script_checkpoint(self, target: StepId, duration: float, code: int = 0) -> None:
        """Force how long the step's checkpoints take and the code they end with."""
        with self._lock:
            self._scripts[target] = CheckpointScript(duration, code)

    def submit(
        self,
        user: str,
        *,
        name: str = "job",
        state: JobState = JobState.RUNNING,
        batch: bool = True,
        n_steps: int = 1,
        duration: int = 3600,
        partition: str = "batch",
        work_dir: str = "",
        held: bool = False,
        comment: str = "",
        account: str = "",
        _job_id: int = 0,
    ) -> Job:
        """Add one job in a given state (test hook); running jobs get their steps now."""
        with self._lock:
            self._tick()
            now = int(self.clock())
            owner = self.user(user)
            job_id = _job_id or self._next_job_id
            if not _job_id:
                self._next_job_id += 1
            job = Job(
                job_id=job_id,
                name=name,
                user=owner.name,
                uid=owner.uid,
                partition=partition,
                state=JobState.PENDING,
                submit_time=now,
                work_dir=work_dir or f"/home/{user}/{name}",
                comment=comment,
                account=account,
                batch=batch,
                held=held,
                state_reason="JobHeldUser" if held else "Priority",
            )
            rec = _JobRec(job, 0, duration, False, n_steps)
            self._jobs[job_id] = rec
            self._dirty.add(job_id)
            bits = _Bits(random.Random(job_id).getrandbits(128))
            if state in (JobState.RUNNING, JobState.SUSPENDED):
                self._start(rec, now, bits, suspended=state is JobState.SUSPENDED)
            elif state is not JobState.PENDING:
                nodes, n_nodes, cpn, _first = self._allocate("cpu", bits)
                rec.job = _with_allocation(
                    job, state, "", nodes, n_nodes, n_nodes * cpn, now - 60, now
                )
            self._version += 1
            return rec.job

    def submit_array(
        self,
        user: str,
        tasks: str,
        *,
        running: int = 0,
        max_tasks: int = 0,
        held: bool = False,
        name: str = "array",
        n_steps: int = 1,
        duration: int = 3600,
        partition: str = "batch",
    ) -> tuple[Job, ...]:
        """A job array as ``sbatch --array=TASKS[%MAX_TASKS]`` makes it (test hook, and the
        demo's arrays), laid out as slurmctld keeps one: the first ``running`` tasks split
        off into records of their own with new job ids; the tasks still pending stay in one
        record under the array's own id (``array_task_str`` ``5-50%2``); when none is left
        pending, that record is the last task's.  Returns the records, array record last.
        """
        ids = expand_task_ranges(tasks)
        if not ids or not 0 <= running <= len(ids):
            raise UsageError("submit_array: a non-empty task range and 0..len running tasks")
        with self._lock:
            array_id = self._next_job_id
            self._next_job_id += 1
            made: list[Job] = []
            started = ids[:running]
            rest = ids[running:]
            for k, task in enumerate(started):
                last_one = not rest and k == len(started) - 1
                job = self.submit(
                    user,
                    name=name,
                    n_steps=n_steps,
                    duration=duration,
                    partition=partition,
                    _job_id=array_id if last_one else 0,
                )
                made.append(self._relabel(job.job_id, array_id, task, "", max_tasks))
            if rest:
                job = self.submit(
                    user,
                    name=name,
                    state=JobState.PENDING,
                    n_steps=n_steps,
                    duration=duration,
                    partition=partition,
                    held=held,
                    _job_id=array_id,
                )
                limited = max_tasks and running >= max_tasks and not held
                text = compress_task_ids(rest) + (f"%{max_tasks}" if max_tasks else "")
                made.append(self._relabel(job.job_id, array_id, None, text, max_tasks))
                if limited:
                    rec = self._jobs[array_id]
                    rec.job = replace(rec.job, state_reason="JobArrayTaskLimit")
                    made[-1] = rec.job
            self._version += 1
            return tuple(made)

    def _relabel(
        self,
        job_id: int,
        array_id: int,
        task: int | None,
        text: str,
        max_tasks: int,
    ) -> Job:
        rec = self._jobs[job_id]
        rec.job = replace(
            rec.job,
            array_job_id=array_id,
            array_task_id=task,
            array_task_str=text,
            array_max_tasks=max_tasks,
        )
        self._dirty.add(job_id)
        return rec.job

    def hold_task(self, caller: Caller, array_id: int, task: int, hold: bool) -> None:
        """``scontrol hold|release 7_5`` of a task still pending in its array's record, as
        slurmctld does it: the task is split off into a record of its own (a new job id;
        the last one left takes the array's record itself), then held or released."""
        with self._lock:
            self._tick()
            rec = self._jobs.get(array_id)
            if rec is None or rec.job.array_job_id != array_id or not rec.job.array_task_str:
                raise InvalidJobId()
            self._owned(caller, array_id)
            left = [t for t in expand_task_ranges(rec.job.array_task_str) if t != task]
            if len(left) == len(expand_task_ranges(rec.job.array_task_str)):
                raise InvalidJobId()
            if left:
                limit = f"%{rec.job.array_max_tasks}" if rec.job.array_max_tasks else ""
                rec.job = replace(rec.job, array_task_str=compress_task_ids(left) + limit)
                job_id = self._next_job_id
                self._next_job_id += 1
                split = _JobRec(
                    replace(rec.job, job_id=job_id, array_task_id=task, array_task_str=""),
                    rec.app,
                    rec.duration,
                    rec.fails,
                    rec.n_numbered,
                )
                self._jobs[job_id] = split
                self._dirty.add(array_id)
            else:
                job_id = array_id
                rec.job = replace(rec.job, array_task_id=task, array_task_str="")
            self._dirty.add(job_id)
            self._version += 1
        if hold:
            self.hold_job(caller, job_id)
        else:
            self.release(caller, job_id)

    def _demo_arrays(self) -> None:
        """The demo's job arrays: three tasks running, a range held by its run limit behind
        two running tasks, and a held array of 50 (``sbatch --array=1-50%2 --hold``)."""
        users = [u.name for u in self.users]
        self.submit_array(users[0], "1-3", running=3, name="sweep", n_steps=1)
        self.submit_array(users[1 % len(users)], "1-20", running=2, max_tasks=2, name="scan")
        self.submit_array(users[2 % len(users)], "1-50", max_tasks=2, held=True, name="param")

    def set_job_state(self, job_id: int, state: JobState) -> None:
        """Force a job's state (suspend/resume/finish) as an operator would (test hook)."""
        with self._lock:
            self._tick()
            rec = self._jobs[job_id]
            now = int(self.clock())
            if state.is_finished:
                self._end_job(rec, now, state)
            else:
                rec.job = replace(rec.job, state=state)
                for srec in rec.steps.values():
                    srec.step = replace(srec.step, state=str(state))
            self._dirty.add(job_id)
            self._version += 1

    @property
    def size(self) -> tuple[int, int]:
        """(jobs, steps) currently known."""
        with self._lock:
            return len(self._jobs), sum(len(r.steps) for r in self._jobs.values())

    # ------------------------------------------------------------------ rules

    def user(self, name: str) -> Caller:
        """The simulated user called ``name`` (root, slurm, a job owner, anyone)."""
        uid = uid_for(name)
        return Caller(uid, name, is_slurm_user=uid == SLURM_UID)

    def _checks(self, caller: Caller, target: StepId, *, suspended_ok: bool = False) -> _JobRec:
        """Checks 1-5 of the controller (``rules.check_job``); the step, check 6, after."""
        rec = self._jobs.get(target.job_id)
        job = rec.job if rec is not None else None
        rules.check_job(target, job, caller, suspended_ok=suspended_ok)
        assert rec is not None
        return rec

    def _batch_job_plugin_call(self, rec: _JobRec, target: StepId) -> bool:
        """checkpoint/ompi: a job-level request on a batch job reaches the plugin without a
        step (``job_checkpoint``), which answers ESLURM_NOT_SUPPORTED."""
        return self._ompi and rules.is_job_level(target) and rec.job.batch

    def _targets(self, rec: _JobRec, target: StepId) -> list[_StepRec]:
        """The steps an operation acts on (``rules.steps_acted_on``)."""
        return rules.steps_acted_on(target, rec.steps.values(), _step_of)

    def _image_path(self, rec: _JobRec, srec: _StepRec, image_dir: str | None) -> str:
        """(image_dir, else the step's checkpoint dir) + /<job>.<step> (or /<job> for batch);
        for a step under ``sckpt run --transparent``, the wrapper's layout instead: task 0's
        next generation, ``<root>/<job>.<name>/task0/g<N>``."""
        root = image_dir or srec.ckpt_dir or rec.job.work_dir
        sid = srec.step.step_id
        marked = self._transparent.get(sid.job_id, {}).get(sid.step)
        if marked is not None:
            leaf = image_leaf(sid, marked.name)
            return str(Path(root) / leaf / "task0" / f"g{marked.generation + 1}")
        return rules.image_path(root, sid)

    def _plugin_supported(self) -> bool:
        return self.checkpoint_type != "checkpoint/none"

    def _aggregate(
        self, target: StepId, operation: str, codes: list[tuple[StepId, int]], detail: str = ""
    ) -> ActionResult:
        """``rules.aggregate``, saying which CheckpointType refused a single step."""
        hint = f"CheckpointType is {self.checkpoint_type}" if not self._plugin_supported() else ""
        return rules.aggregate(target, operation, codes, detail, hint)

    def _run(
        self,
        caller: Caller,
        target: StepId,
        operation: str,
        per_step: Callable[[_JobRec, _StepRec], int],
        before: Callable[[_JobRec], None] | None = None,
        detail: str = "",
        *,
        suspended_ok: bool = False,
    ) -> ActionResult:
        with self._lock:
            self._tick()
            rec = self._checks(caller, target, suspended_ok=suspended_ok)
            if operation != "complete" and self._batch_job_plugin_call(rec, target):
                if before is not None:
                    before(rec)  # create/vacate save the job record first
                raise NotSupported()
            steps = self._targets(rec, target)
            if before is not None:
                before(rec)
            codes = []
            for srec in steps:
                code = per_step(rec, srec) if self._plugin_supported() else ESLURM_NOT_SUPPORTED
                codes.append((srec.step.step_id, code))
            self._dirty.add(rec.job.job_id)
            self._version += 1
            return self._aggregate(target, operation, codes, detail)

    # The nine operations (plus requeue), acting as ``caller``.

    def able(self, caller: Caller, target: StepId) -> AbleResult:
        with self._lock:
            self._tick()
            rec = self._checks(caller, target)
            if self._batch_job_plugin_call(rec, target):
                raise NotSupported()
            steps = self._targets(rec, target)
            if not self._plugin_supported():
                self._aggregate(
                    target, "able", [(s.step.step_id, ESLURM_NOT_SUPPORTED) for s in steps]
                )
            codes = [(s.step.step_id, rules.able_code(s.disable_count)) for s in steps]
            self._aggregate(target, "able", codes)
            starts = [s.ckpt_start for s in steps if _in_progress(s)]
            return AbleResult(target, min(starts) if starts else 0)

    def error(self, caller: Caller, target: StepId) -> CheckpointError:
        with self._lock:
            self._tick()
            rec = self._checks(caller, target)
            if self._batch_job_plugin_call(rec, target):
                raise NotSupported()
            steps = self._targets(rec, target)
            if not self._plugin_supported():
                self._aggregate(
                    target, "error", [(s.step.step_id, ESLURM_NOT_SUPPORTED) for s in steps]
                )
            return rules.worst_error(
                CheckpointError(s.error_code, describe(s.error_code)[0], s.error_msg) for s in steps
            )

    def enable(self, caller: Caller, target: StepId) -> ActionResult:
        def op(rec: _JobRec, srec: _StepRec) -> int:
            srec.disable_count = (
                _ompi_count(srec.disable_count - 1)
                if self._ompi
                else rules.enabled(srec.disable_count)
            )
            self._event(srec, int(self._now), "enable", caller.name, 0)
            return 0

        return self._run(caller, target, "enable", op)

    def disable(self, caller: Caller, target: StepId) -> ActionResult:
        def op(rec: _JobRec, srec: _StepRec) -> int:
            srec.disable_count = (
                _ompi_count(srec.disable_count + 1)
                if self._ompi
                else rules.disabled(srec.disable_count)
            )
            self._event(srec, int(self._now), "disable", caller.name, 0)
            return 0

        return self._run(caller, target, "disable", op)

    def _save_record(self, rec: _JobRec, image_dir: str | None) -> None:
        """Batch job, create/vacate: save ``<dir>/<jobid>.ckpt`` first (no dir: DISABLED)."""
        directory = image_dir or self.job_checkpoint_dir
        if not directory:
            raise Disabled(hint="no ImageDir given and JobCheckpointDir is not set")
        if directory == self.job_checkpoint_dir and not self.checkpoint_dir_exists:
            raise NoSuchImage()  # creat() of the record fails
        path = rules.saved_record_path(directory, rec.job.job_id)
        self._records[path] = SavedRecord(path, rec.job.job_id, rec.job.uid, rec.job.user, rec.job)

    def _checkpoint(
        self,
        caller: Caller,
        target: StepId,
        operation: str,
        max_wait: int,
        image_dir: str | None,
        vacate: bool,
        requeue: bool = False,
    ) -> ActionResult:
        now = int(self.clock())

        def before(rec: _JobRec) -> None:
            if requeue and not rec.job.batch:
                raise NotSupported(hint="requeue needs a batch job")
            if rules.is_job_level(target) and rec.job.batch:
                self._save_record(rec, image_dir)
            if requeue:
                rec.requeue = True

        def op(rec: _JobRec, srec: _StepRec) -> int:
            if self._ompi:
                return self._ompi_checkpoint(rec, srec, now)
            refused = rules.checkpoint_code(srec.disable_count, bool(srec.ckpt_start))
            if refused:
                return refused
            srec.error_code = 0
            srec.error_msg = ""
            srec.ckpt_start = now
            srec.ckpt_count += 1
            srec.ckpt_token += 1
            srec.ckpt_vacate = vacate or requeue
            srec.image_dir = self._image_path(rec, srec, image_dir)
            duration, code = self._checkpoint_outcome(rec, srec)
            if max_wait and duration > max_wait:
                duration, code = float(max_wait), ETIME
            self._event(srec, now, operation, caller.name, 0, srec.image_dir)
            self._pending_codes[(srec.step.step_id, srec.ckpt_token)] = code
            self._push(
                now + duration, "ckpt_done", rec.job.job_id, srec.step.step_id.step, srec.ckpt_token
            )
            return 0

        detail = f"max_wait {max_wait}s" + (f", image dir {image_dir}" if image_dir else "")
        return self._run(caller, target, operation, op, before, detail)

    def _ompi_checkpoint(self, rec: _JobRec, srec: _StepRec, now: int) -> int:
        """checkpoint/ompi's create/vacate on one step, as 19.05 ran it (OMPI.md).

        The plugin resets the step's state before it looks at the counter, then asks srun to
        run ``ompi-checkpoint``; srun's forked child (which fails to exec it) reports the
        checkpoint complete at once with its parent's pid as the message.  The step runs on.
        """
        srec.ckpt_start, srec.replies = now, 0
        srec.error_code, srec.error_msg = 0, ""
        if srec.disable_count:
            return ESLURM_DISABLED
        srec.ckpt_count += 1
        srec.error_msg = str(_srun_parent_pid(rec))
        srec.replies = 1
        return 0

    def create(
        self, caller: Caller, target: StepId, max_wait: int, image_dir: str | None
    ) -> ActionResult:
        return self._checkpoint(caller, target, "create", max_wait, image_dir, vacate=False)

    def vacate(
        self, caller: Caller, target: StepId, max_wait: int, image_dir: str | None
    ) -> ActionResult:
        return self._checkpoint(caller, target, "vacate", max_wait, image_dir, vacate=True)

    def requeue(
        self, caller: Caller, target: StepId, max_wait: int, image_dir: str | None = None
    ) -> ActionResult:
        """Checkpoint every step, end the job, put it back to PENDING (batch jobs only)."""
        if not rules.is_job_level(target):
            with self._lock:
                self._checks(caller, target)
            raise NotSupported(hint="requeue applies to a whole batch job")
        return self._checkpoint(
            caller, target, "requeue", max_wait, image_dir, vacate=True, requeue=True
        )

    def complete(
        self, caller: Caller, target: StepId, begin_time: int, error_code: int, error_msg: str
    ) -> ActionResult:
        now = int(self.clock())

        def op(rec: _JobRec, srec: _StepRec) -> int:
            if self._ompi:
                return self._ompi_complete(srec, error_code, error_msg, now)
            _keep_highest(srec, error_code, error_msg)
            self._event(srec, now, "complete", caller.name, error_code)
            if srec.ckpt_start and begin_time == srec.ckpt_start:
                srec.ckpt_start = 0
                srec.ckpt_token += 1
                srec.last_ckpt = now
                if srec.ckpt_vacate:
                    srec.ckpt_vacate = False
                    self._terminate_step(rec, srec, now)
            return 0

        if self._ompi and rules.is_job_level(target):
            target = StepId(target.job_id, STEP_BATCH)  # NO_VAL finds the batch step's record
        return self._run(caller, target, "complete", op, suspended_ok=True)

    @staticmethod
    def _ompi_complete(srec: _StepRec, code: int, message: str, now: int) -> int:
        """checkpoint/ompi's ``slurm_ckpt_comp``: not keep-the-highest (OMPI.md).

        Reported already: ESLURM_ALREADY_DONE.  A higher code is stored and the checkpoint
        stays open; any other code is stored too (even a lower one) and closes it.
        """
        if srec.replies:
            return ESLURM_ALREADY_DONE
        higher = code > srec.error_code
        srec.error_code, srec.error_msg = code, message
        if not higher:
            srec.replies, srec.ckpt_start = 1, now
        return 0

    def tasks(
        self,
        caller: Caller,
        target: StepId,
        begin_time: int,
        image_dir: str,
        max_wait: int,
        nodelist: str,
    ) -> ActionResult:
        wanted = set(expand_hostlist(nodelist)) if nodelist else set()
        if self._ompi:
            self._tasks_at_slurmd(caller, target, begin_time, wanted)
        outside: list[str] = []  # why a step refused: the nodes it does not run on

        def op(rec: _JobRec, srec: _StepRec) -> int:
            nodes = expand_hostlist(srec.step.nodes)
            refused = rules.tasks_code(nodes, wanted)
            if refused:
                outside.append(rules.tasks_hint(srec.step.step_id, nodes, wanted, srec.step.nodes))
                return refused
            srec.last_ckpt = begin_time or int(self._now)
            self._event(srec, int(self._now), "tasks", caller.name, 0, image_dir)
            return 0

        try:
            return self._run(caller, target, "tasks", op, detail=f"nodes {nodelist or 'all'}")
        except InvalidJobId as refused:
            if not outside:
                raise
            raise InvalidJobId(refused.code, hint="; ".join(outside)) from None

    def _tasks_at_slurmd(
        self, caller: Caller, target: StepId, begin_time: int, wanted: set[str]
    ) -> None:
        """``slurm_checkpoint_tasks`` never reaches slurmctld: slurmd and the step's
        slurmstepd answer, in their order (OMPI.md); checkpoint/ompi cannot signal the
        tasks, which slurmd reports as ESLURMD_JOB_NOTRUNNING.  Always raises."""
        with self._lock:
            self._tick()
            rec = self._jobs.get(target.job_id)
            srec = None
            alive = rec is not None and rec.job.state in (JobState.RUNNING, JobState.SUSPENDED)
            if rec is not None and alive and not rules.is_job_level(target):
                srec = rec.steps.get(target.step)
            if rec is None or srec is None:
                raise InvalidJobId()
            nodes = expand_hostlist(srec.step.nodes)
            if rules.tasks_code(nodes, wanted):
                raise InvalidJobId(hint=rules.tasks_hint(target, nodes, wanted, srec.step.nodes))
            if not (caller.is_root or caller.is_slurm_user or caller.uid == rec.job.uid):
                raise error_for(ESLURM_USER_ID_MISSING)
            if srec.tasks_time and begin_time == srec.tasks_time:
                raise AlreadyDone()
            if rec.job.state is JobState.SUSPENDED:
                raise error_for(ESLURMD_STEP_SUSPENDED)
            srec.tasks_time = begin_time
            raise error_for(ESLURMD_JOB_NOTRUNNING)

    def restart(
        self, caller: Caller, target: StepId, stick: bool, image_dir: str | None
    ) -> ActionResult:
        with self._lock:
            self._tick()
            rec = self._jobs.get(target.job_id)
            rules.check_restart(target, rec.job if rec is not None else None)
            directory = image_dir or self.job_checkpoint_dir
            path = rules.saved_record_path(directory, target.job_id)
            saved = self._records.get(path)
            rules.check_saved_record(
                target,
                f"at {path}",
                saved.job_id if saved is not None else None,
                saved.uid if saved is not None else -1,
                saved.user if saved is not None else "",
                caller,
            )
            assert saved is not None
            now = int(self.clock())
            if rec is None:  # forgotten (MinJobAge): rebuilt from the saved record
                app = next((i for i, a in enumerate(_APPS) if a[0] == saved.job.name), 0)
                rec = _JobRec(replace(saved.job), app, 3600, False, 1)
                self._jobs[target.job_id] = rec
            rec.n_nodes = saved.job.num_nodes or rec.n_nodes
            rec.token += 1
            rec.steps = {}
            rec.env = {rules.RESTART_DIR_ENV: directory}
            rec.job = replace(
                rec.job,
                state=JobState.PENDING,
                state_reason="Priority",
                nodes="",
                num_nodes=0,
                start_time=0,
                end_time=0,
                submit_time=now,
                restart_count=rec.job.restart_count + 1,
                required_nodes=saved.job.nodes if stick else "",
                comment=f"restarted from {directory}",
            )
            self._push(float(now + 5), "start", target.job_id, token=rec.token)
            self._dirty.add(target.job_id)
            self._version += 1
            where = f" on {saved.job.nodes}" if stick and saved.job.nodes else ""
            return ActionResult(target, "restart", f"resubmitted as job {target.job_id}{where}")

    # ------------------------------------------------------------------ processes

    def step_processes(self, caller: Caller, target: StepId) -> StepProcesses:
        with self._lock:
            self._tick()
            rec = self._checks(caller, target)
            steps = self._targets(rec, target)
            nodes: list[NodePids] = []
            for srec in steps:
                names = expand_hostlist(srec.step.nodes)
                per_node = max(1, srec.step.num_tasks // max(1, len(names)))
                for i, node in enumerate(names):
                    base = 1000 + _h(target.job_id, srec.step.step_id.step, i) % 60000
                    nodes.append(NodePids(node, tuple(base + k for k in range(min(per_node, 8)))))
            return StepProcesses(target, tuple(nodes), "proctrack/cgroup")

    def interconnect(self, caller: Caller, target: StepId) -> Interconnect:
        with self._lock:
            self._tick()
            rec = self._checks(caller, target)
            steps = self._targets(rec, target)
            network = next((s.step.network for s in steps if s.step.network), "")
            return Interconnect(target, "switch/none", network)


def _strerror(code: int) -> str:
    """The message Slurm's strerror gives for a code (errno text for small codes)."""
    return describe(code)[1]


def _keep_highest(srec: _StepRec, code: int, message: str) -> None:
    """A completion report (``rules.kept_error``) on a step's plugin state."""
    srec.error_code, srec.error_msg = rules.kept_error(
        srec.error_code, srec.error_msg, code, message
    )


def _step_of(srec: _StepRec) -> Step:
    return srec.step


def _untouched(srec: _StepRec) -> bool:
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


def _in_progress(srec: _StepRec) -> bool:
    """A checkpoint began and has not been reported (BLCR never counts replies)."""
    return bool(srec.ckpt_start) and not srec.replies


def _ompi_count(value: int) -> int:
    """checkpoint/ompi's disable counter: a ``uint16_t`` with neither floor nor cap, so an
    enable at 0 wraps to 65535 (disabled until the next disable), as 19.05 does."""
    return value & 0xFFFF


def _srun_parent_pid(rec: _JobRec) -> int:
    """The pid srun's forked child reports as the message (the batch shell's, on a node)."""
    return 1000 + _h(rec.job.job_id, 0x5A) % 60000


class SimulatedSlurm:
    """The simulated controller's client library for one user: a ``SlurmAPI``.

    What libslurm is to a real slurmctld: the engines call it exactly as they call the cffi
    binding, so ``sckpt --demo`` runs the native engine over this controller.  Like the
    real library it answers with the controller's code and message only (no hints: the
    engines explain refusals themselves, the same way on a real cluster).
    """

    def __init__(self, cluster: SimulatedCluster, caller: Caller) -> None:
        self.cluster = cluster
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
        return self.cluster.clock

    def _answer(self, call: Callable[[], T]) -> T:
        """Run a controller call; a refusal comes back bare, as libslurm returns it."""
        try:
            return call()
        except SlurmError as exc:
            raise error_for(exc.code) from None

    # -- reads
    def load_jobs(self, prev_update: int = 0) -> JobsResult:
        listed = self.cluster.listing()
        if prev_update and prev_update == listed.version:
            return JobsResult(False, prev_update)
        return JobsResult(True, listed.version, listed.jobs)

    def get_steps(self, prev_update: int = 0) -> StepsResult:
        listed = self.cluster.listing()
        if prev_update and prev_update == listed.version:
            return StepsResult(False, prev_update)
        return StepsResult(True, listed.version, listed.steps, listed.by_job)

    def job_stdio(self, job_id: int) -> JobStdio:
        return self._answer(lambda: self.cluster.job_stdio(job_id))

    def step_pids(self, step: StepId) -> StepProcesses:
        return self._answer(lambda: self.cluster.step_processes(self.caller, step))

    def ctl_conf(self) -> ControllerConfig:
        return self.cluster.controller_config()

    def checkpoint_symbols(self) -> dict[str, bool]:
        return dict.fromkeys(operations.CHECKPOINT_NAMES, True)

    def ping(self) -> float:
        return 0.0

    # -- accounting (the simulated slurmdbd)
    def job_records(
        self, job_id: int, since: int, until: int = 0, cluster: str = ""
    ) -> tuple[JobRecord, ...]:
        return self.cluster.accounting(job_id, since, until)

    def finished_jobs(self, since: int, until: int = 0, cluster: str = "") -> tuple[JobRecord, ...]:
        return self.cluster.accounting(0, since, until, finished=True)

    # -- job control
    def signal_step(self, step: StepId, signal: int) -> None:
        self._answer(lambda: self.cluster.signal_step(self.caller, step, signal, end=False))

    def kill_step(self, step: StepId, signal: int = 9) -> None:
        self._answer(lambda: self.cluster.signal_step(self.caller, step, signal, end=True))

    def kill_job(self, job_id: int, signal: int = 9) -> None:
        self._answer(lambda: self.cluster.kill_job(self.caller, job_id, signal))

    def requeue(self, job_id: int, hold: bool = False) -> None:
        self._answer(lambda: self.cluster.requeue_job(self.caller, job_id, hold))

    def hold(self, job_id: int) -> None:
        self._answer(lambda: self.cluster.hold_job(self.caller, job_id))

    def release(self, job_id: int) -> None:
        self._answer(lambda: self.cluster.release(self.caller, job_id))

    def hold_task(self, array_job_id: int, task: int, hold: bool = True) -> None:
        self._answer(lambda: self.cluster.hold_task(self.caller, array_job_id, task, hold))

    def set_required_nodes(self, job_id: int, nodelist: str) -> None:
        self._answer(lambda: self.cluster.set_required_nodes(self.caller, job_id, nodelist))

    def set_begin_time(self, job_id: int, when: int = 0) -> None:
        self._answer(lambda: self.cluster.set_begin_time(self.caller, job_id, when))

    # -- the checkpoint API
    def ckpt_able(self, step: StepId) -> int:
        return self._answer(lambda: self.cluster.able(self.caller, step)).in_progress_since

    def ckpt_disable(self, step: StepId) -> None:
        self._answer(lambda: self.cluster.disable(self.caller, step))

    def ckpt_enable(self, step: StepId) -> None:
        self._answer(lambda: self.cluster.enable(self.caller, step))

    def ckpt_create(self, step: StepId, max_wait: int, image_dir: str | None = None) -> None:
        self._answer(lambda: self.cluster.create(self.caller, step, max_wait, image_dir))

    def ckpt_vacate(self, step: StepId, max_wait: int, image_dir: str | None = None) -> None:
        self._answer(lambda: self.cluster.vacate(self.caller, step, max_wait, image_dir))

    def ckpt_restart(self, step: StepId, stick: bool = False, image_dir: str | None = None) -> None:
        self._answer(lambda: self.cluster.restart(self.caller, step, stick, image_dir))

    def ckpt_complete(
        self, step: StepId, begin_time: int, error_code: int, error_msg: str = ""
    ) -> None:
        self._answer(
            lambda: self.cluster.complete(self.caller, step, begin_time, error_code, error_msg)
        )

    def ckpt_error(self, step: StepId) -> tuple[int, str]:
        err = self._answer(lambda: self.cluster.error(self.caller, step))
        return err.code, err.message

    def ckpt_tasks(
        self, step: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> None:
        self._answer(
            lambda: self.cluster.tasks(self.caller, step, begin_time, image_dir, max_wait, nodelist)
        )


def demo_users_for(acting_user: str) -> tuple[str, ...]:
    """The demo's owners: the acting user takes alice's place so they own some jobs."""
    if acting_user in ("root", SLURM_USER) or acting_user in DEMO_USERS:
        return DEMO_USERS
    return (acting_user, *DEMO_USERS[1:])
