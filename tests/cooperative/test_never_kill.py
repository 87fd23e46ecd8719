"""A checkpoint never kills the program, and vacate never ends a job without an image.

On the real Slurm 22.05 cluster, each test starting from the repro of the issue: a batch job
of sckpt-alice whose step runs under ``srun sckpt run``, and root acting on it with the
``sckpt`` command in another process, as an operator types it.  What is compared is what
Slurm and the kernel say: the job's state (``scontrol``), its steps (``squeue -s``), the
program's pid in ``/proc``, the job's output (srun prints "User defined signal 1" when a
task dies of SIGUSR1) and the image bytes on disk.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.protocol import StepRecord, TaskInfo, default_step_name
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.errors import ESLURM_NOT_SUPPORTED
from sckpt.backend.facade import Facade
from sckpt.backend.model import CheckpointKind, StepId

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, EXAMPLE, SCKPT, cancel, cli, state
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

COUNTER = f"/usr/bin/python3 {EXAMPLE}"
KILLED = "User defined signal"
"""What srun prints when a task dies of SIGUSR1."""


class Batch:
    """One batch job of alice: its id, its steps' records, its output and its state."""

    def __init__(self, cluster: SlurmCluster, work: Path, job_id: int) -> None:
        self.cluster = cluster
        self.work = work
        self.id = job_id

    def record(self, step: int) -> StepRecord | None:
        store = StepStore(self.work / ".sckpt", StepId(self.id, step))
        return store.read() if store.path.exists() else None

    def task(self, step: int, procid: int = 0, restart_count: int = 0) -> TaskInfo | None:
        rec = self.record(step)
        task = rec.tasks.get(str(procid)) if rec is not None else None
        if task is None or task.state != "running" or task.restart_count != restart_count:
            return None
        return task

    def handler(self, step: int, procid: int = 0, restart_count: int = 0) -> str | None:
        """What the wrapper last saw the program do with SIGUSR1 (None: not registered)."""
        task = self.task(step, procid, restart_count)
        return task.handler if task is not None else None

    def field(self, name: str) -> str:
        out = self.cluster.run("scontrol", "show", "job", str(self.id)).stdout
        match = re.search(rf"\b{name}=(\S*)", out)
        return match.group(1) if match else ""

    def steps(self) -> list[str]:
        """``squeue -s`` of this job: the step ids Slurm has running."""
        out = self.cluster.run("squeue", "-h", "-s", "-j", str(self.id), "-o", "%i").stdout
        return sorted(out.split())

    def output(self) -> str:
        try:
            return (self.work / "out.txt").read_text()
        except FileNotFoundError:
            return ""

    def counted(self, log: str) -> list[int]:
        try:
            return [int(x) for x in (self.work / log).read_text().split()]
        except FileNotFoundError:
            return []


@pytest.fixture
def batch(cluster_work: Path, slurm_cluster: SlurmCluster) -> Iterator[Callable[..., Batch]]:
    jobs: list[int] = []

    def _submit(body: str, tasks: int = 1) -> Batch:
        script = cluster_work / "job.sh"
        script.write_text(f"#!/bin/bash\n#SBATCH -n {tasks}\n#SBATCH -J never-kill\n{body}\n")
        out = slurm_cluster.run(
            "sbatch", "--parsable", "--open-mode=append", f"--chdir={cluster_work}",
            "-o", str(cluster_work / "out.txt"), str(script),
            user=ALICE, cwd=str(cluster_work),
        )  # fmt: skip
        job = Batch(slurm_cluster, cluster_work, int(out.stdout.strip().split(";")[0]))
        jobs.append(job.id)
        return job

    yield _submit
    cancel(slurm_cluster, *jobs)


