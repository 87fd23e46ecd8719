"""``sckpt ls -h -o FORMAT`` against ``squeue -h -o FORMAT`` on the real 22.05 cluster, byte
for byte, for formats, sorts and filters on jobs these tests submit (running and held).

Both are restricted to these jobs with ``-j``.  TIME ticks between the two commands, so
squeue runs before and after sckpt and sckpt must equal one of the two answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import SlurmCluster
from ..helpers import wait_for
from .test_real_cluster import config, sckpt, shared_dir, submit

pytestmark = pytest.mark.slurm
__all__ = ["config", "shared_dir"]  # the fixtures this module uses from its twin


@pytest.fixture(scope="module")
def own_jobs(slurm_cluster: SlurmCluster) -> Iterator[dict[str, int]]:
    """root running with a step; alice running (account sq-a); alice held (account sq-b)."""
    alice = slurm_cluster.users[0]
    made: dict[str, int] = {}
    try:
        made["run"] = submit(
            slurm_cluster, "-J", "sq-run", "--wrap", "srun --overlap -n1 -J work sleep 600"
        )
        made["alice"] = submit(
            slurm_cluster, "-J", "sq-alice", "-A", "sq-a", "--wrap", "sleep 600", user=alice
        )
        made["held"] = submit(
            slurm_cluster,
            "-J",
            "sq-held",
            "-A",
            "Sq-B",
            "--hold",
            "--wrap",
            "sleep 600",
            user=alice,
        )
        job = made["run"]
        wait_for(
            lambda: (
                f"{job}.0"
                in slurm_cluster.run(
                    "squeue", "-h", "-s", "-j", str(job), "-o", "%i", check=False
                ).stdout.split()
            ),
            timeout=60,
        )
        wait_for(
            lambda: (
                slurm_cluster.run(
                    "squeue", "-h", "-j", str(made["alice"]), "-o", "%t", check=False
                ).stdout.strip()
                == "R"
            ),
            timeout=60,
        )
        yield made
    finally:
        for job in made.values():
            slurm_cluster.run("scancel", str(job), check=False)


CASES = [
    ["-o", "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", "-S", "i"],
    ["-o", "%.3i|%.1u|%3P|x%.10t%%j", "-S", "-t,i"],
    ["-o", "pre %i %a %k %Z %n %C %U %T %r %V %S|", "-S", "-i"],
    ["-o", "%.3N|%.2M|%2N|%.i|%5j|%A", "-S", "+j"],
    ["-o", "%i %u %t", "-S", "-u,i"],
    ["-o", "%i %j", "-S", "S,i"],
    ["-O", "JobID,UserName,State,StateCompact,TimeUsed,NumNodes,NumCPUs,NumTasks", "-S", "i"],
    ["-O", "ReasonList,NodeList,Name,Partition,UserID,SubmitTime,StartTime,Comment", "-S", "i"],
    ["-O", "WorkDir,ReqNodes,Reason,RestartCnt,BatchFlag,Account", "-S", "i"],
    # issue 34: the time and scheduling fields an operator reads before vacating
    ["-o", "%i|%.10l|%.10L|%e|%Q|%q|%E|%m", "-S", "i"],
    ["-O", "JobID,TimeLimit,TimeLeft,EndTime,PriorityLong,QOS,Dependency,MinMemory", "-S", "i"],
    ["-O", "jobid:5,username:.12|,state:,name:.3x,jobid:abc", "-S", "-t,-i"],
    ["-o", "%i %j", "-S", "i", "-n", "sq-held,sq-run"],  # jobs only: with -s, 22.05 ignores -n
    ["-o", "%i %a", "-S", "i", "-A", "SQ-A,sq-b"],
    ["-o", "%i %N", "-S", "i", "-w", "{node}"],
    ["-o", "%i %u", "-S", "i", "-u", "{alice}", "-t", "PD"],
    ["-o", "%i %u", "-S", "i", "--me"],
    ["-s", "-o", "%i|%j|%P|%u|%U|%M|%N|%A|%S|%.3N|%.2M|%2N|", "-S", "i"],
    [
        "-s",
        "-O",
        "StepID:14,StepName,Partition,UserName,UserID,Nodes,NumTasks,StartTime",
        "-S",
        "-i",
    ],
    ["-s", "-o", "%.15i %.8j %.9P %.8u %.9M %N", "-S", "P,i", "-w", "{node}"],
]


@pytest.mark.parametrize("case", CASES, ids=[" ".join(c) for c in CASES])
def test_ls_prints_what_squeue_prints(
    slurm_cluster: SlurmCluster, config: Path, own_jobs: dict[str, int], case: list[str]
) -> None:
    ids = ",".join(str(job) for job in own_jobs.values())
    argv = [w.format(node=slurm_cluster.node, alice=slurm_cluster.users[0]) for w in case]
    for header in ([], ["-h"]):
        words = [*argv, *header, "-j", ids]
        before = slurm_cluster.run("squeue", *words).stdout
        ours = sckpt(slurm_cluster, config, "ls", *words)
        after = slurm_cluster.run("squeue", *words).stdout
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout in (before, after), (words, ours.stdout, before)
        assert len(ours.stdout.splitlines()) >= (2 if not header else 1)
