"""Job arrays on the real 22.05 cluster: sckpt names them as squeue, squeue -r and scontrol
do, and acts on the task it is given, not on its neighbours.

Two arrays per module: ``sbatch --array=1-3`` (its tasks run: each has a job record of its
own, with a job id squeue does not show) and ``sbatch --array=1-50%2 --hold`` (its tasks
wait in one record, which squeue shows as ``N_[1-50%2]`` and ``squeue -r`` as 50 lines).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import SlurmCluster
from ..helpers import wait_for
from .test_real_cluster import audit_lines, config, sckpt, shared_dir, submit

pytestmark = pytest.mark.slurm
__all__ = ["config", "shared_dir"]  # the fixtures this module uses from its twin


def _show(cluster: SlurmCluster, job: str) -> dict[str, str]:
    """``scontrol show job -o JOB``'s first record as a dict (Key=Value words)."""
    out = cluster.run("scontrol", "-o", "show", "job", job).stdout.splitlines()[0]
    return dict(re.findall(r"(\w+)=(\S*)", out))


def _squeue(cluster: SlurmCluster, *argv: str) -> list[str]:
    return cluster.run("squeue", "-h", *argv).stdout.splitlines()


@pytest.fixture(scope="module")
def arrays(slurm_cluster: SlurmCluster) -> Iterator[dict[str, int]]:
    """``run``: the id of a 3-task array whose tasks all run; ``held``: a held 1-50%2."""
    made: dict[str, int] = {}
    try:
        made["run"] = submit(slurm_cluster, "-J", "arr-run", "--array=1-3", "--wrap", "sleep 600")
        made["held"] = submit(
            slurm_cluster, "-J", "arr-held", "--array=1-50%2", "--hold", "--wrap", "sleep 600"
        )
        run = str(made["run"])
        wait_for(
            lambda: (
                sorted(_squeue(slurm_cluster, "-j", run, "-o", "%i %t"))
                == [f"{run}_{task} R" for task in (1, 2, 3)]
            ),
            timeout=60,
        )
        yield made
    finally:
        for job in made.values():
            slurm_cluster.run("scancel", str(job), check=False)


def _ls_json(cluster: SlurmCluster, config: Path, ids: str) -> list[dict[str, object]]:
    result = sckpt(cluster, config, "ls", "--json", "-j", ids)
    assert result.returncode == 0, result.stderr
    jobs: list[dict[str, object]] = json.loads(result.stdout)["jobs"]
    return jobs


def test_running_tasks_are_named_as_squeue_and_scontrol_name_them(
    slurm_cluster: SlurmCluster, config: Path, arrays: dict[str, int]
) -> None:
    run = arrays["run"]
    jobs = {str(j["id"]): j for j in _ls_json(slurm_cluster, config, str(run))}
    # squeue's JOBID column, one line per task, the same set and order as sckpt's table.
    shown = _squeue(slurm_cluster, "-j", str(run), "-o", "%i", "-S", "i")
    assert list(jobs) == shown == [f"{run}_1", f"{run}_2", f"{run}_3"]
    for task in (1, 2, 3):
        record = _show(slurm_cluster, f"{run}_{task}")
        job = jobs[f"{run}_{task}"]
        assert job["job_id"] == int(record["JobId"])  # the task's own job record
        assert job["array_job_id"] == int(record["ArrayJobId"]) == run
        assert job["array_task_id"] == int(record["ArrayTaskId"]) == task
        assert job["array_task_count"] == 1
    # The steps are named after the task, as squeue -s names them.
    steps = _squeue(slurm_cluster, "-s", "-j", str(run), "-o", "%i", "-S", "i")
    ours = sckpt(slurm_cluster, config, "ls", "-s", "-h", "-o", "%i", "-S", "i", "-j", str(run))
    assert ours.returncode == 0, ours.stderr
    assert sorted(ours.stdout.split()) == sorted(steps)
    assert f"{run}_2.batch" in ours.stdout.split()


def test_a_held_range_is_one_row_as_in_squeue_and_its_tasks_as_in_squeue_r(
    slurm_cluster: SlurmCluster, config: Path, arrays: dict[str, int]
) -> None:
    held = arrays["held"]
    (job,) = _ls_json(slurm_cluster, config, str(held))
    assert _squeue(slurm_cluster, "-j", str(held), "-o", "%i") == [f"{held}_[1-50%2]"]
    assert job["id"] == f"{held}_[1-50%2]"
    assert job["array_task_str"] == "1-50%2" and job["array_max_tasks"] == 2
    assert job["array_task_id"] is None and job["array_job_id"] == held
    tasks = _squeue(slurm_cluster, "-r", "-j", str(held), "-o", "%i")
    assert job["array_task_count"] == len(tasks) == 50
    assert tasks[0] == f"{held}_1" and tasks[-1] == f"{held}_50"
    record = _show(slurm_cluster, str(held))
    assert record["ArrayTaskId"] == "1-50%2" and record["JobState"] == "PENDING"
    table = sckpt(slurm_cluster, config, "ls", "-j", str(held))
    assert table.returncode == 0, table.stderr
    row = table.stdout.splitlines()[1].split()
    assert row[0] == f"{held}_[1-50%2]" and "(JobHeldUser)" in row
    assert table.stdout.rstrip().endswith("pending (50 tasks)")


