"""``sckpt auto`` on the real Slurm 22.05 cluster (issue 32, item 5): an operator gives a
running step under ``sckpt run`` (started without a policy) an interval, and the step then
checkpoints by itself, each new generation's history lines saying ``interval``; ``--off``
stops it.  The operator is root, through the ``sckpt`` command in another process; the job
is sckpt-alice's."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.generations import TaskImages
from sckpt.backend.checkpointing.protocol import CAUSE_INTERVAL, StepRecord
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.model import StepId

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, EXAMPLE, SCKPT, cancel, cli
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

SCRIPT = """#!/bin/bash
#SBATCH -n 1
#SBATCH -J auto-test
srun -n1 {sckpt} run --poll 0.5 --name step0 -- /usr/bin/python3 {example} --log $PWD/step0.log
"""
EVERY = 15


@pytest.fixture
def job(cluster_work: Path, slurm_cluster: SlurmCluster) -> Iterator[int]:
    """A running batch job of sckpt-alice whose one step runs under ``sckpt run`` with no
    policy, registered."""
    script = cluster_work / "job.sh"
    script.write_text(SCRIPT.format(sckpt=SCKPT, example=EXAMPLE))
    out = slurm_cluster.run(
        "sbatch",
        "--parsable",
        f"--chdir={cluster_work}",
        "-o",
        str(cluster_work / "out.txt"),
        str(script),
        user=ALICE,
        cwd=str(cluster_work),
    )
    job_id = int(out.stdout.strip().split(";")[0])
    store = StepStore(cluster_work / ".sckpt", StepId(job_id, 0))

    def registered() -> bool:
        rec = store.read() if store.path.exists() else None
        return rec is not None and any(
            t.state == "running" and not t.checkpoint_blocker() for t in rec.tasks.values()
        )

    try:
        wait_for(registered, timeout=60)
        yield job_id
    finally:
        cancel(slurm_cluster, job_id)


def _record(work: Path, job_id: int) -> StepRecord:
    rec = StepStore(work / ".sckpt", StepId(job_id, 0)).read()
    assert rec is not None
    return rec


def _interval_done(rec: StepRecord) -> list[int]:
    """When each interval checkpoint of the step ended well."""
    return [e.time for e in rec.events() if e.operation == "done" and e.cause == CAUSE_INTERVAL]


def test_auto_every_makes_a_running_step_checkpoint_by_itself_and_off_stops_it(
    job: int, cluster_work: Path, shared_dir: Path
) -> None:
    target = f"{job}.0"
    assert not _record(cluster_work, job).policy.active  # started without a policy
    images = TaskImages(cluster_work / f"{job}.step0" / "task0")
    assert images.latest() is None

    set_at = time.time()
    done = cli(shared_dir, "auto", target, "--every", f"{EVERY}s")
    assert (done.returncode, done.stdout) == (0, f"{target}: auto requested: every {EVERY}s\n")
    rec = _record(cluster_work, job)
    assert (rec.policy.every, rec.policy.set_by) == (EVERY, "root")
    assert set_at + EVERY - 2 <= rec.next_due <= time.time() + EVERY + 1

    # ls --json shows it, with when the next one is due.
    listed = json.loads(cli(shared_dir, "ls", "--steps", "--json", "-j", str(job)).stdout)
    step = next(s for j in listed["jobs"] for s in j["steps"] if s["step_id"] == target)
    assert step["checkpoint"]["auto"]["every"] == EVERY
    assert step["checkpoint"]["auto"]["next_due"] == rec.next_due

    # Nobody asks: two interval checkpoints happen, each a new complete generation.
    wait_for(lambda: len(_interval_done(_record(cluster_work, job))) >= 2, timeout=4 * EVERY + 30)
    rec = _record(cluster_work, job)
    first, second = _interval_done(rec)[:2]
    assert first >= set_at + EVERY - 2 and second - first >= EVERY - 2
    latest = images.latest()
    assert latest is not None and latest.name in ("g2", "g3")
    starts = [e for e in rec.events() if e.operation == "create"]
    assert {(e.by, e.cause) for e in starts} == {("sckpt run", CAUSE_INTERVAL)}
    assert rec.error_code == 0

    # --off: no more automatic checkpoints.
    off = cli(shared_dir, "auto", target, "--off")
    assert (off.returncode, off.stdout) == (0, f"{target}: auto requested: off\n")
    time.sleep(1)  # a checkpoint that was already starting ends
    wait_for(lambda: _record(cluster_work, job).in_progress is None, timeout=30)
    rec = _record(cluster_work, job)
    assert not rec.policy.active and rec.next_due == 0 and rec.policy.set_by == "root"
    taken = len([e for e in rec.events() if e.operation == "create"])
    time.sleep(2 * EVERY + 2)  # real time: two intervals in which none may start
    rec = _record(cluster_work, job)
    assert len([e for e in rec.events() if e.operation == "create"]) == taken
    assert [(e.operation, e.by, e.message) for e in rec.events() if e.operation == "auto"] == [
        ("auto", "root", f"every {EVERY}s"),
        ("auto", "root", "off"),
    ]
    listed = json.loads(cli(shared_dir, "ls", "--steps", "--json", "-j", str(job)).stdout)
    step = next(s for j in listed["jobs"] for s in j["steps"] if s["step_id"] == target)
    assert step["checkpoint"]["auto"] is None
