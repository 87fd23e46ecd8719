"""Job arrays on the simulated cluster, through the command line: names as squeue writes
them, targets as scontrol reads them, and each action on the right job record.

The layout is slurmctld's (``SimulatorControl.submit_array``): tasks that started have job
records of their own with new job ids; the tasks still pending share the array's record.
The real-cluster twins of these tests are ``test_real_cluster_arrays.py`` (22.05) and
``tests/native/test_arrays_1905.py``.
"""

from __future__ import annotations

import json

import pytest
from sckpt.backend.errors import UsageError
from sckpt.backend.model import (
    WHOLE_JOB,
    Job,
    JobState,
    StepId,
    compress_task_ids,
    expand_task_ranges,
    job_label,
)
from sckpt.backend.simulator import SimulatedCluster
from sckpt.backend.targets import parse_target, parse_targets

from .conftest import CliEnv


@pytest.fixture
def arrays(cluster: SimulatedCluster) -> dict[str, int]:
    """``run``: 3 tasks running; ``limited``: 2 running, 3-20 waiting on %2; ``held``."""
    run = cluster.control.submit_array("alice", "1-3", running=3)
    limited = cluster.control.submit_array("alice", "1-20", running=2, max_tasks=2)
    held = cluster.control.submit_array("bob", "1-50", max_tasks=2, held=True)
    return {
        "run": run[0].array_job_id,
        "limited": limited[0].array_job_id,
        "held": held[0].array_job_id,
    }


def _record(cluster: SimulatedCluster, label: str) -> Job:
    (job,) = cluster.jobs_where(lambda j: j.label == label)
    return job


def test_ids_are_squeues_with_the_task_records_own_job_ids(
    cli_env: CliEnv, cluster: SimulatedCluster, arrays: dict[str, int]
) -> None:
    run, limited, held = arrays["run"], arrays["limited"], arrays["held"]
    result = cli_env.run("ls", "-h", "-o", "%i|%A|%F|%K|%t|%r")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    # squeue's -S i order: tasks by task under their array's id, the pending record last
    own = {label: _record(cluster, label).job_id for label in (f"{run}_1", f"{run}_2")}
    assert lines[:3] == [
        f"{run}_1|{own[f'{run}_1']}|{run}|1|R|None",
        f"{run}_2|{own[f'{run}_2']}|{run}|2|R|None",
        f"{run}_3|{run}|{run}|3|R|None",  # the last task to start keeps the array's record
    ]
    assert lines[5] == f"{limited}_[3-20%2]|{limited}|{limited}|3-20%2|PD|JobArrayTaskLimit"
    assert lines[6] == f"{held}_[1-50%2]|{held}|{held}|1-50%2|PD|JobHeldUser"


def test_json_carries_the_array_fields_and_the_task_count(
    cli_env: CliEnv, cluster: SimulatedCluster, arrays: dict[str, int]
) -> None:
    result = cli_env.run("ls", "--json", "-j", f"{arrays['run']}_2,{arrays['held']}")
    assert result.code == 0, result.err
    task, held = json.loads(result.out)["jobs"]
    assert (task["id"], task["array_job_id"], task["array_task_id"]) == (
        f"{arrays['run']}_2",
        arrays["run"],
        2,
    )
    assert task["job_id"] == _record(cluster, f"{arrays['run']}_2").job_id != arrays["run"]
    assert [s["step_id"] for s in task["steps"]][-1] == f"{arrays['run']}_2.0"
    assert task["steps"][-1]["array_task_id"] == 2
    assert held["id"] == f"{arrays['held']}_[1-50%2]"
    assert (held["array_task_count"], held["array_task_id"], held["array_max_tasks"]) == (
        50,
        None,
        2,
    )
    table = cli_env.run("ls", "-j", str(arrays["held"]))
    assert table.out.splitlines()[1].endswith("pending (50 tasks)")


