"""The real test cluster works: a batch job with two steps shows up in ``squeue -s``."""

from __future__ import annotations

import pytest

from .conftest import SlurmCluster
from .helpers import wait_for

pytestmark = pytest.mark.slurm

TWO_STEPS = "srun --overlap -n1 sleep 60 & srun --overlap -n1 sleep 60 & wait"


def test_batch_job_with_two_steps_is_listed_by_squeue(slurm_cluster: SlurmCluster) -> None:
    job = slurm_cluster.run(
        "sbatch", "--parsable", "-n2", "-J", "smoke", "-o", "/dev/null", "--wrap", TWO_STEPS
    ).stdout.strip()
    expected = {f"{job}.0", f"{job}.1", f"{job}.batch"}
    try:

        def listed() -> set[str]:
            out = slurm_cluster.run("squeue", "-h", "-s", "-j", job, "-o", "%i").stdout
            return set(out.split())

        wait_for(lambda: expected <= listed())
    finally:
        slurm_cluster.run("scancel", job, check=False)


def test_unprivileged_user_cannot_cancel_anothers_job(slurm_cluster: SlurmCluster) -> None:
    alice, bob = slurm_cluster.users
    job = slurm_cluster.run(
        "sbatch", "--parsable", "-o", "/dev/null", "--wrap", "sleep 60", user=alice
    ).stdout.strip()
    try:
        refused = slurm_cluster.run("scancel", job, user=bob, check=False)
        assert "Access/permission denied" in refused.stderr
        state = slurm_cluster.run("squeue", "-h", "-j", job, "-o", "%T").stdout.strip()
        assert state in ("PENDING", "RUNNING")
    finally:
        slurm_cluster.run("scancel", job, check=False)
