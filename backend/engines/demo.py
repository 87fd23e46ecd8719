"""The demo's engine: the native engine over the simulated controller, plus its history.

``sckpt --demo`` runs the very engine a Slurm 19.05 cluster runs (``NativeEngine``), so it
shows only what 19.05's API can tell.  That API keeps no checkpoint history; the simulated
controller does (``SimulatedCluster.checkpoint_events``), and ``sckpt history`` and the step
detail promise the demo's, as the cooperative engine's state files give them on a real
cluster.  This is the one thing the demo's engine adds.
"""

from __future__ import annotations

from ..model import StepCheckpointEvent
from .native import NativeEngine
from .simulated import SimulatedCluster


class DemoEngine(NativeEngine):
    """``NativeEngine`` acting as ``user`` on ``cluster``, named "simulated"."""

    def __init__(self, cluster: SimulatedCluster, user: str) -> None:
        super().__init__(cluster.connect(user), name="simulated", clock=cluster.clock)
        self._cluster = cluster

    def checkpoint_events(
        self, job_id: int, work_dir: str, uid: int
    ) -> tuple[StepCheckpointEvent, ...]:
        """The job's steps' checkpoint events as the simulated controller kept them."""
        return self._cluster.checkpoint_events(job_id)