def test_an_action_on_a_task_reaches_that_tasks_record_only(
    cli_env: CliEnv, cluster: SimulatedCluster, arrays: dict[str, int]
) -> None:
    run = arrays["run"]
    result = cli_env.run("--as-user", "alice", "hold", f"{run}_2")
    assert (result.code, result.out) == (0, f"{run}_2: hold requested\n")
    assert [_record(cluster, f"{run}_{t}").held for t in (1, 2, 3)] == [False, True, False]
    line = cli_env.audit()[-1]
    assert (line["operation"], line["target"]) == ("hold", f"{run}_2")
    disabled = cli_env.run("--as-user", "alice", "disable", f"{run}_1.0")
    assert disabled.code == 0, disabled.err
    states = {
        s.step.step_id: s.checkpoint.kind.value for v in cluster.snapshot().jobs for s in v.steps
    }
    task1 = _record(cluster, f"{run}_1").job_id
    assert states[StepId(task1, 0)] == "disabled"
    assert states[StepId(_record(cluster, f"{run}_2").job_id, 0)] == "able"


def test_the_arrays_id_and_a_task_range_name_every_task(
    cli_env: CliEnv, cluster: SimulatedCluster, arrays: dict[str, int]
) -> None:
    limited = arrays["limited"]
    result = cli_env.run("--as-user", "alice", "hold", str(limited))
    assert result.out.splitlines() == [
        f"{limited}_1: hold requested",
        f"{limited}_2: hold requested",
        f"{limited}_[3-20%2]: hold requested",  # the record of the pending tasks, named
    ]
    assert all(j.held for j in cluster.jobs_where(lambda j: j.array_job_id == limited))
    released = cli_env.run("--as-user", "alice", "release", f"{limited}_[1-2]")
    assert released.code == 0, released.err
    assert [_record(cluster, f"{limited}_{t}").held for t in (1, 2)] == [False, False]
    assert cluster.job(limited).held  # the pending record was not named


def test_release_of_a_pending_task_splits_it_off_as_slurmctld_does(
    cli_env: CliEnv, cluster: SimulatedCluster, arrays: dict[str, int]
) -> None:
    held = arrays["held"]
    result = cli_env.run("--as-user", "bob", "release", f"{held}_7")
    assert (result.code, result.out) == (0, f"{held}_7: release requested\n")
    task = _record(cluster, f"{held}_7")
    assert task.job_id != held and not task.held  # a record of its own, released
    rest = cluster.job(held)
    assert (rest.label, rest.held) == (f"{held}_[1-6,8-50%2]", True)
    assert cli_env.audit()[-1]["target"] == f"{held}_7"


def test_other_actions_on_a_pending_task_are_refused_with_what_to_do(
    cli_env: CliEnv, cluster: SimulatedCluster, arrays: dict[str, int]
) -> None:
    held = arrays["held"]
    result = cli_env.run("--as-user", "bob", "cancel", f"{held}_7")
    assert result.code == 2
    assert f"it is one of the pending tasks {held}_[1-50%2]" in result.err
    assert cluster.job(held).state is JobState.PENDING
    assert cluster.job(held).array_task_str == "1-50%2"
    missing = cli_env.run("able", f"{arrays['run']}_9.0")
    assert missing.code == 1
    assert "ESLURM_INVALID_JOB_ID" in missing.err and f"{arrays['run']}_9" in missing.err


