"""A task of a step under one DMTCP coordinator ends before the others (issue 33), on the
real Slurm 22.05: the others go on (task 0's wrapper keeps the step's coordinator until
every DMTCP process has left it), and a checkpoint is refused before anything is asked: a
cut must include every task."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.errors import SckptError
from sckpt.backend.facade import Facade

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, SCKPT, cancel
from tests.cooperative.step_jobs import ChatJob, submit_script
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

SCRIPT = """#!/bin/bash
#SBATCH -n 2
#SBATCH -J early-end-test
srun {sckpt} run --transparent --poll 0.5 --name early -- /bin/bash -c \\
    'if [ "$SLURM_PROCID" = {early} ]; then sleep 4; else sleep 25; fi; echo "$SLURM_PROCID done"'
"""


@pytest.fixture
def jobs(dmtcp_install: object, slurm_cluster: SlurmCluster) -> Iterator[list[int]]:
    ids: list[int] = []
    yield ids
    cancel(slurm_cluster, *ids)


def _ended(job: ChatJob, procid: int) -> bool:
    rec = job.record() if (job.work / ".sckpt" / f"{job.id}.0.json").exists() else None
    task = rec.tasks.get(str(procid)) if rec is not None else None
    return task is not None and task.state == "ended"


@pytest.mark.parametrize("early", [0, 1])
def test_a_task_that_ends_early(  # type: ignore[no-untyped-def]
    jobs, facade: Facade, shared_dir: Path, slurm_cluster: SlurmCluster, dmtcp_install, early: int
) -> None:
    work = shared_dir / "early"
    job_id = submit_script(slurm_cluster, work, SCRIPT.format(sckpt=SCKPT, early=early))
    jobs.append(job_id)
    job = ChatJob(slurm_cluster, work, job_id, 2)
    wait_for(lambda: _ended(job, early), timeout=60)
    other = 1 - early
    rec = job.record()
    assert rec is not None and rec.tasks[str(other)].state == "running"
    assert rec.tasks[str(early)].exit_status == 0
    # The step's coordinator still serves the task that runs on: its bash and sleep (the
    # ended task's two have left).
    port = str(next(iter(rec.coord_ports.values())))
    command = dmtcp_install.program("dmtcp_command")
    status = slurm_cluster.run(
        command, "-h", "127.0.0.1", "-p", port, "--status", user=ALICE, check=False
    ).stdout
    assert "NUM_PEERS=2" in status and "RUNNING=yes" in status, status
    with pytest.raises(SckptError) as refused:
        facade.create(job.step, max_wait=30)
    words = str(refused.value) + refused.value.hint
    assert f"a cut must include every task: task {early} of the step has ended" in words
    rec = job.record()
    assert rec is not None and rec.in_progress is None and not rec.last_image
    # The other task ends well: its DMTCP process kept its coordinator to the end.
    wait_for(lambda: job.field("JobState") == "COMPLETED", timeout=90)
    out = (work / "out.txt").read_text()
    assert "0 done" in out and "1 done" in out, out
