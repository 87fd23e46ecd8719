"""What the controller shows: jobs, steps, a job's output paths, a step's processes, its
configuration.  Each function runs on the runtime's thread and frees its response there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .. import errors
from ..model import JobState, JobStdio, NodePids, StepId, StepProcesses
from ..slurm_api import ControllerConfig, JobsResult, StepsResult
from . import decode
from .runtime import Runtime

T = TypeVar("T")

PATH_MAX = 4096
"""Room for one expanded output path (Linux's PATH_MAX; Slurm cuts a longer one)."""


def _no_change(rt: Runtime, rc: int, err: int) -> bool:
    """SLURM_NO_CHANGE_IN_DATA, returned directly or through errno (releases differ)."""
    no_change = rt.lib.SLURM_NO_CHANGE_IN_DATA
    return bool(rc == no_change or (rc == -1 and err == no_change))


def load_jobs(rt: Runtime, jobs: decode.JobDecoder, prev_update: int) -> JobsResult:
    """All jobs, or ``changed=False`` when nothing changed since ``prev_update``."""
    ffi, lib = rt.ffi, rt.lib
    handle = ffi.new("void **")
    count = ffi.new("uint32_t *")
    last = ffi.new("int64_t *")
    err = ffi.new("int *")
    rc = lib.sckpt_load_jobs(prev_update, handle, count, last, err)
    try:
        if _no_change(rt, rc, err[0]):
            return JobsResult(False, prev_update)
        rt.check(rc, err[0])
        return JobsResult(True, last[0], jobs(handle[0], count[0]))
    finally:
        lib.sckpt_jobs_free(handle[0])


def get_steps(rt: Runtime, prev_update: int) -> StepsResult:
    """All steps of all jobs, or ``changed=False`` when nothing changed."""
    ffi, lib = rt.ffi, rt.lib
    handle = ffi.new("void **")
    count = ffi.new("uint32_t *")
    last = ffi.new("int64_t *")
    err = ffi.new("int *")
    rc = lib.sckpt_load_steps(prev_update, handle, count, last, err)
    try:
        if _no_change(rt, rc, err[0]):
            return StepsResult(False, prev_update)
        rt.check(rc, err[0])
        n = count[0]
        records = ffi.new("sckpt_step_t[]", max(n, 1))
        lib.sckpt_steps_fill(handle[0], records, n)
        return StepsResult(True, last[0], decode.steps(rt, records, n))
    finally:
        lib.sckpt_steps_free(handle[0])


def job_stdio(rt: Runtime, job_id: int) -> JobStdio:
    """One job's StdOut/StdErr paths as scontrol shows them (``slurm_get_job_stdout``)."""
    ffi, lib = rt.ffi, rt.lib
    out = ffi.new("char[]", PATH_MAX)
    err_path = ffi.new("char[]", PATH_MAX)
    state, uid, batch = ffi.new("uint32_t *"), ffi.new("uint32_t *"), ffi.new("uint32_t *")
    err = ffi.new("int *")
    rc = lib.sckpt_job_stdio(job_id, out, err_path, PATH_MAX, state, uid, batch, err)
    rt.check(rc, err[0])
    return JobStdio(
        job_id=job_id,
        std_out=rt.string(out),
        std_err=rt.string(err_path),
        state=rt.job_states.get(state[0], JobState.FAILED),
        uid=uid[0],
        user=rt.user(uid[0]),
        batch=bool(batch[0]),
    )


def step_pids(rt: Runtime, step: StepId, proctrack: Callable[[], str]) -> StepProcesses:
    """The step's processes per node, as slurmd's proctrack container reports them.

    ``proctrack`` names the controller's ProctrackType (asked once per controller by the
    caller, which keeps it), called here on the same thread and route."""
    ffi, lib = rt.ffi, rt.lib
    if step.is_whole_job:
        raise errors.error_for(errors.ESLURM_INVALID_JOB_ID, hint="name a step: JOB.STEP")
    handle = ffi.new("void **")
    count = ffi.new("uint32_t *")
    err = ffi.new("int *")
    rc = lib.sckpt_step_pids(step.job_id, step.step, step.het_comp, handle, count, err)
    try:
        rt.check(rc, err[0], acting=True)
        nodes_p = lib.sckpt_pids_nodes(handle[0])
        nodes = []
        for i in range(count[0]):
            rec = nodes_p[i]
            pids = tuple(int(x) for x in ffi.unpack(rec.pids, rec.pid_cnt)) if rec.pids else ()
            nodes.append(NodePids(rt.string(rec.node_name), tuple(sorted(pids))))
        return StepProcesses(step, tuple(nodes), proctrack())
    finally:
        lib.sckpt_pids_free(handle[0])


def loaded_conf(rt: Runtime, read: Callable[[Runtime, Any], T]) -> T:
    """``read(rt, handle)`` of one ``slurm_load_ctl_conf`` answer, freed afterwards (the
    controller's facts and its accounting settings are read from the same answer)."""
    handle = rt.ffi.new("void **")
    err = rt.ffi.new("int *")
    rc = rt.lib.sckpt_load_conf(handle, err)
    try:
        rt.check(rc, err[0])
        return read(rt, handle[0])
    finally:
        rt.lib.sckpt_conf_free(handle[0])


def ctl_conf(rt: Runtime) -> ControllerConfig:
    """The controller's configuration (cluster, version, switch and proctrack types)."""
    return loaded_conf(rt, decode.controller_config)
