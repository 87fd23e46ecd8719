"""Every command and option against the simulated cluster, state persisting between runs.

Each test submits its own jobs to a fresh ``SimulatedCluster`` on a manual clock and drives
it only through ``sckpt`` commands, then checks what the commands print, their exit codes,
the cluster's state and the audit log.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest
from sckpt.backend.model import JobState, StepId
from sckpt.backend.simulator import SimulatedCluster
from sckpt.cli.output import format_time

from .conftest import CliEnv


def _running(cluster: SimulatedCluster, user: str = "alice", steps: int = 2) -> int:
    return cluster.control.submit(user, name="md", n_steps=steps).job_id


def test_disable_is_a_counter_and_able_answers_yes_or_no(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = _running(cluster)
    step = f"{job}.0"
    assert cli_env.run("able", step).out == "Yes\n"
    assert cli_env.run("disable", step).code == 0
    assert cli_env.run("disable", step).code == 0
    assert cli_env.run("enable", step).out == f"{step}: enable requested\n"
    result = cli_env.run("able", step)
    assert (result.code, result.out, result.err) == (0, "No\n", "")  # No is not an error
    assert cluster.step_state(StepId(job, 0)).disable_count == 1
    assert cli_env.run("enable", step).code == 0
    assert cli_env.run("able", step).out == "Yes\n"
    # enable at 0 stays 0 (no wrap to 65535)
    assert cli_env.run("enable", step).code == 0
    assert cluster.step_state(StepId(job, 0)).disable_count == 0
    operations = [(line["operation"], line["target"]) for line in cli_env.audit()]
    assert operations == [
        ("disable", step),
        ("disable", step),
        ("enable", step),
        ("enable", step),
        ("enable", step),
    ]


def test_create_runs_in_the_background_then_error_reports_the_result(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = _running(cluster)
    step = StepId(job, 1)
    cluster.control.script_checkpoint(step, duration=20, code=0)
    result = cli_env.run("create", str(step), "--max-wait", "60", "--image-dir", "/scratch/ck")
    assert result.code == 0
    assert result.out == f"{step}: create requested: max_wait 60s, image dir /scratch/ck\n"
    began = int(cluster.now())
    assert cli_env.run("able", str(step)).out == f"Began at {format_time(began)}\n"
    again = cli_env.run("create", str(step))
    assert again.code == 1 and "EALREADY" in again.err and again.out == ""
    assert cluster.step_state(step).image_dir == f"/scratch/ck/{job}.1"
    cluster.control.advance(21)
    assert cli_env.run("able", str(step)).out == "Yes\n"
    assert cli_env.run("error", str(step)).out == "error(0): \n"


def test_max_wait_exceeded_is_recorded_as_the_error(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = _running(cluster)
    step = StepId(job, 0)
    cluster.control.script_checkpoint(step, duration=50)
    assert cli_env.run("create", str(step), "--max-wait", "5").code == 0
    cluster.control.advance(6)
    result = cli_env.run("error", str(step))
    assert result.code == 0 and result.out == "error(62): Timer expired\n"


def test_vacate_ends_the_step_and_restart_brings_the_job_back_sticky(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = _running(cluster, steps=1)
    nodes = cluster.job(job).nodes
    cluster.control.script_checkpoint(StepId(job, 0), duration=2)
    cluster.control.script_checkpoint(StepId(job, 0xFFFFFFFB), duration=2)
    restart_early = cli_env.run("restart", str(job))
    assert restart_early.code == 1 and "ESLURM_JOB_NOT_FINISHED" in restart_early.err
    result = cli_env.run("vacate", str(job), "--image-dir", "/ck", "--max-wait", "30")
    assert result.code == 0 and result.out.startswith(f"{job}: vacate requested")
    vacate_line = next(line for line in cli_env.audit() if line["operation"] == "vacate")
    assert vacate_line["arguments"] == {"max_wait": 30, "image_dir": "/ck", "force": False}
    cluster.control.advance(3)
    assert cluster.job(job).state is JobState.CANCELLED
    step_only = cli_env.run("restart", f"{job}.0")
    assert step_only.code == 1 and "ESLURM_NOT_SUPPORTED" in step_only.err
    missing = cli_env.run("restart", str(job))  # the record was saved under /ck, not the default
    assert missing.code == 1 and "ENOENT" in missing.err
    # Not a bare "No such file or directory": which image is missing, and what makes one.
    assert f"no checkpoint image of job {job} in the cluster's checkpoint directory" in missing.err
    assert f"by sckpt vacate {job} " in missing.err and "--image-dir" in missing.err
    result = cli_env.run("restart", str(job), "--stick", "--image-dir", "/ck")
    assert result.code == 0
    assert result.out == f"{job}: restart requested: resubmitted as job {job} on {nodes}\n"
    assert cluster.job(job).required_nodes == nodes
    cluster.control.advance(10)
    assert cluster.job(job).state is JobState.RUNNING
    assert cluster.job_environment(job)["SLURM_RESTART_DIR"] == "/ck"


def test_complete_keeps_the_highest_error_only(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    job = _running(cluster)
    step = f"{job}.0"
    assert cli_env.run("complete", step, "--error-code", "28", "--error-msg", "disk full").code == 0
    assert cli_env.run("complete", step, "--error-code", "5", "--error-msg", "io").code == 0
    assert cli_env.run("error", step).out == "error(28): disk full\n"
    line = cli_env.audit()[0]
    assert line["arguments"] == {"begin_time": 0, "error_code": 28, "error_msg": "disk full"}


def test_complete_with_the_begin_time_ends_the_checkpoint_in_progress(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = _running(cluster)
    step = StepId(job, 0)
    cluster.control.script_checkpoint(step, duration=500)
    assert cli_env.run("create", str(step)).code == 0
    began = cluster.step_state(step).in_progress_since
    assert cli_env.run("complete", str(step), "--begin-time", str(began)).code == 0
    assert cli_env.run("able", str(step)).out == "Yes\n"


def test_tasks_checks_the_node_list(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    job = _running(cluster)
    node = cluster.job(job).nodes
    ok = cli_env.run(
        "tasks",
        f"{job}.0",
        "--nodelist",
        node,
        "--begin-time",
        "1700000000",
        "--image-dir",
        "/scratch/t",
        "--max-wait",
        "7",
    )
    assert ok.code == 0 and ok.out == f"{job}.0: tasks requested: nodes {node}\n"
    assert cli_env.audit()[0]["arguments"] == {
        "begin_time": 1700000000,
        "image_dir": "/scratch/t",
        "max_wait": 7,
        "nodelist": node,
    }
    assert cli_env.run("tasks", f"{job}.0", "--nodelist", node, "--begin-time", "now").code == 0
    elsewhere = cli_env.run("tasks", f"{job}.0", "--nodelist", "nowhere99")
    assert elsewhere.code == 1 and "ESLURM_INVALID_JOB_ID (2017)" in elsewhere.err


@pytest.mark.parametrize(
    ("state", "name"),
    [
        (JobState.PENDING, "ESLURM_JOB_PENDING (2024)"),
        (JobState.COMPLETED, "ESLURM_ALREADY_DONE (2021)"),
        (JobState.SUSPENDED, "ESLURM_DISABLED (2037)"),
    ],
)
def test_state_refusals_exit_1_and_name_the_code(
    cli_env: CliEnv, cluster: SimulatedCluster, state: JobState, name: str
) -> None:
    job = cluster.control.submit("alice", state=state).job_id
    result = cli_env.run("create", f"{job}.0")
    assert result.code == 1 and result.out == ""
    assert result.err.startswith(f"sckpt: create {job}.0: {name}")
    assert result.err.count("\n") == 1


def test_unknown_job_is_invalid_job_id(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    result = cli_env.run("able", "99999")
    assert result.code == 1 and "ESLURM_INVALID_JOB_ID (2017)" in result.err


def test_another_users_job_is_refused_and_unchanged(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = _running(cluster, user="alice")
    result = cli_env.run("--as-user", "bob", "disable", f"{job}.0")
    assert result.code == 1 and "ESLURM_ACCESS_DENIED (2002)" in result.err
    assert cluster.step_state(StepId(job, 0)).disable_count == 0
    assert cli_env.run("disable", f"{job}.0", "--as-user", "alice").code == 0
    assert cluster.step_state(StepId(job, 0)).disable_count == 1
    assert [line["result"]["name"] for line in cli_env.audit()] == [
        "ESLURM_ACCESS_DENIED",
        "SLURM_SUCCESS",
    ]


MUTATING = [
    ["create", "{job}.0"],
    ["vacate", "{job}.0"],
    ["restart", "{job}"],
    ["enable", "{job}.0"],
    ["disable", "{job}.0"],
    ["complete", "{job}.0", "--error-code", "3"],
    ["tasks", "{job}.0", "--nodelist", "cn001"],
    ["checkpoint", "create", "{job}.0"],
    ["checkpoint", "disable", "{job}.0"],
]


@pytest.mark.parametrize("argv", MUTATING, ids=lambda a: " ".join(a))
def test_read_only_refuses_every_mutating_command_and_audits_the_refusal(
    cli_env: CliEnv, cluster: SimulatedCluster, argv: list[str]
) -> None:
    job = _running(cluster)
    before = cluster.snapshot().jobs
    result = cli_env.run("--read-only", *(word.format(job=job) for word in argv))
    assert result.code == 1 and result.out == ""
    assert "read-only" in result.err and result.err.count("\n") == 1
    assert cluster.snapshot().jobs == before
    (line,) = cli_env.audit()
    assert line["result"]["name"] == "READ_ONLY"


def test_a_json_refusal_has_every_key_readme_promises(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    # A read-only refusal is sckpt's, not Slurm's: it still names itself as the audit log
    # does, with no code, and carries its hint apart from its message.
    job = _running(cluster)
    result = cli_env.run("--demo", "--read-only", "--json", "create", f"{job}.0")
    assert result.code == 1
    (outcome,) = json.loads(result.out)["results"]
    assert outcome["ok"] is False
    assert outcome["error"] == {
        "kind": "ReadOnlyError",
        "code": None,
        "name": "READ_ONLY",
        "message": f"create {job}.0 refused: sckpt is in read-only mode",
        "hint": "start sckpt without --read-only (and read_only = false in the config) to act",
        "exit_code": 1,
    }


def test_read_only_from_the_config(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    job = _running(cluster)
    cli_env.config.write_text(
        cli_env.config.read_text().replace("[demo]", "read_only = true\n[demo]")
    )
    result = cli_env.run("disable", f"{job}.0")
    assert result.code == 1 and "read-only" in result.err
    assert cli_env.run("able", f"{job}.0").out == "Yes\n"  # reading still works


def test_several_targets_act_on_each_and_report_each(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    running = _running(cluster)
    pending = cluster.control.submit("alice", state=JobState.PENDING).job_id
    result = cli_env.run("disable", f"{running}.0", f"{pending}", f"{running}.1")
    assert result.code == 1
    assert result.lines == [f"{running}.0: disable requested", f"{running}.1: disable requested"]
    assert result.err == (
        f"sckpt: disable {pending}: ESLURM_JOB_PENDING (2024): Job is pending execution; "
        f"job {pending} has not started yet\n"
    )
    able = cli_env.run("able", f"{running}.0", f"{running}.1", f"{running}")
    assert able.lines == [f"{running}.0: No", f"{running}.1: No", f"{running}: No"]


def test_whole_job_requests_act_on_every_running_step(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = _running(cluster, steps=3)
    assert cli_env.run("disable", str(job)).code == 0
    for step in (0, 1, 2):
        assert cluster.step_state(StepId(job, step)).disable_count == 1
    data = json.loads(cli_env.run("enable", str(job), "--json").out)
    per_step = data["results"][0]["per_step"]
    assert {entry["step"] for entry in per_step} >= {f"{job}.0", f"{job}.1", f"{job}.2"}
    assert all(entry["code"] == 0 for entry in per_step)


def test_json_output_of_each_operation(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    job = _running(cluster)
    data = json.loads(cli_env.run("able", f"{job}.0", "--json").out)
    assert data["engine"] == "simulated" and data["read_only"] is False
    assert data["results"] == [
        {
            "target": f"{job}.0",
            "operation": "able",
            "ok": True,
            "able": True,
            "in_progress": False,
            "in_progress_since": 0,
            "began_at": None,
            "text": "Yes",
        }
    ]
    created = json.loads(cli_env.run("create", f"{job}.0", "--json").out)["results"][0]
    assert created["ok"] is True and created["detail"] == "max_wait 10s"
    error = json.loads(cli_env.run("error", f"{job}.0", "--json").out)["results"][0]
    assert error["error_code"] == 0 and error["text"] == "error(0): "
    refused = cli_env.run("create", f"{job}.0", "--json")
    document = json.loads(refused.out)
    assert refused.code == 1 and document["exit_code"] == 1
    assert document["results"][0]["error"]["name"] == "EALREADY"


def test_historical_syntax_end_to_end(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    job = _running(cluster)
    step = f"{job}.0"
    assert cli_env.run("checkpoint", "able", step).out == "Yes\n"
    assert cli_env.run("CHECKPOINT", "D", step).out == ""  # scontrol printed nothing
    assert cli_env.run("ch", "a", step).out == "No\n"
    assert cli_env.run("ch", "EN", step).code == 0
    cluster.control.script_checkpoint(StepId(job, 0), duration=30)
    result = cli_env.run("checkpoint", "cr", step, "MaxWait=40", "ImageDir=/scratch/x")
    assert (result.code, result.out) == (0, "")
    assert cluster.step_state(StepId(job, 0)).image_dir == f"/scratch/x/{job}.0"
    assert cli_env.run("ch", "able", step).out.startswith("Began at ")
    refused = cli_env.run("ch", "va", step)
    assert refused.code == 1 and "EALREADY" in refused.err
    assert cli_env.run("ch", "er", step).out == "error(0): \n"
    assert cli_env.audit()[2]["arguments"] == {"max_wait": 40, "image_dir": "/scratch/x"}


def test_simulated_only_as_user_and_unknown_user_names(cli_env: CliEnv) -> None:
    bad = cli_env.run("--demo", "--as-user", "Robert'); DROP", "ls")
    assert bad.code == 2 and "invalid user name" in bad.err
    assert cli_env.run("--demo", "--as-user", "root", "ls").code == 0


def test_as_user_is_refused_on_a_real_engine(cli_env: CliEnv) -> None:
    result = cli_env.run("--engine", "live", "--as-user", "root", "ls")
    assert result.code == 2
    assert "only on the simulated cluster" in result.err and result.err.count("\n") == 1


def test_no_slurm_configured_is_exit_3_with_a_hint(cli_env: CliEnv) -> None:
    # A fresh process: in this one the libslurm binding may already be loaded by other tests.
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    if Path("/etc/slurm/slurm.conf").exists():
        pytest.skip("this machine has a system slurm.conf, so Slurm is configured")
    result = subprocess.run(
        [str(Path(sys.executable).with_name("sckpt")), "--engine", "live", "ls"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3 and result.stderr.count("\n") == 1 and result.stdout == ""
    assert "--demo" in result.stderr


def test_invalid_config_is_exit_2_naming_the_key(cli_env: CliEnv) -> None:
    cli_env.config.write_text("max_wait = -3\n")
    result = cli_env.run("--demo", "ls")
    assert result.code == 2 and "max_wait" in result.err and result.err.count("\n") == 1
    missing = cli_env.run("--config", "/nonexistent/sckpt.toml", "--demo", "ls")
    assert missing.code == 2 and "does not exist" in missing.err


def test_config_option_overrides_the_environment(cli_env: CliEnv, tmp_path: object) -> None:
    other = cli_env.config.with_name("other.toml")
    other.write_text("read_only = true\n")
    result = cli_env.run("--config", str(other), "--demo", "disable", "184201")
    assert result.code == 1 and "read-only" in result.err


@pytest.mark.parametrize("path", ["/dev/zero", "/tmp", "/dev/null"])
def test_a_config_that_is_not_a_regular_file_is_refused(
    cli_env: CliEnv, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    named = cli_env.run("--config", path, "--demo", "ls")
    assert named.code == 2 and "not a regular file" in named.err
    monkeypatch.setenv("SCKPT_CONFIG", path)
    from_env = cli_env.run("--demo", "ls")
    assert from_env.code == 2 and "not a regular file" in from_env.err


def test_tasks_on_a_node_outside_the_step_names_the_node(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    # slurmd's code is kept (ESLURM_INVALID_JOB_ID), but the job id is not what is wrong.
    job = _running(cluster)
    nodes = cluster.job(job).nodes
    result = cli_env.run("tasks", f"{job}.0", "--nodelist", "cn999")
    assert result.code == 1 and result.out == ""
    assert "ESLURM_INVALID_JOB_ID (2017)" in result.err
    assert f"node cn999 is not in step {job}.0, which runs on {nodes}" in result.err
    document = json.loads(cli_env.run("--json", "tasks", f"{job}.0", "--nodelist", "cn999").out)
    error = document["results"][0]["error"]
    assert error["code"] == 2017 and error["name"] == "ESLURM_INVALID_JOB_ID"
    assert "node cn999 is not in step" in error["hint"]


@pytest.mark.parametrize(
    ("keys", "said"),
    [
        ('creat = "k"', "key 'keys.creat' = 'k': unknown console action: did you mean create?"),
        ('create = "v"', "key 'keys.create' = 'v': 'v' is already vacate's key on the console"),
        ('pids = "q"', "key 'keys.pids' = 'q': 'q' is already quit's key on the step screen"),
    ],
)
def test_a_key_override_the_console_could_not_honour_is_a_config_error(
    cli_env: CliEnv, keys: str, said: str
) -> None:
    # An unknown action was ignored; a key another action keeps was silently taken from it
    # (footer "v Create", Vacate gone).
    cli_env.config.write_text(cli_env.config.read_text() + f"[keys]\n{keys}\n")
    result = cli_env.run("--demo", "ls")
    assert (result.code, result.out) == (2, "")
    assert said in result.err and result.err.count("\n") == 1


def test_key_overrides_that_swap_or_take_free_keys_are_accepted(cli_env: CliEnv) -> None:
    cli_env.config.write_text(
        cli_env.config.read_text() + '[keys]\ncreate = "v"\nvacate = "c"\nrefresh = "ctrl+k"\n'
    )
    assert cli_env.run("--demo", "ls", "-H").code == 0


def test_restart_of_a_demo_job_never_vacated_says_there_is_no_image(cli_env: CliEnv) -> None:
    # 'sckpt --demo restart 184207' printed "ENOENT (2): No such file or directory" and an
    # empty hint.  The demo as it ships (seed 42, 48 jobs), where 184207 has ended.
    cli_env.config.write_text(f'audit_log = "{cli_env.audit_log}"\n')
    result = cli_env.run("--demo", "--json", "restart", "184207")
    (outcome,) = json.loads(result.out)["results"]
    assert result.code == 1 and outcome["error"]["name"] == "ENOENT"
    assert outcome["error"]["hint"].startswith("there is no checkpoint image of job 184207")
    assert "by sckpt vacate 184207 " in outcome["error"]["hint"]


def test_the_demo_audits_apart_from_the_real_log(cli_env: CliEnv) -> None:
    # The demo's actions went into the user's real audit log, mixed with real ones.
    assert cli_env.run("--demo", "--as-user", "root", "disable", "184201").code == 0
    assert cli_env.run("--demo", "--read-only", "cancel", "184201").code == 1
    assert not cli_env.audit_log.exists()
    demo_log = cli_env.audit_log.with_name("demo-audit.log")
    assert demo_log.is_file() and oct(demo_log.stat().st_mode & 0o777) == "0o600"
    lines = cli_env.audit(demo=True)
    assert [(x["operation"], x["target"], x["engine"]) for x in lines] == [
        ("disable", "184201", "simulated"),
        ("cancel", "184201", "simulated"),
    ]


def test_doctor_with_demo_checks_the_demo_not_this_machine(cli_env: CliEnv) -> None:
    # 'sckpt --demo doctor' checked this machine's Slurm and told a demo user that
    # "sckpt --demo works without it".

    def no_slurm(dmtcp_dir: str | None) -> NoReturn:
        raise AssertionError("--demo doctor looked at this machine's Slurm")

    cli_env.inject["doctor"] = no_slurm
    result = cli_env.run("--demo", "doctor")
    assert result.code == 0, result.err
    assert "works without it" not in result.out
    assert result.out.splitlines()[-1] == "sckpt --demo works here."
    # [demo] jobs = 40, and the demo's job arrays after them
    assert re.search(r"the simulated slurmctld listed \d+ jobs in [\d.]+ ms", result.out)
    assert str(cli_env.audit_log.with_name("demo-audit.log")) in result.out
    document = json.loads(cli_env.run("--demo", "doctor", "--json").out)
    assert document["exit_code"] == 0 and document["report"]["demo"] is True


def test_a_restarted_job_keeps_its_shape(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    # A demo job that ran on 4 nodes with 256 tasks came back on 1 node with 64.
    jobs = [cluster.control.submit("alice", name="md", n_steps=1) for _ in range(8)]
    job = next(j for j in jobs if j.num_nodes >= 2)
    cluster.control.script_checkpoint(StepId(job.job_id, 0), duration=2)
    cluster.control.script_checkpoint(StepId(job.job_id, 0xFFFFFFFB), duration=2)
    assert cli_env.run("vacate", str(job.job_id)).code == 0
    cluster.control.advance(3)
    assert cli_env.run("restart", str(job.job_id)).code == 0
    cluster.control.advance(10)
    again = cluster.job(job.job_id)
    assert again.state is JobState.RUNNING and again.restart_count == 1
    assert (again.num_nodes, again.num_cpus) == (job.num_nodes, job.num_cpus)
    listed = json.loads(cli_env.run("ls", "-j", str(job.job_id), "--json").out)["jobs"][0]
    step0 = next(s for s in listed["steps"] if s["step_id"] == f"{job.job_id}.0")
    assert step0["num_tasks"] == job.num_cpus


def test_complete_naming_no_checkpoint_in_progress_says_nothing_matched(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    # It always said "requested", exit 0, even when its begin time named no checkpoint.
    job = _running(cluster)
    step = StepId(job, 0)
    idle = cli_env.run("complete", str(step))
    assert (idle.code, idle.out) == (1, "")
    assert idle.err.startswith(
        f"sckpt: complete {step}: nothing matched: no checkpoint of {step} was named"
    )
    assert f"no checkpoint of {step} is in progress" in idle.err
    cluster.control.script_checkpoint(step, duration=500)
    assert cli_env.run("create", str(step)).code == 0
    began = cluster.step_state(step).in_progress_since
    typo = cli_env.run("--json", "complete", str(step), "--begin-time", str(began - 1))
    (outcome,) = json.loads(typo.out)["results"]
    assert typo.code == 1 and outcome["error"]["name"] == "NOTHING_MATCHED"
    assert f"--begin-time {began} names it" in outcome["error"]["hint"]
    assert cluster.step_state(step).in_progress_since == began  # still running
    assert cli_env.audit()[-1]["result"]["name"] == "NOTHING_MATCHED"
    # A report of an error is kept whatever the begin time: it did something.
    assert cli_env.run("complete", str(step), "--error-code", "5").code == 0
    right = cli_env.run("complete", str(step), "--begin-time", str(began))
    assert right.code == 0 and right.out == f"{step}: complete requested\n"


def test_as_user_an_unknown_name_is_refused_naming_the_demo_users(cli_env: CliEnv) -> None:
    """``--as-user zed ls`` showed alice's jobs as zed's; it is now bad usage (exit 2)."""
    result = cli_env.run("--demo", "--as-user", "zed", "ls")
    assert result.code == 2 and result.out == ""
    assert "no user 'zed'" in result.err and "alice, bob" in result.err
    assert cli_env.run("--demo", "--as-user", "bob", "ls").code == 0
