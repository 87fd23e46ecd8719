"""Load the shim and call libslurm: one dedicated thread, typed errors, model dataclasses out.

Why one thread: libslurm's thread safety is undocumented, and errno is per thread.  Every
call (including ``slurm_init`` and every free) runs on a single-thread executor; the shim
captures errno inside the same C call.  Responses are always freed in ``finally`` on that
thread, after their strings were copied into Python objects.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno as _errno
import importlib.util
import os
import pwd
import queue
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import errors
from ..errors import (
    ESLURM_NOT_SUPPORTED,
    SLURM_ERROR,
    AccessDenied,
    AccountingUnavailable,
    ControllerUnreachable,
    NoConfig,
    NotSupported,
    SetupError,
    ShimUnavailable,
    SlurmError,
    UsageError,
)
from ..model import Job, JobRecord, JobState, JobStdio, NodePids, Step, StepId, StepProcesses
from ..operations import CHECKPOINT_NAMES, operation
from ..slurm_api import (
    AccountingConfig,
    ClusterRoute,
    ControllerConfig,
    JobsResult,
    StepsResult,
)
from . import _build

if TYPE_CHECKING:
    from ._clusters import ClusterBinding

T = TypeVar("T")

DEFAULT_CONF = Path("/etc/slurm/slurm.conf")
"""Debian's (and Slurm's default ``--sysconfdir``) slurm.conf."""
CONFIGLESS_CACHE = Path("/run/slurm/conf/slurm.conf")
"""Where slurmd (configless mode, 21.08+) keeps the configuration it fetched."""

CHECKPOINT_SYMBOLS = tuple(sorted(CHECKPOINT_NAMES))
"""The nine historical calls by operation name (``operation(name).symbol`` is the function),
sorted: ``sckpt doctor`` lists a partial API in this order."""

_COMM_NAME_PREFIXES = (
    "SLURM_COMMUNICATIONS_",
    "SLURMCTLD_COMMUNICATIONS_",
    "SLURMD_COMMUNICATIONS_",
    "SLURM_PROTOCOL_SOCKET_",
    "SLURM_PROTOCOL_AUTHENTICATION_ERROR",
)
_COMM_ERRNOS = frozenset(
    {
        _errno.ECONNREFUSED,
        _errno.ETIMEDOUT,
        _errno.EHOSTUNREACH,
        _errno.ECONNRESET,
        _errno.ENETUNREACH,
        _errno.EPIPE,
    }
)
_ERROR_MSG_BUF = 1024
ACCOUNTING_CONNECT_TIMEOUT = 3.0
"""Seconds to wait for slurmdbd's port before saying it does not answer.  libslurm would
wait MessageTimeout (10 s by default) per attempt on an unreachable host, on the binding's
one thread, where the console's refresh waits behind it."""
JOB_REQUEUE_FLAG = 0x400
"""JOB_REQUEUE, the state flag of a record ended by a requeue (sacct: REQUEUED)."""


_PATH_MAX = 4096
"""Room for one expanded output path (Linux's PATH_MAX; Slurm cuts a longer one)."""


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """Where libslurm will read its configuration from (shown by ``sckpt doctor``)."""

    kind: str
    """``SLURM_CONF``, ``default``, ``configless-cache`` or ``SLURM_CONF_SERVER``."""
    path: str
    """The file, or the server for ``SLURM_CONF_SERVER``."""

    def __str__(self) -> str:
        return f"{self.path} ({self.kind})"


_JOB_NUMS = struct.Struct("=14I3q")
"""Layout of the shim's ``sckpt_job_nums_t`` (checked against cffi's at load)."""

_JOB_FIELDS = tuple(f.name for f in dataclasses.fields(Job))
_JOB_ORDER = (
    "job_id",
    "name",
    "user",
    "uid",
    "partition",
    "state",
    "state_reason",
    "nodes",
    "num_nodes",
    "num_cpus",
    "num_tasks",
    "submit_time",
    "start_time",
    "end_time",
    "work_dir",
    "comment",
    "held",
    "restart_count",
    "batch",
    "required_nodes",
    "account",
    "array_job_id",
    "array_task_id",
    "array_task_str",
    "array_max_tasks",
    "tres_req",
    "tres_per_node",
    "tres_alloc",
    "sched_nodes",
)
_JOB_STRINGS = 13
"""Strings per job in the shim's buffer (``SCKPT_JOB_STRINGS``)."""


def _job_factory() -> Callable[..., Job]:
    """A positional constructor for ``Job`` that is ~3x faster than its dataclass __init__.

    Why: a 10,000-job snapshot spends most of its Python time in the frozen dataclass's
    keyword __init__.  The generated function sets the slots directly (as __init__ does via
    object.__setattr__).  It is used only while Job is a plain slots dataclass without
    __post_init__ whose fields are exactly _JOB_ORDER; otherwise the ordinary __init__ is.
    """
    plain = (
        not hasattr(Job, "__post_init__")
        and set(_JOB_FIELDS) == set(_JOB_ORDER)
        and all(f in getattr(Job, "__slots__", ()) for f in _JOB_ORDER)
    )
    if not plain:

        def slow(*args: Any) -> Job:
            return Job(**dict(zip(_JOB_ORDER, args, strict=True)))

        return slow
    namespace: dict[str, Any] = {"new": object.__new__, "Job": Job}
    body = []
    for i, name in enumerate(_JOB_ORDER):
        namespace[f"set{i}"] = Job.__dict__[name].__set__
        body.append(f"    set{i}(o, a{i})")
    params = ", ".join(f"a{i}" for i in range(len(_JOB_ORDER)))
    source = f"def make({params}):\n    o = new(Job)\n" + "\n".join(body) + "\n    return o\n"
    exec(source, namespace)  # our own generated text, no outside input
    made: Callable[..., Job] = namespace["make"]
    return made


_make_job = _job_factory()


