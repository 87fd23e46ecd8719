"""What the help and the refusals say, as a new user met them (issue 34, defect 16).

Each was found by running the README's commands with good and bad input: restart's help
listed step targets, one --force text served two commands, ``hold 12.`` suggested step
forms, ``doctor --help`` had no description, ``--demo run`` ignored ``--demo``, ``ls -u ''``
did not name its option, ``output 999999`` did not say there is no such job, ``able 42``
and ``able 42.0`` disagreed on a suspended job, and the demo's hold/release codes and
job-control refusals differed from the real controller's and from the README.
"""

from __future__ import annotations

from sckpt.backend.model import JobState
from sckpt.backend.simulator import SimulatedCluster

from .conftest import CliEnv


def _help(cli_env: CliEnv, command: str) -> str:
    shown = cli_env.run(command, "--help")
    assert shown.code == 0, shown.err
    return " ".join(shown.out.split())


def test_help_says_what_each_command_takes(cli_env: CliEnv) -> None:
    restart = _help(cli_env, "restart")
    target = restart.split("TARGET JOB or JOB.batch")[1].split("options:")[0]
    assert "JOB.STEP" not in target and "JOB.extern" not in target
    vacate = _help(cli_env, "vacate")
    assert "--force end the job even where tasks have no image" in vacate
    assert "restart:" not in vacate and "release the job" not in vacate
    assert "--force release the job even where a task's image is missing" in restart
    assert "vacate:" not in restart and "end the job even" not in restart
    doctor = _help(cli_env, "doctor")
    assert "Check what sckpt needs" in doctor and "Exit 0 when sckpt can talk to Slurm" in doctor


def test_refusals_name_what_was_wrong(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    hold = cli_env.run("hold", "12.")
    assert hold.code == 2 and "expected JOB (for example 123)" in hold.err
    assert "JOB.STEP" not in hold.err and "JOB.extern" not in hold.err
    user = cli_env.run("ls", "-u", "")
    assert user.code == 2 and user.err.startswith("sckpt: -u/--user: expected one or more")
    nothing = cli_env.run("output", "999999")
    assert nothing.code == 1 and nothing.err.rstrip().endswith("there is no job 999999")
    demo_run = cli_env.run("--demo", "run", "--", "true")
    assert demo_run.code == 2 and "--demo cannot be used with 'sckpt run'" in demo_run.err


def test_able_of_a_suspended_job_and_of_its_step_agree(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = cluster.control.submit("alice", name="md", n_steps=1).job_id
    cluster.control.set_job_state(job, JobState.SUSPENDED)
    whole = cli_env.run("--as-user", "alice", "able", str(job))
    step = cli_env.run("--as-user", "alice", "able", f"{job}.0")
    assert (whole.code, whole.out) == (step.code, step.out) == (0, "No\n")


def test_job_control_refusals_are_the_controllers_and_say_whose_job(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = cluster.control.submit("alice", name="md", n_steps=1).job_id
    said = {
        verb: cli_env.run("--as-user", "bob", verb, str(job)).err.strip()
        for verb in ("hold", "release", "cancel", "requeue")
    }
    owner = f"job {job} belongs to alice; only its owner or an operator may do this"
    for verb in ("hold", "release"):  # scontrol's code and words; whose job, as the README says
        assert said[verb] == (
            f"sckpt: {verb} {job}: ESLURM_USER_ID_MISSING (2010): Invalid user id; {owner}"
        )
    for verb in ("cancel", "requeue"):
        assert said[verb] == (
            f"sckpt: {verb} {job}: ESLURM_ACCESS_DENIED (2002): Access/permission denied; "
            f"job {job} belongs to alice; only its owner or an operator may do this"
        )
