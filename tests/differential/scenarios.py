"""The scripted sequences of the differential tests, as data.

A scenario is a list of steps run in order against one cluster; every step that is an
operation is answered (exit code, ESLURM name and code, stdout, stderr) and the answers of two
clusters are compared step by step.  Steps:

``("as", USER)``
    the following operations run as USER: ``root``, ``alice`` or ``bob`` (on a real cluster
    ``sckpt-alice``/``sckpt-bob`` through runuser; on the simulated one ``--as-user``).
``("submit", LABEL, USER, STATE)``
    a batch job of USER whose step 0 is a plain ``srun sleep``; STATE ``running`` (returns
    once step 0 runs) or ``pending`` (held).  ``{LABEL}`` in later targets is its job id.
``("suspend" | "resume" | "finish" | "cancel", LABEL)``
    change the job's state as an operator would: ``scontrol suspend``/``resume``; ``finish``
    ends step 0 so the script exits 0 (COMPLETED); ``cancel`` is ``scancel`` (CANCELLED).
``(OP, TARGET)`` or ``(OP, TARGET, OPTIONS)``
    ``sckpt OP TARGET [options]`` for the nine operations; OPTIONS keys: ``max_wait``,
    ``image_dir``, ``stick``, ``error_code``, ``error_msg``, ``begin_time``, ``nodelist``.
    ``OP`` may also be ``"checkpoint <op>"`` (scontrol's historical syntax).  In TARGET and
    in option values ``{LABEL}`` is the job id and ``{LABEL@nodes}`` its node list.

Job ids, user names, times and the pid that 19.05's ompi plugin leaves as the error message
are normalised (``normalize`` in clusters.py), so answers of different clusters compare.
"""

from __future__ import annotations

from collections.abc import Mapping

Step = tuple[str | Mapping[str, object], ...]
"""One scripted step (see the module's docstring)."""

UNKNOWN = "999999"
"""A job id no cluster of the tests reaches in its lifetime."""

OPERATIONS = (
    "able",
    "error",
    "disable",
    "enable",
    "create",
    "vacate",
    "complete",
    "tasks",
    "restart",
)
"""The nine operations of the seed's API (scontrol's ``requeue`` is not one of sckpt's)."""

_WAIT: Mapping[str, object] = {"max_wait": 5}


def _every_op(target: str) -> list[Step]:
    """Each of the nine operations once on ``target`` (tasks to the job's own nodes)."""
    steps: list[Step] = []
    for op in OPERATIONS:
        if op in ("create", "vacate"):
            steps.append((op, target, _WAIT))
        elif op == "tasks":
            steps.append((op, target, {"nodelist": "{run@nodes}"}))
        else:
            steps.append((op, target))
    return steps


COUNTER: list[Step] = [
    # The disable counter of a step: disable twice, enable, able, enable at 0 and after it.
    ("as", "root"),
    ("submit", "run", "root", "running"),
    ("able", "{run}.0"),
    ("disable", "{run}.0"),
    ("disable", "{run}.0"),
    ("able", "{run}.0"),
    ("error", "{run}.0"),
    ("enable", "{run}.0"),
    ("able", "{run}.0"),
    ("enable", "{run}.0"),
    ("able", "{run}.0"),
    ("enable", "{run}.0"),  # at 0
    ("able", "{run}.0"),
    ("disable", "{run}.0"),
    ("able", "{run}.0"),
    ("error", "{run}.0"),
]

CREATE: list[Step] = [
    # create, refused create, complete (which code is kept), vacate, on a step of root's job.
    ("as", "root"),
    ("submit", "run", "root", "running"),
    ("create", "{run}.0", _WAIT),
    ("able", "{run}.0"),
    ("error", "{run}.0"),
    ("create", "{run}.0", {"max_wait": 5, "image_dir": "/tmp"}),
    ("able", "{run}.0"),
    ("complete", "{run}.0", {"error_code": 7, "error_msg": "late"}),
    ("disable", "{run}.0"),
    ("create", "{run}.0", _WAIT),  # refused while disabled
    ("vacate", "{run}.0", _WAIT),  # refused while disabled
    ("error", "{run}.0"),
    ("able", "{run}.0"),
    ("enable", "{run}.0"),
    ("able", "{run}.0"),
    ("error", "{run}.0"),
    ("complete", "{run}.0", {"error_code": 5, "error_msg": "five"}),
    ("error", "{run}.0"),
    ("complete", "{run}.0", {"error_code": 3, "error_msg": "three"}),
    ("error", "{run}.0"),
    ("complete", "{run}.0", {"error_code": 9, "error_msg": "nine"}),
    ("error", "{run}.0"),
    ("able", "{run}.0"),
    ("vacate", "{run}.0", _WAIT),
    ("able", "{run}.0"),
    ("error", "{run}.0"),
]

MISSING: list[Step] = [
    # A step that does not exist, an unknown job id and a step of it, for every operation.
    ("as", "root"),
    ("submit", "run", "root", "running"),
    *_every_op("{run}.7"),
    *_every_op(UNKNOWN),
    *_every_op(f"{UNKNOWN}.0"),
]

