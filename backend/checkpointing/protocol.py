"""The on-disk contract between ``sckpt run`` and the console: one home for every word of it.

Three parties meet on the shared file system and never talk directly: the wrapper
(``wrapper.py``, the job's user on a compute node), the program it runs, and the operator's
console (``engine.py``, often root on a login node).  What they agree on is here, and only
here:

* **where**: the state directory (``<work dir>/.sckpt``, or ``$SCKPT_STATE_DIR``) and the
  names of the files in it: ``<job>.<step>.json`` (the step's record) with its ``.lock``,
  ``<job>.images.json`` (the job's image index, by step name) and
  ``<job>.<step>.task<N>.done`` (the status line a program writes after a checkpoint);
  a step's images under ``<image root>/<job>.<name>/task<N>`` (``image_leaf``);
* **what**: the records (``StepRecord``, with its ``TaskInfo`` and ``Request``) and the image
  index's document, their JSON layout (``FORMAT``) and how each changes (the completion rule:
  the highest code is kept);
* **how a program is told**: the environment the wrapper gives it (``SCKPT_IMAGE_DIR``,
  ``SCKPT_CKPT_DONE``, ``SCKPT_CKPT_SIGNAL``, ``SLURM_RESTART_DIR``) and the status line it
  writes back (``0`` or ``<code> <message>``: ``parse_status``).

Reading and writing the files safely is ``store.py``'s part; this module does no I/O but
``state_dir_for``'s look at the environment.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import rules
from ..config import environment
from ..errors import SckptError, describe
from ..model import MAX_TEXT, STEP_BATCH, CheckpointError, CheckpointEvent, StepId

CAUSE_OPERATOR = "operator"
CAUSE_INTERVAL = "interval"
CAUSE_BEFORE_END = "before end"
CAUSE_SIGTERM = "SIGTERM"
CAUSES = (CAUSE_OPERATOR, CAUSE_INTERVAL, CAUSE_BEFORE_END, CAUSE_SIGTERM)
"""What started a checkpoint, as the step's history says it."""

FORMAT = 1
"""Version of the JSON layout; a newer one is reported as corrupt rather than misread."""
HISTORY_LIMIT = 100
"""History lines kept per step (the oldest are dropped)."""
STATE_SUBDIR = ".sckpt"
TIMEOUT_CODE = errno.ETIME
"""Recorded when a checkpoint does not complete within max_wait (as the simulated engine)."""
ABANDONED_CODE = errno.ECANCELED
"""Recorded when the program ends before completing a checkpoint."""
STEP_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
INDEX_NAMES_LIMIT = 1000
"""Step names kept in a job's image index (a job has a handful; more is refused)."""

HANDLER_CAUGHT = "caught"
HANDLER_DEFAULT = "default"
HANDLER_IGNORED = "ignored"
"""How a task's program disposes of its checkpoint signal, as its wrapper last saw it in
``/proc/PID/status`` (``""``: not looked at yet)."""


# ---- the environment --------------------------------------------------------------------
ENV_IMAGE_DIR = "SCKPT_IMAGE_DIR"
"""Given to the program: the link its checkpoint is written through (``generations.py``)."""
ENV_DONE = "SCKPT_CKPT_DONE"
"""Given to the program: the file it writes its status line into once the image is saved."""
# The program is also given ``$SCKPT_CKPT_SIGNAL`` (``config.ENV_SIGNAL``, which ``sckpt run``
# reads as its ``--signal`` default): the signal that asks it to checkpoint.
ENV_RESTART = "SLURM_RESTART_DIR"
"""Given to the program when a complete image of its task exists: resume from it (as
srun_cr did)."""
DEFAULT_SIGNAL = "SIGUSR1"
"""The checkpoint signal when none is named."""
DEFAULT_WAKE = "SIGURG"
"""The signal the console sends a step to wake its wrappers: default-ignored by programs."""

