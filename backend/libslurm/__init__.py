"""sckpt's only door to libslurm: a cffi shim built on first use, and typed Python calls.

Public API::

    from sckpt.backend.libslurm import get_binding, Binding, JobsResult, StepsResult
    b = get_binding()          # singleton; raises ShimUnavailable / NoConfig (SetupError)
    r = b.load_jobs(prev)      # JobsResult(changed, last_update, jobs: tuple[Job, ...])
    s = b.get_steps(prev)      # StepsResult(changed, last_update, steps: tuple[Step, ...])
    b.step_pids(StepId(..))    # StepProcesses (per-node pids of the proctrack container)
    b.ctl_conf()               # ControllerConfig (cluster, version, switch/proctrack types ..)
    b.signal_step(step, sig); b.kill_step(step, sig)
    b.requeue(job_id, hold=True); b.release(job_id); b.set_required_nodes(job_id, "n[1-2]")
    b.set_begin_time(job_id, when=0)   # scontrol update StartTime=; 0 (or past): now
    b.has_checkpoint_api       # all nine slurm_checkpoint_* symbols resolve (<= 19.05)
    b.ckpt_able(step) -> start_time; ckpt_disable/enable(step); ckpt_create/vacate(step,
      max_wait, image_dir); ckpt_restart(step, stick, image_dir); ckpt_complete(step,
      begin_time, code, msg); ckpt_error(step) -> (code, msg); ckpt_tasks(step, begin_time,
      image_dir, max_wait, nodelist)   # absent symbols -> NotSupported(ESLURM_NOT_SUPPORTED)
    b.job_records(job_id, since); b.finished_jobs(since)   # slurmdbd's records
    b.clusters("a,b") -> routes; b.on_cluster(route) -> Binding   # -M: another controller
    b.ping() -> seconds; b.plan (headers, library, cache dir); b.config (ConfigSource)
    report_build_progress(print_line)   # hear what the first-use shim build is doing

The rooms, from the bottom up: ``shim_build`` compiles ``shim.c`` (declared to cffi in
``cdef.h``); ``config_source`` finds slurm.conf before libslurm may exit over it;
``runtime`` loads the module and owns the one call thread and ``check(rc)``; ``decode``
turns the shim's records into frozen dataclasses; ``reads``, ``actions``, ``checkpoint``,
``accounting`` and ``clusters`` are the calls, as functions of the runtime; ``binding`` is
the typed object the engines are given.

Step ids are sckpt's canonical ones (``model.STEP_BATCH`` ...) on every Slurm release.
Refusals raise ``backend.errors`` types (``error_for(code)``); controller communication
failures raise ``ControllerUnreachable``.  Every call runs on one dedicated thread; methods
may be called from any thread.  The binding never lets libslurm ``exit()`` the process: the
configuration is located (and ``slurm_init`` tried in a child process) first.
"""

from __future__ import annotations

import threading

from ..slurm_api import ControllerConfig, JobsResult, StepsResult
from .binding import Binding, load_binding
from .c_stderr import divert_c_stderr
from .checkpoint import CHECKPOINT_SYMBOLS
from .config_source import ConfigSource, find_config_source
from .shim_build import report_build_progress

__all__ = [
    "CHECKPOINT_SYMBOLS",
    "Binding",
    "ConfigSource",
    "ControllerConfig",
    "JobsResult",
    "StepsResult",
    "divert_c_stderr",
    "find_config_source",
    "get_binding",
    "has_checkpoint_api",
    "report_build_progress",
]

_lock = threading.Lock()
_binding: Binding | None = None


def get_binding() -> Binding:
    """The process-wide binding, loaded on first use (later calls return the same object).

    A failure (ShimUnavailable, NoConfig) is not cached: the next call tries again, so a
    user who fixes SLURM_CONF does not have to restart.
    """
    global _binding
    with _lock:
        if _binding is None:
            _binding = load_binding()
        return _binding


def has_checkpoint_api() -> bool:
    """Whether the loaded Slurm has the historical checkpoint API (loads the binding)."""
    return get_binding().has_checkpoint_api
