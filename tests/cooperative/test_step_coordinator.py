"""One DMTCP coordinator per step (``sckpt run --transparent``, the default ``--coordinator
step``) on the real Slurm 22.05: tasks that talk to each other over TCP are checkpointed as
one cut and restarted together.

The program is ``programs/tcp_chat.py``: rank 0 serves, the others send numbered messages
and check each answer; a lost or repeated message ends it with an error, and its final
lines (a hash of the whole conversation) must equal an uninterrupted run's.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.facade import Facade

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import cancel
from tests.cooperative.step_jobs import ChatJob, expected, submit_chat
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

COUNT = 2000


@pytest.fixture
def jobs(dmtcp_install: object, slurm_cluster: SlurmCluster) -> Iterator[list[int]]:
    ids: list[int] = []
    yield ids
    cancel(slurm_cluster, *ids)


@pytest.mark.parametrize("tasks", [2, 4])
def test_talking_tasks_create_vacate_restart_exact(  # type: ignore[no-untyped-def]
    jobs, facade: Facade, shared_dir: Path, slurm_cluster: SlurmCluster, tasks: int
) -> None:
    job = submit_chat(slurm_cluster, shared_dir / "chat", tasks, COUNT)
    jobs.append(job.id)
    wait_for(job.registered, timeout=90)
    rec = job.record()
    assert rec is not None and rec.coordinator == "step"
    assert rec.coord_public and len(rec.coord_ports) == 1

    before = [job.exchanged(r) for r in range(1, tasks)]
    facade.create(job.step, max_wait=60)
    rec = job.record()
    assert rec is not None and rec.error_code == 0, rec.error_msg
    assert sorted(rec.ckpt_seconds) == [str(r) for r in range(tasks)]  # every task's part
    for r in range(tasks):
        gen = Path(rec.last_image[str(r)])
        assert gen.name == "g1" and len(list(gen.glob("ckpt_*.dmtcp"))) >= 1, list(gen.iterdir())
    for r in range(1, tasks):  # the conversation goes on after the checkpoint
        wait_for(lambda r=r: job.exchanged(r) > before[r - 1] + 20, timeout=60)

    facade.vacate(job.step, max_wait=60)
    wait_for(lambda: job.field("JobState") == "PENDING", timeout=60)
    assert all(job.exchanged(r) < COUNT for r in range(1, tasks))  # vacated mid-conversation
    _restart_ends_exact(facade, job, generation=2, tasks=tasks)
    for r in range(1, tasks):  # every number once, in order, across the restart
        numbers = [int(line) for line in job.lines(r) if line.isdigit()]
        assert numbers == list(range(1, COUNT + 1)), f"rank {r}"


def test_a_task_killed_mid_checkpoint_leaves_the_previous_cut_for_every_task(  # type: ignore[no-untyped-def]
    jobs, facade: Facade, shared_dir: Path, slurm_cluster: SlurmCluster
) -> None:
    """Task 1's program is SIGKILLed while DMTCP writes its image: task 0's image of that
    checkpoint may be whole, but the step's cut is not, so generation 1 stays every task's
    restart point, and a restart from it ends with the uninterrupted run's result."""
    job = submit_chat(slurm_cluster, shared_dir / "chat", 2, COUNT, mib=300)
    jobs.append(job.id)
    wait_for(job.registered, timeout=90)
    facade.create(job.step, max_wait=60)
    rec = job.record()
    assert rec is not None
    first = dict(rec.last_image)
    assert [Path(p).name for p in first.values()] == ["g1", "g1"]
    victim = rec.tasks["1"].program_pid
    spool = job.work / f"{job.id}.chat" / "task1" / "dmtcp"

    outcome: list[object] = []
    asking = threading.Thread(target=lambda: outcome.append(_create(facade, job.step)))
    asking.start()
    wait_for(lambda: any(spool.glob("*.temp")), timeout=60, interval=0.01)
    os.kill(victim, signal.SIGKILL)
    asking.join(120)
    assert outcome and isinstance(outcome[0], Exception), outcome
    rec = job.record()
    assert rec is not None and rec.last_image == first, rec.last_image
    wait_for(lambda: job.field("JobState") not in ("RUNNING", "COMPLETING"), timeout=120)

    _restart_ends_exact(facade, job, generation=1, tasks=2)


def _restart_ends_exact(facade: Facade, job: ChatJob, generation: int, tasks: int) -> None:
    """Restart the job: every task resumes from ``generation`` of the step, and the run
    ends with an uninterrupted run's result."""
    facade.restart(str(job.id), stick=False)
    wait_for(lambda: job.registered(run=1), timeout=90)
    rec = job.record()
    assert rec is not None
    notes = [t.start_note for t in rec.tasks.values()]
    assert all(n.startswith(f"resumed from generation {generation}") for n in notes), notes
    wait_for(lambda: job.field("JobState") == "COMPLETED", timeout=240)
    assert job.results() == expected(tasks, COUNT)


def _create(facade: Facade, step: str) -> object:
    try:
        return facade.create(step, max_wait=60)
    except Exception as exc:  # the refusal is what is looked at
        return exc
