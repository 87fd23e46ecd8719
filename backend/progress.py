"""The words for a checkpoint's progress, defined once for every front end.

The command line said "accepted" where the console said "busy", "done" or "in progress";
a person reading both could not tell whether they meant the same thing.  These are the
words, from the request to its outcome:

* ``requested``: Slurm accepted the request (nothing more is known yet);
* ``in progress``: a checkpoint is running;
* ``completed``: it ended and every task has its image;
* ``failed (<code>)``: it ended with that error code.

Pure data: nothing but the standard library.
"""

from __future__ import annotations

REQUESTED = "requested"
"""Slurm accepted the request: the action line of a mutating operation."""
IN_PROGRESS = "in progress"
"""A checkpoint of the step is running (the checkpoint column, the job summary)."""
COMPLETED = "completed"
"""The checkpoint ended without error."""


def failed(code: int) -> str:
    """The checkpoint ended with error ``code``: ``failed (28)``."""
    return f"failed ({code})"
