"""What sckpt does to jobs and steps with today's libslurm: signal, kill, hold, requeue,
release, and two ``scontrol update`` fields.  Each runs on the runtime's thread.

Every one is an action on a job: a refusal for not being the job's owner is raised as
``AccessDenied`` (``Runtime.check(acting=True)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model import StepId
from .runtime import Runtime


def act(rt: Runtime, fn: Callable[..., int], *args: Any) -> None:
    """``fn(*args, &errno)``, a shim call acting on a job; its refusal raised typed."""
    err = rt.ffi.new("int *")
    rc = fn(*args, err)
    rt.check(rc, err[0], acting=True)


def signal_step(rt: Runtime, step: StepId, signal: int) -> None:
    """Send ``signal`` to a step's tasks (``.batch`` reaches the batch shell)."""
    act(rt, rt.lib.sckpt_signal_step, step.job_id, step.step, signal)


def kill_step(rt: Runtime, step: StepId, signal: int) -> None:
    """``scancel --signal`` for one step (the step is ended by the controller)."""
    act(rt, rt.lib.sckpt_kill_step, step.job_id, step.step, signal)


def kill_job(rt: Runtime, job_id: int, signal: int) -> None:
    """``scancel [--signal]`` for a whole job: SIGKILL ends it, another signal reaches
    its steps (flags 0, as scancel sends without ``--batch``/``--full``)."""
    act(rt, rt.lib.sckpt_kill_job, job_id, signal, 0)


def hold(rt: Runtime, job_id: int) -> None:
    """Hold a job (priority 0), as ``scontrol hold``."""
    act(rt, rt.lib.sckpt_hold, job_id)


def requeue(rt: Runtime, job_id: int, hold: bool) -> None:
    """Requeue a job; with ``hold`` it stays pending and held (``scontrol requeuehold``)."""
    act(rt, rt.lib.sckpt_requeue, job_id, 1 if hold else 0)


def release(rt: Runtime, job_id: int) -> None:
    """Release a held job (priority back to normal), as ``scontrol release``."""
    act(rt, rt.lib.sckpt_release, job_id)


def hold_task(rt: Runtime, array_job_id: int, task: int, hold: bool) -> None:
    """Hold (or release) one array task still pending in its array's record, named
    ``7_5`` as scontrol names it: the controller splits it off into its own record."""
    act(rt, rt.lib.sckpt_hold_task, f"{array_job_id}_{task}".encode(), 1 if hold else 0)


def set_required_nodes(rt: Runtime, job_id: int, nodelist: str) -> None:
    """Set a pending job's required nodes (``scontrol update job ReqNodeList=``)."""
    act(rt, rt.lib.sckpt_set_required_nodes, job_id, nodelist.encode())


def set_begin_time(rt: Runtime, job_id: int, when: int) -> None:
    """Set a pending job's begin time (``scontrol update job StartTime=``).

    ``when`` is Unix seconds; ``0`` (or any time already past) is now, sent as this
    host's clock, as ``StartTime=now`` is: a requeued job becomes eligible at once
    instead of about two minutes later.  A job that is not pending is refused
    (ESLURM_JOB_NOT_PENDING).
    """
    act(rt, rt.lib.sckpt_set_begin_time, job_id, when)
