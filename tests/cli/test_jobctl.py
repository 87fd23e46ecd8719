"""sckpt cancel, hold, release, requeue on the simulated cluster, state persisting between
commands: what they print, their exit codes, the job's state after, and the audit log.

The simulated controller answers as slurmctld's ``job_signal`` and ``update_job`` do; the
same commands against the real 22.05 controller, beside scancel and scontrol, are in
``test_jobctl_real.py``.
"""

from __future__ import annotations

import json

import pytest
from sckpt.backend.model import JobState
from sckpt.backend.simulator import SimulatedCluster

from .conftest import CliEnv


def test_cancel_ends_the_job_then_a_second_cancel_says_already_done(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = cluster.control.submit("alice", name="md", n_steps=2).job_id
    result = cli_env.run("--as-user", "alice", "cancel", str(job))
    assert (result.code, result.out, result.err) == (0, f"{job}: cancel requested\n", "")
    assert cluster.job(job).state is JobState.CANCELLED
    again = cli_env.run("--as-user", "alice", "cancel", str(job))
    assert again.code == 1 and again.out == ""
    assert again.err == (
        f"sckpt: cancel {job}: ESLURM_ALREADY_DONE (2021): "
        "Job/step already completing or completed\n"
    )
    assert [(x["operation"], x["target"], x["result"]["code"]) for x in cli_env.audit()] == [
        ("cancel", str(job), 0),
        ("cancel", str(job), 2021),
    ]


def test_cancel_of_a_step_ends_only_that_step(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    job = cluster.control.submit("alice", name="md", n_steps=2).job_id
    assert cli_env.run("cancel", f"{job}.0").out == f"{job}.0: cancel requested\n"
    listed = json.loads(cli_env.run("--json", "ls", "-j", str(job)).out)
    (shown,) = listed["jobs"]
    assert shown["state"] == "RUNNING"
    assert f"{job}.0" not in {s["step_id"] for s in shown["steps"]}
    assert f"{job}.1" in {s["step_id"] for s in shown["steps"]}


def test_cancel_signal_is_sent_and_named(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    job = cluster.control.submit("alice", name="md", n_steps=1).job_id
    result = cli_env.run("cancel", "--signal", "usr1", str(job))
    assert result.out == f"{job}: signal SIGUSR1 sent\n" and result.code == 0
    assert cluster.job(job).state is JobState.RUNNING  # a signal is not an end
    assert cli_env.audit()[-1]["arguments"] == {"signal": 10}
    pending = cluster.control.submit("alice", name="pd", state=JobState.PENDING).job_id
    refused = cli_env.run("cancel", "--signal", "TERM", str(pending))
    assert refused.code == 1 and "ESLURM_TRANSITION_STATE_NO_UPDATE (2020)" in refused.err


def test_hold_release_requeue_as_scontrol(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    pending = cluster.control.submit("alice", name="pd", state=JobState.PENDING).job_id
    running = cluster.control.submit("alice", name="run", n_steps=1).job_id
    assert cli_env.run("--as-user", "alice", "hold", str(pending)).code == 0
    job = cluster.job(pending)
    assert (job.state, job.held, job.state_reason) == (JobState.PENDING, True, "JobHeldUser")
    assert cli_env.run("hold", str(pending)).code == 0  # root's hold is an admin hold
    assert cluster.job(pending).state_reason == "JobHeldAdmin"
    owner = cli_env.run("--as-user", "alice", "release", str(pending))
    assert owner.code == 1 and "ESLURM_ACCESS_DENIED (2002)" in owner.err
    assert cli_env.run("release", str(pending)).code == 0
    assert not cluster.job(pending).held
    requeued = cli_env.run("--as-user", "alice", "requeue", str(running))
    assert requeued.out == f"{running}: requeue requested\n"
    assert cluster.job(running).state is JobState.PENDING
    again = cli_env.run("--as-user", "alice", "requeue", str(running))
    assert again.code == 1 and "ESLURM_JOB_PENDING (2024): Job is pending execution" in again.err


def test_requeue_of_a_job_without_a_script_and_hold_of_a_finished_one(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    interactive = cluster.control.submit("alice", name="salloc", batch=False).job_id
    result = cli_env.run("requeue", str(interactive))
    assert result.code == 1 and "ESLURM_BATCH_ONLY (2039)" in result.err
    assert cluster.job(interactive).state is JobState.RUNNING
    cluster.control.set_job_state(interactive, JobState.COMPLETED)
    held = cli_env.run("hold", str(interactive))
    assert held.code == 1 and "ESLURM_JOB_FINISHED (2084): Job has already finished" in held.err


def test_several_targets_each_reported_worst_code_wins_json(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    mine = cluster.control.submit("alice", name="a").job_id
    bobs = cluster.control.submit("bob", name="b").job_id
    result = cli_env.run("--as-user", "alice", "--json", "cancel", str(mine), str(bobs), "99999")
    document = json.loads(result.out)
    assert result.code == document["exit_code"] == 1
    assert document["operation"] == "cancel"
    outcomes = [(r["target"], r["ok"], r.get("error", {}).get("name")) for r in document["results"]]
    assert outcomes == [
        (str(mine), True, None),
        (str(bobs), False, "ESLURM_ACCESS_DENIED"),
        ("99999", False, "ESLURM_INVALID_JOB_ID"),
    ]
    assert cluster.job(mine).state is JobState.CANCELLED
    assert cluster.job(bobs).state is JobState.RUNNING


@pytest.mark.parametrize("verb", ["cancel", "hold", "release", "requeue"])
def test_read_only_refuses_and_audits(
    cli_env: CliEnv, cluster: SimulatedCluster, verb: str
) -> None:
    job = cluster.control.submit("alice", name="ro").job_id
    before = cluster.snapshot().jobs
    result = cli_env.run("--read-only", verb, str(job))
    assert result.code == 1 and result.out == ""
    assert result.err == (
        f"sckpt: {verb} {job} refused: sckpt is in read-only mode (start sckpt without "
        "--read-only (and read_only = false in the config) to act)\n"
    )
    assert cluster.snapshot().jobs == before
    (line,) = cli_env.audit()
    assert (line["operation"], line["result"]["name"]) == (verb, "READ_ONLY")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["hold", "{job}", "{job}.0"], "hold acts on a whole job: give JOB ({job}), not the step"),
        (["release", "{job}.batch"], "release acts on a whole job"),
        (["requeue", "{job}.0"], "requeue acts on a whole job"),
        (["cancel", "--signal", "NOPE", "{job}"], "invalid signal 'NOPE': expected a signal name"),
        (["cancel", "--signal", "0", "{job}"], "invalid signal '0'"),
        (["cancel", "12x"], "invalid job or step id '12x'"),
        (["hold"], "the following arguments are required: TARGET"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_done(
    cli_env: CliEnv, cluster: SimulatedCluster, argv: list[str], message: str
) -> None:
    job = cluster.control.submit("alice", name="bad").job_id
    before = cluster.snapshot().jobs
    result = cli_env.run(*(word.format(job=job) for word in argv))
    assert result.code == 2 and result.out == ""
    assert message.format(job=job) in result.err and result.err.count("\n") == 1
    assert "Traceback" not in result.err
    assert cluster.snapshot().jobs == before
    assert cluster.job(job).state is JobState.RUNNING and not cluster.job(job).held
