"""Job arrays under ``sckpt run`` on the real Slurm 22.05 cluster, signal and transparent.

Each test submits ``sbatch --array=1-3`` as sckpt-alice; every task's script runs one step,
``srun sckpt run -- counter``.  A running task has a job record of its own, whose id (squeue's
``%A``) is not the array's (``%F``) but for one of them: the wrapper registers the step
under the task's own id (``SLURM_JOB_ID``), and every reader (listing, able, create, vacate,
restart, ``restart --wait``, the console's follow-up of a create) must look there.  A
user found the listing looking elsewhere: each task's step said "not started under `sckpt
run`", a create's row said ``requested`` for good, and ``restart --wait`` waited 30 s per
task before saying that no task registered.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sckpt.backend import progress
from sckpt.backend.checkpointing.generations import TaskImages
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.facade import Facade
from sckpt.backend.model import CheckpointKind, JobView, StepId
from sckpt.tui.outcomes import Outcomes

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, EXAMPLE, SCKPT, cancel, cli
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

PLAIN = Path(__file__).resolve().parent / "programs" / "plain_counter.py"
SCRIPT = """#!/bin/bash
#SBATCH -J coop-array
srun {sckpt} run --poll 0.5 --name cnt {run_args} -- {program}
"""
KINDS = {
    # the program catches SIGUSR1 and saves itself (examples/counter.py)
    "signal": (
        "--grace 0.5",
        f"/usr/bin/python3 {EXAMPLE} --log $PWD/count.$SLURM_ARRAY_TASK_ID.log",
    ),
    # the program knows nothing of checkpoints: DMTCP saves it
    "transparent": (
        "--transparent",
        f"/usr/bin/python3 {PLAIN} $PWD/count.$SLURM_ARRAY_TASK_ID.log",
    ),
}
TASKS = (1, 2, 3)


class Array:
    """One submitted array: its id, its tasks' own job ids, their state files and logs."""

    def __init__(self, cluster: SlurmCluster, work: Path, array_id: int, kind: str) -> None:
        self.cluster, self.work, self.id, self.kind = cluster, work, array_id, kind

    def own_ids(self) -> dict[int, int]:
        """``{task: its own job id}`` as squeue says (``%K %A``), for the tasks listed."""
        out = self.cluster.run("squeue", "-h", "-r", "-j", str(self.id), "-o", "%K %A").stdout
        return {int(k): int(a) for k, a in (line.split() for line in out.splitlines())}

    def own(self, task: int) -> int:
        return self.own_ids()[task]

    def store(self, task: int) -> StepStore:
        """Task ``task``'s step 0 state file, named by the task's own job id (the wrapper's)."""
        return StepStore(self.work / ".sckpt", StepId(self.own(task), 0))

    def state(self, task: int) -> str:
        return self.cluster.run(
            "squeue", "-h", "-j", f"{self.id}_{task}", "-o", "%T", check=False
        ).stdout.strip()

    def counted(self, task: int) -> list[int]:
        try:
            lines = (self.work / f"count.{task}.log").read_text().split("\n")[:-1]
            return [int(line.split()[0]) for line in lines]
        except (FileNotFoundError, IndexError, ValueError):
            return []

    def registered(self, task: int, restart_count: int = 0) -> bool:
        """The task's wrapper registered this run and its program caught up (counts)."""
        store = self.store(task)
        rec = store.read() if store.path.exists() else None
        return (
            rec is not None
            and any(
                t.state == "running"
                and t.restart_count == restart_count
                and not t.checkpoint_blocker()
                for t in rec.tasks.values()
            )
            and len(self.counted(task)) > 5
        )

    def generations(self, task: int) -> list[str]:
        """Task ``task``'s complete image generations (``g1`` ...), in the image directory
        the wrapper names as squeue names the task (``9_1.cnt``, not its own id's ``10.cnt``:
        issue 34, 18)."""
        assert not (self.work / f"{self.own(task)}.cnt").exists()
        images = TaskImages(self.work / f"{self.id}_{task}.cnt" / "task0")
        return [g.path.name for g in images.generations() if g.complete]


