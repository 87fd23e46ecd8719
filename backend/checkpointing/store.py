"""The cooperative engine's shared state store: one small JSON file per job step.

Why a file: on modern Slurm nothing in the controller remembers checkpoint state, and the two
parties that need it cannot talk to each other directly.  The operator's console (any login
node, often root) and the ``sckpt run`` wrapper (the job's user, on a compute node) both reach
the cluster's shared filesystem, so the state lives there, by default next to the job's
working directory (the reference's image-dir rule): ``<work_dir>/.sckpt/<job>.<step>.json``.
``$SCKPT_STATE_DIR`` (or the wrapper's ``--state-dir``) names another directory for sites
whose working directories are not shared; consoles must then use the same value.

How it stays correct with several writers:

* **Lock, then read-modify-write.**  Every change holds an exclusive ``flock`` on a sibling
  lock file (never on the data file, whose inode is replaced by each write), reads the
  record, applies the change and writes it back.  Two operators acting at once are
  serialised, so neither loses the other's change (tests/cooperative/test_store.py).
* **Atomic replacement.**  The new content goes to a temporary file in the same directory,
  is fsync'ed, then ``rename``d over the old one: a reader sees the old or the new record,
  never half of one, even when the writer is killed.
* **Ownership.**  Files are created 0644 and owned by the job's user (the store's
  ``owner``; without one, the owner of the state directory).  When root writes (an
  operator's console), the temporary file is ``fchown``ed to that user before the rename,
  so the job's user can still update it and other users still cannot rewrite it.
* **Never tricked into writing elsewhere.**  The state directory belongs to the job's user,
  and an operator's console often runs as root.  So every file is opened with
  ``O_NOFOLLOW`` (a planted symlink is refused, not followed), temporary files with
  ``O_EXCL``, reads with ``O_NONBLOCK`` and only regular files are used (a FIFO cannot
  hang the console), and root ``fchown``s only a file it created itself (its own, one
  link).  Without this, a user could point their lock file at ``/etc/shadow`` and have an
  operator's ``disable`` hand it to them (tests/reliability/test_security_users.py).
* **Only the job's user is believed.**  A store opened with ``owner`` (the engine passes the
  job's uid, the wrapper its own) refuses a state file owned by anyone else but root, or
  writable by group or others: in a shared ``$SCKPT_STATE_DIR`` another user could
  otherwise plant a record for someone else's job (its wake signal is sent by the console,
  its image path handed to the program on restart).
* **Failures are reported, never fatal.**  A missing file is ``None`` (the step is not under
  ``sckpt run``); an unreadable or corrupt one raises ``StoreError`` naming the file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import pwd
import re
import stat
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .. import rules
from ..errors import SckptError, describe
from ..model import MAX_TEXT, STEP_BATCH, CheckpointError, CheckpointEvent, StepId

T = TypeVar("T")

FORMAT = 1
"""Version of the JSON layout; a newer one is reported as corrupt rather than misread."""
HISTORY_LIMIT = 100
"""History lines kept per step (the oldest are dropped)."""
STATE_SUBDIR = ".sckpt"
ENV_STATE_DIR = "SCKPT_STATE_DIR"
TIMEOUT_CODE = errno.ETIME
"""Recorded when a checkpoint does not complete within max_wait (as the simulated engine)."""
ABANDONED_CODE = errno.ECANCELED
"""Recorded when the program ends before completing a checkpoint."""
MAX_STATE_BYTES = 4 * 1024 * 1024
"""A state file is a few KB (history is bounded); anything larger is refused, not read."""
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
STEP_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
INDEX_NAMES_LIMIT = 1000
"""Step names kept in a job's image index (a job has a handful; more is refused)."""

