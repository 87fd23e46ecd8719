"""The one table of intended differences: cooperative engine (22.05) vs the real 19.05.

Everywhere else the cooperative engine must answer as 19.05's controller with
``checkpoint/ompi`` does (OMPI.md).  Each row names the steps (scenario, index of the
operation in that scenario) where the answers are meant to differ, with the reason: what
the reference (``../shared/reference/checkpoint-semantics.md``) or the cooperative engine's
documented meaning (``backend/checkpointing/engine.py``) says, against what ompi does.
A listed step that no longer differs fails the test too (the row is stale).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Intended:
    reason: str
    steps: tuple[tuple[str, int], ...]


HINTS = (
    "sckpt's engines explain a refusal after '; ' on stderr (the cooperative engine's own "
    "checks); 19.05's controller returns only the code: compared without that tail"
)
"""Applies to every step of the cooperative comparison (the simulated one compares all)."""

TABLE: tuple[Intended, ...] = (
    Intended(
        "reference: enable at 0 stays 0; ompi's uint16 counter wraps to 65535 (disabled)",
        (("counter", 10), ("counter", 12)),
    ),
    Intended(
        "reference: a whole-job request runs on every RUNNING step (highest code); "
        "ompi refuses a batch job outright (2036; ENOENT where it saves the record first)",
        (
            ("whole_job", 0),
            ("whole_job", 2),
            ("whole_job", 4),
            ("whole_job", 6),
            ("whole_job", 8),
            ("whole_job", 10),
            ("whole_job", 14),
            ("whole_job", 21),
            ("states", 73),
            ("users", 11),
        ),
    ),
    Intended(
        "cooperative create/vacate wait up to max_wait for the tasks' report and print its "
        "outcome and image; ompi only asks srun to run ompi-checkpoint",
        (("create", 0), ("create", 3), ("create", 21), ("users", 19)),
    ),
    Intended(
        "reference: error records the checkpoint's result; ompi's srun reports its parent's "
        "pid as the message (error(0): PID), the cooperative program reports 0, no message",
        (("create", 2), ("users", 21)),
    ),
    Intended(
        "reference: completion keeps only the highest code with its message; ompi lets "
        "srun's own report end the checkpoint, a later lower code overwrite, then 2021",
        (("create", 5), ("create", 15), ("create", 17), ("create", 18), ("create", 19)),
    ),
    Intended(
        "reference: create refused while disabled changes nothing; ompi first resets the "
        "error and starts the clock (error(0), then 'Began at' once enabled)",
        (("create", 9), ("create", 12), ("create", 13)),
    ),
    Intended(
        "reference: vacate ends the step (cooperatively: the batch job is requeued held); "
        "ompi leaves it running when ompi-checkpoint cannot run",
        (("create", 22), ("create", 23)),
    ),
    Intended(
        "reference: batch create/vacate first save the job record to JobCheckpointDir "
        "(missing on 19.05: ENOENT); cooperatively there is no record and the batch "
        "script is not under sckpt run (2036)",
        (("whole_job", 11), ("whole_job", 20)),
    ),
    Intended(
        "ompi keeps a checkpoint record for the batch step, which complete reaches; "
        "cooperatively the batch script is not under sckpt run (2036)",
        (("whole_job", 13),),
    ),
    Intended(
        "reference: tasks asks the step's tasks to checkpoint; cooperatively the wrapper is "
        "woken (no slurmstepd, so no duplicate-begin-time 2021); ompi's stepd cannot (4027)",
        (("tasks", 0), ("tasks", 1), ("tasks", 2), ("tasks", 3), ("tasks", 6)),
    ),
    Intended(
        "cooperative tasks makes the reference's controller checks (access 2002, pending, "
        "suspended 2037, done; batch not under sckpt run 2036); 19.05 asks slurmd "
        "(2010, 4028, 2017 for a step not on the node)",
        (
            ("tasks", 4),
            ("tasks", 5),
            ("states", 7),
            ("states", 16),
            ("states", 25),
            ("states", 34),
            ("states", 43),
            ("states", 52),
            ("states", 61),
            ("states", 70),
            ("whole_job", 15),
        ),
    ),
    Intended(
        "cooperative meaning: vacate leaves the job requeued and held (PENDING) until its "
        "restart, so a held pending job counts as ended and restart looks for its images "
        "(ENOENT); 19.05's controller: pending is not finished (2088)",
        (("states", 8), ("restart", 4)),
    ),
    Intended(
        "19.05 never saved a job record (no JobCheckpointDir): ENOENT; cooperatively the "
        "image of step 19's create exists, so the owner's restart resumes; another user's "
        "is refused for whose job it is (2002, the next row)",
        (("users", 25), ("users", 26)),
    ),
    Intended(
        "issue 34: another user's restart is refused for whose job it is first, with "
        "ESLURM_ACCESS_DENIED as every other checkpoint command; 19.05 (and the reference) "
        "answer a running job's ESLURM_JOB_NOT_FINISHED first, then EPERM",
        (("users", 6), ("users", 15)),
    ),
)

INTENDED: dict[tuple[str, int], str] = {step: row.reason for row in TABLE for step in row.steps}
"""(scenario, operation index) → reason."""
