"""The historical checkpoint API (``slurm_checkpoint_*``, Slurm <= 19.05).

The shim looks each function up at run time (``dlsym``): on a libslurm without it the call
answers ``SCKPT_CK_MISSING``, raised here as ``NotSupported`` (ESLURM_NOT_SUPPORTED) naming
the missing function.  Each function runs on the runtime's thread.
"""

from __future__ import annotations

from ..errors import ESLURM_NOT_SUPPORTED, NotSupported
from ..model import StepId
from ..operations import CHECKPOINT_NAMES, operation
from .runtime import Runtime

CHECKPOINT_SYMBOLS = tuple(sorted(CHECKPOINT_NAMES))
"""The nine historical calls by operation name (``operation(name).symbol`` is the function),
sorted: ``sckpt doctor`` lists a partial API in this order."""

ERROR_MSG_BUF = 1024
"""Room for a step's last checkpoint error message."""


def symbols(rt: Runtime) -> dict[str, bool]:
    """Which ``slurm_checkpoint_*`` symbols this process can see, by operation name."""
    lib = rt.lib
    return {n: bool(lib.sckpt_ck_present(operation(n).symbol.encode())) for n in CHECKPOINT_SYMBOLS}


def _check(rt: Runtime, op: str, rc: int, err: int) -> None:
    if rc == rt.lib.SCKPT_CK_MISSING:
        raise NotSupported(
            ESLURM_NOT_SUPPORTED,
            hint=f"this Slurm ({rt.plan.version_text}) has no {operation(op).symbol} "
            "(the checkpoint API was removed in 20.02)",
        )
    rt.check(rc, err)


def able(rt: Runtime, step: StepId) -> int:
    """0 when checkpoints can be issued and none runs, else the running one's start time."""
    t = rt.ffi.new("int64_t *", 0)
    err = rt.ffi.new("int *")
    rc = rt.lib.sckpt_ck_able(step.job_id, step.step, t, err)
    _check(rt, "able", rc, err[0])
    return int(t[0])


def _simple(rt: Runtime, op: str, step: StepId) -> None:
    err = rt.ffi.new("int *")
    rc = rt.lib.sckpt_ck_simple(operation(op).symbol.encode(), step.job_id, step.step, err)
    _check(rt, op, rc, err[0])


def disable(rt: Runtime, step: StepId) -> None:
    _simple(rt, "disable", step)


def enable(rt: Runtime, step: StepId) -> None:
    _simple(rt, "enable", step)


def _wait(rt: Runtime, op: str, step: StepId, data: int, image_dir: str | None) -> None:
    err = rt.ffi.new("int *")
    rc = rt.lib.sckpt_ck_wait(
        operation(op).symbol.encode(),
        step.job_id,
        step.step,
        data,
        image_dir.encode() if image_dir else rt.ffi.NULL,
        err,
    )
    _check(rt, op, rc, err[0])


def create(rt: Runtime, step: StepId, max_wait: int, image_dir: str | None = None) -> None:
    _wait(rt, "create", step, max_wait, image_dir)


def vacate(rt: Runtime, step: StepId, max_wait: int, image_dir: str | None = None) -> None:
    _wait(rt, "vacate", step, max_wait, image_dir)


def restart(rt: Runtime, step: StepId, stick: bool = False, image_dir: str | None = None) -> None:
    _wait(rt, "restart", step, 1 if stick else 0, image_dir)


def complete(
    rt: Runtime, step: StepId, begin_time: int, error_code: int, error_msg: str = ""
) -> None:
    err = rt.ffi.new("int *")
    rc = rt.lib.sckpt_ck_complete(
        step.job_id, step.step, begin_time, error_code, error_msg.encode(), err
    )
    _check(rt, "complete", rc, err[0])


def error(rt: Runtime, step: StepId) -> tuple[int, str]:
    """``(error_code, error_msg)`` of the step's last checkpoint (message freed in C)."""
    code = rt.ffi.new("uint32_t *")
    buf = rt.ffi.new("char[]", ERROR_MSG_BUF)
    err = rt.ffi.new("int *")
    rc = rt.lib.sckpt_ck_error(step.job_id, step.step, code, buf, ERROR_MSG_BUF, err)
    _check(rt, "error", rc, err[0])
    return int(code[0]), rt.ffi.string(buf).decode("utf-8", "replace")


def tasks(
    rt: Runtime, step: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
) -> None:
    err = rt.ffi.new("int *")
    rc = rt.lib.sckpt_ck_tasks(
        step.job_id, step.step, begin_time, image_dir.encode(), max_wait, nodelist.encode(), err
    )
    _check(rt, "tasks", rc, err[0])
