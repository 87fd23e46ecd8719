"""Jobs of sckpt-alice counting under ``sckpt run`` with a policy, for the real-cluster
tests of automatic checkpoints (``test_auto_real.py``, ``test_auto_node.py``; the ``jobs``
fixture is in this folder's conftest): a signal program (``examples/counter.py``), a
transparent one (``programs/plain_counter.py`` under DMTCP), and one that catches no
signal, each in a directory of its own."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sckpt.backend.checkpointing.protocol import StepRecord
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.model import StepId

from tests.conftest import PrivateCluster
from tests.cooperative.conftest import ALICE, EXAMPLE, SCKPT
from tests.helpers import wait_for

PLAIN_COUNTER = Path(__file__).resolve().parent / "programs" / "plain_counter.py"
PAUSE = 0.1
"""Seconds per count: 3000 counts are five minutes of work."""
VARIANTS = ("signal", "transparent")


@dataclass
class Job:
    """One job of sckpt-alice on the module's cluster, counting under ``sckpt run``."""

    cluster: PrivateCluster
    work: Path
    variant: str
    id: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def log(self) -> Path:
        return self.work / "count.log"

    def record(self) -> StepRecord | None:
        try:
            return StepStore(self.work / ".sckpt", StepId(self.id, 0)).read()
        except Exception:
            return None

    def show(self) -> str:
        return self.cluster.run("scontrol", "show", "job", str(self.id), check=False).stdout

    def field(self, name: str) -> str:
        match = re.search(rf"\b{name}=(\S*)", self.show())
        return match.group(1) if match else ""

    def counted(self) -> list[int]:
        try:
            text = self.log.read_text()
        except FileNotFoundError:
            return []
        return [int(x) for x in text.split("\n")[:-1] if x.isdigit()]

    def output(self) -> str:
        try:
            return (self.work / "out.txt").read_text()
        except FileNotFoundError:
            return ""

    def running(self, restart_count: int = 0) -> bool:
        """This run's task 0 registered, its handler was looked at, and it counts."""
        rec = self.record()
        task = rec.tasks.get("0") if rec is not None else None
        return (
            task is not None
            and task.state == "running"
            and task.restart_count == restart_count
            and (bool(task.handler) or bool(task.checkpointer))
            and bool(self.counted())
        )

    def started(self) -> int:
        """When this run's task 0 registered (Unix seconds)."""
        rec = self.record()
        return rec.tasks["0"].since if rec is not None else 0

    def done_lines(self, cause: str = "") -> list[dict[str, object]]:
        """The record's history lines of checkpoints that completed (of ``cause``)."""
        rec = self.record()
        return [
            h
            for h in (rec.history if rec is not None else [])
            if h["operation"] == "done" and h["code"] == 0 and (not cause or h["cause"] == cause)
        ]

    def wait(self, predicate: Callable[[], object], timeout: float) -> None:
        """``wait_for`` that, when it fails, says what Slurm and the record know."""
        try:
            wait_for(predicate, timeout=timeout)
        except AssertionError as exc:
            rec = self.record()
            history = "\n".join(map(str, rec.history[-15:])) if rec is not None else "-"
            raise AssertionError(
                f"{self.variant}: {exc}\n{self.show()}\n{history}\n{self.output()[-3000:]}"
                f"\nslurmctld on job {self.id}:\n{self.controller_said()}"
            ) from None

    def controller_said(self) -> str:
        """The controller log's lines about this job (who ended or signalled it, and why):
        what a failed wait needs once the job has left ``scontrol show job``."""
        try:
            text = (self.cluster.directory / "log" / "slurmctld.log").read_text(errors="replace")
        except OSError as exc:
            return f"(no controller log: {exc.strerror})"
        mark = re.compile(rf"\bJ(?:ob)?Id={self.id}\b")
        return "\n".join([line for line in text.splitlines() if mark.search(line)][-40:])


def _script(
    variant: str,
    run_args: str,
    limit: int,
    term_after: float,
    slow: float,
    slow_from: int,
    mib: int,
) -> str:
    how = ""
    if variant == "signal":
        program = (
            f"/usr/bin/python3 {EXAMPLE} --log $PWD/count.log --interval {PAUSE} "
            f"--limit {limit} --term-after {term_after} --slow {slow} --slow-from {slow_from}"
        )
    else:  # transparent, or uncaught: catches no signal, and not run --transparent
        program = f"/usr/bin/python3 {PLAIN_COUNTER} $PWD/count.log {mib} {limit} {PAUSE}"
        how = "--transparent" if variant == "transparent" else ""
    return (
        "#!/bin/bash\n"
        'echo "run ${SLURM_RESTART_COUNT:-0} $(date +%s)"\n'
        f"srun -n1 {SCKPT} run {how} --poll 0.5 --name cnt {run_args} -- {program}\n"
    )


def submit_jobs(
    cluster: PrivateCluster,
    top: Path,
    run_args: str,
    *sbatch: str,
    limit: int = 0,
    term_after: float = 0.0,
    slow: float = 0.0,
    slow_from: int = 2,
    mib: int = 0,
    variants: tuple[str, ...] = VARIANTS,
) -> dict[str, Job]:
    """One job per variant in ``top/<variant>``, all submitted before any is waited for."""
    out: dict[str, Job] = {}
    for variant in variants:
        work = top / variant
        work.mkdir()
        subprocess.run(["chown", f"{ALICE}:{ALICE}", str(work)], check=True)
        script = _script(variant, run_args, limit, term_after, slow, slow_from, mib)
        (work / "job.sh").write_text(script)
        (work / "job.sh").chmod(0o755)
        job = Job(cluster, work, variant)
        sub = cluster.run(
            "sbatch", "--parsable", f"--chdir={work}", "--requeue", "--open-mode=append",
            "-o", str(work / "out.txt"), "-J", f"auto-{variant}", *sbatch,
            str(work / "job.sh"), user=ALICE, cwd=str(work),
        )  # fmt: skip
        job.id = int(sub.stdout.strip().split(";")[0])
        out[variant] = job
    return out


def cancel_jobs(cluster: PrivateCluster, started: list[Job]) -> None:
    ids = [str(j.id) for j in started if j.id]
    if ids:
        cluster.run("scancel", *ids, check=False)
        wait_for(
            lambda: (
                not cluster.run("squeue", "-h", "-j", ",".join(ids), check=False).stdout.strip()
            ),
            timeout=120,
        )
