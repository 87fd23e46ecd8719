"""sckpt's exit codes, one place for the contract the README states.

0 success; 1 Slurm (or sckpt's read-only/audit guard) refused, or an unexpected internal
error; 2 bad usage or input; 3 Slurm cannot be reached or the shim is unavailable; 4, 5, 6
a ``--wait`` that ended because the step or job ended, was cancelled, or was requeued; 129
the console's terminal hung up; 130 interrupted by Ctrl-C.  Errors carry their own code
(``SckptError.exit_code``); these names are for the front ends' own decisions: the command
line's (``sckpt.cli``) and the console's (``sckpt.tui.app``: hang-up, Ctrl-C).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_WAIT_ENDED = 4
"""``--wait`` (create, vacate, restart) ended because the step or job ended (completed,
failed, timed out, a node lost) before the checkpoint, or the restart, did."""
EXIT_WAIT_CANCELLED = 5
"""``--wait`` ended because the job was cancelled (``scancel``) meanwhile."""
EXIT_WAIT_REQUEUED = 6
"""``--wait`` ended because someone else requeued the job meanwhile (``scontrol requeue``,
a preemption): the run whose checkpoint was awaited is over."""
EXIT_HANGUP = 129
"""The console's terminal went away (128 + SIGHUP, what a shell reports for a hangup)."""
EXIT_INTERRUPTED = 130
EXIT_INTERNAL = EXIT_REFUSED
"""An unexpected exception is a bug: one line and exit code 1 ("it did not happen")."""
