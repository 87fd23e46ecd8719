"""The binding's runtime: the compiled shim, the one thread every call runs on, and ``check``.

Why one thread: libslurm's thread safety is undocumented, and errno is per thread.  Every
call (including ``slurm_init`` and every free) runs on one daemon thread; the shim captures
errno inside the same C call.  Responses are always freed in ``finally`` on that thread,
after their strings were copied into Python objects.

Why calls to several clusters share it: libslurm chooses the controller of a call by its
global ``working_cluster_rec`` (``squeue -M`` sets it before each cluster's calls).  A call
given a :class:`Route` runs with that global pointed at the route's record and set back
afterwards, on this one thread, so no other call can see it.

The other modules (``reads``, ``actions``, ``checkpoint``, ``accounting``, ``clusters``) are
functions of a :class:`Runtime` that run on its thread; ``binding.Binding`` calls them there.
"""

from __future__ import annotations

import ctypes
import errno as _errno
import importlib.util
import pwd
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .. import errors
from ..errors import (
    SLURM_ERROR,
    AccessDenied,
    ControllerUnreachable,
    ShimUnavailable,
    SlurmError,
)
from ..model import JobState
from ..slurm_api import ClusterRoute
from . import shim_build
from .config_source import ConfigSource, find_config_source, probe_init

T = TypeVar("T")

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


@dataclass(frozen=True, slots=True)
class Route:
    """Where a call goes with ``-M``: one cluster's record in a list slurmdbd answered
    (``clusters.look_up``); the list stays in C memory until the runtime closes."""

    cluster: ClusterRoute
    records: Any
    """The C handle of the list (``sckpt_clusters_load``)."""
    index: int


class CallThread:
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

    @property
    def ident(self) -> int | None:
        return self._thread.ident

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


class Runtime:
    """The loaded shim (``ffi``, ``lib``), its call thread, and libslurm's tables read once
    at start: error names and messages, job state names.  Obtain it with :func:`load`."""

    def __init__(
        self, module: Any, plan: shim_build.BuildPlan, module_path: Path, config: ConfigSource
    ) -> None:
        self.ffi = module.ffi
        self.lib = module.lib
        self.plan = plan
        self.module_path = module_path
        self.config = config
        self.api_version = 0
        self.job_states: dict[int, JobState] = {}
        """Base job state (``JOB_*``) -> sckpt's ``JobState``."""
        self.state_names: dict[int, str] = {}
        """Base job state -> libslurm's name for it (steps and records show the name)."""
        self._errnames: dict[int, tuple[str, str]] = {}
        self._codes: dict[str, int] = {}
        self._users: dict[int, str] = {}
        self._on_close: list[Callable[[], None]] = []
        self._thread = CallThread("sckpt-libslurm")
        self.run(self._init_on_thread)
        errors.register_strerror(self.describe)

    # -- the call thread -------------------------------------------------------------------
    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the call thread (at once when already there); its result."""
        if threading.get_ident() == self._thread.ident:
            return fn(*args)
        return self._thread.submit(fn, *args).result()

    def call(self, route: Route | None, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the call thread, sent to ``route``'s controller (None: the one
        slurm.conf names).  A call made from within a call keeps the outer one's route."""
        if route is None or threading.get_ident() == self._thread.ident:
            return self.run(fn, *args)
        result: T = self.run(self._routed, route, fn, args)
        return result

    def _routed(self, route: Route, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        self.lib.sckpt_cluster_use(route.records, route.index)
        try:
            return fn(*args)
        except SlurmError as exc:
            c = route.cluster
            where = f"cluster {c.name} (slurmctld {c.control_host}:{c.control_port})"
            exc.hint = f"{where}: {exc.hint}" if exc.hint else where
            raise
        finally:
            self.lib.sckpt_cluster_use(self.ffi.NULL, -1)

    def on_close(self, release: Callable[[], None]) -> None:
        """Run ``release`` on the call thread when the runtime closes (C memory kept for
        the process's life, such as the clusters' records)."""
        self._on_close.append(release)

    def close(self) -> None:
        """Stop the call thread (libslurm stays loaded: it cannot be unloaded safely)."""
        releases, self._on_close = self._on_close, []
        for release in releases:
            try:
                self.run(release)
            except RuntimeError:  # already closed
                break
        self._thread.shutdown(wait=True)

    def _init_on_thread(self) -> None:
        lib, ffi = self.lib, self.ffi
        self.api_version = int(lib.sckpt_api_version())
        conf = self.config.file
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
            self.state_names[base] = name or fallback.get(base, JobState.FAILED).value
            try:
                self.job_states[base] = JobState(name)
            except ValueError:
                self.job_states[base] = fallback.get(base, JobState.FAILED)

    # -- return codes ----------------------------------------------------------------------
    def describe(self, code: int) -> tuple[str, str] | None:
        """``(name, message)`` from libslurm's own table (registered with backend.errors)."""
        return self._errnames.get(code)

    def code_of(self, name: str) -> int | None:
        """The code of an ``ESLURM_*`` name in this release (numbers moved between them)."""
        if not self._codes:
            self._codes = {n: c for c, (n, _m) in self._errnames.items()}
        return self._codes.get(name)

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

    def check(self, rc: int, err: int, acting: bool = False) -> None:
        """Raise the typed error for a failed call; nothing for ``rc`` 0.

        Slurm's two return shapes: ``-1`` with errno, or the (positive) code itself.
        ``acting``: the call acts on a job.  slurmctld and slurmd answer a non-owner's update,
        step signal or pid request with ESLURM_USER_ID_MISSING ("Invalid user id", logged as
        a security violation); that is an access refusal, so it is raised as AccessDenied
        (keeping Slurm's own code, name and message).
        """
        if rc == 0:
            return
        code = (err or SLURM_ERROR) if rc == -1 else rc
        if acting and code == self.code_of("ESLURM_USER_ID_MISSING"):
            raise AccessDenied(code, hint="you are neither the job's owner nor an operator")
        raise self.error(code)

    # -- values ----------------------------------------------------------------------------
    def string(self, p: Any) -> str:
        """A C string as text ("" for NULL); bytes that are not UTF-8 are replaced."""
        return self.ffi.string(p).decode("utf-8", "replace") if p else ""

    def user(self, uid: int) -> str:
        """The login name of ``uid`` (its number when the system has none), cached."""
        name = self._users.get(uid)
        if name is None:
            try:
                name = pwd.getpwuid(uid).pw_name
            except KeyError:
                name = str(uid)
            self._users[uid] = name
        return name


def load() -> Runtime:
    """Build (if needed) and load the shim, check versions, find a config, call slurm_init."""
    source = find_config_source()  # cheap, and nothing to build for without a cluster
    plan = shim_build.plan()
    shim_build.require_matching_release(plan)
    module_path = shim_build.build(plan)
    current_api = shim_build.library_api_version(plan.lib_path)
    if shim_build.read_meta(plan).get("api_version") != current_api:
        # The library changed under an existing build: build again, then refuse if it
        # still disagrees (never call through a layout built for another library).
        shim_build.discard(plan)
        module_path = shim_build.build(plan)
        built_api = shim_build.read_meta(plan).get("api_version")
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
    probe_init(plan.lib_path, source)
    return Runtime(module, plan, module_path, source)
