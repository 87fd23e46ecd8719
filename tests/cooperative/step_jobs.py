"""A step whose tasks talk over TCP (``programs/tcp_chat.py``) under ``sckpt run
--transparent`` on the real cluster: submitted as sckpt-alice, read back from its files.

Shared by the step-coordinator tests (``test_step_coordinator.py``,
``test_coordinator_auth.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sckpt.backend.checkpointing.protocol import StepRecord
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.model import StepId

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, SCKPT

CHAT = Path(__file__).resolve().parent / "programs" / "tcp_chat.py"
SCRIPT = """#!/bin/bash
#SBATCH -n {tasks}
#SBATCH -J step-coordinator-test
#SBATCH --open-mode=append
srun {sckpt} run --transparent --poll 0.5 --name chat {run_args} -- \\
    /usr/bin/python3 {program} $PWD/rendezvous $PWD/chat.%t.log {count} {pause} {mib}
"""


def expected(tasks: int, count: int) -> dict[int, str]:
    """Each rank's last line in an uninterrupted run (run here, without Slurm or DMTCP)."""
    work = Path(os.environ.get("TMPDIR", "/tmp"))
    import tempfile

    with tempfile.TemporaryDirectory(dir=work) as tmp:
        procs = [
            subprocess.Popen(
                [sys.executable, str(CHAT), f"{tmp}/rv", f"{tmp}/out.%t", str(count), "0"],
                env={**os.environ, "SLURM_PROCID": str(r), "SLURM_NTASKS": str(tasks)},
                stdout=subprocess.DEVNULL,
            )
            for r in range(tasks)
        ]
        for p in procs:
            assert p.wait(timeout=120) == 0
        return {r: Path(f"{tmp}/out.{r}").read_text().splitlines()[-1] for r in range(tasks)}


class ChatJob:
    def __init__(self, cluster: SlurmCluster, work: Path, job_id: int, tasks: int) -> None:
        self.cluster, self.work, self.id, self.tasks = cluster, work, job_id, tasks

    @property
    def step(self) -> str:
        return f"{self.id}.0"

    def record(self) -> StepRecord | None:
        return StepStore(self.work / ".sckpt", StepId(self.id, 0)).read()

    def lines(self, rank: int) -> list[str]:
        try:
            return (self.work / f"chat.{rank}.log").read_text().split("\n")[:-1]
        except FileNotFoundError:
            return []

    def exchanged(self, rank: int) -> int:
        """How many messages rank ``rank`` (a client) has had answered."""
        return len([line for line in self.lines(rank) if line.isdigit()])

    def field(self, name: str) -> str:
        import re

        out = self.cluster.run("scontrol", "show", "job", str(self.id)).stdout
        match = re.search(rf"\b{name}=(\S*)", out)
        return match.group(1) if match else ""

    def registered(self, run: int = 0) -> bool:
        rec = self.record() if (self.work / ".sckpt" / f"{self.id}.0.json").exists() else None
        if rec is None:
            return False
        running = [t for t in rec.tasks.values() if t.state == "running" and t.restart_count == run]
        return len(running) == self.tasks and all(self.exchanged(r) for r in range(1, self.tasks))

    def results(self) -> dict[int, str]:
        return {r: (self.lines(r) or [""])[-1] for r in range(self.tasks)}


def submit_chat(
    cluster: SlurmCluster,
    work: Path,
    tasks: int,
    count: int,
    pause: float = 0.02,
    run_args: str = "",
    user: str = ALICE,
    mib: int = 0,
) -> ChatJob:
    body = SCRIPT.format(
        tasks=tasks, sckpt=SCKPT, run_args=run_args, program=CHAT, count=count, pause=pause, mib=mib
    )
    return ChatJob(cluster, work, submit_script(cluster, work, body, user), tasks)


def submit_script(cluster: SlurmCluster, work: Path, body: str, user: str | None = ALICE) -> int:
    """sbatch ``body`` as ``user`` (None: root) from ``work`` (made theirs); the job's id."""
    work.mkdir(exist_ok=True)
    if user is not None:
        subprocess.run(["chown", f"{user}:{user}", str(work)], check=True)
    script = work / "job.sh"
    script.write_text(body)
    script.chmod(0o755)
    out = cluster.run(
        "sbatch",
        "--parsable",
        f"--chdir={work}",
        "-o",
        str(work / "out.txt"),
        str(script),
        user=user,
        cwd=str(work),
    )
    return int(out.stdout.strip().split(";")[0])
