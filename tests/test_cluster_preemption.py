"""scripts/slurm-cluster's partitions on the real 22.05 cluster: preemption.

A job of ``scavenger`` is preempted by a job of the default partition (``debug``) that needs
its CPUs: after ``GraceTime`` (20 s) Slurm kills and requeues it.  ``debug`` and ``long``
never preempt each other: a job of one waits for a job of the other, as before ``scavenger``
existed.  Each test fills every CPU of the module's private cluster with one job, so nothing
else runs beside it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from tests.conftest import PrivateCluster
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

ALICE = "sckpt-alice"
GRACE_TIME = 20  # scavenger's GraceTime in scripts/slurm-cluster
_FIELD = re.compile(r"(\w+)=(\S*)")


def _job(cluster: PrivateCluster, job: int) -> dict[str, str]:
    """``scontrol -o show job JOB`` as {field: value} (the first value of a repeated field)."""
    fields: dict[str, str] = {}
    for key, value in _FIELD.findall(cluster.run("scontrol", "-o", "show", "job", str(job)).stdout):
        fields.setdefault(key, value)
    return fields


def _time(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S")


def _submit(cluster: PrivateCluster, *options: str) -> int:
    """A batch job of alice's that sleeps (its batch script is the whole job: no step)."""
    out = cluster.run(
        "sbatch", "--parsable", "-o", "/dev/null", *options, "--wrap", "sleep 600", user=ALICE
    )
    return int(out.stdout.strip().split(";")[0])


def _running(cluster: PrivateCluster, job: int) -> dict[str, str] | None:
    fields = _job(cluster, job)
    return fields if fields["JobState"] == "RUNNING" else None


@pytest.fixture
def cluster(private_cluster: PrivateCluster) -> Iterator[PrivateCluster]:
    """The module's private cluster, with no job of alice's left after the test."""
    yield private_cluster
    private_cluster.run("scancel", "-u", ALICE, check=False)
    wait_for(
        lambda: not private_cluster.run("squeue", "-h", "-u", ALICE, "-o", "%i").stdout.strip(),
        timeout=60,
    )


def _all_cpus(cluster: PrivateCluster) -> str:
    return cluster.run("sinfo", "-h", "-n", cluster.node, "-o", "%c").stdout.split()[0]


def test_a_scavenger_job_is_preempted_and_requeued_by_a_default_partition_job(
    cluster: PrivateCluster,
) -> None:
    # A time limit: with none (UNLIMITED) Slurm shows EndTime=Unknown during the grace.
    victim = _submit(cluster, "-p", "scavenger", "--requeue", "--time=60", "-n", _all_cpus(cluster))
    wait_for(lambda: _running(cluster, victim), timeout=60)

    preemptor = _submit(cluster, "-n", "1")  # no partition: debug
    # The grace: still running, its end time moved to the preemption + GraceTime.
    graced = wait_for(lambda: (f := _job(cluster, victim))["PreemptTime"] != "None" and f)
    assert graced["Restarts"] == "0", graced
    preempted_at = _time(graced["PreemptTime"])
    assert (_time(graced["EndTime"]) - preempted_at).total_seconds() == GRACE_TIME, graced

    # At the grace's end Slurm kills it (SIGKILL after KillWait=5) and requeues it; the
    # preemptor then gets the CPUs.
    def requeued_once() -> dict[str, str] | None:
        fields = _job(cluster, victim)
        return fields if (fields["Restarts"], fields["JobState"]) == ("1", "PENDING") else None

    requeued = wait_for(requeued_once, timeout=GRACE_TIME + 60)
    assert requeued["Reason"] in ("BeginTime", "None"), requeued
    assert (datetime.now() - preempted_at).total_seconds() >= GRACE_TIME - 1, requeued
    started = wait_for(lambda: _running(cluster, preemptor), timeout=30)
    assert started["Partition"] == "debug", started


@pytest.mark.parametrize(("first", "second"), [("long", "debug"), ("debug", "long")])
def test_debug_and_long_never_preempt_each_other(
    cluster: PrivateCluster, first: str, second: str
) -> None:
    """The second job waits for the CPUs the first holds; the first runs on untouched."""
    holder = _submit(cluster, "-p", first, "-n", _all_cpus(cluster))
    before = wait_for(lambda: _running(cluster, holder), timeout=60)

    waiter = _submit(cluster, "-p", second, "-n", "1")
    # Resources: slurmctld tried it against the node (where a preemption would happen, as it
    # does within a second for scavenger); then two backfill passes (bf_interval=5).
    wait_for(lambda: _job(cluster, waiter)["Reason"] == "Resources", timeout=30)
    time.sleep(12)

    after = _job(cluster, holder)
    for field in ("JobState", "Restarts", "StartTime", "EndTime"):
        assert after[field] == before[field], (field, before, after)
    # Not preemptable at all (PreemptMode=OFF): no PreemptTime field, as before scavenger.
    assert "PreemptTime" not in after and after["Restarts"] == "0", after
    waiting = _job(cluster, waiter)
    assert waiting["JobState"] == "PENDING" and waiting["Reason"] == "Resources", waiting