# ---- file names -------------------------------------------------------------------------
DATA_SUFFIX = ".json"
LOCK_SUFFIX = ".lock"
"""Every file of the state directory is ``<stem>.json``, locked through ``<stem>.lock``."""


class StoreError(SckptError):
    """The state file exists but cannot be read, parsed or written; the message names it.

    ``errno`` is the system's code when one caused it (ENOSPC for a full file system,
    ELOOP for a refused link ...), 0 otherwise: the engines turn it into the error a
    person sees with its code and name, as Slurm's own refusals are.
    """

    def __init__(self, message: str, hint: str = "", errno: int = 0) -> None:
        super().__init__(message, hint)
        self.errno = errno


def step_key(step: StepId) -> str:
    """File-name key of a step: ``123.4``, ``123.batch``."""
    return str(step)


def image_leaf(step: StepId, name: str = "") -> str:
    """The image-dir leaf of a step: ``<job>.<name>`` for a named step, else the reference's.

    ``sckpt run`` names every step (``--name``, or ``default_step_name``) so that a restarted
    job's steps find their images whatever order they start in; records written before names
    existed (``name`` empty) keep the reference's ``<job>.<step>`` (``<job>`` for the batch
    script).  ``<job>`` is the job as squeue names it: ``9_1`` for an array task whose
    ``step`` carries its array names (its own id, ``10``, told a person nothing).
    """
    job = step.job_text
    if name:
        return f"{job}.{name}"
    return job if step.step == STEP_BATCH else f"{job}.{step.step_text}"


def default_step_name(program: Sequence[str]) -> str:
    """A step's name when ``sckpt run --name`` is not given: its command line, hashed.

    The same command line gives the same name in every run of the job, so a step finds its
    images after a restart even when the steps of the job took their ids in another order;
    the program's base name keeps it readable (``python3-1f0c2a9e``).
    """
    digest = hashlib.sha256("\0".join(program).encode("utf-8", "surrogateescape")).hexdigest()
    base = re.sub(r"[^A-Za-z0-9_-]", "_", Path(program[0]).name if program else "")[:32]
    return f"{base or 'step'}-{digest[:8]}"


def handler_blocker(handler: str, signal_name: str) -> str:
    """Why a program must not be sent its checkpoint signal ("" when it may be).

    The one rule of what makes a task checkpointable: its program catches the signal.  One
    that does not would be killed by it (SIGUSR1's default action is to terminate), one
    that ignores it would never checkpoint, and until the wrapper has looked nobody knows.
    """
    if handler == HANDLER_CAUGHT:
        return ""
    if handler == HANDLER_DEFAULT:
        return f"program does not catch {signal_name} (it would be killed by it)"
    if handler == HANDLER_IGNORED:
        return f"program ignores {signal_name} (it would never checkpoint)"
    return f"not yet known whether the program catches {signal_name}"


