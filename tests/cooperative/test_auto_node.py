"""A node that dies under a job with automatic checkpoints, on a real Slurm 22.05 cluster
(issue 32).  A dead node sends nothing: only an image written before it helps.  The module
has a cluster of its own (``private_cluster``): it sets its node DOWN, which would end every
other module's jobs on a shared one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sckpt.backend.checkpointing.protocol import CAUSE_INTERVAL

from tests.conftest import PrivateCluster
from tests.cooperative.auto_jobs import Job
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm


def test_a_node_failure_resumes_from_the_last_periodic_image(
    jobs: Callable[..., dict[str, Job]], private_cluster: PrivateCluster
) -> None:
    """A node set DOWN ends the jobs with no signal; Slurm requeues them (--requeue), and
    once the node is back they resume from their last interval image by themselves."""
    started = jobs("--every 10s")
    for job in started.values():
        job.wait(lambda job=job: len(job.done_lines(CAUSE_INTERVAL)) >= 1, timeout=60)
    node = private_cluster.node
    private_cluster.run("scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=test")
    try:
        for job in started.values():
            job.wait(lambda job=job: int(job.field("Restarts") or 0) >= 1, timeout=120)
    finally:  # (ReturnToService=2 may have brought it back already when slurmd registered)
        private_cluster.run("scontrol", "update", f"NodeName={node}", "State=RESUME", check=False)
    for job in started.values():  # Slurm's begin time: cred_expire, two minutes
        job.wait(lambda job=job: job.running(restart_count=1), timeout=300)
    for job in started.values():
        rec = job.record()
        assert rec is not None
        note = rec.tasks["0"].start_note
        assert note.startswith("resumed from generation"), note
        wait_for(lambda job=job: len(job.counted()) > 100, timeout=60)
        values = job.counted()
        assert values == list(range(1, len(values) + 1)), f"{job.variant}: gap or repeat"