def _set_time(value: int) -> int:
    """An accounting time, 0 when not set: slurmdbd also answers NO_VAL (a record cancelled
    before it started) and INFINITE for that, which sacct prints as None and Unknown."""
    return 0 if value >= 0xFFFFFFFE or value < 0 else int(value)


def find_config_source() -> ConfigSource:
    """Find libslurm's configuration *before* ``slurm_init`` (which exits when it finds none).

    Order as libslurm's: ``SLURM_CONF``, the default path, slurmd's configless cache, then an
    explicit ``SLURM_CONF_SERVER``.  DNS SRV discovery is not attempted: without one of these
    the answer is :class:`NoConfig`.
    """
    env = os.environ.get("SLURM_CONF")
    if env:
        if not Path(env).is_file():
            raise NoConfig(
                f"SLURM_CONF={env} does not name a readable file",
                hint="point SLURM_CONF at your cluster's slurm.conf",
            )
        _require_readable(Path(env), "SLURM_CONF")
        _require_includes(Path(env))
        return ConfigSource("SLURM_CONF", env)
    if DEFAULT_CONF.is_file():
        _require_readable(DEFAULT_CONF, "default")
        _require_includes(DEFAULT_CONF)
        return ConfigSource("default", str(DEFAULT_CONF))
    if CONFIGLESS_CACHE.is_file():
        return ConfigSource("configless-cache", str(CONFIGLESS_CACHE))
    server = os.environ.get("SLURM_CONF_SERVER")
    if server:
        return ConfigSource("SLURM_CONF_SERVER", server)
    raise NoConfig(
        f"no Slurm configuration: SLURM_CONF is unset and {DEFAULT_CONF} does not exist",
        hint="set SLURM_CONF=/path/to/slurm.conf (or use `sckpt --demo`)",
    )


def _require_readable(path: Path, kind: str) -> None:
    """Say "permission denied" plainly, instead of libslurm's three lines ending in fatal()."""
    if not os.access(path, os.R_OK):
        user = _user_name(os.geteuid())
        raise NoConfig(
            f"the Slurm configuration {path} ({kind}) is not readable by {user}",
            hint="slurm.conf must be readable by every user of the cluster (mode 0644)",
        )


_INCLUDE = re.compile(r"^\s*include\s+(\S+)\s*$", re.IGNORECASE | re.MULTILINE)