TASKS: list[Step] = [
    # tasks goes to the nodes' daemons: begin times, another user, a suspended step.
    ("as", "root"),
    ("submit", "run", "root", "running"),
    ("tasks", "{run}.0", {"nodelist": "{run@nodes}", "begin_time": 1000}),
    ("tasks", "{run}.0", {"nodelist": "{run@nodes}", "begin_time": 1000}),  # same begin time
    ("tasks", "{run}.0", {"nodelist": "{run@nodes}", "begin_time": 2000}),
    ("tasks", "{run}.0", {"nodelist": "{run@nodes}"}),
    ("as", "alice"),
    ("tasks", "{run}.0", {"nodelist": "{run@nodes}", "begin_time": 3000}),
    ("as", "root"),
    ("suspend", "run"),
    ("tasks", "{run}.0", {"nodelist": "{run@nodes}", "begin_time": 4000}),
    ("resume", "run"),
    ("tasks", "{run}.0", {"nodelist": "{run@nodes}", "begin_time": 5000}),
]


def _states() -> list[Step]:
    steps: list[Step] = [
        ("as", "root"),
        ("submit", "run", "root", "running"),  # for the node list of tasks
        ("submit", "pend", "root", "pending"),
        ("submit", "susp", "root", "running"),
        ("submit", "done", "root", "running"),
        ("submit", "gone", "root", "running"),
        ("suspend", "susp"),
        ("finish", "done"),
        ("cancel", "gone"),
    ]
    for label in ("pend", "susp", "done", "gone"):
        steps += _every_op(f"{{{label}}}")
        steps += _every_op(f"{{{label}}}.0")
    steps += [("resume", "susp"), ("able", "{susp}.0"), ("able", "{susp}")]
    return steps


STATES = _states()
"""Pending (held), suspended, completed and cancelled jobs; every operation on JOB and JOB.0."""

USERS: list[Step] = [
    # Another unprivileged user, and root, on someone else's jobs.
    ("as", "root"),
    ("submit", "mine", "root", "running"),
    ("submit", "hers", "alice", "running"),
    ("as", "alice"),
    ("able", "{mine}.0"),
    ("able", "{mine}"),
    ("error", "{mine}.0"),
    ("disable", "{mine}.0"),
    ("create", "{mine}.0", _WAIT),
    ("complete", "{mine}.0"),
    ("restart", "{mine}"),
    ("restart", "{mine}.0"),
    ("able", "{hers}.0"),
    ("disable", "{hers}.0"),
    ("able", "{hers}.0"),
    ("able", "{hers}"),
    ("as", "bob"),
    ("able", "{hers}.0"),
    ("enable", "{hers}.0"),
    ("create", "{hers}", _WAIT),
    ("restart", "{hers}"),
    ("as", "root"),
    ("able", "{hers}.0"),
    ("enable", "{hers}.0"),
    ("able", "{hers}.0"),
    ("create", "{hers}.0", _WAIT),
    ("able", "{hers}.0"),
    ("error", "{hers}.0"),
    ("as", "alice"),
    ("able", UNKNOWN),
    ("restart", UNKNOWN),
    ("finish", "hers"),
    ("as", "bob"),
    ("able", "{hers}.0"),
    ("restart", "{hers}"),
    ("as", "alice"),
    ("restart", "{hers}"),
]

RESTART: list[Step] = [
    # restart's refusals: a step, a running / pending / finished / cancelled / unknown job.
    ("as", "root"),
    ("submit", "run", "root", "running"),
    ("submit", "pend", "root", "pending"),
    ("submit", "done", "root", "running"),
    ("submit", "gone", "root", "running"),
    ("finish", "done"),
    ("cancel", "gone"),
    ("restart", "{run}"),
    ("restart", "{run}", {"stick": True}),
    ("restart", "{run}.0"),
    ("restart", "{run}.batch"),
    ("restart", "{pend}"),
    ("restart", "{done}.0"),
    ("restart", "{gone}.0"),
    ("restart", f"{UNKNOWN}.0"),
    ("restart", UNKNOWN, {"stick": True, "image_dir": "/tmp"}),
    ("checkpoint restart", "{run}.0"),
    ("checkpoint requeue", "{run}"),
    # last: on the real cooperative engine these bring the finished jobs back
    ("restart", "{done}"),
    ("restart", "{gone}", {"stick": True}),
]


def _whole_job() -> list[Step]:
    """The whole job (JOB) and the batch step (JOB.batch) for every operation."""
    steps: list[Step] = [("as", "root"), ("submit", "run", "root", "running")]
    for op in ("able", "error", "disable", "able", "enable", "create", "complete", "tasks"):
        for target in ("{run}", "{run}.batch"):
            if op == "create":
                steps.append((op, target, _WAIT))
            elif op == "tasks":
                steps.append((op, target, {"nodelist": "{run@nodes}"}))
            else:
                steps.append((op, target))
    steps += [
        ("able", "{run}.0"),
        ("error", "{run}.0"),
        ("restart", "{run}"),
        ("restart", "{run}.batch"),
        # last: the cooperative engine ends the job's steps
        ("vacate", "{run}.batch", _WAIT),
        ("vacate", "{run}", _WAIT),
    ]
    return steps


WHOLE_JOB = _whole_job()

SCENARIOS: dict[str, list[Step]] = {
    "counter": COUNTER,
    "create": CREATE,
    "whole_job": WHOLE_JOB,
    "missing": MISSING,
    "tasks": TASKS,
    "states": STATES,
    "users": USERS,
    "restart": RESTART,
}
