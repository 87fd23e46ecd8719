"""The native engine against a stand-in binding (no Slurm <= 19.05 exists on this machine).

What is checked: each operation reaches the matching ``ckpt_*`` call with the target and
arguments unchanged, the controller's refusals come back as the same typed errors, and
the snapshot's checkpoint column comes from ``able``/``error`` per running step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sckpt.backend import errors as E
from sckpt.backend.config import Settings
from sckpt.backend.engines.native import NativeEngine
from sckpt.backend.facade import Facade
from sckpt.backend.libslurm import JobsResult, StepsResult
from sckpt.backend.model import (
    STEP_BATCH,
    CheckpointKind,
    Job,
    JobState,
    Step,
    StepId,
)


class FakeBinding:
    """Answers like libslurm 19.05 would for job 7 (steps batch, 0, 1) owned by root."""

    header_version = "19.05.8"
    caller_uid = 0
    caller_name = "root"

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.disabled = {StepId(7, 1)}
        self.in_progress = {StepId(7, 0): 1_700_000_000}
        self.errors = {StepId(7, 0): (28, "No space left on device")}

    def load_jobs(self, prev: int = 0) -> JobsResult:
        job = Job(7, "sim", "root", 0, "debug", JobState.RUNNING, nodes="n1", batch=True)
        return JobsResult(True, 5, (job,))

    def get_steps(self, prev: int = 0) -> StepsResult:
        steps = tuple(
            Step(StepId(7, n), "s", "root", 0, "debug", "RUNNING", "n1") for n in (0, 1, STEP_BATCH)
        )
        return StepsResult(True, 5, steps)

    def ckpt_able(self, step: StepId) -> int:
        self.calls.append(("able", step))
        if step in self.disabled:
            raise E.Disabled()
        return self.in_progress.get(step, 0)

    def ckpt_error(self, step: StepId) -> tuple[int, str]:
        self.calls.append(("error", step))
        return self.errors.get(step, (0, ""))

    def ckpt_create(self, step: StepId, max_wait: int, image_dir: str | None) -> None:
        self.calls.append(("create", step, max_wait, image_dir))

    def ckpt_vacate(self, step: StepId, max_wait: int, image_dir: str | None) -> None:
        self.calls.append(("vacate", step, max_wait, image_dir))
        raise E.error_for(E.EALREADY)

    def ckpt_restart(self, step: StepId, stick: bool, image_dir: str | None) -> None:
        self.calls.append(("restart", step, stick, image_dir))

    def ckpt_enable(self, step: StepId) -> None:
        self.calls.append(("enable", step))

    def ckpt_disable(self, step: StepId) -> None:
        self.calls.append(("disable", step))

    def ckpt_complete(self, step: StepId, begin: int, code: int, msg: str) -> None:
        self.calls.append(("complete", step, begin, code, msg))

    def ckpt_tasks(
        self, step: StepId, begin: int, image_dir: str, max_wait: int, nodes: str
    ) -> None:
        self.calls.append(("tasks", step, begin, image_dir, max_wait, nodes))


@pytest.fixture
def native(tmp_path: Path) -> tuple[Facade, FakeBinding]:
    binding = FakeBinding()
    return Facade(NativeEngine(binding), Settings(audit_log=tmp_path / "a.log")), binding


def test_operations_reach_the_checkpoint_calls(native: tuple[Facade, FakeBinding]) -> None:
    facade, binding = native
    facade.create("7", max_wait=12, image_dir="/ck")
    facade.restart("7", stick=True)
    facade.enable("7.1")
    facade.disable("7.batch")
    facade.complete("7.0", 1_700_000_000, 5, "io")
    facade.tasks("7.0", 3, "/ck", 60, "")
    assert binding.calls == [
        ("create", StepId(7), 12, "/ck"),
        ("restart", StepId(7), True, None),
        ("enable", StepId(7, 1)),
        ("disable", StepId(7, STEP_BATCH)),
        ("complete", StepId(7, 0), 1_700_000_000, 5, "io"),
        ("tasks", StepId(7, 0), 3, "/ck", 60, "n1"),
    ]


def test_refusals_come_back_typed(native: tuple[Facade, FakeBinding]) -> None:
    facade, _binding = native
    with pytest.raises(E.AlreadyInProgress):
        facade.vacate("7.0")
    with pytest.raises(E.Disabled):
        facade.able("7.1")
    assert facade.able("7.0").in_progress_since == 1_700_000_000
    err = facade.error("7.0")
    assert (err.code, err.name) == (28, "ENOSPC")


def test_snapshot_shows_able_disabled_in_progress_and_last_error(
    native: tuple[Facade, FakeBinding],
) -> None:
    facade, _binding = native
    (view,) = facade.snapshot().jobs
    kinds = {str(s.step.step_id): s.checkpoint for s in view.steps}
    assert [str(s.step.step_id) for s in view.steps] == ["7.batch", "7.0", "7.1"]
    assert kinds["7.batch"].kind is CheckpointKind.ABLE
    assert kinds["7.0"].kind is CheckpointKind.IN_PROGRESS
    assert kinds["7.0"].in_progress_since == 1_700_000_000
    assert kinds["7.0"].last_error is not None and kinds["7.0"].last_error.code == 28
    assert kinds["7.1"].kind is CheckpointKind.DISABLED


def test_probes_are_bounded_per_refresh(tmp_path: Path) -> None:
    binding = FakeBinding()
    engine = NativeEngine(binding, max_probes=1, probe_ttl=0)
    (view,) = engine.snapshot().jobs
    assert [s.checkpoint.kind for s in view.steps].count(CheckpointKind.UNKNOWN) == 2
    assert sum(1 for c in binding.calls if c[0] == "able") == 1
