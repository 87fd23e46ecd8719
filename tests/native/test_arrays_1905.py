"""A job array on the real Slurm 19.05.8: named as 19.05's squeue names it, and acted on
task by task by the native engine, as ``scontrol checkpoint`` acts on the task's record.

19.05's ``scontrol checkpoint`` takes numbers only, so the oracle is given the task's own
job id (from ``scontrol show job ARRAY_TASK``); sckpt is given ``ARRAY_TASK.STEP``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from ..helpers import wait_for
from .conftest import Native
from .test_scontrol_1905 import assert_same_answer

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def array(native: Native) -> Iterator[int]:
    """``sbatch --array=1-2`` whose tasks each run a step 0 (``srun sleep``)."""
    out = native.cluster.run(
        "sbatch", "--parsable", "--array=1-2", "-o", "/dev/null", "--wrap", "srun sleep 900"
    )
    job = int(out.stdout.strip().split(";")[0])
    try:
        wait_for(
            lambda: {f"{job}_1.0", f"{job}_2.0"} <= set(native.steps(job)),
            timeout=180,  # a 19.05 cluster just started by the fixture registers its node first
        )
        yield job
    finally:
        native.cancel(job)


def _own_id(native: Native, task: str) -> int:
    out = native.scontrol("-o", "show", "job", task).stdout
    found = re.search(r"\bJobId=(\d+)", out)
    assert found is not None, out
    return int(found[1])


def test_ls_names_tasks_and_their_steps_as_squeue_1905(native: Native, array: int) -> None:
    for argv in (["-o", "%i %A %F %K %t"], ["-s", "-o", "%i %j"]):
        ours = native.sckpt("ls", "-h", "-S", "i", "-j", str(array), *argv)
        theirs = native.cluster.run("squeue", "-h", "-S", "i", "-j", str(array), *argv).stdout
        assert ours.returncode == 0, ours.stderr
        # 19.05's squeue writes the batch step "Batch" (test_scontrol_1905 lowers it too)
        assert sorted(ours.stdout.lower().splitlines()) == sorted(theirs.lower().splitlines())
    assert f"{array}_2.0" in native.sckpt("ls", "-s", "-h", "-j", str(array)).stdout


def test_checkpoint_ops_on_one_task_act_on_its_record_as_scontrol(
    native: Native, array: int
) -> None:
    task, other = f"{array}_2", f"{array}_1"
    own, other_own = _own_id(native, task), _own_id(native, other)
    assert own != other_own
    for op in ("able", "error"):
        assert_same_answer(
            native.sckpt("checkpoint", op, f"{task}.0"),
            native.scontrol("checkpoint", op, f"{own}.0"),
            f"{op} {task}.0",
        )
    disabled = native.sckpt("disable", f"{task}.0")
    try:
        assert disabled.returncode == 0, disabled.stderr
        assert disabled.stdout.startswith(f"{task}.0: ")
        # 19.05's own answer: that task's step is disabled, its neighbour's is not.
        theirs = native.scontrol("checkpoint", "able", f"{own}.0")
        assert (theirs.returncode, theirs.stdout) == (0, "No\n")
        neighbour = native.scontrol("checkpoint", "able", f"{other_own}.0")
        assert (neighbour.returncode, neighbour.stdout) == (0, "Yes\n")
        assert_same_answer(
            native.sckpt("checkpoint", "able", f"{task}.0"), theirs, f"able {task}.0 disabled"
        )
    finally:
        enabled = native.sckpt("enable", f"{task}.0")
    assert enabled.returncode == 0, enabled.stderr
    assert native.scontrol("checkpoint", "able", f"{own}.0").stdout == "Yes\n"