def alive(pid: int, comm: str) -> bool:
    """Whether process ``pid`` still runs ``comm`` (not ended, not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    name, _, rest = stat.partition(") ")
    return name.endswith(f"({comm}") and not rest.startswith("Z")


def refused(out: subprocess.CompletedProcess[str], *expected: str) -> None:
    """A refusal as the CLI prints it: exit 1, nothing on stdout, the named parts on stderr."""
    assert out.returncode == 1, out
    assert out.stdout == "", out
    for part in expected:
        assert part in out.stderr, (part, out)
    assert "Traceback" not in out.stderr


def test_a_program_that_never_catches_the_signal_is_never_sent_it(
    batch: Callable[..., Batch], facade: Facade, shared_dir: Path, slurm_cluster: SlurmCluster
) -> None:
    job = batch(f"srun -n1 {SCKPT} run -- /bin/sleep 300")  # the repro
    wait_for(lambda: job.handler(0) == "default", timeout=60)
    task = job.task(0)
    assert task is not None
    pid, where = task.program_pid, f"task 0 (pid {task.program_pid} on {slurm_cluster.node})"
    assert alive(pid, "sleep")
    target = f"{job.id}.0"

    able = cli(shared_dir, "able", target)
    refused(able, "ESLURM_NOT_SUPPORTED", "program does not catch SIGUSR1")
    assert "sckpt run --transparent" in able.stderr  # issue 34, 18: what needs no handler
    doc = json.loads(cli(shared_dir, "--json", "able", target).stdout)
    error = doc["results"][0]["error"]
    assert (doc["exit_code"], error["code"]) == (1, ESLURM_NOT_SUPPORTED)
    assert f"{target} {where}: program does not catch SIGUSR1" in error["hint"]
    for args in (("create", target), ("vacate", target), ("vacate", str(job.id))):
        refused(
            cli(shared_dir, *args), "ESLURM_NOT_SUPPORTED", where, "SIGUSR1", "nothing was sent"
        )
    doc = json.loads(cli(shared_dir, "--json", "create", target).stdout)
    assert doc["results"][0]["error"]["code"] == ESLURM_NOT_SUPPORTED

    column = state(facade, target)
    assert column.kind == CheckpointKind.NOT_SUPPORTED
    assert column.reason.startswith("program does not catch SIGUSR1")
    time.sleep(1.5)  # a signal sent would have killed it by now
    assert alive(pid, "sleep") and job.field("JobState") == "RUNNING"
    assert job.steps() == sorted([f"{job.id}.0", f"{job.id}.batch", f"{job.id}.extern"])
    assert KILLED not in job.output()
    rec = job.record(0)
    assert rec is not None and rec.in_progress is None
    assert [h["operation"] for h in rec.history] == ["register"]


def test_a_program_that_catches_the_signal_only_after_5_s(
    batch: Callable[..., Batch], shared_dir: Path
) -> None:
    # bash does not catch SIGUSR1; 5 s later it exec's into the counter, which does.
    job = batch(
        f"srun -n1 {SCKPT} run -- /bin/bash -c 'sleep 5; exec {COUNTER} --log $PWD/late.log'"
    )
    wait_for(lambda: job.handler(0) == "default", timeout=60)
    task = job.task(0)
    assert task is not None
    pid, target = task.program_pid, f"{job.id}.0"
    for args in (("create", target), ("vacate", str(job.id))):
        refused(cli(shared_dir, *args), f"task 0 (pid {pid} on", "does not catch SIGUSR1")
    refused(cli(shared_dir, "able", target), "does not catch SIGUSR1")
    # Still before the exec: the refusals above were answered inside the window.
    assert job.handler(0) == "default" and alive(pid, "bash")
    assert job.field("JobState") == "RUNNING"

    # Once the program it exec'd into catches the signal, the step is checkpointable.
    wait_for(lambda: job.handler(0) == "caught", timeout=30)
    assert alive(pid, "python3")  # the same pid, now the counter
    assert cli(shared_dir, "able", target).stdout.strip() == "Yes"
    wait_for(lambda: len(job.counted("late.log")) >= 3)
    created = cli(shared_dir, "create", target)
    assert created.returncode == 0 and "create completed" in created.stdout, created
    rec = job.record(0)
    assert rec is not None and rec.error_code == 0
    count, size = (int(x) for x in Path(rec.last_image["0"], "state").read_text().split())
    assert count >= 3 and size == sum(len(f"{i}\n") for i in range(1, count + 1))
    assert KILLED not in job.output() and job.field("JobState") == "RUNNING"


def test_a_two_task_step_where_one_task_does_not_catch(
    batch: Callable[..., Batch], facade: Facade, shared_dir: Path
) -> None:
    program = (
        '\'if [ "$SLURM_PROCID" = 0 ]; then '
        f"exec {COUNTER} --log $PWD/t0.log; else exec /bin/sleep 300; fi'"
    )
    job = batch(f"srun -n2 {SCKPT} run -- /bin/bash -c {program}", tasks=2)
    wait_for(lambda: (job.handler(0, 0), job.handler(0, 1)) == ("caught", "default"), 60)
    tasks = [job.task(0, p) for p in (0, 1)]
    assert tasks[0] is not None and tasks[1] is not None
    pids = [t.program_pid for t in tasks]  # type: ignore[union-attr]
    target = f"{job.id}.0"
    for args in (("create", target), ("vacate", target), ("vacate", str(job.id))):
        out = cli(shared_dir, *args)
        refused(out, f"task 1 (pid {pids[1]} on", "does not catch SIGUSR1")
        assert "task 0 (pid" not in out.stderr  # the task that catches is not blamed
    column = state(facade, target)
    assert column.kind == CheckpointKind.NOT_SUPPORTED
    assert column.reason.startswith("task 1: program does not catch SIGUSR1")
    before = len(job.counted("t0.log"))
    time.sleep(1.5)  # "nothing happens": a signal sent to task 1 would have killed it by now
    assert alive(pids[0], "python3") and alive(pids[1], "sleep")
    assert len(job.counted("t0.log")) > before  # task 0 kept counting, undisturbed
    assert job.field("JobState") == "RUNNING" and KILLED not in job.output()
    rec = job.record(0)
    assert rec is not None and rec.in_progress is None and rec.last_image == {}


def test_a_failing_save_leaves_the_job_running_and_force_vacates_it(
    batch: Callable[..., Batch], shared_dir: Path
) -> None:
    job = batch(f"srun -n1 {SCKPT} run -- {COUNTER} --log $PWD/c.log --fail '28 disk full'")
    wait_for(lambda: job.handler(0) == "caught", timeout=60)
    task = job.task(0)
    assert task is not None
    where = f"{job.id}.0 task 0 (pid {task.program_pid} on"

    # create: the outcome, not "accepted", and exit 1.
    created = cli(shared_dir, "create", f"{job.id}.0")
    refused(created, "ENOSPC (28): disk full", where, "error(28): disk full")
    doc = json.loads(cli(shared_dir, "--json", "create", f"{job.id}.0").stdout)
    result = doc["results"][0]
    assert (doc["exit_code"], result["ok"], result["error"]["code"]) == (1, False, 28)
    assert "error(28): disk full" in result["error"]["hint"]
    # the historical syntax: nothing on stdout, the same failure and exit status
    historical = cli(shared_dir, "checkpoint", "create", f"{job.id}.0")
    refused(historical, "error(28): disk full")

    vacated = cli(shared_dir, "vacate", str(job.id))
    refused(vacated, where, "error(28): disk full", "keeps running", "--force")
    assert job.field("JobState") == "RUNNING" and alive(task.program_pid, "python3")
    assert f"{job.id}.0" in job.steps()

    forced = cli(shared_dir, "vacate", "--force", str(job.id))
    assert forced.returncode == 0, forced
    assert "requeued and held" in forced.stdout
    assert "forced: restart will start without an image for" in forced.stdout
    assert "error(28): disk full" in forced.stdout
    wait_for(lambda: job.field("JobState") == "PENDING", timeout=60)
    assert job.field("Reason") == "job_requeued_in_held_state"
    audit = [
        json.loads(line)
        for line in (shared_dir / "audit" / "root-cli.log").read_text().splitlines()
        if '"vacate"' in line
    ]
    assert (audit[0]["result"]["code"], audit[0]["result"]["name"]) == (28, "ENOSPC")
    assert audit[-1]["result"]["code"] in (0, None), audit[-1]
    assert audit[-1]["arguments"]["force"] is True


def test_a_plain_step_beside_a_sckpt_run_step_blocks_vacate(
    batch: Callable[..., Batch], shared_dir: Path
) -> None:
    job = batch(
        "srun -n1 --exact /bin/sleep 600 &\n"
        f"srun -n1 --exact {SCKPT} run -- {COUNTER} --log $PWD/c.log &\nwait",
        tasks=2,
    )
    # The two steps start in either order: find which id is which.
    wait_for(lambda: any(job.handler(n) == "caught" for n in (0, 1)), timeout=60)
    run_step = 0 if job.handler(0) == "caught" else 1
    plain = f"{job.id}.{1 - run_step}"
    wait_for(lambda: plain in job.steps())
    wait_for(lambda: len(job.counted("c.log")) >= 3)
    for target in (str(job.id), f"{job.id}.{run_step}"):  # a requeue ends every step
        out = cli(shared_dir, "vacate", target)
        refused(out, "ESLURM_NOT_SUPPORTED", f"would end {plain} (sleep)", "not under `sckpt run`")
        assert "--force" in out.stderr
    assert job.field("JobState") == "RUNNING" and plain in job.steps()
    rec = job.record(run_step)
    assert rec is not None and rec.last_image == {}  # nothing was checkpointed either
    assert "vacate" not in [h["operation"] for h in rec.history]

    forced = cli(shared_dir, "vacate", "--force", str(job.id))
    assert forced.returncode == 0, forced
    assert f"forced: restart will start without an image for {plain}" in forced.stdout
    wait_for(lambda: job.field("JobState") == "PENDING", timeout=60)
    rec = job.record(run_step)
    assert rec is not None and Path(rec.last_image["0"], "state").is_file()


def test_steps_started_in_the_opposite_order_resume_from_their_own_images(
    batch: Callable[..., Batch], shared_dir: Path
) -> None:
    job = batch(
        f'A="{SCKPT} run -- {COUNTER} --log $PWD/a.log"\n'
        f'B="{SCKPT} run -- {COUNTER} --log $PWD/b.log"\n'
        # The first run starts A then B; a restarted run starts B then A.
        'if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then set -- "$A" "$B"; else set -- "$B" "$A"; fi\n'
        "srun -n1 --exact $1 &\n"
        "until squeue -h -s -j $SLURM_JOB_ID -o %i | grep -qx $SLURM_JOB_ID.0; do sleep 0.1; done\n"
        "srun -n1 --exact $2 &\nwait",
        tasks=2,
    )
    names = {
        log: default_step_name(["/usr/bin/python3", str(EXAMPLE), "--log", f"{job.work}/{log}"])
        for log in ("a.log", "b.log")
    }
    wait_for(lambda: job.handler(0) == job.handler(1) == "caught", timeout=60)
    first = {n: job.record(n).name for n in (0, 1)}  # type: ignore[union-attr]
    assert first == {0: names["a.log"], 1: names["b.log"]}  # named by their command line
    wait_for(lambda: min(len(job.counted("a.log")), len(job.counted("b.log"))) >= 10)

    vacated = cli(shared_dir, "vacate", str(job.id))
    assert vacated.returncode == 0, vacated
    # the vacate was each step's first checkpoint: its complete generation g1
    images = {log: job.work / f"{job.id}.{names[log]}" / "task0" / "g1" for log in names}
    saved = {log: int((images[log] / "state").read_text().split()[0]) for log in names}
    wait_for(lambda: job.field("JobState") == "PENDING", timeout=60)

    restarted = cli(shared_dir, "restart", str(job.id))
    assert restarted.returncode == 0, restarted
    wait_for(lambda: job.field("JobState") == "RUNNING", timeout=60)
    wait_for(lambda: job.handler(0, 0, 1) == job.handler(1, 0, 1) == "caught", timeout=60)
    again = {n: job.record(n).name for n in (0, 1)}  # type: ignore[union-attr]
    assert again == {0: names["b.log"], 1: names["a.log"]}  # the ids swapped
    for log in names:
        resumed = f"counter: resumed from {saved[log]} ({images[log]})"
        wait_for(lambda r=resumed: r in job.output(), timeout=30)
        wait_for(lambda log=log: len(job.counted(log)) > saved[log] + 5)
        values = job.counted(log)
        assert values == list(range(1, len(values) + 1))  # its own count, no gap, no repeat
