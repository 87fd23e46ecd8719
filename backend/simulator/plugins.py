"""The checkpoint plugins the simulated controller can run (slurm.conf's CheckpointType).

What differs between them is what the plugin does once the controller's checks passed
(``checkpoint.CheckpointController``): one class each, behind ``CheckpointPlugin``, so the
controller asks its plugin instead of testing which one it runs.

* ``checkpoint/blcr`` (the default): the reference's rules
  (``shared/reference/checkpoint-semantics.md``).  The disable counter has a floor of 0; a
  checkpoint runs in simulated time and ends with a code (the controller times it); a
  completion report keeps the highest code.
* ``checkpoint/ompi``: what the real 19.05 test cluster runs, as ``tests/differential/OMPI.md``
  found it (the differential tests hold the simulator equal to that controller).
* ``checkpoint/none``: every request that passes the controller's checks is
  ESLURM_NOT_SUPPORTED.
"""

from __future__ import annotations

from typing import Protocol

from .. import rules
from ..errors import ESLURM_ALREADY_DONE, ESLURM_DISABLED
from ..model import STEP_BATCH, StepId
from .records import StepRec


class CheckpointPlugin(Protocol):
    """What a checkpoint plugin decides, on one step's record (``StepRec``)."""

    checkpoint_type: str
    """Its slurm.conf name, ``checkpoint/...``."""
    supported: bool
    """False: the controller answers ESLURM_NOT_SUPPORTED for every step it reaches."""
    tasks_at_slurmd: bool
    """``slurm_checkpoint_tasks`` is answered by slurmd and slurmstepd first."""

    def enabled(self, count: int) -> int:
        """The disable counter after an enable."""
        ...

    def disabled(self, count: int) -> int:
        """The disable counter after a disable."""
        ...

    def refuses_job_level(self, target: StepId, batch: bool) -> bool:
        """A request on a whole (batch) job reaches the plugin without a step, which
        answers ESLURM_NOT_SUPPORTED."""
        ...

    def complete_target(self, target: StepId) -> StepId:
        """The step whose record a completion report of ``target`` finds."""
        ...

    def checkpoint(self, srec: StepRec, now: int, srun_pid: int) -> int | None:
        """create/vacate on one step: the code when the plugin answers at once (a refusal,
        or a checkpoint it ran there and then); None when the checkpoint starts and runs
        in simulated time (the controller times it and records its end)."""
        ...

    def complete(self, srec: StepRec, code: int, message: str, now: int) -> int | None:
        """A completion report on one step: the code when the plugin handles the report
        itself; None when the controller keeps the highest code and closes the
        checkpoint the report names."""
        ...


class BlcrPlugin:
    """``checkpoint/blcr``: the reference's rules."""

    checkpoint_type = "checkpoint/blcr"
    supported = True
    tasks_at_slurmd = False

    def enabled(self, count: int) -> int:
        return rules.enabled(count)

    def disabled(self, count: int) -> int:
        return rules.disabled(count)

    def refuses_job_level(self, target: StepId, batch: bool) -> bool:
        return False

    def complete_target(self, target: StepId) -> StepId:
        return target

    def checkpoint(self, srec: StepRec, now: int, srun_pid: int) -> int | None:
        """ESLURM_DISABLED while disabled, EALREADY while one runs, else it starts."""
        return rules.checkpoint_code(srec.disable_count, bool(srec.ckpt_start)) or None

    def complete(self, srec: StepRec, code: int, message: str, now: int) -> int | None:
        return None


class NonePlugin(BlcrPlugin):
    """``checkpoint/none``: the controller's checks, then ESLURM_NOT_SUPPORTED."""

    checkpoint_type = "checkpoint/none"
    supported = False


class OmpiPlugin:
    """``checkpoint/ompi`` as 19.05 ran it (OMPI.md)."""

    checkpoint_type = "checkpoint/ompi"
    supported = True
    tasks_at_slurmd = True

    def enabled(self, count: int) -> int:
        return _ompi_count(count - 1)

    def disabled(self, count: int) -> int:
        return _ompi_count(count + 1)

    def refuses_job_level(self, target: StepId, batch: bool) -> bool:
        """A job-level request on a batch job reaches the plugin without a step
        (``job_checkpoint``), which answers ESLURM_NOT_SUPPORTED."""
        return rules.is_job_level(target) and batch

    def complete_target(self, target: StepId) -> StepId:
        """NO_VAL finds the batch step's record."""
        return StepId(target.job_id, STEP_BATCH) if rules.is_job_level(target) else target

    def checkpoint(self, srec: StepRec, now: int, srun_pid: int) -> int | None:
        """The plugin resets the step's state before it looks at the counter, then asks srun
        to run ``ompi-checkpoint``; srun's forked child (which fails to exec it) reports the
        checkpoint complete at once with its parent's pid as the message.  The step runs on.
        """
        srec.ckpt_start, srec.replies = now, 0
        srec.error_code, srec.error_msg = 0, ""
        if srec.disable_count:
            return ESLURM_DISABLED
        srec.ckpt_count += 1
        srec.error_msg = str(srun_pid)
        srec.replies = 1
        return 0

    def complete(self, srec: StepRec, code: int, message: str, now: int) -> int | None:
        """Not keep-the-highest (OMPI.md).  Reported already: ESLURM_ALREADY_DONE.  A higher
        code is stored and the checkpoint stays open; any other code is stored too (even a
        lower one) and closes it.
        """
        if srec.replies:
            return ESLURM_ALREADY_DONE
        higher = code > srec.error_code
        srec.error_code, srec.error_msg = code, message
        if not higher:
            srec.replies, srec.ckpt_start = 1, now
        return 0


PLUGINS: dict[str, type[BlcrPlugin] | type[OmpiPlugin]] = {
    plugin.checkpoint_type: plugin for plugin in (BlcrPlugin, OmpiPlugin, NonePlugin)
}
CHECKPOINT_TYPES = tuple(PLUGINS)
"""The CheckpointType values the simulated controller runs."""


def plugin_for(checkpoint_type: str) -> CheckpointPlugin:
    """The plugin called ``checkpoint_type`` (one of ``CHECKPOINT_TYPES``)."""
    return PLUGINS[checkpoint_type]()


def _ompi_count(value: int) -> int:
    """checkpoint/ompi's disable counter: a ``uint16_t`` with neither floor nor cap, so an
    enable at 0 wraps to 65535 (disabled until the next disable), as 19.05 does."""
    return value & 0xFFFF
