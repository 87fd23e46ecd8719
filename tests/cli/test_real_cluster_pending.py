"""Pending jobs on the real 22.05 cluster: the expected start and the requested resources
sckpt shows are squeue's (``--start``, ``%S``, ``-O tres-alloc``) and scontrol's.

A job submitted with ``--begin`` waits for that time, and the controller gives it that time
as its expected start; a held job has none (squeue: ``N/A``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import SlurmCluster
from .test_real_cluster import config, sckpt, shared_dir, submit

pytestmark = pytest.mark.slurm
__all__ = ["config", "shared_dir"]  # the fixtures this module uses from its twin


@pytest.fixture(scope="module")
def waiting(slurm_cluster: SlurmCluster) -> Iterator[dict[str, int]]:
    made: dict[str, int] = {}
    try:
        made["later"] = submit(
            slurm_cluster,
            "-J",
            "pd-later",
            "--begin=now+2hours",
            "-c",
            "2",
            "--mem=64M",
            "--wrap",
            "true",
        )
        made["held"] = submit(slurm_cluster, "-J", "pd-held", "--hold", "--wrap", "true")
        yield made
    finally:
        for job in made.values():
            slurm_cluster.run("scancel", str(job), check=False)


def test_ls_start_prints_what_squeue_start_prints(
    slurm_cluster: SlurmCluster, config: Path, waiting: dict[str, int]
) -> None:
    ids = ",".join(map(str, waiting.values()))
    # One job with --start's own order (-S S); both, in id order: 22.05's squeue leaves a
    # held job (no start time) after a later one with -S S and -S -S alike.
    for words in (
        ["--start", "-j", str(waiting["later"])],
        ["--start", "-h", "-S", "i", "-j", ids],
        # squeue --start sets its columns over -O's, not over -o's
        ["--start", "-S", "-i", "-O", "JobID,StartTime,SchedNodes,tres-alloc:40", "-j", ids],
        ["--start", "-S", "-i", "-o", "%i %S %Y %.6D %T", "-j", ids],
    ):
        # The scheduler may change the reason (BeginTime, then Resources) between two
        # reads: squeue runs before and after sckpt, which must equal one of the two.
        before = slurm_cluster.run("squeue", *words).stdout
        ours = sckpt(slurm_cluster, config, "ls", *words)
        after = slurm_cluster.run("squeue", *words).stdout
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout in (before, after), (words, ours.stdout, before)


def test_json_has_the_expected_start_and_requested_resources_of_scontrol(
    slurm_cluster: SlurmCluster, config: Path, waiting: dict[str, int]
) -> None:
    later = waiting["later"]
    out = sckpt(slurm_cluster, config, "ls", "--json", "-j", str(later))
    assert out.returncode == 0, out.stderr
    (job,) = json.loads(out.stdout)["jobs"]
    shown = slurm_cluster.run("scontrol", "-o", "show", "job", str(later)).stdout
    fields = dict(re.findall(r"(\w+)=(\S*)", shown))
    squeue_start = slurm_cluster.run("squeue", "-h", "-j", str(later), "-o", "%S").stdout.strip()
    assert fields["StartTime"] == squeue_start != "N/A"
    assert job["start_time"] > job["submit_time"] + 3600  # --begin=now+2hours
    assert job["tres_req"] == fields["TRES"]  # scontrol's TRES= of a pending job: requested
    assert "cpu=2" in job["tres_req"] and "mem=64M" in job["tres_req"]
    assert job["tres_alloc"] == ""  # nothing allocated while it waits
