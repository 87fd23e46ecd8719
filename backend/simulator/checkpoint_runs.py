"""Checkpoints while they run: one step's checkpoint started, its outcome (drawn from the
seed, or forced by a test), its end when the clock comes to it, and the image it leaves.

Both the checkpoint API (``checkpoint.CheckpointController``, an operator's create, vacate
or requeue) and a step's own policy (``autopolicy.AutoPolicies``, ``sckpt run``'s interval
and before-end checkpoints) start them here; the demo's touches draw their past ones with
the same rules.  A checkpoint ends with a ``ckpt_done`` event (``events.Timeline``): its
code recorded, the step's image its last one, and after vacate the step terminated.
"""

from __future__ import annotations

import errno as _errno
from pathlib import Path

from .. import rules
from ..checkpointing.protocol import image_leaf
from ..model import StepId
from .catalog import FAIL_CODES, stable_hash
from .events import Timeline
from .lifecycle import Lifecycle
from .records import (
    CheckpointScript,
    JobRec,
    StepRec,
    TransparentStep,
    keep_highest,
    record_event,
    srun_parent_pid,
)
from .state import ClusterState

ETIME = _errno.ETIME


class CheckpointRuns:
    """The checkpoints running on the cluster's steps, and how each one ends."""

    def __init__(self, state: ClusterState, timeline: Timeline, lifecycle: Lifecycle) -> None:
        self.state = state
        self.timeline = timeline
        self.lifecycle = lifecycle
        self._scripts: dict[StepId, CheckpointScript] = {}
        """Forced checkpoint outcomes (``script``)."""
        self._pending_codes: dict[tuple[StepId, int], int] = {}
        """The code each running checkpoint will end with, by (step, checkpoint token)."""
        self._pending_causes: dict[tuple[StepId, int], str] = {}
        """What started each running automatic checkpoint, by (step, checkpoint token): its
        ``done`` line says it too."""
        timeline.on("ckpt_done", self._checkpoint_ends)

    def script(self, target: StepId, duration: float, code: int = 0) -> None:
        """Force how long the step's checkpoints take and the code they end with."""
        with self.state.lock:
            self._scripts[target] = CheckpointScript(duration, code)

    def start(
        self,
        rec: JobRec,
        srec: StepRec,
        now: int,
        operation: str,
        by: str,
        max_wait: int,
        image_dir: str | None,
        vacate: bool = False,
        cause: str = "",
    ) -> int:
        """The plugin starts a checkpoint of one step (an operator's, or with ``cause`` the
        step's own policy's); its end is an event.  The plugin's refusal code, else 0."""
        answered = self.state.plugin.checkpoint(srec, now, srun_parent_pid(rec))
        if answered is not None:
            return answered
        srec.error_code = 0
        srec.error_msg = ""
        srec.ckpt_start = now
        srec.ckpt_count += 1
        srec.ckpt_token += 1
        srec.ckpt_vacate = vacate
        srec.image_dir = self.image_path(rec, srec, image_dir)
        duration, code = self.checkpoint_outcome(rec, srec)
        if max_wait and duration > max_wait:
            duration, code = float(max_wait), ETIME
        record_event(srec, now, operation, by, 0, srec.image_dir, cause)
        sid = srec.step.step_id
        self._pending_codes[(sid, srec.ckpt_token)] = code
        if cause:
            self._pending_causes[(sid, srec.ckpt_token)] = cause
        self.timeline.push(now + duration, "ckpt_done", sid.job_id, sid.step, srec.ckpt_token)
        return 0

    def _checkpoint_ends(self, when: float, rec: JobRec | None, step: int, token: int) -> bool:
        """A ``ckpt_done`` event: the checkpoint it names ends (unless it ended already)."""
        if rec is None:
            return False
        srec = rec.steps.get(step)
        code = self._pending_codes.pop((StepId(rec.job.job_id, step), token), 0)
        if srec is None or srec.ckpt_token != token or not srec.ckpt_start:
            return False
        self._finish_checkpoint(rec, srec, int(when), code)
        return True

    def _finish_checkpoint(self, rec: JobRec, srec: StepRec, t: int, code: int) -> None:
        """A checkpoint ends: start_time back to 0, the result recorded, vacate terminates."""
        started, srec.ckpt_start = srec.ckpt_start, 0
        keep_highest(srec, code, "")
        srec.last_ckpt = t
        cause = self._pending_causes.pop((srec.step.step_id, srec.ckpt_token), "")
        by = "sckpt run" if cause else ""
        record_event(srec, t, "done", by, code, srec.image_dir, cause)
        if not code:
            self.image_done(rec, srec, t, float(t - started))
        self.state.dirty.add(rec.job.job_id)
        if srec.ckpt_vacate:
            srec.ckpt_vacate = False
            self.lifecycle.terminate_step(rec, srec, t)

    def image_path(self, rec: JobRec, srec: StepRec, image_dir: str | None) -> str:
        """(image_dir, else the step's checkpoint dir) + /<job>.<step> (or /<job> for batch);
        for a step under ``sckpt run --transparent``, the wrapper's layout instead: task 0's
        next generation, ``<root>/<job>.<name>/task0/g<N>``."""
        root = image_dir or srec.ckpt_dir or rec.job.work_dir
        sid = srec.step.step_id
        marked = self.state.transparent.get(sid.job_id, {}).get(sid.step)
        if marked is not None:
            leaf = image_leaf(sid, marked.name)
            generation = f"g{marked.generation + 1}"
            if _plain_path(root) and "/" not in leaf:  # what Path makes of it, 5x faster
                return f"{root}/{leaf}/task0/{generation}"
            return str(Path(root) / leaf / "task0" / generation)
        return rules.image_path(root, sid)

    def checkpoint_outcome(self, rec: JobRec, srec: StepRec) -> tuple[float, int]:
        """How long the next checkpoint of a step takes and which code it ends with."""
        scripted = self._scripts.get(srec.step.step_id)
        if scripted is not None:
            return scripted.duration, scripted.code
        sid = srec.step.step_id
        h = stable_hash(self.state.settings.seed, sid.job_id, sid.step, srec.ckpt_count)
        # Mostly a few seconds (inside scontrol's default MaxWait of 10 s), sometimes long.
        duration = 2 + h % 7 if (h >> 12) % 6 else 12 + h % 30
        code = FAIL_CODES[(h >> 8) % len(FAIL_CODES)] if (h >> 4) % 9 == 0 else 0
        return float(duration), code

    def image_done(self, rec: JobRec, srec: StepRec, t: int, seconds: float) -> None:
        """A transparent step's checkpoint ended well: ``srec.image_dir`` is its new last
        image (``image_path`` named it), of a size drawn from the seed, the step and the
        generation (tens to hundreds of MB a task: a program's resident memory)."""
        sid = srec.step.step_id
        marked = self.state.transparent.get(sid.job_id, {})
        was = marked.get(sid.step)
        if was is None:
            return
        generation = was.generation + 1
        per_task = (
            20 + stable_hash(self.state.settings.seed, sid.job_id, sid.step, generation) % 280
        ) * 1_000_000
        marked[sid.step] = TransparentStep(  # every field: ``replace`` is 3x slower
            name=was.name,
            checkpointer=was.checkpointer,
            generation=generation,
            image_dir=srec.image_dir,
            image_bytes=per_task * max(1, srec.step.num_tasks),
            checkpoint_seconds=seconds,
            last_time=t,
        )
        srec.last_ckpt = t


def _plain_path(path: str) -> bool:
    """Whether ``path`` is absolute and already as ``Path`` writes it (no doubled slash, no
    ``.`` component, no trailing slash): then joining it with ``/`` gives Path's string.
    The demo names ~20,000 image directories so while it builds 100,000 jobs."""
    return (
        path.startswith("/")
        and len(path) > 1
        and "//" not in path
        and "/." not in path
        and not path.endswith("/")
    )
