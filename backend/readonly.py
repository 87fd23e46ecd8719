"""Read-only mode: an engine wrapper whose mutating operations never reach the engine.

The facade refuses mutating calls itself (so it can audit the refusal), and it also wraps
the engine in ``ReadOnlyEngine``: a second, independent guard, so that no code path that
holds the engine (a future helper, a bug in the facade) can reach libslurm or the
cooperative store while read-only mode is on.

Which calls are refused is not written here: every method of the ``Engine`` interface is
``guarded``, and an operation the table (``operations.py``) marks ``mutating`` raises
``refusal``; everything else (snapshot, able, error, processes, accounting ...) is passed
to the wrapped engine unchanged.  A new operation is guarded by its row alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .engines.base import Engine
from .errors import ReadOnlyError
from .model import StepId
from .operations import MUTATING


def refusal(operation: str, target: StepId | str) -> ReadOnlyError:
    """The error every refused mutating call raises (the same text everywhere); with
    ``-M`` it names the target's cluster."""
    where = f" on cluster {target.cluster}" if isinstance(target, StepId) and target.cluster else ""
    return ReadOnlyError(
        f"{operation} {target}{where} refused: sckpt is in read-only mode",
        "start sckpt without --read-only (and read_only = false in the config) to act",
    )


def guarded(name: str) -> Callable[..., Any]:
    """``ReadOnlyEngine``'s method ``name``: a mutating operation raises ``refusal``, any
    other call goes to the wrapped engine.  It has ``Engine``'s signature (``__wrapped__``),
    which ``tests/test_operations.py`` compares with the table (``updated=()``: not its
    ``__isabstractmethod__``)."""
    interface = getattr(Engine, name)
    if name in MUTATING:

        def refuse(self: ReadOnlyEngine, target: StepId, *_args: object, **_kw: object) -> Any:
            raise refusal(name, target)

        return functools.update_wrapper(refuse, interface, updated=())

    def forward(self: ReadOnlyEngine, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.inner, name)(*args, **kwargs)

    return functools.update_wrapper(forward, interface, updated=())


class ReadOnlyEngine(Engine):
    """Passes reads to ``inner``; raises ``ReadOnlyError`` for every mutating operation."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.name = inner.name
        self.writes_allowed = False
        inner.writes_allowed = False  # its reads must not write either (state file expiry)

    # Every method of the interface, in its order (tests/backend/test_arguments.py checks
    # that none is left to Engine's default): the table says which ones refuse.
    cluster_info = guarded("cluster_info")
    snapshot = guarded("snapshot")
    ping = guarded("ping")
    step_processes = guarded("step_processes")
    interconnect = guarded("interconnect")
    job_stdio = guarded("job_stdio")
    able = guarded("able")
    error = guarded("error")
    create = guarded("create")
    vacate = guarded("vacate")
    restart = guarded("restart")
    enable = guarded("enable")
    disable = guarded("disable")
    complete = guarded("complete")
    tasks = guarded("tasks")
    auto = guarded("auto")
    cancel = guarded("cancel")
    hold = guarded("hold")
    release = guarded("release")
    requeue = guarded("requeue")
    now = guarded("now")
    job_records = guarded("job_records")
    finished_jobs = guarded("finished_jobs")
    checkpoint_events = guarded("checkpoint_events")
    resolve_target = guarded("resolve_target")
    close = guarded("close")
