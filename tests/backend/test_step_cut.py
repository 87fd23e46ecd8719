"""A request naming only some tasks of a step under one DMTCP coordinator is refused (issue
33): the cooperative engine over the simulated controller, with the step's record as two
``sckpt run --transparent`` tasks on two nodes leave it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.protocol import StepRecord, TaskInfo
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.errors import SckptError
from sckpt.backend.model import StepId

from .test_auto import _cluster, _cooperative


def _two_tasks(tmp_path: Path, step: StepId, node: str, coordinator: str) -> StepStore:
    store = StepStore(tmp_path / "state", step)
    store.ensure_directory()

    def register(rec: StepRecord) -> None:
        rec.coordinator = coordinator
        rec.tasks["0"] = TaskInfo(0, node, 4242, 0, "SIGUSR1", "/img", checkpointer="dmtcp")
        rec.tasks["1"] = TaskInfo(1, "elsewhere", 4243, 0, "SIGUSR1", "/img", checkpointer="dmtcp")

    store.update(register, create=True)
    return store


@pytest.mark.parametrize("coordinator", ["step", "task"])
def test_tasks_on_some_nodes_only(tmp_path: Path, coordinator: str) -> None:
    cluster = _cluster()
    job = cluster.control.submit("alice", n_steps=1, duration=36000)
    facade = _cooperative(cluster, tmp_path)
    step = next(
        v.step for j in facade.snapshot().jobs if j.job.job_id == job.job_id for v in j.steps
    )
    node = step.nodes.split(",")[0]
    images = Path(tempfile.mkdtemp(prefix="sckpt-cut-", dir="/tmp"))
    images.chmod(0o1777)  # the job's user may write there
    store = _two_tasks(tmp_path, step.step_id, node, coordinator)
    if coordinator == "step":
        with pytest.raises(SckptError) as refused:
            facade.tasks(str(step.step_id), 0, str(images), 60, node)
        assert "a cut must include every task" in str(refused.value) + refused.value.hint
        rec = store.read()
        assert rec is not None and rec.in_progress is None  # nothing was asked
    else:  # one coordinator per task: a task alone is a cut of its own
        facade.tasks(str(step.step_id), 0, str(images), 60, node)
        rec = store.read()
        assert rec is not None and rec.in_progress is not None
        assert rec.in_progress.pending == [0]
    images.rmdir()