HANDLER_CAUGHT = "caught"
HANDLER_DEFAULT = "default"
HANDLER_IGNORED = "ignored"
"""How a task's program disposes of its checkpoint signal, as its wrapper last saw it in
``/proc/PID/status`` (``""``: not looked at yet)."""


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
    script).
    """
    if name:
        return f"{step.job_id}.{name}"
    return str(step.job_id) if step.step == STEP_BATCH else f"{step.job_id}.{step.step_text}"


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
    chosen = configured or os.environ.get(ENV_STATE_DIR) or ""
    if chosen:
        return Path(chosen)
    return Path(work_dir or "/") / STATE_SUBDIR


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
    wake: str = "SIGURG"
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

    # ---- derived views -------------------------------------------------------------------
    @property
    def running_tasks(self) -> list[TaskInfo]:
        return [t for t in self.tasks.values() if t.state == "running"]

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
                    )
                )
        return tuple(out)

    # ---- changes -------------------------------------------------------------------------
    def log(
        self, operation: str, by: str, code: int = 0, message: str = "", image_dir: str = ""
    ) -> None:
        """Append one history line (bounded)."""
        self.history.append(
            {
                "time": int(time.time()),
                "operation": operation,
                "by": by,
                "code": code,
                "message": message,
                "image_dir": image_dir,
            }
        )
        del self.history[:-HISTORY_LIMIT]

    def keep_highest(self, code: int, message: str) -> None:
        """Completion rule of the man page: only the highest code is kept, with its message."""
        code, message = rules.kept_error(self.error_code, self.error_msg, code, message)
        self.error_code, self.error_msg = code, _text(message)

    def report(self, procid: int, code: int, message: str, request_id: str = "") -> bool:
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
            self.finish_request()
        return True

    def finish_request(self, now: int | None = None) -> None:
        """Close the request in progress once every task reported (or it expired)."""
        req = self.in_progress
        if req is None:
            return
        now = int(time.time()) if now is None else now
        codes = []
        for _procid, (code, message) in sorted(req.results.items()):
            self.keep_highest(int(code), str(message))
            codes.append(int(code))
        worst = max(codes, default=0)
        self.log("done", req.by, worst, self.error_msg if worst else "", req.image_dir)
        self.last_results = {k: [int(c), str(m)] for k, (c, m) in req.results.items()}
        self.in_progress = None

    def expire(self, now: int | None = None) -> bool:
        """Record a timeout when the request in progress is past its deadline."""
        req = self.in_progress
        now = int(time.time()) if now is None else now
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
        self, by: str, image_dir: str, max_wait: int, operation: str, now: int | None = None
    ) -> Request:
        """Start a checkpoint of every running task: reset the error, record who asked."""
        now = int(time.time()) if now is None else now
        req = Request(
            request_id=f"{now}-{os.getpid()}-{uuid.uuid4().hex[:8]}",
            start=now,
            by=by,
            image_dir=image_dir,
            max_wait=max_wait,
            deadline=now + max_wait if max_wait else 0,
            operation=operation,
            pending=sorted(t.procid for t in self.running_tasks),
        )
        self.error_code = 0
        self.error_msg = ""
        self.last_results = {}
        self.in_progress = req
        self.log(operation, by, 0, "", image_dir)
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
        )
        if rec.disable_count < 0:
            raise ValueError("negative disable_count")
        if rec.name:
            check_step_name(rec.name)
        return rec

    def rename(self, name: str) -> None:
        """Make this record the step ``name``'s: what belonged to another program goes.

        A restarted job's steps may take their ids in another order, so the record found at
        a step id can be another program's: its images (kept in the job's ``ImageIndex``),
        counter, error and checkpoint in progress are not this one's.  What belongs to the
        job (its nodes, when it ended, pinned nodes) and the history stay.
        """
        if name == self.name:
            return
        if self.name:
            self.log("rename", "", 0, f"step was {self.name}, now {name}")
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


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40


def open_trusted_dir(
    path: Path, owner: int | None, *, create: bool = False, what: str = "directory"
) -> int:
    """A descriptor of directory ``path``, reached without letting a user steer the walk.

    The walk starts at "/" and opens one component at a time relative to its parent's
    descriptor, never following a link: a symbolic link is followed only when root owns it
    (a site's ``/home -> /data/home``), any other is refused.  With ``owner``, every
    directory on the way must belong to root or to ``owner``, and one that others may
    write must be sticky (``/tmp``): anybody else could swap what comes next.  The caller
    then opens, renames and unlinks relative to the descriptor, so a directory swapped for a
    link after the walk changes nothing.  ``create`` makes missing directories (0755).

    Raises ``StoreError`` naming the component and the reason; ``FileNotFoundError`` when
    a component does not exist (and ``create`` is not set).
    """
    parts = list(Path(path).absolute().parts[1:])
    fd = os.open("/", _DIR_FLAGS)
    walked = Path("/")
    links = 0

    def refuse(reason: str) -> StoreError:
        return StoreError(
            f"{what} {path} refused: {reason}",
            hint="keep the job's working directory (or $SCKPT_STATE_DIR, `sckpt run "
            "--state-dir`) on a path only root and the job's user can change",
            errno=errno.EPERM,
        )

    try:
        while parts:
            part = parts.pop(0)
            if part in ("", "."):
                continue
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # made meanwhile: looked at below
                    os.mkdir(part, 0o755, dir_fd=fd)
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            here = walked / part if part != ".." else walked.parent
            if stat.S_ISLNK(st.st_mode):
                if st.st_uid != 0:
                    raise refuse(
                        f"{here} is a symbolic link owned by uid {st.st_uid}: sckpt follows "
                        "no link that a user controls"
                    )
                links += 1
                if links > _MAX_LINKS:
                    raise refuse(f"too many symbolic links at {here}")
                target = Path(os.readlink(part, dir_fd=fd))
                if target.is_absolute():
                    os.close(fd)
                    fd = os.open("/", _DIR_FLAGS)
                    walked = Path("/")
                    parts = list(target.parts[1:]) + parts
                else:
                    parts = list(target.parts) + parts
                continue
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise refuse(f"{here} is not a directory (or was just replaced)") from None
                raise
            os.close(fd)
            fd = child
            walked = here
            st = os.fstat(fd)
            if owner is not None and st.st_uid not in (0, owner):
                raise refuse(
                    f"{walked} belongs to uid {st.st_uid}, neither root nor the job's user "
                    f"(uid {owner}): its owner could redirect what sckpt writes"
                )
            if owner is not None and st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
                raise refuse(
                    f"{walked} is writable by other users and not sticky "
                    f"(mode {stat.S_IMODE(st.st_mode):o}): they could redirect what sckpt writes"
                )
        return fd
    except BaseException:
        os.close(fd)
        raise


class _GuardedFile:
    """One JSON file of a state directory, read and written so that nobody can steer sckpt.

    The directory belongs to the job's user while sckpt often runs as root: every open is
    ``O_NOFOLLOW``, only regular files of the expected owner are believed, writes go through
    a fresh ``O_EXCL`` temporary file and an atomic rename, and changes hold a ``flock`` on
    a sibling lock file (see the module's docstring).
    """

    kind = "checkpoint state"
    """How messages name the file (``<kind> file <path>``)."""

    def __init__(self, directory: Path, stem: str, owner: int | None = None) -> None:
        self.directory = Path(directory)
        self.owner = owner
        """The uid whose file this must be (root's also accepted); None: any."""
        self.path = self.directory / f"{stem}.json"
        self.lock_path = self.directory / f"{stem}.lock"

    @contextlib.contextmanager
    def _directory(self) -> Iterator[int]:
        """The directory's descriptor (``open_trusted_dir``): every file operation is
        relative to it.  ``FileNotFoundError`` when the directory does not exist."""
        fd = open_trusted_dir(self.directory, self.owner, what=f"{self.kind} directory")
        try:
            yield fd
        finally:
            os.close(fd)

    def read_raw(self) -> bytes | None:
        """The file's bytes (``None`` when missing): for callers that cache parsed records."""
        try:
            with self._directory() as dfd:
                return self._read_at(dfd)
        except FileNotFoundError:  # no directory yet
            return None

    def _read_at(self, dfd: int) -> bytes | None:
        try:
            fd = os.open(self.path.name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=dfd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(
                f"{self.kind} file {self.path} cannot be read: {_why(exc)}", errno=exc.errno or 0
            ) from None
        try:
            st = os.fstat(fd)
            self._check_trusted(st)
            if st.st_size > MAX_STATE_BYTES:
                raise StoreError(
                    f"{self.kind} file {self.path} is {st.st_size} bytes: "
                    f"at most {MAX_STATE_BYTES} expected"
                )
            chunks = []
            total = 0
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
                total += len(chunk)
                if total > MAX_STATE_BYTES:
                    raise StoreError(f"{self.kind} file {self.path} keeps growing")
            return b"".join(chunks)
        except OSError as exc:
            raise StoreError(
                f"{self.kind} file {self.path} cannot be read: {exc.strerror}",
                errno=exc.errno or 0,
            ) from None
        finally:
            os.close(fd)

    def _check_trusted(self, st: os.stat_result) -> None:
        """Refuse what is not a regular file, or (with ``owner``) not the owner's own."""
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"{self.kind} file {self.path} is not a regular file: ignored")
        if self.owner is None:
            return
        if st.st_uid not in (self.owner, 0):
            raise StoreError(
                f"{self.kind} file {self.path} belongs to uid {st.st_uid}, not to the "
                f"job's user (uid {self.owner}): ignored",
                hint="another user may have planted it; remove it",
            )
        if st.st_mode & 0o022:
            raise StoreError(
                f"{self.kind} file {self.path} is writable by other users "
                f"(mode {stat.S_IMODE(st.st_mode):o}): ignored",
                hint="chmod go-w it",
            )

    def _load_json(self, raw: bytes) -> Any:
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise self._corrupt(exc) from None

    def _corrupt(self, exc: Exception) -> StoreError:
        return StoreError(
            f"{self.kind} file {self.path} is corrupt ({type(exc).__name__}: {exc})",
            hint="move it aside; the next `sckpt run` of the step starts a fresh one",
        )

    # ---- writing -------------------------------------------------------------------------
    def _owner(self, dfd: int) -> tuple[int, int]:
        """Whose files root writes here: the job's user when known, else the directory's.

        In a shared ``$SCKPT_STATE_DIR`` (root's, sticky) the directory's owner is root:
        a record root rewrote would then be root's, and the job's own wrapper could no
        longer update it.
        """
        st = os.fstat(dfd)
        if self.owner is not None and self.owner != 0:
            try:
                return self.owner, pwd.getpwuid(self.owner).pw_gid
            except KeyError:
                return self.owner, st.st_gid
        return st.st_uid, st.st_gid

    @contextlib.contextmanager
    def _locked(self, dfd: int) -> Iterator[None]:
        flags = os.O_NONBLOCK | _NOFOLLOW
        name = self.lock_path.name
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | flags, 0o644, dir_fd=dfd)
        except PermissionError:
            # Readers of someone else's job may still lock a read-only descriptor.
            try:
                fd = os.open(name, os.O_RDONLY | flags, dir_fd=dfd)
            except OSError as exc:
                raise self._lock_error(exc) from None
        except OSError as exc:
            raise self._lock_error(exc) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise StoreError(f"lock file {self.lock_path} is not a regular file")
            self._fix_owner(fd, dfd)
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _lock_error(self, exc: OSError) -> StoreError:
        return StoreError(
            f"cannot lock {self.kind} {self.lock_path}: {_why(exc)}", errno=exc.errno or 0
        )

    def _fix_owner(self, fd: int, dfd: int) -> None:
        """Give a file root created to the directory's owner (root only; others cannot).

        Only a regular file root owns with a single link is given away: one it created.
        Anything else (a hard link to a system file, a file someone else made) is left alone.
        """
        if os.geteuid() != 0:
            return
        uid, gid = self._owner(dfd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or st.st_nlink != 1:
            return
        if (st.st_uid, st.st_gid) != (uid, gid):
            os.fchown(fd, uid, gid)

    def _write_json(self, dfd: int, document: Any) -> None:
        data = json.dumps(document, indent=1, sort_keys=True).encode("utf-8")
        tmp = f".{self.path.name}.{os.getpid()}.tmp"
        try:
            # A leftover of a killed writer with the same pid (or a planted link) is removed:
            # unlink removes the name only, and O_EXCL then creates a file of our own.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
            fd = os.open(tmp, flags, 0o644, dir_fd=dfd)
            try:
                os.fchmod(fd, 0o644)
                self._fix_owner(fd, dfd)
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise StoreError(
                f"cannot write {self.kind} {self.path}: {exc.strerror}", errno=exc.errno or 0
            ) from None

    @contextlib.contextmanager
    def _changing(self, locked: bool = True) -> Iterator[int]:
        """The directory's descriptor with this file's lock held: for read-modify-write
        (``locked=False``: without the lock, for the one write made when locking failed)."""
        try:
            lock = self._locked if locked else _unlocked
            with self._directory() as dfd, lock(dfd):
                yield dfd
        except FileNotFoundError:
            raise StoreError(f"{self.kind} directory {self.directory} does not exist") from None

    def ensure_directory(self) -> None:
        """Create the state directory (0755) if needed; the wrapper calls this as the job user."""
        try:
            os.close(
                open_trusted_dir(
                    self.directory, self.owner, create=True, what=f"{self.kind} directory"
                )
            )
        except OSError as exc:
            raise StoreError(
                f"cannot create checkpoint state directory {self.directory}: {exc.strerror}",
                errno=exc.errno or 0,
            ) from None


class StepStore(_GuardedFile):
    """The state file of one step, with locked read-modify-write updates.

    ``read()`` never locks (a rename makes reads consistent); ``update(fn)`` locks, reads
    (or starts a new record when ``create`` is set), calls ``fn(record)`` and writes the
    result atomically.
    """

    def __init__(self, directory: Path, step: StepId, owner: int | None = None) -> None:
        super().__init__(directory, step_key(step), owner)
        self.step = step

    def done_file(self, procid: int) -> Path:
        """Where task ``procid`` writes its completion status (``$SCKPT_CKPT_DONE``)."""
        return self.directory / f"{step_key(self.step)}.task{procid}.done"

    def read(self) -> StepRecord | None:
        """The record, ``None`` when the file does not exist; ``StoreError`` when unusable."""
        raw = self.read_raw()
        return None if raw is None else self.parse(raw)

    def _read_record(self, dfd: int) -> StepRecord | None:
        raw = self._read_at(dfd)
        return None if raw is None else self.parse(raw)

    def parse(self, raw: bytes) -> StepRecord:
        """Bytes of this step's state file -> record (``StoreError`` when corrupt).

        A record must describe this very step, and (with ``owner``) be that user's: one
        copied from another job's file, or naming another owner, is refused.
        """
        data = self._load_json(raw)
        try:
            rec = StepRecord.from_json(data)
        except (TypeError, ValueError, KeyError) as exc:
            raise self._corrupt(exc) from None
        if (rec.job_id, rec.step) != (self.step.job_id, self.step.step_text):
            raise StoreError(
                f"checkpoint state file {self.path} describes step {rec.job_id}.{rec.step}, "
                f"not {self.step}: ignored",
                hint="another user may have planted it; remove it",
            )
        if self.owner is not None and rec.owner_uid not in (-1, 0, self.owner):
            raise StoreError(
                f"checkpoint state file {self.path} names uid {rec.owner_uid} as its owner, "
                f"not the job's user (uid {self.owner}): ignored",
                hint="another user may have planted it; remove it",
            )
        return rec

    def update(
        self,
        change: Callable[[StepRecord], T],
        *,
        create: bool = False,
        reset_corrupt: bool = False,
        locked: bool = True,
    ) -> T:
        """Locked read-modify-write.  Missing file: ``StoreError`` unless ``create``.

        ``reset_corrupt`` (the wrapper's registration) moves a corrupt file aside to
        ``<name>.corrupt-<time>`` and starts afresh instead of failing.  ``locked=False``
        skips the lock: only for the wrapper's note that checkpointing is off because the
        lock could not be had (a lost update is then better than saying nothing).
        """
        with self._changing(locked) as dfd:
            try:
                record = self._read_record(dfd)
            except StoreError:
                if not reset_corrupt:
                    raise
                aside = f"{self.path.name}.corrupt-{int(time.time())}"
                with contextlib.suppress(OSError):
                    os.rename(self.path.name, aside, src_dir_fd=dfd, dst_dir_fd=dfd)
                record = None
            if record is None:
                if not create:
                    raise StoreError(f"checkpoint state file {self.path} does not exist")
                uid = self._owner(dfd)[0] if os.geteuid() == 0 else os.geteuid()
                record = StepRecord(job_id=self.step.job_id, step=self.step.step_text)
                record.owner_uid = uid
            result = change(record)
            self._write_json(dfd, record.to_json())
            return result


def job_stores(directory: Path, job_id: int, owner: int | None = None) -> list[StepStore]:
    """The state files of every step of job ``job_id`` in ``directory``, by step id.

    The directory is listed through ``open_trusted_dir``, as every file in it is opened:
    a state directory the job's user replaced by a link is refused (``StoreError`` naming
    it), never listed through the link.  A missing directory has no state files.
    """
    try:
        fd = open_trusted_dir(Path(directory), owner, what="checkpoint state directory")
    except FileNotFoundError:
        return []
    try:
        names = os.listdir(fd)  # noqa: PTH208 (a descriptor: no Path for it)
    except OSError as exc:
        raise StoreError(
            f"checkpoint state directory {directory} cannot be listed: {_why(exc)}",
            errno=exc.errno or 0,
        ) from None
    finally:
        os.close(fd)
    stores = []
    prefix = f"{job_id}."
    for name in sorted(names):
        if not (name.startswith(prefix) and name.endswith(".json")):
            continue
        key = name[len(prefix) : -len(".json")]
        step = STEP_BATCH if key == "batch" else int(key) if key.isdigit() else None
        if step is not None:
            stores.append(StepStore(Path(directory), StepId(job_id, step), owner=owner))
    return stores


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


class ImageIndex(_GuardedFile):
    """A job's last complete image of each named step and task: ``<job>.images.json``.

    Step records are kept by step id, and a restarted job's steps may take their ids in
    another order; this index is kept by step name, so each step finds its own image.  The
    wrapper adds to it when a checkpoint completes, restart with an ImageDir points it there.
    """

    kind = "image index"

    def __init__(self, directory: Path, job_id: int, owner: int | None = None) -> None:
        super().__init__(directory, f"{job_id}.images", owner)
        self.job_id = job_id

    def read(self) -> dict[str, dict[str, str]]:
        """``{name: {procid: image dir}}`` (empty when there is no index yet)."""
        return self._parse(self.read_raw())

    def _parse(self, raw: bytes | None) -> dict[str, dict[str, str]]:
        if raw is None:
            return {}
        data = self._load_json(raw)
        try:
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ValueError(
                    f"unknown format {data.get('format') if isinstance(data, dict) else None!r}"
                )
            images = {
                check_step_name(str(name)): {str(p): str(d) for p, d in dict(tasks).items()}
                for name, tasks in dict(data.get("images", {})).items()
            }
        except (TypeError, ValueError, AttributeError) as exc:
            raise self._corrupt(exc) from None
        return images

    def image(self, name: str, procid: int) -> str:
        """The last complete image of task ``procid`` of step ``name`` ("" when none)."""
        return self.read().get(name, {}).get(str(procid), "")

    def remember(self, name: str, images: dict[str, str]) -> None:
        """Record ``{procid: dir}`` as step ``name``'s last complete images (locked)."""
        with self._changing() as dfd:
            try:
                current = self._parse(self._read_at(dfd))
            except StoreError:
                current = {}  # a corrupt index is replaced: step records still hold images
            current.setdefault(name, {}).update(images)
            if len(current) > INDEX_NAMES_LIMIT:
                raise StoreError(
                    f"image index {self.path} lists more than {INDEX_NAMES_LIMIT} step names"
                )
            self._write_json(dfd, {"format": FORMAT, "job_id": self.job_id, "images": current})


@contextlib.contextmanager
def _unlocked(dfd: int) -> Iterator[None]:
    """``_GuardedFile._locked``'s stand-in for the one write made without the lock."""
    yield


def _text(value: object) -> str:
    """A text field of a state file, cut at ``MAX_TEXT`` characters: its writer (the job's
    owner) decides its length, not the console that shows it."""
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _why(exc: OSError) -> str:
    """An open's failure in words; a symlink refused by O_NOFOLLOW is named as such."""
    if exc.errno == errno.ELOOP:
        return "it is a symbolic link (refused)"
    return exc.strerror or str(exc)
