"""The words for a checkpoint's progress, defined once for every front end.

The command line said "accepted" where the console said "busy", "done" or "in progress";
a person reading both could not tell whether they meant the same thing.  These are the
words, from the request to its outcome:

* ``requested``: Slurm accepted the request (nothing more is known yet);
* ``in progress``: a checkpoint is running;
* ``completed``: it ended and every task has its image;
* ``failed (<code>)``: it ended with that error code;
* ``running``: a restarted job runs again and its tasks said how they started
  (``restart --wait``).

Pure data: nothing but the standard library.
"""

from __future__ import annotations

REQUESTED = "requested"
"""Slurm accepted the request: the action line of a mutating operation."""
IN_PROGRESS = "in progress"
"""A checkpoint of the step is running (the checkpoint column, the job summary)."""
COMPLETED = "completed"
"""The checkpoint ended without error."""
RUNNING = "running"
"""A restarted job runs again, and each of its ``sckpt run`` tasks said how it started."""
RESUME_WAIT_SECONDS = 120
"""How long ``restart --wait`` watches for the job to run again and its tasks to say how
they started (a requeued job waits out Slurm's completing and scheduling first)."""


def failed(code: int) -> str:
    """The checkpoint ended with error ``code``: ``failed (28)``."""
    return f"failed ({code})"