@pytest.mark.parametrize(
    "case",
    [
        ["-o", "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", "-S", "i"],
        ["-o", "%i|%A|%F|%K|%t", "-S", "i"],
        ["-O", "JobID,JobArrayID:16,ArrayJobID,ArrayTaskID,StateCompact", "-S", "-i"],
        ["-s", "-o", "%i %j", "-S", "i"],
        ["-r", "-o", "%i %t %r", "-S", "i"],
        ["-O", "JobArrayID:16,tres-alloc:45,tres-per-node,SchedNodes,StartTime", "-S", "i"],
        ["--start", "-S", "i"],
    ],
    ids=lambda case: " ".join(case),
)
def test_ls_formats_print_what_squeue_prints_for_arrays(
    slurm_cluster: SlurmCluster, config: Path, arrays: dict[str, int], case: list[str]
) -> None:
    ids = f"{arrays['run']},{arrays['held']}"
    words = [*case, "-j", ids]
    before = slurm_cluster.run("squeue", *words).stdout
    ours = sckpt(slurm_cluster, config, "ls", *words)
    after = slurm_cluster.run("squeue", *words).stdout
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout in (before, after), (words, ours.stdout, before)


def _priority(cluster: SlurmCluster, job: str) -> int:
    return int(_show(cluster, job)["Priority"])


def test_hold_and_release_of_one_task_change_that_task_only(
    slurm_cluster: SlurmCluster, config: Path, arrays: dict[str, int]
) -> None:
    run = arrays["run"]
    task, others = f"{run}_2", (f"{run}_1", f"{run}_3")
    assert _priority(slurm_cluster, task) > 0
    held = sckpt(slurm_cluster, config, "hold", task)
    try:
        assert held.returncode == 0, held.stderr
        assert held.stdout.strip() == f"{task}: hold requested"
        assert _priority(slurm_cluster, task) == 0
        assert all(_priority(slurm_cluster, other) > 0 for other in others)
        line = audit_lines(config)[-1]
        assert (line["operation"], line["target"]) == ("hold", task)
    finally:
        released = sckpt(slurm_cluster, config, "release", task)
    assert released.returncode == 0, released.stderr
    assert _priority(slurm_cluster, task) > 0
    assert _show(slurm_cluster, task)["JobState"] == "RUNNING"


def test_the_arrays_id_names_every_task_as_in_scontrol(
    slurm_cluster: SlurmCluster, config: Path, arrays: dict[str, int]
) -> None:
    run = arrays["run"]
    held = sckpt(slurm_cluster, config, "hold", str(run), "--json")
    try:
        assert held.returncode == 0, held.stderr
        targets = [t["target"] for t in json.loads(held.stdout)["results"]]
        assert targets == [f"{run}_1", f"{run}_2", f"{run}_3"]
        assert [_priority(slurm_cluster, t) for t in targets] == [0, 0, 0]
    finally:
        released = sckpt(slurm_cluster, config, "release", f"{run}_[1-3]")
    assert released.returncode == 0, released.stderr
    assert all(_priority(slurm_cluster, f"{run}_{t}") > 0 for t in (1, 2, 3))


def test_release_of_one_pending_task_splits_it_off_as_scontrol_release_does(
    slurm_cluster: SlurmCluster, config: Path, arrays: dict[str, int]
) -> None:
    held = arrays["held"]
    refused = sckpt(slurm_cluster, config, "cancel", f"{held}_8")
    assert refused.returncode == 2
    assert f"it is one of the pending tasks {held}_[1-50%2]" in refused.stderr
    released = sckpt(slurm_cluster, config, "release", f"{held}_7")
    assert released.returncode == 0, released.stderr
    assert released.stdout.strip() == f"{held}_7: release requested"
    task = _show(slurm_cluster, f"{held}_7")
    assert int(task["JobId"]) != held and int(task["Priority"]) > 0
    rest = _show(slurm_cluster, str(held))
    assert (rest["ArrayTaskId"], rest["Priority"]) == ("1-6,8-50%2", "0")
    # sckpt lists the two records apart (squeue joins pending records of one array into
    # one line, 648_[1-50] here, until the task starts: README's "not reproduced")
    ours = sckpt(slurm_cluster, config, "ls", "-h", "-o", "%i", "-j", str(held))
    assert {f"{held}_7", f"{held}_[1-6,8-50%2]"} <= set(ours.stdout.split())
    missing = sckpt(slurm_cluster, config, "able", f"{arrays['run']}_9")
    assert missing.returncode == 1
    assert "ESLURM_INVALID_JOB_ID" in missing.stderr and f"{arrays['run']}_9" in missing.stderr
