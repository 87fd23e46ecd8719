"""The shim's flat C records, decoded into sckpt's frozen dataclasses (``model``, ``slurm_api``).

Only decoding: each function reads records the shim filled and calls nothing in libslurm
that goes to a daemon.  They run on the runtime's thread, before the response is freed.
"""

from __future__ import annotations

import dataclasses
import os
import struct
from collections.abc import Callable
from typing import Any

from ..errors import ShimUnavailable
from ..model import TIME_UNLIMITED, Job, JobRecord, JobState, Step, StepId
from ..slurm_api import AccountingConfig, ControllerConfig
from .runtime import Runtime

JOB_NUMS = struct.Struct("=14I5qQ")  # 13 counts, the requeue flag, 5 times, the memory
"""Layout of the shim's ``sckpt_job_nums_t`` (checked against cffi's by :func:`require_layout`)."""
JOB_STRINGS = 15
"""Strings per job in the shim's buffer (``SCKPT_JOB_STRINGS``)."""
JOB_REQUEUE_FLAG = 0x400
"""JOB_REQUEUE, the state flag of a record ended by a requeue (sacct: REQUEUED)."""

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
    "suspend_time",
    "pre_sus_time",
    "time_limit",
    "priority",
    "qos",
    "dependency",
    "min_memory",
    "memory_per_cpu",
    "requeue",
)


def require_layout(ffi: Any) -> None:
    """Refuse a shim whose job record is not the layout :data:`JOB_NUMS` unpacks."""
    if ffi.sizeof("sckpt_job_nums_t") != JOB_NUMS.size:
        raise ShimUnavailable("the shim's job record layout is not the one sckpt expects")


def _time_limit(minutes: int, no_val: int) -> int | None:
    """libslurm's time limit: minutes, INFINITE (UNLIMITED) or NO_VAL (not set)."""
    if minutes == INFINITE:
        return TIME_UNLIMITED
    return None if minutes == no_val else minutes


INFINITE = 0xFFFFFFFF
"""Slurm's INFINITE for a 32-bit field."""
MEM_PER_CPU = 0x8000000000000000
"""The flag of ``pn_min_memory`` that makes it memory per CPU rather than per node."""


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


class JobDecoder:
    """Job responses into ``Job`` objects, reusing the unchanged ones of the previous answer.

    A job whose raw record is byte-for-byte what the previous response had is the same
    frozen ``Job`` object again (most of a big cluster is unchanged between refreshes), so
    only changed jobs are built.  The memo holds the latest response only; one decoder per
    controller (a cluster's binding has its own).
    """

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._memo: dict[tuple[object, ...], Job] = {}

    def __call__(self, handle: Any, n: int) -> tuple[Job, ...]:
        """The ``n`` jobs of a ``sckpt_load_jobs`` response: two flat buffers (numbers,
        NUL-separated strings) filled by the shim in one call each."""
        rt = self.rt
        ffi, lib = rt.ffi, rt.lib
        nums = ffi.new("sckpt_job_nums_t[]", max(n, 1))
        size = lib.sckpt_jobs_strings_size(handle)
        buf = ffi.new("char[]", max(size, 1))
        used = lib.sckpt_jobs_pack(handle, nums, n, buf, size)
        strings = ffi.buffer(buf, used)[:].decode("utf-8", "replace").split("\0")
        user, states, no_val, make = rt.user, rt.job_states, lib.NO_VAL, _make_job
        failed = JobState.FAILED
        previous, memo = self._memo, {}
        out = []
        k = 0
        for raw in JOB_NUMS.iter_unpack(ffi.buffer(nums, JOB_NUMS.size * n)):
            texts = strings[k : k + JOB_STRINGS]
            k += JOB_STRINGS
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
                    raw[17],
                    raw[18],
                    _time_limit(raw[12], no_val),
                    prio,
                    texts[13],
                    texts[14],
                    raw[19] & ~MEM_PER_CPU,
                    bool(raw[19] & MEM_PER_CPU),
                    bool(raw[13]),
                )
            memo[key] = job
            out.append(job)
        self._memo = memo
        return tuple(out)


def steps(rt: Runtime, records: Any, n: int) -> tuple[Step, ...]:
    """The ``n`` ``sckpt_step_t`` records filled by ``sckpt_steps_fill``."""
    s, user, names = rt.string, rt.user, rt.state_names
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
                submit_line=s(r.submit_line),
            )
        )
    return tuple(out)


def controller_config(rt: Runtime, handle: Any) -> ControllerConfig:
    """The controller's facts from one ``slurm_load_ctl_conf`` answer."""
    r = rt.ffi.new("sckpt_conf_t *")
    rt.lib.sckpt_conf_fill(handle, r)
    contain = rt.lib.sckpt_prolog_flag_contain()
    s = rt.string
    return ControllerConfig(
        cluster_name=s(r.cluster_name),
        version=s(r.version),
        switch_type=s(r.switch_type),
        proctrack_type=s(r.proctrack_type),
        select_type=s(r.select_type),
        slurm_user=s(r.slurm_user_name),
        control_host=s(r.control_machine),
        slurmctld_port=r.slurmctld_port,
        prolog_contain=bool(contain and (r.prolog_flags & contain)),
        checkpoint_type=s(r.checkpoint_type),
        last_update=r.last_update,
    )


def accounting_config(rt: Runtime, handle: Any) -> AccountingConfig:
    """AccountingStorageType/Host/Port and ClusterName from one ``slurm_load_ctl_conf``
    answer."""
    r = rt.ffi.new("sckpt_acct_conf_t *")
    rt.lib.sckpt_acct_conf_fill(handle, r)
    return AccountingConfig(
        storage_type=rt.string(r.storage_type),
        host=rt.string(r.storage_host),
        backup_host=rt.string(r.storage_backup_host),
        port=int(r.storage_port),
        cluster=rt.string(r.cluster_name),
    )


def _set_time(value: int) -> int:
    """An accounting time, 0 when not set: slurmdbd also answers NO_VAL (a record cancelled
    before it started) and INFINITE for that, which sacct prints as None and Unknown."""
    return 0 if value >= 0xFFFFFFFE or value < 0 else int(value)


def job_record(rt: Runtime, r: Any) -> JobRecord:
    """One ``sckpt_acct_job_t`` (a job's record in slurmdbd) as sacct shows it."""
    s, lib, no_val = rt.string, rt.lib, rt.lib.NO_VAL
    state_p = lib.sckpt_job_state_string(r.state)
    state = rt.ffi.string(state_p).decode() if state_p else ""
    if r.state & JOB_REQUEUE_FLAG:
        state = "REQUEUED"
    elif not state:
        state = rt.state_names.get(r.state & lib.sckpt_job_state_base(), str(r.state))
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
        user=s(r.user) or rt.user(r.uid),
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
