"""Helpers for tests that kill slurmctld: make sure what it knows survives the kill."""

from __future__ import annotations

import time

from tests.conftest import SlurmCluster
from tests.helpers import wait_for


def wait_state_saved(cluster: SlurmCluster, timeout: float = 60) -> None:
    """Wait until slurmctld has written its job state to disk after this call began.

    Why: slurmctld saves its state in batches, a few seconds after a change; a controller
    killed (SIGKILL) before that forgets jobs submitted or started meanwhile, and a test
    that expects them after the restart would fail for a reason that is not sckpt's.
    """
    path = cluster.directory / "state" / "job_state"
    since = time.time()
    wait_for(lambda: path.exists() and path.stat().st_mtime > since, timeout=timeout)