def test_filters_and_dash_j_take_squeues_ids(
    cli_env: CliEnv, cluster: SimulatedCluster, arrays: dict[str, int]
) -> None:
    run, held = arrays["run"], arrays["held"]
    ids = cli_env.run("ls", "-h", "-o", "%i", "-j", f"{run}_3,{held}_9")
    assert ids.out.split() == [f"{run}_3", f"{held}_[1-50%2]"]  # squeue -j 7_9: its record
    words = cli_env.run("ls", "-h", "-o", "%i", f"id:{run}_")
    assert words.out.split() == [f"{run}_1", f"{run}_2", f"{run}_3"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7_3", [StepId(0, WHOLE_JOB, array_job_id=7, array_task_id=3)]),
        ("7_3.0", [StepId(0, 0, array_job_id=7, array_task_id=3)]),
        (
            "7_[1-2,5].batch",
            [StepId(0, 0xFFFFFFFB, array_job_id=7, array_task_id=t) for t in (1, 2, 5)],
        ),
        ("7_[0-8:4%2]", [StepId(0, WHOLE_JOB, array_job_id=7, array_task_id=t) for t in (0, 4, 8)]),
    ],
)
def test_array_targets_parse_as_scontrol_writes_them(text: str, expected: list[StepId]) -> None:
    found = parse_targets(text)
    assert list(found) == expected
    assert [(s.array_job_id, s.array_task_id) for s in found] == [
        (s.array_job_id, s.array_task_id) for s in expected
    ]
    assert str(found[0]).split("[")[0].startswith("7_")


@pytest.mark.parametrize("text", ["7_", "7_[", "7_[3-1]", "7_[a]", "7_3_4", "7_[1-20000]"])
def test_bad_array_targets_are_one_clear_sentence(text: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_targets(text)
    assert "\n" not in str(raised.value)
    with pytest.raises(UsageError):
        parse_target("7_[1-3]")  # several: parse_targets only


def test_task_ranges_round_trip() -> None:
    assert expand_task_ranges("1-3,7,10-20:5%2") == (1, 2, 3, 7, 10, 15, 20)
    assert compress_task_ids([5, 1, 2, 3, 9]) == "1-3,5,9"
    job = Job(7, "a", "u", 1, "p", JobState.PENDING, array_job_id=7, array_task_str="1-50%2")
    assert (job_label(job), job.array_task_count) == ("7_[1-50%2]", 50)
    cut = Job(7, "a", "u", 1, "p", JobState.PENDING, array_job_id=7, array_task_str="1,3,...")
    assert cut.array_task_count == 0  # libslurm cut the range short: no count is made up


def test_a_checkpoint_of_an_array_names_its_pending_record_and_leaves_it(
    cli_env: CliEnv, cluster: SimulatedCluster, arrays: dict[str, int]
) -> None:
    """``able 7``/``create 7`` with tasks 1 and 2 running exited 1 with ESLURM_JOB_PENDING
    naming ``7``: the record of tasks 3-20 is now named as squeue names it and said to be
    left as it is, and the exit status is the running tasks' (0)."""
    limited = arrays["limited"]
    record = f"{limited}_[3-20%2]"
    for verb in ("able", "create"):
        result = cli_env.run("--as-user", "alice", verb, str(limited))
        assert result.code == 0, result.err
        assert [line.split(":")[0] for line in result.lines] == [f"{limited}_1", f"{limited}_2"]
        assert result.err == (
            f"sckpt: {verb} {record}: not acted on: its 18 tasks are still pending "
            "(no steps until each starts)\n"
        )
    document = json.loads(cli_env.run("--as-user", "alice", "--json", "able", str(limited)).out)
    assert document["exit_code"] == 0
    assert document["results"][-1] == {
        "target": record,
        "operation": "able",
        "ok": True,
        "acted": False,
        "skipped": "not acted on: its 18 tasks are still pending (no steps until each starts)",
    }
    # An array with no task running: nothing was done, Slurm's refusal, named (exit 1).
    held = arrays["held"]
    refused = cli_env.run("--as-user", "bob", "create", str(held))
    assert refused.code == 1
    assert refused.err.startswith(f"sckpt: create {held}_[1-50%2]: ESLURM_JOB_PENDING (2024)")


def test_the_steps_an_answer_names_are_the_tasks(
    cli_env: CliEnv, cluster: SimulatedCluster, arrays: dict[str, int]
) -> None:
    """``--json``'s per_step named an array task's steps by their record's id (10.0)."""
    run = arrays["run"]
    document = json.loads(cli_env.run("--as-user", "alice", "--json", "create", f"{run}_2").out)
    steps = [s["step"] for s in document["results"][0]["per_step"]]
    assert steps and all(step.startswith(f"{run}_2.") for step in steps), steps