@pytest.fixture(params=sorted(KINDS))
def array(
    request: pytest.FixtureRequest, cluster_work: Path, slurm_cluster: SlurmCluster
) -> Iterator[Array]:
    """A running ``--array=1-3`` of sckpt-alice, every task registered under ``sckpt run``."""
    kind = str(request.param)
    if kind == "transparent":
        request.getfixturevalue("dmtcp_install")
    run_args, program = KINDS[kind]
    script = cluster_work / "array.sh"
    script.write_text(SCRIPT.format(sckpt=SCKPT, run_args=run_args, program=program))
    script.chmod(0o755)
    out = slurm_cluster.run(
        "sbatch", "--parsable", "--array=1-3", f"--chdir={cluster_work}",
        "-o", str(cluster_work / "out.%a.txt"), str(script),
        user=ALICE, cwd=str(cluster_work),
    )  # fmt: skip
    made = Array(slurm_cluster, cluster_work, int(out.stdout.strip().split(";")[0]), kind)
    try:
        wait_for(lambda: sorted(made.own_ids()) == list(TASKS), timeout=60)
        wait_for(lambda: all(made.registered(t) for t in TASKS), timeout=90)
        yield made
    finally:
        cancel(slurm_cluster, made.id)


def _steps_json(shared_dir: Path, array: Array) -> dict[str, dict[str, object]]:
    """``sckpt ls -s --json`` of the array: each step by the id squeue -s gives it."""
    listed = cli(shared_dir, "ls", "-s", "--json", "-j", str(array.id))
    assert listed.returncode == 0, listed.stderr
    return {
        str(step["step_id"]): step
        for job in json.loads(listed.stdout)["jobs"]
        for step in job["steps"]
    }


def test_array_tasks_are_listed_able_and_followed_through_a_create(
    array: Array, shared_dir: Path, facade: Facade
) -> None:
    run = array.id
    # Every task's step is listed as squeue -s names it, and as checkpointable.
    steps = _steps_json(shared_dir, array)
    squeue_s = array.cluster.run("squeue", "-h", "-s", "-j", str(run), "-o", "%i").stdout.split()
    assert {f"{run}_{t}.0" for t in TASKS} <= set(steps) <= set(squeue_s)
    for task in TASKS:
        ckpt = steps[f"{run}_{task}.0"]["checkpoint"]
        assert isinstance(ckpt, dict)
        assert ckpt["kind"] == CheckpointKind.ABLE.value, (task, ckpt)
        assert steps[f"{run}_{task}.0"]["job_id"] == array.own(task)
    table = cli(shared_dir, "ls", "-s", "-j", f"{run}_2")
    assert table.returncode == 0, table.stderr
    (line,) = [x for x in table.stdout.splitlines() if x.startswith(f"{run}_2.0 ")]
    assert line.rstrip().endswith(
        "able" if array.kind == "signal" else "able, transparent (DMTCP 4.2.0)"
    )
    assert cli(shared_dir, "able", f"{run}_2.0").stdout.strip() == "Yes"

    # A create of one task, followed as the console follows it (``tui.outcomes`` fed by the
    # refresh, which passes on only snapshots that changed): requested, then completed,
    # never "requested" for good.
    target = facade.resolve(f"{run}_2.0", label=True)
    assert (target.job_id, target.array_task_id) == (array.own(2), 2)
    facade.snapshot()  # what the console showed before the request
    outcomes = Outcomes()
    outcomes.watch("create", target, time.time())
    done = cli(shared_dir, "create", f"{run}_2.0", "--wait", "--json", user=ALICE)
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)["results"]
    assert (result["target"], result["outcome"]) == (f"{run}_2.0", progress.COMPLETED)
    assert f"{array.work}/{run}_2.cnt/task0/g1" in done.stdout  # the answer names it so
    # Data taken from here on is after the request (watched before the create ran).

    def finished() -> list[object]:
        snap = facade.snapshot()
        if not snap.changed:  # the console's refresh: no DataReady, no look at outcomes
            return []
        views = {v.job.job_id: v for v in snap.jobs}
        found: Callable[[int], JobView | None] = views.get
        return list(outcomes.update(found, time.time(), time.time()))

    (seen,) = wait_for(finished, timeout=20)
    assert (seen.target, seen.word) == (target, progress.COMPLETED)  # type: ignore[attr-defined]
    # Its image is where the task's own id puts it; the listing shows it, the others none.
    assert array.generations(2) == ["g1"]
    steps = _steps_json(shared_dir, array)
    ckpt = steps[f"{run}_2.0"]["checkpoint"]
    assert isinstance(ckpt, dict)
    assert ckpt["kind"] == CheckpointKind.ABLE.value and ckpt["last_checkpoint_time"] > 0
    assert str(ckpt["image_dir"]).startswith(str(array.work / f"{run}_2.cnt"))
    for task in (1, 3):
        other = steps[f"{run}_{task}.0"]["checkpoint"]
        assert isinstance(other, dict) and other["last_checkpoint_time"] == 0
    assert array.state(2) == "RUNNING"


