"""Automatic checkpoints under Slurm's own events, on a real Slurm 22.05 cluster (issue 32).

Each scenario runs a signal program (``examples/counter.py``) and a transparent one
(``programs/plain_counter.py`` under DMTCP) side by side, as two jobs of sckpt-alice under
``sckpt run`` with a policy, and lets Slurm do what it does: a time limit, a preemption by a
job of a higher partition (``scavenger``, GraceTime 20 s: ``scripts/slurm-cluster``), a
node set DOWN.  Nobody acts on the jobs but Slurm and the wrappers; the test only watches
and then checks the counts (every number exactly once) and the images.

The module has a cluster of its own (``private_cluster``): it sets its node DOWN.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.protocol import (
    CAUSE_BEFORE_END,
    CAUSE_INTERVAL,
    CAUSE_SIGTERM,
    StepRecord,
)
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.model import StepId

from tests.conftest import PrivateCluster
from tests.cooperative.conftest import ALICE, EXAMPLE, SCKPT
from tests.cooperative.test_transparent import PROGRAM as PLAIN_COUNTER
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

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
        rec = self.record()
        task = rec.tasks.get("0") if rec is not None else None
        return (
            task is not None
            and task.state == "running"
            and task.restart_count == restart_count
            and (task.handler == "caught" or bool(task.checkpointer))
            and bool(self.counted())
        )

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
            ) from None


def _script(variant: str, run_args: str, limit: int, term_after: float) -> str:
    if variant == "signal":
        program = (
            f"/usr/bin/python3 {EXAMPLE} --log $PWD/count.log --interval {PAUSE} "
            f"--limit {limit} --term-after {term_after}"
        )
        how = ""
    else:
        program = f"/usr/bin/python3 {PLAIN_COUNTER} $PWD/count.log 0 {limit} {PAUSE}"
        how = "--transparent"
    return (
        "#!/bin/bash\n"
        'echo "run ${SLURM_RESTART_COUNT:-0} $(date +%s)"\n'
        f"srun -n1 {SCKPT} run {how} --poll 0.5 --name cnt {run_args} -- {program}\n"
    )


@pytest.fixture
def jobs(
    private_cluster: PrivateCluster, shared_dir: Path, dmtcp_install: object
) -> Iterator[Callable[..., dict[str, Job]]]:
    """Submit one job per variant (both at once: the module waits on Slurm's clocks once)."""
    made: list[Job] = []

    def submit(
        run_args: str, *sbatch: str, limit: int = 0, term_after: float = 0.0
    ) -> dict[str, Job]:
        out: dict[str, Job] = {}
        for variant in VARIANTS:
            work = shared_dir / variant
            work.mkdir()
            subprocess.run(["chown", f"{ALICE}:{ALICE}", str(work)], check=True)
            (work / "job.sh").write_text(_script(variant, run_args, limit, term_after))
            (work / "job.sh").chmod(0o755)
            job = Job(private_cluster, work, variant)
            sub = private_cluster.run(
                "sbatch", "--parsable", f"--chdir={work}", "--requeue", "--open-mode=append",
                "-o", str(work / "out.txt"), "-J", f"auto-{variant}", *sbatch,
                str(work / "job.sh"), user=ALICE, cwd=str(work),
            )  # fmt: skip
            job.id = int(sub.stdout.strip().split(";")[0])
            made.append(job)
            out[variant] = job
        for job in out.values():
            job.wait(job.running, timeout=120)
        return out

    yield submit
    ids = [str(j.id) for j in made if j.id]
    if ids:
        private_cluster.run("scancel", *ids, check=False)
        wait_for(
            lambda: (
                not private_cluster.run(
                    "squeue", "-h", "-j", ",".join(ids), check=False
                ).stdout.strip()
            ),
            timeout=120,
        )


def _exact(job: Job, limit: int) -> None:
    values = job.counted()
    assert values == list(range(1, limit + 1)), (
        f"{job.variant}: a count lost or repeated ({len(values)} values)"
    )


def test_a_time_limit_chain_runs_past_the_limit_to_the_exact_result(
    jobs: Callable[..., dict[str, Job]],
) -> None:
    """--time=2 and five minutes of work, under --before-end: a chain of runs, each
    resuming from the image taken before the previous one's end, requeued by the wrapper
    with its begin time brought close (Slurm's would be two minutes)."""
    limit = 3000
    started = jobs("--before-end 30s", "--time=2", limit=limit)
    for job in started.values():
        job.wait(lambda job=job: job.field("JobState") == "COMPLETED", timeout=900)
    for job in started.values():
        _exact(job, limit)
        restarts = int(job.field("Restarts"))
        assert restarts >= 2, f"{job.variant}: {restarts} restarts"
        rec = job.record()
        assert rec is not None
        links = [h for h in rec.history if h["operation"] == "requeue"]
        assert len(links) == restarts, rec.history
        assert len(job.done_lines(CAUSE_BEFORE_END)) >= restarts
        # each run started within seconds of the previous one's requeue, not two minutes
        runs = [int(x) for x in re.findall(r"^run \d+ (\d+)$", job.output(), re.MULTILINE)]
        requeued = [int(h["time"]) for h in links]  # type: ignore[call-overload]
        gaps = [start - at for at, start in zip(requeued, runs[1:], strict=False)]
        assert gaps and max(gaps) < 60, (gaps, job.output())
        assert rec.tasks["0"].start_note.startswith("resumed from generation")


def test_a_preempted_job_checkpoints_in_its_grace_and_resumes_by_itself(
    jobs: Callable[..., dict[str, Job]], private_cluster: PrivateCluster
) -> None:
    """Two scavenger jobs under --every 20s are preempted by a debug job that needs every
    CPU.  They resume afterwards with nobody acting: the signal program (which goes on 8 s
    after SIGTERM) from its SIGTERM checkpoint, losing nothing; the transparent one (which
    dies of SIGTERM) from its last interval image, losing at most one interval."""
    every = 20
    started = jobs(f"--every {every}s", "-p", "scavenger", "-c", "32", term_after=8)
    for job in started.values():
        job.wait(lambda job=job: job.done_lines(CAUSE_INTERVAL), timeout=every + 60)
    high = private_cluster.run(
        "sbatch", "--parsable", "-p", "debug", "-c", "64", "-o", "/dev/null", "--wrap", "sleep 5"
    )
    high_id = high.stdout.strip().split(";")[0]
    for job in started.values():
        job.wait(lambda job=job: int(job.field("Restarts") or 0) >= 1, timeout=120)
    preempted_at = int(time.time())
    for job in started.values():
        job.wait(lambda job=job: job.running(restart_count=1), timeout=180)
    assert private_cluster.run("squeue", "-h", "-j", high_id, check=False).stdout.strip() == ""
    signal_job, dmtcp_job = started["signal"], started["transparent"]
    # The signal program's SIGTERM checkpoint: it resumed from at least where SIGTERM came.
    term = re.search(r"counter: SIGTERM at (\d+)", signal_job.output())
    resumed = re.search(r"counter: resumed from (\d+)", signal_job.output())
    assert term and resumed, signal_job.output()
    assert int(resumed.group(1)) >= int(term.group(1)), signal_job.output()
    assert signal_job.done_lines(CAUSE_SIGTERM)
    # The transparent program: its newest image was at most one interval before the end.
    rec = dmtcp_job.record()
    assert rec is not None and rec.tasks["0"].start_note.startswith("resumed from generation")
    images = [int(h["time"]) for h in dmtcp_job.done_lines()]  # type: ignore[call-overload]
    before = [t for t in images if t <= preempted_at]
    assert before and preempted_at - max(before) <= every + 25, (images, preempted_at)
    for job in started.values():
        values = job.counted()
        assert values == list(range(1, len(values) + 1)), f"{job.variant}: gap or repeat"


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
    finally:
        private_cluster.run("scontrol", "update", f"NodeName={node}", "State=RESUME")
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