def _require_includes(conf: Path) -> None:
    """Refuse at once an ``Include`` of a file that does not exist.

    Why: libslurm's parser retries a missing file once a second for 60 s before it gives
    up (it waits for a shared filesystem), so every command would stall a minute and then
    fail.  Only plain paths are checked (relative ones from slurm.conf's directory, as
    Slurm resolves them); a path with a glob or ``%`` expansion is left to libslurm.
    """
    try:
        text = conf.read_text(errors="replace")
    except OSError:
        return
    for match in _INCLUDE.finditer(text):
        name = match.group(1)
        if any(c in name for c in "*?[%$"):
            continue
        target = Path(name) if name.startswith("/") else conf.parent / name
        if not target.exists():
            raise NoConfig(
                f"{conf} includes {target}, which does not exist",
                hint="fix slurm.conf's Include line or restore the file",
            )


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _libslurm_log(text: str) -> str:
    """libslurm's log lines from the probe, on one line without the ``python:`` prefixes."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    prefix = re.compile(r"^[\w.-]+: (?=(error|fatal|debug\d?|info|verbose): )")
    return "; ".join(prefix.sub("", line) for line in lines)


def _probe_init(lib_path: Path, source: ConfigSource) -> None:
    """Run ``slurm_init`` in a child process first: if libslurm would exit, only it dies."""
    conf = source.path if source.kind in ("SLURM_CONF", "default") else None
    # Slurm before 20.11 has no slurm_init: its libslurm reads slurm.conf on the first call
    # through slurm_conf_init (exported, not in the headers), and exits there just the same.
    code = (
        "import ctypes,sys;"
        f"l=ctypes.CDLL({str(lib_path)!r},mode=ctypes.RTLD_GLOBAL);"
        "f=l.slurm_init if hasattr(l,'slurm_init') else l.slurm_conf_init;"
        "f.argtypes=[ctypes.c_char_p];"
        f"f({conf!r}.encode() if {conf!r} else None);"
        "sys.exit(0)"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired as exc:
        raise NoConfig(f"slurm_init with {source} did not finish", hint="check slurm.conf") from exc
    if proc.returncode != 0:
        tail = _libslurm_log(proc.stderr or proc.stdout)[-600:]
        if proc.returncode < 0:
            tail = f"{tail}; the probe process died of signal {-proc.returncode}".lstrip("; ")
        raise NoConfig(
            f"libslurm could not read its configuration from {source}: {tail}",
            hint="fix slurm.conf or SLURM_CONF",
        )


class _CallThread:
    """One daemon thread that runs the submitted calls in order: the binding's libslurm thread.

    Why not a one-worker ``ThreadPoolExecutor``: its thread is joined at interpreter exit, so
    a process could not end while a libslurm call hangs on a paused or unreachable
    controller (up to MessageTimeout): a console quit during an outage sat there after the
    terminal was restored.  A daemon thread is abandoned at exit instead.  Whoever must see
    a call through (the command line, the console's action workers) waits for it anyway.
    """

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[
            tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None
        ]
        self._queue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the libslurm binding is closed")
            self._queue.put((future, fn, args))
        return future

    def _loop(self) -> None:
        while (item := self._queue.get()) is not None:
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the caller, as an executor does
                future.set_exception(exc)
            else:
                future.set_result(result)

    def shutdown(self, wait: bool = True) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._queue.put(None)
        if wait and threading.current_thread() is not self._thread:
            self._thread.join()


class Binding:
    """libslurm, as typed Python calls.  Obtain it with :func:`get_binding`.

    Every public method is safe to call from any thread; the work runs on the binding's own
    thread, one call at a time.
    """

    def __init__(
        self,
        module: Any,
        plan: _build.BuildPlan,
        module_path: Path,
        config: ConfigSource,
    ) -> None:
        self._ffi = module.ffi
        self._lib = module.lib
        self.plan = plan
        self.module_path = module_path
        self.config = config
        self._executor = _CallThread("sckpt-libslurm")
        self._thread_ident: int | None = None
        self._users: dict[int, str] = {}
        self._errnames: dict[int, tuple[str, str]] = {}
        self._codes: dict[str, int] = {}
        self._job_memo: dict[tuple[object, ...], Job] = {}
        self._states: dict[int, JobState] = {}
        self._state_names: dict[int, str] = {}
        if self._ffi.sizeof("sckpt_job_nums_t") != _JOB_NUMS.size:
            raise ShimUnavailable("the shim's job record layout is not the one sckpt expects")
        self.api_version = 0
        self._proctrack: str | None = None
        self._routes: dict[str, tuple[Any, int]] = {}
        """Clusters looked up in slurmdbd (``-M``), by name: the C handle holding their
        records, and the index of each there."""
        self._route_handles: list[Any] = []
        self._route_state: dict[str, tuple[dict[tuple[object, ...], Job], str | None]] = {}
        """Per cluster: its job memo and proctrack type, swapped in while it is routed to."""
        self._run(self._init_on_thread)
        errors.register_strerror(self.describe)

    # -- thread plumbing -------------------------------------------------------------------
    def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if threading.get_ident() == self._thread_ident:
            return fn(*args)
        return self._executor.submit(fn, *args).result()

    def _init_on_thread(self) -> None:
        self._thread_ident = threading.get_ident()
        lib, ffi = self._lib, self._ffi
        self.api_version = int(lib.sckpt_api_version())
        conf = self.config.path if self.config.kind in ("SLURM_CONF", "default") else None
        lib.sckpt_init(conf.encode() if conf else ffi.NULL)
        for i in range(lib.sckpt_errname_count()):
            code = int(lib.sckpt_errname_code(i))
            name = ffi.string(lib.sckpt_errname_name(i)).decode()
            msg_p = lib.sckpt_strerror(code)
            msg = ffi.string(msg_p).decode(errors="replace") if msg_p else name
            self._errnames.setdefault(code, (name, msg))
        fallback = {
            lib.JOB_PENDING: JobState.PENDING,
            lib.JOB_RUNNING: JobState.RUNNING,
            lib.JOB_SUSPENDED: JobState.SUSPENDED,
            lib.JOB_COMPLETE: JobState.COMPLETED,
            lib.JOB_CANCELLED: JobState.CANCELLED,
            lib.JOB_FAILED: JobState.FAILED,
            lib.JOB_TIMEOUT: JobState.TIMEOUT,
            lib.JOB_NODE_FAIL: JobState.NODE_FAIL,
            lib.JOB_PREEMPTED: JobState.PREEMPTED,
            lib.JOB_BOOT_FAIL: JobState.BOOT_FAIL,
            lib.JOB_DEADLINE: JobState.DEADLINE,
            lib.JOB_OOM: JobState.OUT_OF_MEMORY,
        }
        for base in range(lib.JOB_END):
            p = lib.sckpt_job_state_string(base)
            name = ffi.string(p).decode() if p else ""
            self._state_names[base] = name or fallback.get(base, JobState.FAILED).value
            try:
                self._states[base] = JobState(name)
            except ValueError:
                self._states[base] = fallback.get(base, JobState.FAILED)

    def close(self) -> None:
        """Stop the binding's thread (libslurm stays loaded: it cannot be unloaded safely)."""
        if self._route_handles:
            with contextlib.suppress(RuntimeError):  # already closed
                self._run(self._free_clusters)
        self._executor.shutdown(wait=True)

    def _free_clusters(self) -> None:
        for handle in self._route_handles:
            self._lib.sckpt_clusters_free(handle)
        self._route_handles.clear()
        self._routes.clear()

    # -- errors ----------------------------------------------------------------------------
    def describe(self, code: int) -> tuple[str, str] | None:
        """``(name, message)`` from libslurm's own table (registered with backend.errors)."""
        return self._errnames.get(code)

    def is_communication_error(self, code: int) -> bool:
        if code in _COMM_ERRNOS:
            return True
        name = self._errnames.get(code, ("", ""))[0]
        return name.startswith(_COMM_NAME_PREFIXES)

    def error(self, code: int) -> SlurmError:
        """The typed error for a code; communication failures become ControllerUnreachable."""
        if self.is_communication_error(code):
            if self._errnames.get(code, ("", ""))[0] == "SLURM_PROTOCOL_AUTHENTICATION_ERROR":
                # The request never left this host: munge could not sign it.
                return ControllerUnreachable(
                    code,
                    hint="the request could not be authenticated: is munged running on this "
                    f"host, with the socket AuthInfo names? (configuration: {self.config})",
                )
            return ControllerUnreachable(
                code,
                hint=f"slurmctld did not answer (configuration: {self.config})",
            )
        return errors.error_for(code)

    def _check(self, rc: int, err: int, acting: bool = False) -> None:
        """Slurm's two return shapes: ``-1`` with errno, or the (positive) code itself.

        ``acting``: the call acts on a job.  slurmctld and slurmd answer a non-owner's update,
        step signal or pid request with ESLURM_USER_ID_MISSING ("Invalid user id", logged as
        a security violation); that is an access refusal, so it is raised as AccessDenied
        (keeping Slurm's own code, name and message).
        """
        if rc == 0:
            return
        code = (err or SLURM_ERROR) if rc == -1 else rc
        if acting and code == self._code_of("ESLURM_USER_ID_MISSING"):
            raise AccessDenied(code, hint="you are neither the job's owner nor an operator")
        raise self.error(code)

    def _code_of(self, name: str) -> int | None:
        if not self._codes:
            self._codes = {n: c for c, (n, _m) in self._errnames.items()}
        return self._codes.get(name)

    # -- conversions -----------------------------------------------------------------------
    def _s(self, p: Any) -> str:
        return self._ffi.string(p).decode("utf-8", "replace") if p else ""

    def _user(self, uid: int) -> str:
        name = self._users.get(uid)
        if name is None:
            try:
                name = pwd.getpwuid(uid).pw_name
            except KeyError:
                name = str(uid)
            self._users[uid] = name
        return name

    def _jobs_from(self, handle: Any, n: int) -> tuple[Job, ...]:
        """Convert a job response: two flat buffers (numbers, NUL-separated strings).

        A job whose raw record is byte-for-byte what the previous response had is the same
        frozen ``Job`` object again (most of a big cluster is unchanged between refreshes),
        so only changed jobs are built.  The memo holds the latest response only.
        """
        ffi, lib = self._ffi, self._lib
        nums = ffi.new("sckpt_job_nums_t[]", max(n, 1))
        size = lib.sckpt_jobs_strings_size(handle)
        buf = ffi.new("char[]", max(size, 1))
        used = lib.sckpt_jobs_pack(handle, nums, n, buf, size)
        strings = ffi.buffer(buf, used)[:].decode("utf-8", "replace").split("\0")
        user, states, no_val, make = self._user, self._states, lib.NO_VAL, _make_job
        failed = JobState.FAILED
        previous, memo = self._job_memo, {}
        out = []
        k = 0
        for raw in _JOB_NUMS.iter_unpack(ffi.buffer(nums, _JOB_NUMS.size * n)):
            texts = strings[k : k + _JOB_STRINGS]
            k += _JOB_STRINGS
            key = (*raw, *texts)
            job = previous.get(key)
            if job is None:
                job_id, uid, base, n_nodes, n_cpus, n_tasks, prio, restarts, batch = raw[:9]
                name, part, reason, nodes, work_dir, comment, req, account = texts[:8]
                array_job, array_task, array_max = raw[9:12]
                job = make(
                    job_id,
                    name,
                    user(uid),
                    uid,
                    part,
                    states.get(base, failed),
                    reason,
                    nodes,
                    n_nodes,
                    n_cpus,
                    0 if n_tasks == no_val else n_tasks,
                    raw[14],
                    raw[15],
                    raw[16],
                    work_dir,
                    comment,
                    prio == 0,
                    restarts,
                    bool(batch),
                    req,
                    account,
                    array_job,
                    None if array_task == no_val or not array_job else array_task,
                    texts[8] if array_job else "",
                    array_max,
                    texts[9],
                    texts[10],
                    texts[11],
                    texts[12],
                )
            memo[key] = job
            out.append(job)
        self._job_memo = memo
        return tuple(out)

    def _steps_from(self, records: Any, n: int) -> tuple[Step, ...]:
        s, user, names = self._s, self._user, self._state_names
        out = []
        for i in range(n):
            r = records[i]
            out.append(
                Step(
                    step_id=StepId(r.job_id, r.step_id, r.het_comp),
                    name=s(r.name),
                    user=user(r.user_id),
                    uid=r.user_id,
                    partition=s(r.partition),
                    state=names.get(r.state_base, str(r.state_base)),
                    nodes=s(r.nodes),
                    num_tasks=r.num_tasks,
                    num_cpus=r.num_cpus,
                    start_time=r.start_time,
                    run_time=r.run_time,
                    network=s(r.network),
                )
            )
        return tuple(out)

    # -- reads -----------------------------------------------------------------------------
    def load_jobs(self, prev_update: int = 0) -> JobsResult:
        """All jobs, or ``changed=False`` when nothing changed since ``prev_update``."""
        return self._run(self._load_jobs, prev_update)

    def _load_jobs(self, prev_update: int) -> JobsResult:
        ffi, lib = self._ffi, self._lib
        handle = ffi.new("void **")
        count = ffi.new("uint32_t *")
        last = ffi.new("int64_t *")
        err = ffi.new("int *")
        rc = lib.sckpt_load_jobs(prev_update, handle, count, last, err)
        try:
            if rc == lib.SLURM_NO_CHANGE_IN_DATA or (
                rc == -1 and err[0] == lib.SLURM_NO_CHANGE_IN_DATA
            ):
                return JobsResult(False, prev_update)
            self._check(rc, err[0])
            return JobsResult(True, last[0], self._jobs_from(handle[0], count[0]))
        finally:
            lib.sckpt_jobs_free(handle[0])

    def job_stdio(self, job_id: int) -> JobStdio:
        """One job's StdOut/StdErr paths as scontrol shows them (``slurm_get_job_stdout``)."""
        return self._run(self._job_stdio, job_id)

    def _job_stdio(self, job_id: int) -> JobStdio:
        ffi, lib = self._ffi, self._lib
        out = ffi.new("char[]", _PATH_MAX)
        err_path = ffi.new("char[]", _PATH_MAX)
        state, uid, batch = ffi.new("uint32_t *"), ffi.new("uint32_t *"), ffi.new("uint32_t *")
        err = ffi.new("int *")
        rc = lib.sckpt_job_stdio(job_id, out, err_path, _PATH_MAX, state, uid, batch, err)
        self._check(rc, err[0])
        return JobStdio(
            job_id=job_id,
            std_out=self._s(out),
            std_err=self._s(err_path),
            state=self._states.get(state[0], JobState.FAILED),
            uid=uid[0],
            user=self._user(uid[0]),
            batch=bool(batch[0]),
        )

    def get_steps(self, prev_update: int = 0) -> StepsResult:
        """All steps of all jobs, or ``changed=False`` when nothing changed."""
        return self._run(self._get_steps, prev_update)

    def _get_steps(self, prev_update: int) -> StepsResult:
        ffi, lib = self._ffi, self._lib
        handle = ffi.new("void **")
        count = ffi.new("uint32_t *")
        last = ffi.new("int64_t *")
        err = ffi.new("int *")
        rc = lib.sckpt_load_steps(prev_update, handle, count, last, err)
        try:
            if rc == lib.SLURM_NO_CHANGE_IN_DATA or (
                rc == -1 and err[0] == lib.SLURM_NO_CHANGE_IN_DATA
            ):
                return StepsResult(False, prev_update)
            self._check(rc, err[0])
            n = count[0]
            records = ffi.new("sckpt_step_t[]", max(n, 1))
            lib.sckpt_steps_fill(handle[0], records, n)
            return StepsResult(True, last[0], self._steps_from(records, n))
        finally:
            lib.sckpt_steps_free(handle[0])

    def step_pids(self, step: StepId) -> StepProcesses:
        """The step's processes per node, as slurmd's proctrack container reports them."""
        return self._run(self._step_pids, step)

    def _step_pids(self, step: StepId) -> StepProcesses:
        ffi, lib = self._ffi, self._lib
        if step.is_whole_job:
            raise errors.error_for(errors.ESLURM_INVALID_JOB_ID, hint="name a step: JOB.STEP")
        handle = ffi.new("void **")
        count = ffi.new("uint32_t *")
        err = ffi.new("int *")
        rc = lib.sckpt_step_pids(step.job_id, step.step, step.het_comp, handle, count, err)
        try:
            self._check(rc, err[0], acting=True)
            nodes_p = lib.sckpt_pids_nodes(handle[0])
            nodes = []
            for i in range(count[0]):
                rec = nodes_p[i]
                pids = tuple(int(x) for x in ffi.unpack(rec.pids, rec.pid_cnt)) if rec.pids else ()
                nodes.append(NodePids(self._s(rec.node_name), tuple(sorted(pids))))
            return StepProcesses(step, tuple(nodes), self._proctrack_type())
        finally:
            lib.sckpt_pids_free(handle[0])

    def _proctrack_type(self) -> str:
        if self._proctrack is None:
            try:
                self._proctrack = self._ctl_conf().proctrack_type
            except SlurmError:
                return ""
        return self._proctrack

    def ctl_conf(self) -> ControllerConfig:
        """The controller's configuration (cluster, version, switch and proctrack types)."""
        return self._run(self._ctl_conf)

    def _loaded_conf(self, read: Callable[[Any], T]) -> T:
        """``read(handle)`` of one ``slurm_load_ctl_conf`` answer, freed afterwards (the
        controller's facts and its accounting settings are read from the same answer)."""
        handle = self._ffi.new("void **")
        err = self._ffi.new("int *")
        rc = self._lib.sckpt_load_conf(handle, err)
        try:
            self._check(rc, err[0])
            return read(handle[0])
        finally:
            self._lib.sckpt_conf_free(handle[0])

    def _ctl_conf(self) -> ControllerConfig:
        return self._loaded_conf(self._controller_config)

    def _controller_config(self, handle: Any) -> ControllerConfig:
        r = self._ffi.new("sckpt_conf_t *")
        self._lib.sckpt_conf_fill(handle, r)
        contain = self._lib.sckpt_prolog_flag_contain()
        return ControllerConfig(
            cluster_name=self._s(r.cluster_name),
            version=self._s(r.version),
            switch_type=self._s(r.switch_type),
            proctrack_type=self._s(r.proctrack_type),
            select_type=self._s(r.select_type),
            slurm_user=self._s(r.slurm_user_name),
            control_host=self._s(r.control_machine),
            slurmctld_port=r.slurmctld_port,
            prolog_contain=bool(contain and (r.prolog_flags & contain)),
            checkpoint_type=self._s(r.checkpoint_type),
            last_update=r.last_update,
        )

    # -- actions ---------------------------------------------------------------------------
    def _action(self, fn: Callable[..., int], *args: Any) -> None:
        def call() -> None:
            err = self._ffi.new("int *")
            rc = fn(*args, err)
            self._check(rc, err[0], acting=True)

        self._run(call)

    def signal_step(self, step: StepId, signal: int) -> None:
        """Send ``signal`` to a step's tasks (``.batch`` reaches the batch shell)."""
        self._action(self._lib.sckpt_signal_step, step.job_id, step.step, signal)

    def kill_step(self, step: StepId, signal: int = 9) -> None:
        """``scancel --signal`` for one step (the step is ended by the controller)."""
        self._action(self._lib.sckpt_kill_step, step.job_id, step.step, signal)

    def kill_job(self, job_id: int, signal: int = 9) -> None:
        """``scancel [--signal]`` for a whole job: SIGKILL ends it, another signal reaches
        its steps (flags 0, as scancel sends without ``--batch``/``--full``)."""
        self._action(self._lib.sckpt_kill_job, job_id, signal, 0)

    def hold(self, job_id: int) -> None:
        """Hold a job (priority 0), as ``scontrol hold``."""
        self._action(self._lib.sckpt_hold, job_id)

    def requeue(self, job_id: int, hold: bool = False) -> None:
        """Requeue a job; with ``hold`` it stays pending and held (``scontrol requeuehold``)."""
        self._action(self._lib.sckpt_requeue, job_id, 1 if hold else 0)

    def release(self, job_id: int) -> None:
        """Release a held job (priority back to normal), as ``scontrol release``."""
        self._action(self._lib.sckpt_release, job_id)

    def hold_task(self, array_job_id: int, task: int, hold: bool = True) -> None:
        """Hold (or release) one array task still pending in its array's record, named
        ``7_5`` as scontrol names it: the controller splits it off into its own record."""
        text = f"{array_job_id}_{task}".encode()
        self._action(self._lib.sckpt_hold_task, text, 1 if hold else 0)

    def set_required_nodes(self, job_id: int, nodelist: str) -> None:
        """Set a pending job's required nodes (``scontrol update job ReqNodeList=``)."""
        self._action(self._lib.sckpt_set_required_nodes, job_id, nodelist.encode())

    def set_begin_time(self, job_id: int, when: int = 0) -> None:
        """Set a pending job's begin time (``scontrol update job StartTime=``).

        ``when`` is Unix seconds; ``0`` (or any time already past) is now, sent as this
        host's clock, as ``StartTime=now`` is: a requeued job becomes eligible at once
        instead of about two minutes later.  A job that is not pending is refused
        (ESLURM_JOB_NOT_PENDING).
        """
        if when < 0:
            raise ValueError(f"begin time {when}: Unix seconds, or 0 for now")
        self._action(self._lib.sckpt_set_begin_time, job_id, when)

    # -- the historical checkpoint API -----------------------------------------------------
    def checkpoint_symbols(self) -> dict[str, bool]:
        """Which ``slurm_checkpoint_*`` symbols this process can see."""

        def look() -> dict[str, bool]:
            return {
                n: bool(self._lib.sckpt_ck_present(operation(n).symbol.encode()))
                for n in CHECKPOINT_SYMBOLS
            }

        return self._run(look)

    @property
    def has_checkpoint_api(self) -> bool:
        """True when all nine checkpoint calls resolve (libslurm <= 19.05 or a stand-in)."""
        return all(self.checkpoint_symbols().values())

    def _ck(self, op: str, rc: int, err: int) -> None:
        if rc == self._lib.SCKPT_CK_MISSING:
            raise NotSupported(
                ESLURM_NOT_SUPPORTED,
                hint=f"this Slurm ({self.plan.version_text}) has no {operation(op).symbol} "
                "(the checkpoint API was removed in 20.02)",
            )
        self._check(rc, err)

    def ckpt_able(self, step: StepId) -> int:
        """0 when checkpoints can be issued and none runs, else the running one's start time."""

        def call() -> int:
            t = self._ffi.new("int64_t *", 0)
            err = self._ffi.new("int *")
            rc = self._lib.sckpt_ck_able(step.job_id, step.step, t, err)
            self._ck("able", rc, err[0])
            return int(t[0])

        return self._run(call)

    def _ck_simple(self, op: str, step: StepId) -> None:
        def call() -> None:
            err = self._ffi.new("int *")
            rc = self._lib.sckpt_ck_simple(
                operation(op).symbol.encode(), step.job_id, step.step, err
            )
            self._ck(op, rc, err[0])

        self._run(call)

    def ckpt_disable(self, step: StepId) -> None:
        self._ck_simple("disable", step)

    def ckpt_enable(self, step: StepId) -> None:
        self._ck_simple("enable", step)

    def _ck_wait(self, op: str, step: StepId, data: int, image_dir: str | None) -> None:
        def call() -> None:
            err = self._ffi.new("int *")
            rc = self._lib.sckpt_ck_wait(
                operation(op).symbol.encode(),
                step.job_id,
                step.step,
                data,
                image_dir.encode() if image_dir else self._ffi.NULL,
                err,
            )
            self._ck(op, rc, err[0])

        self._run(call)

    def ckpt_create(self, step: StepId, max_wait: int, image_dir: str | None = None) -> None:
        self._ck_wait("create", step, max_wait, image_dir)

    def ckpt_vacate(self, step: StepId, max_wait: int, image_dir: str | None = None) -> None:
        self._ck_wait("vacate", step, max_wait, image_dir)

    def ckpt_restart(self, step: StepId, stick: bool = False, image_dir: str | None = None) -> None:
        self._ck_wait("restart", step, 1 if stick else 0, image_dir)

    def ckpt_complete(
        self, step: StepId, begin_time: int, error_code: int, error_msg: str = ""
    ) -> None:
        def call() -> None:
            err = self._ffi.new("int *")
            rc = self._lib.sckpt_ck_complete(
                step.job_id, step.step, begin_time, error_code, error_msg.encode(), err
            )
            self._ck("complete", rc, err[0])

        self._run(call)

    def ckpt_error(self, step: StepId) -> tuple[int, str]:
        """``(error_code, error_msg)`` of the step's last checkpoint (message freed in C)."""

        def call() -> tuple[int, str]:
            code = self._ffi.new("uint32_t *")
            buf = self._ffi.new("char[]", _ERROR_MSG_BUF)
            err = self._ffi.new("int *")
            rc = self._lib.sckpt_ck_error(step.job_id, step.step, code, buf, _ERROR_MSG_BUF, err)
            self._ck("error", rc, err[0])
            return int(code[0]), self._ffi.string(buf).decode("utf-8", "replace")

        return self._run(call)

    def ckpt_tasks(
        self, step: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> None:
        def call() -> None:
            err = self._ffi.new("int *")
            rc = self._lib.sckpt_ck_tasks(
                step.job_id,
                step.step,
                begin_time,
                image_dir.encode(),
                max_wait,
                nodelist.encode(),
                err,
            )
            self._ck("tasks", rc, err[0])

        self._run(call)

    # -- accounting (slurmdbd) -------------------------------------------------------------
    def accounting_config(self) -> AccountingConfig:
        """The controller's AccountingStorageType/Host/Port (one ``slurm_load_ctl_conf``)."""
        return self._run(self._accounting_config)

    def _accounting_config(self) -> AccountingConfig:
        return self._loaded_conf(self._accounting_from)

    def _accounting_from(self, handle: Any) -> AccountingConfig:
        r = self._ffi.new("sckpt_acct_conf_t *")
        self._lib.sckpt_acct_conf_fill(handle, r)
        return AccountingConfig(
            storage_type=self._s(r.storage_type),
            host=self._s(r.storage_host),
            backup_host=self._s(r.storage_backup_host),
            port=int(r.storage_port),
        )

    def require_accounting(self) -> AccountingConfig:
        """The accounting configuration, once slurmdbd is known to listen; else
        ``AccountingUnavailable`` saying which of "not configured" and "not answering".

        The port is tried from the calling thread with a short timeout first, so a query to a
        slurmdbd that is down fails in seconds and never holds the binding's thread.
        """
        conf = self.accounting_config()
        if not conf.uses_slurmdbd:
            raise AccountingUnavailable(
                message="Slurm accounting is not configured on this cluster "
                f"(AccountingStorageType={conf.storage_type or 'none'})",
                hint="job history and finished jobs come from slurmdbd: set "
                "AccountingStorageType=accounting_storage/slurmdbd and run slurmdbd",
            )
        tried = []
        for host in (conf.host or "localhost", conf.backup_host):
            if not host:
                continue
            port = conf.port or 6819
            try:
                with socket.create_connection((host, port), timeout=ACCOUNTING_CONNECT_TIMEOUT):
                    return conf
            except OSError as exc:
                why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
                tried.append(f"{host}:{port} ({why})")
        raise AccountingUnavailable(
            message=f"slurmdbd does not answer at {', '.join(tried)}",
            hint="start slurmdbd (and its database), or check AccountingStorageHost/Port",
        )

    def job_records(
        self, job_id: int, since: int, until: int = 0, cluster: str = ""
    ) -> tuple[JobRecord, ...]:
        """Every record of ``job_id`` in the window (``sacct --duplicates -j JOB -S``)."""
        self.require_accounting()
        return self._run(self._acct_jobs, cluster, job_id, since, until, False)

    def finished_jobs(self, since: int, until: int = 0, cluster: str = "") -> tuple[JobRecord, ...]:
        """Jobs that ended in the window (``sacct -X -s CD,CA,F,TO,... -S -E``)."""
        self.require_accounting()
        return self._run(self._acct_jobs, cluster, 0, since, until, True)

    def _acct_jobs(
        self, cluster: str, job_id: int, since: int, until: int, finished: bool
    ) -> tuple[JobRecord, ...]:
        ffi, lib = self._ffi, self._lib
        handle = ffi.new("void **")
        count = ffi.new("uint32_t *")
        err = ffi.new("int *")
        name = cluster.encode() if cluster else ffi.NULL
        rc = lib.sckpt_acct_jobs(
            name, job_id, since, until, 1 if finished else 0, handle, count, err
        )
        try:
            if rc != 0:
                code = err[0] or int(lib.ESLURM_DB_CONNECTION)
                why = errors.describe(code)[1]
                raise AccountingUnavailable(
                    code,
                    message=f"slurmdbd did not answer the accounting query ({why})",
                    hint="check that slurmdbd runs where this host's slurm.conf says "
                    "(AccountingStorageHost/Port); sacct would fail the same way",
                )
            n = count[0]
            records = ffi.new("sckpt_acct_job_t[]", max(n, 1))
            lib.sckpt_acct_fill(handle[0], records, n)
            return tuple(self._record_from(records[i]) for i in range(n))
        finally:
            lib.sckpt_acct_free(handle[0])

    def _record_from(self, r: Any) -> JobRecord:
        s, lib, no_val = self._s, self._lib, self._lib.NO_VAL
        state_p = lib.sckpt_job_state_string(r.state)
        state = self._ffi.string(state_p).decode() if state_p else ""
        if r.state & JOB_REQUEUE_FLAG:
            state = "REQUEUED"
        elif not state:
            state = self._state_names.get(r.state & lib.sckpt_job_state_base(), str(r.state))
        status = int(r.exit_code)
        if status == no_val:
            status = 0
        signal = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        base = r.state & lib.sckpt_job_state_base()
        cancelled = base == lib.JOB_CANCELLED and r.requid not in (no_val, 0xFFFFFFFF)
        return JobRecord(
            job_id=r.job_id,
            cluster=s(r.cluster),
            name=s(r.name),
            user=s(r.user) or self._user(r.uid),
            uid=r.uid,
            partition=s(r.partition),
            state=state,
            exit_code=(status >> 8) & 0xFF,
            signal=signal,
            submit_time=_set_time(r.submit_time),
            eligible_time=_set_time(r.eligible_time),
            start_time=_set_time(r.start_time),
            end_time=_set_time(r.end_time),
            nodes=s(r.nodes),
            account=s(r.account),
            work_dir=s(r.work_dir),
            restart_count=None if r.restart_cnt == no_val else int(r.restart_cnt),
            cancelled_by=int(r.requid) if cancelled else None,
            array_job_id=r.array_job_id,
            array_task_id=None if r.array_task_id == no_val else int(r.array_task_id),
            het_job_id=r.het_job_id,
            het_job_offset=None if r.het_job_offset == no_val else int(r.het_job_offset),
        )

    # -- clusters (-M) ----------------------------------------------------------------------
    def clusters(self, names: str) -> tuple[ClusterRoute, ...]:
        """The clusters ``names`` (``a,b`` or ``all``) as slurmdbd knows them, as ``squeue -M``
        looks them up (``slurmdb_get_info_cluster``), in slurmdbd's order.

        Their records stay in memory for :meth:`on_cluster`.  Raises ``SetupError`` when this
        Slurm has no slurmdbd to ask (``AccountingStorageType`` is not slurmdbd, or it does
        not answer) and ``UsageError`` for a name slurmdbd does not know.
        """
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        if not wanted:
            raise UsageError("-M/--clusters: expected NAME[,NAME...] or all")
        # Always "all", then chosen here: for an unknown name libslurm prints its own error
        # line on stderr and answers nothing, where sckpt can say which names it knows.
        found = self._run(self._load_clusters, "all")
        if any(n.lower() == "all" for n in wanted):
            return found
        by_name = {route.name: route for route in found}
        unknown = [n for n in wanted if n not in by_name]
        if unknown:
            known = ", ".join(by_name) or "none"
            raise UsageError(
                f"-M/--clusters: no cluster {', '.join(unknown)} in slurmdbd (registered: {known})"
            )
        return tuple(by_name[n] for n in dict.fromkeys(wanted))

    def _load_clusters(self, names: str) -> tuple[ClusterRoute, ...]:
        ffi, lib = self._ffi, self._lib
        handle = ffi.new("void **")
        count = ffi.new("uint32_t *")
        err = ffi.new("int *")
        rc = lib.sckpt_clusters_load(names.encode(), handle, count, err)
        if rc == lib.SCKPT_CK_MISSING_CLUSTERS:
            raise SetupError(
                f"this libslurm ({self.plan.version_text}) has no slurmdb_get_info_cluster: "
                "-M/--clusters cannot be used"
            )
        if rc != 0:
            why = self.describe(err[0]) if err[0] else None
            raise SetupError(
                "-M/--clusters: slurmdbd could not be asked for the clusters"
                + (f" ({why[1]})" if why else ""),
                hint=f"-M asks slurmdbd: {self.config.path} must set AccountingStorageType="
                "accounting_storage/slurmdbd, and slurmdbd must answer (sacctmgr show cluster)",
            )
        self._route_handles.append(handle[0])
        found = []
        for i in range(count[0]):
            route = ClusterRoute(
                name=self._s(lib.sckpt_cluster_name(handle[0], i)),
                control_host=self._s(lib.sckpt_cluster_host(handle[0], i)),
                control_port=int(lib.sckpt_cluster_port(handle[0], i)),
            )
            self._routes[route.name] = (handle[0], i)
            found.append(route)
        return tuple(found)

    def on_cluster(self, route: ClusterRoute) -> ClusterBinding:
        """The binding's calls, each sent to ``route``'s controller (``squeue -M``'s way)."""
        from ._clusters import ClusterBinding

        return ClusterBinding(self, route)

    def routed(self, route: ClusterRoute, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` (a method of this binding) with libslurm's ``working_cluster_rec``
        set to ``route``'s record, then back to slurm.conf's own controller.

        On the binding's one thread, so no other call can see the setting: that global is
        why calls to several clusters share one thread, and why a controller that does not
        answer delays the other clusters' calls by up to its MessageTimeout.
        """
        result: T = self._run(self._routed, route, fn, args)
        return result

    def _routed(self, route: ClusterRoute, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        lib = self._lib
        memo, proctrack = self._route_state.get(route.name, ({}, None))
        saved = (self._job_memo, self._proctrack)
        self._job_memo, self._proctrack = memo, proctrack
        record = self._routes.get(route.name)
        if record is None:
            raise UsageError(f"cluster {route.name} was not looked up in slurmdbd (-M)")
        lib.sckpt_cluster_use(record[0], record[1])
        try:
            return fn(*args)
        except SlurmError as exc:
            where = f"cluster {route.name} (slurmctld {route.control_host}:{route.control_port})"
            exc.hint = f"{where}: {exc.hint}" if exc.hint else where
            raise
        finally:
            lib.sckpt_cluster_use(self._ffi.NULL, -1)
            self._route_state[route.name] = (self._job_memo, self._proctrack)
            self._job_memo, self._proctrack = saved

    # -- facts -----------------------------------------------------------------------------
    @property
    def caller_uid(self) -> int:
        """The controller authenticates this process's real uid (munge)."""
        return os.getuid()

    @property
    def caller_name(self) -> str:
        return _user_name(os.getuid())

    @property
    def header_version(self) -> str:
        return self.plan.version_text

    def ping(self) -> float:
        """Round trip to slurmctld in seconds (one ``slurm_load_ctl_conf``)."""
        start = time.perf_counter()
        self.ctl_conf()
        return time.perf_counter() - start


def load_binding() -> Binding:
    """Build (if needed) and load the shim, check versions, find a config, call slurm_init."""
    source = find_config_source()  # cheap, and nothing to build for without a cluster
    plan = _build.plan()
    _build.require_matching_release(plan)
    module_path = _build.build(plan)
    current_api = _build.library_api_version(plan.lib_path)
    if _build.read_meta(plan).get("api_version") != current_api:
        # The library changed under an existing build: build again, then refuse if it
        # still disagrees (never call through a layout built for another library).
        _build.discard(plan)
        module_path = _build.build(plan)
        built_api = _build.read_meta(plan).get("api_version")
        if built_api != current_api:
            raise ShimUnavailable(
                f"libslurm's API version {current_api:#x} differs from the shim's "
                f"({built_api!r}) built against {plan.include_dir}",
                hint="install matching libslurm and libslurm-dev packages",
            )
    try:
        ctypes.CDLL(str(plan.lib_path), mode=ctypes.RTLD_GLOBAL)
    except OSError as exc:
        raise ShimUnavailable(f"cannot load {plan.lib_path}: {exc}") from exc
    spec = importlib.util.spec_from_file_location(plan.module_name, module_path)
    if spec is None or spec.loader is None:
        raise ShimUnavailable(f"cannot import the shim at {module_path}")
    try:
        # module_from_spec is what dlopens the extension: an unresolved symbol (a libslurm
        # that is not the headers' library) fails here, before any call is made through it.
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ImportError as exc:
        problem = f"{plan.lib_path}: {exc}"
        raise ShimUnavailable(
            f"the shim built against {plan.include_dir} does not load with {problem}",
            hint="libslurm and its headers must come from one Slurm installation: install "
            "matching libslurm and libslurm-dev packages, or set SLURM_LIB_DIR and "
            f"SLURM_INCLUDE_DIR to one installation (then remove {plan.build_dir})",
        ) from None
    if int(module.lib.SCKPT_HEADER_VERSION) != plan.slurm_version:
        raise ShimUnavailable(
            f"the cached shim {module_path} was built for another Slurm release",
            hint=f"remove {plan.build_dir} to rebuild it",
        )
    _probe_init(plan.lib_path, source)
    return Binding(module, plan, module_path, source)