def test_array_tasks_restart_and_wait_for_their_resume(array: Array, shared_dir: Path) -> None:
    run = array.id
    # One task: vacated (requeued held, squeue says so), then restarted; --wait sees it
    # resume from its image at once, not after 30 s of "no task registered".
    vacated = cli(shared_dir, "vacate", f"{run}_2", "--max-wait", "60", user=ALICE)
    assert vacated.returncode == 0, vacated.stderr
    assert f"job {run}_2 requeued and held" in vacated.stdout  # named as it was typed
    wait_for(lambda: array.state(2) == "PENDING", timeout=60)
    assert array.state(1) == array.state(3) == "RUNNING"
    began = time.monotonic()
    restarted = cli(shared_dir, "restart", f"{run}_2", "--wait", user=ALICE)
    took = time.monotonic() - began
    assert restarted.returncode == 0, restarted.stderr
    assert restarted.stdout.startswith(
        f"{run}_2: restart running: job {run}_2 released; {run}_2.0 task 0 resumes from "
        "generation 1"
    ), restarted.stdout
    assert "resumed from generation 1" in restarted.stderr + restarted.stdout
    assert took < 30, took
    assert array.state(2) == "RUNNING" and array.registered(2, restart_count=1)

    # The whole array: every task vacated, then restarted and watched together.
    wait_for(lambda: all(array.registered(t, restart_count=int(t == 2)) for t in TASKS), 60)
    vacated = cli(shared_dir, "vacate", str(run), "--max-wait", "60", user=ALICE)
    assert vacated.returncode == 0, vacated.stderr
    wait_for(lambda: all(array.state(t) == "PENDING" for t in TASKS), timeout=60)
    began = time.monotonic()
    restarted = cli(shared_dir, "restart", str(run), "--wait", "--json", user=ALICE)
    took = time.monotonic() - began
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    results = json.loads(restarted.stdout)["results"]
    assert [r["target"] for r in results] == [f"{run}_{t}" for t in TASKS]
    for task, result in zip(TASKS, results, strict=True):
        assert result["ok"] and result["outcome"] == progress.RUNNING, result
        generation = 2 if task == 2 else 1
        assert any(f"resumed from generation {generation}" in n for n in result["notes"]), result
    assert took < 45, took
    for task in TASKS:
        assert array.state(task) == "RUNNING"
        wait_for(lambda task=task: array.registered(task, restart_count=1 + int(task == 2)))
        counts = array.counted(task)
        if array.kind == "signal":  # the counter's log goes on from its image's count
            assert counts == list(range(1, len(counts) + 1)), f"task {task}: a count lost"
    steps = _steps_json(shared_dir, array)
    assert all(
        steps[f"{run}_{t}.0"]["checkpoint"]["kind"] == CheckpointKind.ABLE.value  # type: ignore[index]
        for t in TASKS
    )
