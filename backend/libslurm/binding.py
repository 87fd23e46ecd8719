"""``Binding``: libslurm as the typed calls of ``SlurmAPI``, for one controller.

The Pythonic layer over the runtime (PyNaCl's and pygit2's split): each method sends one
function of ``reads``, ``actions``, ``checkpoint`` or ``accounting`` to the runtime's thread,
along this binding's route.  A binding is one controller: the one slurm.conf names (from
:func:`load_binding`), or a cluster registered in slurmdbd (:meth:`Binding.on_cluster`, for
``-M``).  Bindings of several clusters share one runtime; each keeps what it learnt of its
own controller (unchanged jobs, ProctrackType), so the engines, one per cluster, run
unchanged.
"""

from __future__ import annotations

import functools
import inspect
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from ..errors import SlurmError, UsageError
from ..model import JobRecord, JobStdio, StepId, StepProcesses
from ..slurm_api import AccountingConfig, ClusterRoute, ControllerConfig, JobsResult, StepsResult
from . import accounting, actions, checkpoint, clusters, decode, reads, runtime, shim_build
from .config_source import ConfigSource, user_name

T = TypeVar("T")
P = ParamSpec("P")


class OnThread(Generic[P, T]):
    """A ``Binding`` method that is a function of ``checkpoint`` (``fn(runtime, ...)``), run
    on the runtime's thread along the binding's route: typed as ``fn`` without its first
    parameter, so a method is one line and its signature has one home (``fn``'s).  Read on
    the class it is that method unbound: ``Binding.ckpt_create(binding, step, 10)``, whose
    signature is ``fn``'s with ``self`` for the runtime."""

    def __init__(self, fn: Callable[Concatenate[runtime.Runtime, P], T]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)
        signature = inspect.signature(fn)
        rest = list(signature.parameters.values())[1:]
        self.__signature__ = signature.replace(
            parameters=[inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY), *rest]
        )

    def __call__(self, binding: Binding, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return binding._call(functools.partial(self.fn, **kwargs), *args)

    @overload
    def __get__(self, binding: None, owner: type[Binding]) -> OnThread[P, T]: ...

    @overload
    def __get__(self, binding: Binding, owner: type[Binding]) -> Callable[P, T]: ...

    def __get__(
        self, binding: Binding | None, owner: type[Binding]
    ) -> OnThread[P, T] | Callable[P, T]:
        if binding is None:
            return self

        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return self(binding, *args, **kwargs)

        return functools.update_wrapper(call, self.fn)


class Binding:
    """libslurm, as typed Python calls to one controller.  Obtain it with ``get_binding``.

    Every public method is safe to call from any thread; the work runs on the runtime's own
    thread, one call at a time.
    """

    def __init__(self, rt: runtime.Runtime, route: runtime.Route | None = None) -> None:
        self.runtime = rt
        self._route = route
        self._jobs = decode.JobDecoder(rt)
        self._proctrack: str | None = None
        self._routes: dict[str, runtime.Route] = {}
        """Clusters looked up in slurmdbd (``-M``), by name."""

    # -- facts (no controller asked) -------------------------------------------------------
    @property
    def route(self) -> ClusterRoute | None:
        """The cluster this binding's calls go to; None: the controller slurm.conf names."""
        return self._route.cluster if self._route else None

    @property
    def plan(self) -> shim_build.BuildPlan:
        """Headers, library and cache directory the shim was built from."""
        return self.runtime.plan

    @property
    def module_path(self) -> Path:
        return self.runtime.module_path

    @property
    def config(self) -> ConfigSource:
        return self.runtime.config

    @property
    def api_version(self) -> int:
        """libslurm's ``SLURM_API_VERSION`` as the shim was built against it."""
        return self.runtime.api_version

    @property
    def caller_uid(self) -> int:
        """The controller authenticates this process's real uid (munge)."""
        return os.getuid()

    @property
    def caller_name(self) -> str:
        return user_name(os.getuid())

    @property
    def header_version(self) -> str:
        return self.runtime.plan.version_text

    def describe(self, code: int) -> tuple[str, str] | None:
        """``(name, message)`` from libslurm's own table (registered with backend.errors)."""
        return self.runtime.describe(code)

    def close(self) -> None:
        """Stop the runtime's thread, for every binding sharing it; a cluster's binding
        leaves it to the binding it came from."""
        if self._route is None:
            self.runtime.close()

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(runtime, *args)`` on the runtime's thread, sent to this binding's controller."""
        return self.runtime.call(self._route, fn, self.runtime, *args)

    # -- reads -----------------------------------------------------------------------------
    def load_jobs(self, prev_update: int = 0) -> JobsResult:
        """All jobs, or ``changed=False`` when nothing changed since ``prev_update``."""
        return self._call(reads.load_jobs, self._jobs, prev_update)

    def get_steps(self, prev_update: int = 0) -> StepsResult:
        """All steps of all jobs, or ``changed=False`` when nothing changed."""
        return self._call(reads.get_steps, prev_update)

    def job_stdio(self, job_id: int) -> JobStdio:
        """One job's StdOut/StdErr paths as scontrol shows them (``slurm_get_job_stdout``)."""
        return self._call(reads.job_stdio, job_id)

    def step_pids(self, step: StepId) -> StepProcesses:
        """The step's processes per node, as slurmd's proctrack container reports them."""
        return self._call(reads.step_pids, step, self._proctrack_type)

    def _proctrack_type(self) -> str:
        """ProctrackType of this binding's controller, asked once (on the runtime's thread)."""
        if self._proctrack is None:
            try:
                self._proctrack = reads.ctl_conf(self.runtime).proctrack_type
            except SlurmError:
                return ""
        return self._proctrack

    def ctl_conf(self) -> ControllerConfig:
        """The controller's configuration (cluster, version, switch and proctrack types)."""
        return self._call(reads.ctl_conf)

    def ping(self) -> float:
        """Round trip to slurmctld in seconds (one ``slurm_load_ctl_conf``)."""
        start = time.perf_counter()
        self.ctl_conf()
        return time.perf_counter() - start

    # -- actions ---------------------------------------------------------------------------
    def signal_step(self, step: StepId, signal: int) -> None:
        """Send ``signal`` to a step's tasks (``.batch`` reaches the batch shell)."""
        self._call(actions.signal_step, step, signal)

    def kill_step(self, step: StepId, signal: int = 9) -> None:
        """``scancel --signal`` for one step (the step is ended by the controller)."""
        self._call(actions.kill_step, step, signal)

    def kill_job(self, job_id: int, signal: int = 9) -> None:
        """``scancel [--signal]`` for a whole job (see ``actions.kill_job``)."""
        self._call(actions.kill_job, job_id, signal)

    def hold(self, job_id: int) -> None:
        """Hold a job (priority 0), as ``scontrol hold``."""
        self._call(actions.hold, job_id)

    def requeue(self, job_id: int, hold: bool = False) -> None:
        """Requeue a job; with ``hold`` it stays pending and held (``scontrol requeuehold``)."""
        self._call(actions.requeue, job_id, hold)

    def release(self, job_id: int) -> None:
        """Release a held job (priority back to normal), as ``scontrol release``."""
        self._call(actions.release, job_id)

    def hold_task(self, array_job_id: int, task: int, hold: bool = True) -> None:
        """Hold (or release) one array task still pending in its array's record."""
        self._call(actions.hold_task, array_job_id, task, hold)

    def set_required_nodes(self, job_id: int, nodelist: str) -> None:
        """Set a pending job's required nodes (``scontrol update job ReqNodeList=``)."""
        self._call(actions.set_required_nodes, job_id, nodelist)

    def set_begin_time(self, job_id: int, when: int = 0) -> None:
        """Set a pending job's begin time (``scontrol update job StartTime=``; 0: now)."""
        if when < 0:
            raise ValueError(f"begin time {when}: Unix seconds, or 0 for now")
        self._call(actions.set_begin_time, job_id, when)

    # -- the historical checkpoint API -----------------------------------------------------
    def checkpoint_symbols(self) -> dict[str, bool]:
        """Which ``slurm_checkpoint_*`` symbols this process can see."""
        return self.runtime.run(checkpoint.symbols, self.runtime)

    @property
    def has_checkpoint_api(self) -> bool:
        """True when all nine checkpoint calls resolve (libslurm <= 19.05 or a stand-in)."""
        return all(self.checkpoint_symbols().values())

    # One attribute per checkpoint row of the table, its signature checkpoint.py's (the
    # names are written here because mypy sees only what a class body says; the test
    # tests/test_operations.py checks them against the table and SlurmAPI).
    ckpt_able = OnThread(checkpoint.able)
    ckpt_disable = OnThread(checkpoint.disable)
    ckpt_enable = OnThread(checkpoint.enable)
    ckpt_create = OnThread(checkpoint.create)
    ckpt_vacate = OnThread(checkpoint.vacate)
    ckpt_restart = OnThread(checkpoint.restart)
    ckpt_complete = OnThread(checkpoint.complete)
    ckpt_error = OnThread(checkpoint.error)
    ckpt_tasks = OnThread(checkpoint.tasks)

    # -- accounting (slurmdbd): asked through slurm.conf's controller, for this cluster -----
    def accounting_config(self) -> AccountingConfig:
        """The controller's AccountingStorageType/Host/Port (one ``slurm_load_ctl_conf``)."""
        return self.runtime.run(accounting.config, self.runtime)

    def require_accounting(self) -> AccountingConfig:
        """The accounting configuration, once slurmdbd is known to listen; else
        ``AccountingUnavailable`` (``accounting.require_slurmdbd``)."""
        return accounting.require_slurmdbd(self.accounting_config())

    def job_records(
        self, job_id: int, since: int, until: int = 0, cluster: str = ""
    ) -> tuple[JobRecord, ...]:
        """Every record of ``job_id`` in the window (``sacct --duplicates -j JOB -S``)."""
        name = self._records_cluster(cluster)
        return self.runtime.run(accounting.jobs, self.runtime, name, job_id, since, until, False)

    def finished_jobs(self, since: int, until: int = 0, cluster: str = "") -> tuple[JobRecord, ...]:
        """Jobs that ended in the window (``sacct -X -s CD,CA,F,TO,... -S -E``)."""
        name = self._records_cluster(cluster)
        return self.runtime.run(accounting.jobs, self.runtime, name, 0, since, until, True)

    def _records_cluster(self, cluster: str) -> str:
        """Whose records to ask for, once slurmdbd listens: ``cluster``, else the route's
        (``-M``), else the controller's own ClusterName, named as sacct names it.  Left
        empty, slurmdbd picks the cluster of the connection, or every cluster it knows."""
        conf = self.require_accounting()
        return cluster or (self._route.cluster.name if self._route else conf.cluster)

    # -- clusters (-M) ----------------------------------------------------------------------
    def clusters(self, names: str) -> tuple[ClusterRoute, ...]:
        """The clusters ``names`` (``a,b`` or ``all``) as slurmdbd knows them, as ``squeue -M``
        looks them up (``slurmdb_get_info_cluster``), in slurmdbd's order.

        Raises ``SetupError`` when this Slurm has no slurmdbd to ask and ``UsageError`` for a
        name slurmdbd does not know.
        """
        wanted = clusters.wanted(names)
        known = self.runtime.run(clusters.look_up, self.runtime)
        self._routes.update((route.cluster.name, route) for route in known)
        return tuple(route.cluster for route in clusters.choose(known, wanted))

    def on_cluster(self, route: ClusterRoute) -> Binding:
        """A binding whose calls go to ``route``'s controller (``squeue -M``'s way); the
        cluster must come from :meth:`clusters`."""
        found = self._routes.get(route.name)
        if found is None:
            raise UsageError(f"cluster {route.name} was not looked up in slurmdbd (-M)")
        return Binding(self.runtime, found)


def load_binding() -> Binding:
    """Build (if needed) and load the shim, find a config, call slurm_init: the binding of
    the controller slurm.conf names."""
    rt = runtime.load()
    try:
        decode.require_layout(rt.ffi)
    except BaseException:
        rt.close()
        raise
    return Binding(rt)
