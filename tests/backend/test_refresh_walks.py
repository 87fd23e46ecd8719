"""What one refresh of the cooperative engine reads from the filesystem (issue 34, idle CPU).

A refresh asks every running step's state file.  It used to walk from "/" to the file's
directory (``open_trusted_dir``, one ``open`` per path component) for every step; the
steps of a job, and here of two jobs, share that directory.  These tests count the
``os.open`` calls of a refresh: one walk per state directory, one open per state file, and
the columns exactly those the step-by-step path (``checkpoint_state``) gives.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend.checkpointing.engine import CooperativeEngine
from sckpt.backend.checkpointing.protocol import STATE_SUBDIR, StepRecord, StoreError, TaskInfo
from sckpt.backend.checkpointing.store import RefreshWalks, StepStore
from sckpt.backend.model import STEP_EXTERN, CheckpointKind, StepId
from sckpt.backend.simulator import ManualClock, SimulatedCluster


def _me() -> str:
    return "root" if os.getuid() == 0 else str(os.getuid())


class _Opens:
    """``os.open`` counted by what it opens: "/" starts a walk; state files end in .json."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: Counter[str] = Counter()
        real: Callable[..., int] = os.open

        def counted(path: Any, *args: Any, **kwargs: Any) -> int:
            name = str(path)
            self.seen["walk" if name == "/" else "state" if name.endswith(".json") else ""] += 1
            return real(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", counted)

    def during(self, action: Callable[[], object]) -> Counter[str]:
        self.seen.clear()
        action()
        return Counter(self.seen)


def _register(directory: Path, step: StepId) -> None:
    """The step's record as ``sckpt run`` leaves it: one running task."""
    store = StepStore(directory, step)
    store.ensure_directory()

    def register(rec: StepRecord) -> None:
        rec.tasks["0"] = TaskInfo(0, "cn01", 4242, 0, "SIGUSR1", "/img", handler="caught")

    store.update(register, create=True)


@pytest.fixture
def three_jobs(tmp_path: Path) -> Iterator[tuple[SimulatedCluster, CooperativeEngine, list[int]]]:
    """Three running jobs of two steps: two in work dir ``a`` (one step registered), one
    in ``b``; the engine finds their state files next to the working directories."""
    cluster = SimulatedCluster(
        seed=5, n_jobs=0, clock=ManualClock(), arrivals=False, demo_touches=False
    )
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    jobs = [
        cluster.control.submit(_me(), n_steps=2, duration=36000, work_dir=str(tmp_path / d))
        for d in ("a", "a", "b")
    ]
    _register(tmp_path / "a" / STATE_SUBDIR, StepId(jobs[0].job_id, 0))
    engine = CooperativeEngine(cluster.connect(_me()), clock=cluster.clock)
    yield cluster, engine, [j.job_id for j in jobs]
    engine.close()


def _states(engine: CooperativeEngine) -> dict[StepId, Any]:
    return {v.step.step_id: v.checkpoint for j in engine.snapshot().jobs for v in j.steps}


def test_a_refresh_walks_once_per_state_directory_and_opens_each_state_file_once(
    three_jobs: tuple[SimulatedCluster, CooperativeEngine, list[int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _cluster, engine, jobs = three_jobs
    states = _states(engine)
    asked = [s for s in states if s.job_id in jobs and s.step != STEP_EXTERN]
    assert len(asked) >= 6  # each job's batch script and its two steps
    opens = _Opens(monkeypatch)
    for _ in range(3):  # the first refresh and unchanged ones alike
        counted = opens.during(engine.snapshot)
        # Work dirs a and b: two walks (the old code walked once per step: 9 here).
        assert counted["walk"] == 2
        # Only a's .sckpt exists: the state files of jobs[0] and jobs[1] are opened once.
        assert counted["state"] == len([s for s in asked if s.job_id != jobs[2]])


def test_the_columns_are_those_of_each_step_asked_alone(
    three_jobs: tuple[SimulatedCluster, CooperativeEngine, list[int]], tmp_path: Path
) -> None:
    _cluster, engine, jobs = three_jobs
    states = _states(engine)
    views = {v.step.step_id: (j.job, v.step) for j in engine.snapshot().jobs for v in j.steps}
    assert {sid: engine.checkpoint_state(*views[sid]) for sid in states} == states
    registered = states[StepId(jobs[0], 0)]
    assert registered.kind is CheckpointKind.ABLE
    assert states[StepId(jobs[0], 1)].kind is CheckpointKind.NOT_SUPPORTED

    # A directory changed between refreshes is walked again: the next refresh sees it.
    _register(tmp_path / "b" / STATE_SUBDIR, StepId(jobs[2], 1))
    assert _states(engine)[StepId(jobs[2], 1)].kind is CheckpointKind.ABLE


def test_a_refused_directory_is_refused_for_each_step_with_the_same_words(
    tmp_path: Path,
) -> None:
    (tmp_path / "open").mkdir(mode=0o777)
    (tmp_path / "open").chmod(0o777)  # writable by all, not sticky: refused
    walks = RefreshWalks()
    stores = [StepStore(tmp_path / "open" / "s", StepId(9, n), owner=os.getuid()) for n in (0, 1)]
    with walks.batch():
        refusals = []
        for store in stores:
            with pytest.raises(StoreError) as refused:
                store.read_raw(walks)
            refusals.append(refused.value.message)
    with pytest.raises(StoreError) as alone:
        stores[0].read_raw()
    assert refusals == [alone.value.message] * 2
    assert "writable by other users" in alone.value.message
