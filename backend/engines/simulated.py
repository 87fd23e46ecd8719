"""The simulated engine (``--demo``): the native engine over the simulated controller, plus
its history.

``sckpt --demo`` runs the very engine a Slurm 19.05 cluster runs (``NativeEngine``), so it
shows only what 19.05's API can tell.  That API keeps no checkpoint history; the simulated
controller does (``SimulatedCluster.checkpoint_events``), and ``sckpt history`` and the step
detail promise the demo's, as the cooperative engine's state files give them on a real
cluster.  The same goes for the steps the simulated controller launched under ``sckpt run
--transparent`` (``SimulatedCluster.transparent_steps``): their checkpointer, last image,
its size and how long it took, which the cooperative engine reads from the wrapper's state
files.  These are the things the demo's engine adds, with the automatic checkpoints of
those steps (``SimulatedCluster.auto_policies``; ``sckpt auto`` changes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import SlurmError
from ..model import (
    ActionResult,
    AutoCheckpoints,
    CheckpointKind,
    Job,
    Step,
    StepCheckpointEvent,
    StepId,
    StepView,
)
from .native import NativeEngine

if TYPE_CHECKING:  # the facade imports this module to ask whether an engine is simulated
    from ..simulator import SimulatedCluster, SimulatedSlurm, TransparentStep


class SimulatedEngine(NativeEngine):
    """``NativeEngine`` over ``client``: one user's connection to a simulated controller
    (``SimulatedCluster.connect``), named "simulated"."""

    def __init__(self, client: SimulatedSlurm) -> None:
        from ..simulator import SimulatedCluster  # here: the facade imports this module

        cluster = client.cluster
        if not isinstance(cluster, SimulatedCluster):
            raise TypeError("the simulated engine runs over a SimulatedCluster's client")
        super().__init__(client, name="simulated", clock=cluster.clock)
        self._cluster = cluster
        self._caller = client.caller

    @property
    def simulator(self) -> SimulatedCluster:
        """The simulated controller this engine runs over (the tests' oracle and hooks)."""
        return self._cluster

    def checkpoint_events(
        self, job_id: int, work_dir: str, uid: int
    ) -> tuple[StepCheckpointEvent, ...]:
        """The job's steps' checkpoint events as the simulated controller kept them."""
        return self._cluster.checkpoint_events(job_id)

    def step_views(self, job: Job, steps: Sequence[Step]) -> tuple[StepView, ...]:
        """``NativeEngine.step_views``, with what a transparent step's state files add."""
        views = super().step_views(job, steps)
        marked = self._cluster.transparent_steps(job.job_id)
        if not marked:
            return views
        policies = self._cluster.auto_policies(job.job_id)
        return tuple(
            _with_images(
                view, marked.get(view.step.step_id.step), policies.get(view.step.step_id.step)
            )
            for view in views
        )

    def auto(
        self, target: StepId, every: int | None, before_end: int | None, off: bool
    ) -> ActionResult:
        """The simulated controller keeps the policies of its steps under ``sckpt run``
        (``simulator/autopolicy.py``), where the cooperative engine writes a record."""
        sent_at = int(self.clock())
        try:
            return self._cluster.set_auto(self._caller, target, every, before_end, off)
        except SlurmError as refused:
            raise self._explain(target, "auto", refused, sent_at) from None
        finally:
            self._forget(target)


def _with_images(
    view: StepView, marked: TransparentStep | None, auto: AutoCheckpoints | None = None
) -> StepView:
    """The view of a step under ``sckpt run --transparent``: its checkpointer and last image
    (the fields ``CooperativeEngine.checkpoint_state`` fills); another step's view unchanged, and
    so is a step not asked (another user's, or left for a later refresh by the probe budget):
    what the controller did not answer, its state files do not tell either."""
    state = view.checkpoint
    if marked is None or state.kind is CheckpointKind.UNKNOWN:
        return view
    return StepView(
        view.step,
        replace(
            state,
            checkpointer=marked.checkpointer,
            image_dir=marked.image_dir or state.image_dir,
            last_checkpoint_time=marked.last_time or state.last_checkpoint_time,
            image_bytes=marked.image_bytes,
            checkpoint_seconds=marked.checkpoint_seconds,
            auto=auto,
        ),
    )
