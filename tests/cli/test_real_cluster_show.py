"""``sckpt show JOB`` beside ``scontrol show job`` on the real 22.05 cluster, field by field.

Every ``Key=Value`` sckpt prints is scontrol's key with scontrol's value, except sckpt's own
``TimeLeft`` (squeue's ``%L``) and ``Checkpoint``; and every field an operator reads before
acting (issue 34: state and reason, times, limit, partition, QOS, priority, nodes, TRES, work
dir, output files, requeue flag, restart count, dependency) is there.  The jobs: root's
running job with a step, a limit, memory, a comment and its own output files; a held job
that depends on it, with a limit over a day; a running task of an array; alice's job that
Slurm may not requeue.  RunTime ticks between the commands, so scontrol runs before and
after sckpt: each value must be one of the two, and RunTime (which may tick more than once
while sckpt starts) must lie between them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import SlurmCluster
from ..helpers import wait_for
from .test_real_cluster import config, sckpt, shared_dir

pytestmark = pytest.mark.slurm
__all__ = ["config", "shared_dir"]  # the fixtures this module uses from its twin

SCKPT_OWN = {"TimeLeft", "Checkpoint"}
"""sckpt's own fields, which scontrol does not print."""
WANTED = {
    "JobId", "JobName", "UserId", "Priority", "Account", "QOS", "JobState", "Reason",
    "Dependency", "Requeue", "Restarts", "BatchFlag", "RunTime", "TimeLimit", "SubmitTime",
    "StartTime", "EndTime", "SuspendTime", "SecsPreSuspend", "Partition", "ReqNodeList",
    "NodeList", "NumNodes", "NumCPUs", "NumTasks", "TRES", "WorkDir", "StdErr", "StdOut",
}  # fmt: skip
"""What an operator reads before acting: ``show`` prints each of these for every job."""
TICKING = {"RunTime"}
"""Fields that advance with the clock between scontrol's two answers."""


def fields(text: str) -> dict[str, str]:
    """``Key=Value`` pairs as scontrol prints them (a value runs to the next blank)."""
    return dict(re.findall(r"(\S+?)=(\S*)", text))


def _submit(cluster: SlurmCluster, *args: str, user: str | None = None) -> int:
    out = cluster.run("sbatch", "--parsable", *args, user=user, cwd="/tmp").stdout
    return int(out.strip().split(";")[0])


@pytest.fixture(scope="module")
def show_jobs(slurm_cluster: SlurmCluster, shared_dir: Path) -> Iterator[dict[str, str]]:
    alice = slurm_cluster.users[0]
    made: list[int] = []
    try:
        run = _submit(
            slurm_cluster, "-J", "show-run", "-t", "30", "--mem=100", "--comment=ask-me",
            "-o", str(shared_dir / "show-%j.out"), "-e", str(shared_dir / "show-%j.err"),
            "--wrap", "srun --overlap -n1 sleep 600",
        )  # fmt: skip
        made.append(run)
        held = _submit(
            slurm_cluster, "-J", "show-held", "-t", "1-2:03:04", "--hold",
            "-d", f"afterok:{run}", "-o", "/dev/null", "--wrap", "sleep 60",
        )  # fmt: skip
        made.append(held)
        array = _submit(slurm_cluster, "-J", "show-arr", "-a", "1-2", "-o", "/dev/null",
                        "--wrap", "sleep 600")  # fmt: skip
        made.append(array)
        hers = _submit(slurm_cluster, "-J", "show-hers", "--no-requeue", "-o", "/dev/null",
                       "--wrap", "sleep 600", user=alice)  # fmt: skip
        made.append(hers)

        def running(job: str) -> bool:
            out = slurm_cluster.run("squeue", "-h", "-j", job, "-o", "%T", check=False)
            return out.stdout.strip() == "RUNNING"

        wait_for(lambda: all(running(j) for j in (str(run), f"{array}_1", str(hers))), 90)
        yield {"run": str(run), "held": str(held), "task": f"{array}_1", "hers": str(hers)}
    finally:
        slurm_cluster.run("scancel", *map(str, made), check=False)


def seconds(duration: str) -> int:
    """scontrol's ``[D-]HH:MM:SS`` in seconds."""
    days, _, clock = duration.rpartition("-")
    hours, minutes, secs = (int(part) for part in clock.split(":"))
    return int(days or 0) * 86400 + hours * 3600 + minutes * 60 + secs


@pytest.mark.parametrize("which", ["run", "held", "task", "hers"])
def test_show_prints_what_scontrol_show_job_prints(
    slurm_cluster: SlurmCluster, config: Path, show_jobs: dict[str, str], which: str
) -> None:
    job = show_jobs[which]
    before = fields(slurm_cluster.run("scontrol", "show", "job", job).stdout)
    ours = sckpt(slurm_cluster, config, "show", job)
    after = fields(slurm_cluster.run("scontrol", "show", "job", job).stdout)
    assert ours.returncode == 0 and ours.stderr == "", ours.stderr
    shown = fields(ours.stdout)
    assert set(shown) >= WANTED, sorted(WANTED - set(shown))
    for key, value in shown.items():
        if key in SCKPT_OWN:
            continue
        assert key in before, (key, value, before)
        if key in TICKING:
            low, high = seconds(before[key]), seconds(after[key])
            assert low <= seconds(value) <= high, (key, value, before[key], after[key])
            continue
        assert value in (before[key], after[key]), (key, value, before[key], after[key])
    # scontrol prints a comment and an array's ids only when there are some; so does sckpt.
    assert ("Comment" in shown) == ("Comment" in before)
    assert ("ArrayTaskId" in shown) == ("ArrayTaskId" in before)
    # The fields that tell these jobs apart, so the comparison above is not of defaults.
    expected = {
        "run": {"Comment": "ask-me", "MinMemoryNode": "100M", "TimeLimit": "00:30:00"},
        "held": {"Reason": "JobHeldUser", "TimeLimit": "1-02:04:00", "Priority": "0"},
        "task": {"ArrayTaskId": "1", "JobState": "RUNNING"},
        "hers": {"Requeue": "0", "UserId": f"{slurm_cluster.users[0]}("},
    }[which]
    for key, value in expected.items():
        assert shown[key].startswith(value), (key, shown[key])
    assert shown["Dependency"].startswith("afterok:") == (which == "held")