def check_step_name(name: str) -> str:
    """``name`` when it can name a step's images (one path component); ``ValueError`` if not."""
    if not STEP_NAME_RE.fullmatch(name):
        raise ValueError(
            f"invalid step name {name!r}: 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def state_dir_for(work_dir: str, configured: str | None = None) -> Path:
    """Where a job's state files live: the configured dir, else ``<work_dir>/.sckpt``."""
    chosen = configured or environment().state_dir or ""
    if chosen:
        return Path(chosen)
    return Path(work_dir or "/") / STATE_SUBDIR


def index_stem(job_id: int) -> str:
    """File stem of job ``job_id``'s image index: ``123.images``."""
    return f"{job_id}.images"


def done_file_name(step: StepId, procid: int) -> str:
    """Where task ``procid`` writes its status line (``$SCKPT_CKPT_DONE``)."""
    return f"{step_key(step)}.task{procid}.done"


def step_of_state_file(job_id: int, name: str) -> StepId | None:
    """The step whose record file ``name`` is, when it is one of job ``job_id``'s."""
    prefix = f"{job_id}."
    if not (name.startswith(prefix) and name.endswith(DATA_SUFFIX)):
        return None
    key = name[len(prefix) : -len(DATA_SUFFIX)]
    step = STEP_BATCH if key == "batch" else int(key) if key.isdigit() else None
    return None if step is None else StepId(job_id, step)


@dataclass
class TaskInfo:
    """One task (``SLURM_PROCID``) of the step, as its wrapper registered it."""

    procid: int
    host: str
    pid: int
    since: int
    signal: str
    image_dir: str
    state: str = "running"
    """``running`` or ``ended``."""
    ended_at: int = 0
    exit_status: int = 0
    restart_count: int = 0
    """``SLURM_RESTART_COUNT`` of the run that registered it (older runs are dropped)."""
    wake: str = DEFAULT_WAKE
    """The signal the console sends the step to wake this wrapper (``--wake-signal``)."""
    program_pid: int = 0
    """The program's pid (the wrapper's child; ``pid`` is the wrapper's own)."""
    handler: str = ""
    """``caught``, ``default`` or ``ignored``: what the program does with ``signal``."""
    resumed_from: str = ""
    """The complete image generation this run of the task was handed (``SLURM_RESTART_DIR``);
    "" when it started fresh."""
    start_note: str = ""
    """How this run of the task started, in words: ``resumed from generation 3 (PATH)`` or
    ``started fresh: ...`` and why."""
    off: str = ""
    """Why checkpointing is off for this task ("" when it is on): the wrapper could not
    prepare its image directory, for example.  The program runs anyway."""
    checkpointer: str = ""
    """``transparent (DMTCP 4.2.0)`` when the task runs under ``sckpt run --transparent``
    (no signal is sent, so what the program does with one does not matter); "" for the
    signal the program catches."""
    outside: list[str] = field(default_factory=list)
    """Its connections to outside the step when its last checkpoint was asked for
    (``peers.py``): DMTCP restores none of them (each comes back as a dead socket), so the
    answer and the step detail name them.  Empty for the signal checkpointer."""
    busy_since: int = 0
    """When this task's program was asked for the checkpoint it has not answered yet (0:
    none).  Until it answers, its image is still being written through ``current``: a new
    request would move that link under it (``StepRecord.busy``)."""

    def checkpoint_blocker(self) -> str:
        """Why this task's program must not be sent its checkpoint signal ("" when it may)."""
        if self.off:
            return f"checkpointing is off for this task: {self.off}"
        if self.checkpointer:
            return ""
        return handler_blocker(self.handler, self.signal)

    def describe(self) -> str:
        """``task 1 (pid 4242 on node1)``: how messages name a task."""
        pid = self.program_pid or self.pid
        return f"task {self.procid} (pid {pid} on {self.host})"


@dataclass
class Request:
    """A checkpoint in progress: who asked, when, where the image goes, what is still owed."""

    request_id: str
    start: int
    by: str
    image_dir: str
    max_wait: int
    deadline: int
    """0 = no limit; else the time after which anyone may record the timeout."""
    operation: str = "create"
    pending: list[int] = field(default_factory=list)
    """procids that have not reported yet."""
    results: dict[str, list[Any]] = field(default_factory=dict)
    """procid -> [code, message] as reported."""
    signalled: list[int] = field(default_factory=list)
    cause: str = CAUSE_OPERATOR
    """What started it: an operator (``create``, ``vacate`` ...) or the step's own policy
    (``interval``, ``before end``, ``SIGTERM``: ``policy.py``)."""


@dataclass
class AutoPolicy:
    """When ``sckpt run`` checkpoints its step by itself (``policy.py`` holds the rules).

    Set by the wrapper's options (``--every``, ``--before-end``, ``--max-restarts``, or the
    config's ``[auto]`` and ``$SCKPT_*``), or by an operator's ``sckpt auto``, whose choice
    then outlives the job's requeues (``set_by`` is not ``sckpt run``).
    """

    every: int = 0
    """Seconds between two interval checkpoints (0: none); with ``auto`` the last interval
    worked out by Young and Daly's rule."""
    auto: bool = False
    """``--every auto``: the interval follows the measured checkpoint cost."""
    before_end: int = 0
    """Checkpoint this long before the job's end time, then requeue (0: no)."""
    max_restarts: int = 0
    """The requeue chain ends once Slurm's restart count reaches this."""
    mtbf: int = 0
    """Mean time between failures, for ``auto``."""
    set_by: str = ""
    """``sckpt run``, or the operator who changed it with ``sckpt auto``."""

    @property
    def active(self) -> bool:
        return bool(self.every or self.auto or self.before_end)


@dataclass
class StepRecord:
    """Everything sckpt knows about one step's checkpoints."""

    job_id: int
    step: str
    owner_uid: int = -1
    name: str = ""
    """The step's name (``sckpt run --name`` or its default); "" in records older than names."""
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    disable_count: int = 0
    in_progress: Request | None = None
    error_code: int = 0
    error_msg: str = ""
    last_image: dict[str, str] = field(default_factory=dict)
    """procid -> directory of the last complete image."""
    last_image_time: int = 0
    image_bytes: dict[str, int] = field(default_factory=dict)
    """procid -> bytes of its last complete image (transparent tasks measure it)."""
    ckpt_seconds: dict[str, float] = field(default_factory=dict)
    """procid -> how long its last complete checkpoint took (transparent tasks)."""
    job_nodes: str = ""
    """The nodes the job ran on when it was last vacated (for restart with stick)."""
    ended_at: float = 0.0
    """When sckpt last ended the job (vacate's requeue): a restart waits past it (below)."""
    pinned_nodes: str = ""
    """Required nodes sckpt set on restart with stick (cleared by a later restart)."""
    history: list[dict[str, Any]] = field(default_factory=list)
    last_results: dict[str, list[Any]] = field(default_factory=dict)
    """procid -> [code, message] of the last checkpoint that ended (which task failed, why)."""
    last_request: str = ""
    """The id of the last checkpoint that ended (``last_results`` are its outcomes)."""
    policy: AutoPolicy = field(default_factory=AutoPolicy)
    next_due: int = 0
    """When the next interval checkpoint is due (0: none)."""
    end_time: int = 0
    """The job's end time as the wrapper last read it from the controller (0: unknown)."""
    before_end_run: int = -1
    """The restart count of the run whose before-end checkpoint was started (one a run)."""
    before_end_request: str = ""
    requeued_run: int = -1
    """The restart count of the run ``sckpt run`` requeued (one requeue a run)."""
    chain_end: str = ""
    """Why the requeue chain ended ("" while it goes on)."""
    coordinator: str = ""
    """``step`` (one DMTCP coordinator for every task: checkpoints are one cut of the whole
    step) or ``task`` (one per task) under ``sckpt run --transparent``; "" otherwise."""
    coord_run: int = -1
    """The restart count of the run whose step coordinator the fields below describe."""
    coord_public: str = ""
    """``ADDRESS:PORT`` of the step relay's public side (for other nodes' relays)."""
    coord_ports: dict[str, int] = field(default_factory=dict)
    """node -> the loopback port its tasks' DMTCP processes use (step relay or node relay)."""
    cut_request: str = ""
    """Under a step coordinator: the request whose images ``cut_images`` gathers."""
    cut_images: dict[str, str] = field(default_factory=dict)
    """procid -> the generation written for ``cut_request``: they become the tasks' last
    images together, once every task of the run has one (``wrapper._whole_cut``), even when
    they complete after MaxWait."""

    # ---- derived views -------------------------------------------------------------------
    @property
    def running_tasks(self) -> list[TaskInfo]:
        return [t for t in self.tasks.values() if t.state == "running"]

    def busy(self) -> TaskInfo | None:
        """A running task whose program has not answered its last checkpoint request (the
        earliest asked): no new checkpoint may start before it answers."""
        waiting = [t for t in self.running_tasks if t.busy_since]
        return min(waiting, key=lambda t: t.busy_since) if waiting else None

    def refusal(self) -> tuple[int, str]:
        """Why no checkpoint may start now: ``(code, words)``, ``(0, "")`` when one may.

        ``rules.checkpoint_code``'s order (disabled, then one already running), where a
        program still writing the image of a request that expired counts as running.
        """
        busy = self.busy()
        code = rules.checkpoint_code(self.disable_count, self.in_progress is not None or bool(busy))
        if not code:
            return 0, ""
        if self.disable_count:
            return code, f"checkpoints are disabled (counter {self.disable_count})"
        if self.in_progress is not None:
            return code, f"a checkpoint began at {_clock(self.in_progress.start)} and is running"
        assert busy is not None
        return code, (
            f"{busy.describe()} has not finished the checkpoint it was asked for at "
            f"{_clock(busy.busy_since)}"
        )

    def checkpoint_error(self) -> CheckpointError:
        """The last error as ``error`` reports it (code 0 when none)."""
        name, _text = describe(self.error_code)
        return CheckpointError(self.error_code, name, self.error_msg if self.error_code else "")

    def events(self) -> tuple[CheckpointEvent, ...]:
        out = []
        for h in self.history:
            with contextlib.suppress(KeyError, TypeError, ValueError):
                out.append(
                    CheckpointEvent(
                        time=int(h["time"]),
                        operation=str(h["operation"]),
                        by=str(h.get("by", "")),
                        code=int(h.get("code", 0)),
                        message=str(h.get("message", "")),
                        image_dir=str(h.get("image_dir", "")),
                        cause=str(h.get("cause", "")),
                    )
                )
        return tuple(out)

    # ---- changes -------------------------------------------------------------------------
    def log(
        self,
        operation: str,
        by: str,
        code: int = 0,
        message: str = "",
        image_dir: str = "",
        cause: str = "",
        *,
        now: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Append one history line (bounded); ``cause`` for a checkpoint's lines.  Its time
        is ``now``, else the caller's ``clock`` (the wrapper's or engine's, injected)."""
        line: dict[str, Any] = {
            "time": int(clock()) if now is None else now,
            "operation": operation,
            "by": by,
            "code": code,
            "message": message,
            "image_dir": image_dir,
        }
        if cause:
            line["cause"] = cause
        self.history.append(line)
        del self.history[:-HISTORY_LIMIT]

    def keep_highest(self, code: int, message: str) -> None:
        """Completion rule of the man page: only the highest code is kept, with its message."""
        code, message = rules.kept_error(self.error_code, self.error_msg, code, message)
        self.error_code, self.error_msg = code, _text(message)

    def report(
        self,
        procid: int,
        code: int,
        message: str,
        request_id: str = "",
        *,
        clock: Callable[[], float] = time.time,
    ) -> bool:
        """Task ``procid``'s outcome of the checkpoint in progress (of ``request_id``, when
        given): kept with the other tasks', and the request closed once every task reported.
        False when that request is no longer in progress (nothing is changed)."""
        req = self.in_progress
        if req is None or (request_id and req.request_id != request_id):
            return False
        if procid in req.pending:
            req.pending.remove(procid)
        req.results[str(procid)] = [code, message]
        if not req.pending:
            self.finish_request(clock=clock)
        return True

    def finish_request(
        self, now: int | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        """Close the request in progress once every task reported (or it expired)."""
        req = self.in_progress
        if req is None:
            return
        now = int(clock()) if now is None else now
        codes = []
        for _procid, (code, message) in sorted(req.results.items()):
            self.keep_highest(int(code), str(message))
            codes.append(int(code))
        worst = max(codes, default=0)
        message = self.error_msg if worst else ""
        self.log("done", req.by, worst, message, req.image_dir, cause=req.cause, now=now)
        self.last_results = {k: [int(c), str(m)] for k, (c, m) in req.results.items()}
        self.last_request = req.request_id
        self.in_progress = None

    def expire(self, now: int | None = None, *, clock: Callable[[], float] = time.time) -> bool:
        """Record a timeout when the request in progress is past its deadline."""
        req = self.in_progress
        now = int(clock()) if now is None else now
        if req is None or not req.deadline or now < req.deadline:
            return False
        for procid in req.pending:
            req.results[str(procid)] = [
                TIMEOUT_CODE,
                f"checkpoint not complete within max_wait={req.max_wait}s (task {procid})",
            ]
        req.pending = []
        self.finish_request(now)
        return True

    def begin_request(
        self,
        by: str,
        image_dir: str,
        max_wait: int,
        operation: str,
        now: int | None = None,
        cause: str = CAUSE_OPERATOR,
        *,
        clock: Callable[[], float] = time.time,
    ) -> Request:
        """Start a checkpoint of every running task: reset the error, record who asked and
        why (``cause``)."""
        now = int(clock()) if now is None else now
        req = Request(
            request_id=f"{now}-{os.getpid()}-{uuid.uuid4().hex[:8]}",
            start=now,
            by=by,
            image_dir=image_dir,
            max_wait=max_wait,
            deadline=now + max_wait if max_wait else 0,
            operation=operation,
            pending=sorted(t.procid for t in self.running_tasks),
            cause=cause,
        )
        self.error_code = 0
        self.error_msg = ""
        self.last_results = {}
        self.in_progress = req
        self.log(operation, by, 0, "", image_dir, cause=cause, now=now)
        return req

    # ---- (de)serialisation ---------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["format"] = FORMAT
        return data

    @classmethod
    def from_json(cls, data: Any) -> StepRecord:
        """Validate and build; any mismatch raises ``ValueError``/``TypeError``/``KeyError``."""
        if not isinstance(data, dict):
            raise TypeError("top level is not an object")
        if data.get("format") != FORMAT:
            raise ValueError(f"unknown format {data.get('format')!r}")
        tasks = {str(k): TaskInfo(**v) for k, v in dict(data.get("tasks", {})).items()}
        req_data = data.get("in_progress")
        req = Request(**req_data) if req_data is not None else None
        policy = AutoPolicy(**dict(data.get("policy") or {}))
        if req is not None and req.cause not in CAUSES:
            raise ValueError(f"unknown checkpoint cause {req.cause!r}")
        rec = cls(
            job_id=int(data["job_id"]),
            step=str(data["step"]),
            owner_uid=int(data.get("owner_uid", -1)),
            name=str(data.get("name", "")),
            tasks=tasks,
            disable_count=int(data.get("disable_count", 0)),
            in_progress=req,
            error_code=int(data.get("error_code", 0)),
            error_msg=_text(data.get("error_msg", "")),
            last_image={str(k): str(v) for k, v in dict(data.get("last_image", {})).items()},
            last_image_time=int(data.get("last_image_time", 0)),
            image_bytes={str(k): int(v) for k, v in dict(data.get("image_bytes", {})).items()},
            ckpt_seconds={str(k): float(v) for k, v in dict(data.get("ckpt_seconds", {})).items()},
            job_nodes=str(data.get("job_nodes", "")),
            pinned_nodes=str(data.get("pinned_nodes", "")),
            ended_at=float(data.get("ended_at", 0.0)),
            history=[
                {k: _text(v) if isinstance(v, str) else v for k, v in dict(h).items()}
                for h in list(data.get("history", []))[-HISTORY_LIMIT:]
            ],
            last_results={
                str(k): [int(v[0]), _text(v[1])]
                for k, v in dict(data.get("last_results", {})).items()
            },
            last_request=str(data.get("last_request", "")),
            policy=policy,
            next_due=int(data.get("next_due", 0)),
            end_time=int(data.get("end_time", 0)),
            before_end_run=int(data.get("before_end_run", -1)),
            before_end_request=str(data.get("before_end_request", "")),
            requeued_run=int(data.get("requeued_run", -1)),
            chain_end=_text(data.get("chain_end", "")),
            coordinator=str(data.get("coordinator", "")),
            coord_run=int(data.get("coord_run", -1)),
            coord_public=str(data.get("coord_public", "")),
            coord_ports={str(k): int(v) for k, v in dict(data.get("coord_ports", {})).items()},
            cut_request=str(data.get("cut_request", "")),
            cut_images={str(k): str(v) for k, v in dict(data.get("cut_images", {})).items()},
        )
        if rec.disable_count < 0:
            raise ValueError("negative disable_count")
        if rec.name:
            check_step_name(rec.name)
        return rec

    def rename(self, name: str, *, clock: Callable[[], float] = time.time) -> None:
        """Make this record the step ``name``'s: what belonged to another program goes.

        A restarted job's steps may take their ids in another order, so the record found at
        a step id can be another program's: its images (kept in the job's ``ImageIndex``),
        counter, error and checkpoint in progress are not this one's.  What belongs to the
        job (its nodes, when it ended, pinned nodes) and the history stay.
        """
        if name == self.name:
            return
        if self.name:
            self.log("rename", "", 0, f"step was {self.name}, now {name}", clock=clock)
        self.name = name
        self.last_image = {}
        self.last_image_time = 0
        self.image_bytes = {}
        self.ckpt_seconds = {}
        self.disable_count = 0
        self.error_code = 0
        self.error_msg = ""
        self.last_results = {}
        self.in_progress = None
        self.cut_request, self.cut_images = "", {}


def recorded_image(
    images: dict[str, dict[str, str]], name: str, rec: StepRecord, procid: int
) -> str:
    """Where task ``procid`` of the step named ``name`` has its last complete image ("").

    The one rule the wrapper (handing ``SLURM_RESTART_DIR``) and restart (checking before it
    releases the job) share: by the step's name in the job's image index (``images``, as
    ``ImageIndex.read`` gives it), else the record's own when the record is that step's
    (or older than names).
    """
    found = images.get(name, {}).get(str(procid), "") if name else ""
    if not found and rec.name in ("", name):
        found = rec.last_image.get(str(procid), "")
    return found


# ---- the image index's document --------------------------------------------------------
def index_images(data: Any) -> dict[str, dict[str, str]]:
    """An image index's JSON document -> ``{name: {procid: image dir}}``; ``ValueError``,
    ``TypeError`` or ``AttributeError`` when it is not one."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(
            f"unknown format {data.get('format') if isinstance(data, dict) else None!r}"
        )
    return {
        check_step_name(str(name)): {str(p): str(d) for p, d in dict(tasks).items()}
        for name, tasks in dict(data.get("images", {})).items()
    }


def index_document(job_id: int, images: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """The JSON document of job ``job_id``'s image index."""
    return {"format": FORMAT, "job_id": job_id, "images": images}


# ---- the status line --------------------------------------------------------------------
def parse_status(raw: bytes) -> tuple[int, str]:
    """``0`` -> success; ``<code> <message>`` -> that error; anything else is EINVAL."""
    text = raw.decode("utf-8", "replace").strip().splitlines()[0].strip() if raw.strip() else ""
    head, _, rest = text.partition(" ")
    if head.isdigit():
        code = int(head)
        if code == 0:
            return 0, ""
        message = rest.strip()[:MAX_TEXT]
        if not message and code < 1000:
            message = os.strerror(code)
        return code, message
    shown = text[:80]
    return errno.EINVAL, f"unreadable checkpoint status {shown!r}: expected '0' or '<code> <msg>'"


def status_line(code: int, message: str = "") -> str:
    """The status line for an outcome, as a program writes it: ``0`` or ``<code> <message>``."""
    return "0" if code == 0 else f"{code} {message}"


def _clock(epoch: int) -> str:
    """``12:04:05``: when something began, in the words of a refusal."""
    return time.strftime("%H:%M:%S", time.localtime(epoch))


def _text(value: object) -> str:
    """A text field of a state file, cut at ``MAX_TEXT`` characters: its writer (the job's
    owner) decides its length, not the console that shows it."""
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"
