"""``sckpt ls``: squeue-like tables and JSON, with filters, on the simulated cluster."""

from __future__ import annotations

import json

from sckpt.backend.model import JobState, StepId
from sckpt.backend.simulator import SimulatedCluster
from sckpt.cli.output import format_elapsed

from .conftest import CliEnv


def _jobs(cluster: SimulatedCluster) -> dict[str, int]:
    return {
        "alice_run": cluster.control.submit("alice", name="md", n_steps=2).job_id,
        "alice_pend": cluster.control.submit("alice", name="queued", state=JobState.PENDING).job_id,
        "bob_run": cluster.control.submit("bob", name="train", partition="gpu", n_steps=1).job_id,
        "bob_done": cluster.control.submit("bob", name="old", state=JobState.COMPLETED).job_id,
        "bob_susp": cluster.control.submit("bob", name="paused", state=JobState.SUSPENDED).job_id,
    }


def _ids(out: str) -> list[int]:
    return [int(line.split()[0]) for line in out.splitlines()[1:]]


def test_default_lists_active_jobs_like_squeue(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    jobs = _jobs(cluster)
    result = cli_env.run("ls")
    assert result.code == 0 and result.err == ""
    header = result.lines[0].split()
    assert header == [
        "JOBID",
        "PARTITION",
        "NAME",
        "USER",
        "ST",
        "TIME",
        "NODES",
        "NODELIST(REASON)",
        "CKPT",
    ]
    assert _ids(result.out) == sorted(
        jobs[k] for k in ("alice_run", "alice_pend", "bob_run", "bob_susp")
    )
    rows = {int(line.split()[0]): line.split() for line in result.lines[1:]}
    running = rows[jobs["alice_run"]]
    assert running[1:5] == ["batch", "md", "alice", "R"]
    assert running[7] == cluster.job(jobs["alice_run"]).nodes
    assert running[-1] == "able"
    pending = rows[jobs["alice_pend"]]
    assert pending[4] == "PD" and pending[7] == "(Priority)" and pending[-1] == "pending"
    assert rows[jobs["bob_susp"]][4] == "S"


def test_filters(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    jobs = _jobs(cluster)
    assert _ids(cli_env.run("ls", "--user", "bob").out) == sorted(
        [jobs["bob_run"], jobs["bob_susp"]]
    )
    assert _ids(cli_env.run("ls", "-u", "bob", "--all").out) == sorted(
        [jobs["bob_run"], jobs["bob_done"], jobs["bob_susp"]]
    )
    assert _ids(cli_env.run("ls", "--state", "CD").out) == [jobs["bob_done"]]
    assert _ids(cli_env.run("ls", "-t", "running,pending").out) == sorted(
        [jobs["alice_run"], jobs["alice_pend"], jobs["bob_run"]]
    )
    assert _ids(cli_env.run("ls", "--state", "all", "--user", "alice").out) == sorted(
        [jobs["alice_run"], jobs["alice_pend"]]
    )
    assert _ids(cli_env.run("ls", "--job", f"{jobs['bob_run']},{jobs['alice_run']}").out) == sorted(
        [jobs["alice_run"], jobs["bob_run"]]
    )
    assert _ids(cli_env.run("ls", "--partition", "gpu").out) == [jobs["bob_run"]]
    assert _ids(cli_env.run("ls", "--mine", "--as-user", "bob").out) == sorted(
        [jobs["bob_run"], jobs["bob_susp"]]
    )
    # --mine narrows --user: alice's jobs are not bob's
    nothing = cli_env.run("ls", "--mine", "--as-user", "bob", "--user", "alice")
    assert (nothing.code, nothing.out, nothing.err) == (0, "", "sckpt: no jobs match\n")
    assert cli_env.run("ls", "--user", "nobody", "--noheader").out == ""


def test_checkpoint_filter_and_step_rows(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    jobs = _jobs(cluster)
    target = f"{jobs['alice_run']}.1"
    assert cli_env.run("disable", target).code == 0
    assert cli_env.run("disable", target).code == 0
    result = cli_env.run("ls", "--steps", "--ckpt", "disabled", "--user", "alice")
    assert result.lines[0].split() == [
        "STEPID",
        "NAME",
        "PARTITION",
        "USER",
        "STATE",
        "TIME",
        "TASKS",
        "NODELIST",
        "LAST_ERROR",
        "CKPT",
    ]
    assert [line.split()[0] for line in result.lines[1:]] == [target]
    # Slurm 19.05's API says "disabled", not how many times (the demo is the native engine).
    assert result.lines[1].endswith("disabled")
    summary = cli_env.run("ls", "--job", str(jobs["alice_run"]), "--noheader").out
    assert summary.rstrip().endswith("1 disabled, 3 able")


def test_step_rows_cover_batch_extern_and_numbered_steps(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    jobs = _jobs(cluster)
    job = jobs["alice_run"]
    result = cli_env.run("ls", "-s", "-j", str(job), "-H")
    steps = [line.split()[0] for line in result.lines]
    assert steps == [f"{job}.batch", f"{job}.extern", f"{job}.0", f"{job}.1"]


def test_last_error_column(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    job = cluster.control.submit("alice", n_steps=1).job_id
    assert cli_env.run("complete", f"{job}.0", "--error-code", "2037").code == 0
    row = cli_env.run("ls", "-s", "-j", str(job), "-H").lines[-1].split()
    assert row[0] == f"{job}.0" and row[-3:-1] == ["2037", "ESLURM_DISABLED"]


def test_json_document(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    jobs = _jobs(cluster)
    cluster.control.script_checkpoint(StepId(jobs["bob_run"], 0), duration=100)
    assert cli_env.run("create", f"{jobs['bob_run']}.0").code == 0
    result = cli_env.run("ls", "--json", "--all")
    assert result.code == 0
    data = json.loads(result.out)
    assert data["stale"] is False and data["cluster"]["engine"] == "simulated"
    by_id = {job["job_id"]: job for job in data["jobs"]}
    assert set(by_id) == set(jobs.values())
    bob = by_id[jobs["bob_run"]]
    assert (bob["user"], bob["state"], bob["state_short"], bob["partition"]) == (
        "bob",
        "RUNNING",
        "R",
        "gpu",
    )
    assert bob["nodes"] == cluster.job(jobs["bob_run"]).nodes
    steps = {step["step_id"]: step for step in bob["steps"]}
    assert set(steps) == {f"{jobs['bob_run']}.{s}" for s in ("batch", "extern", "0")}
    in_progress = steps[f"{jobs['bob_run']}.0"]["checkpoint"]
    assert in_progress["kind"] == "in_progress"
    assert in_progress["in_progress_since"] == int(cluster.now())
    assert steps[f"{jobs['bob_run']}.0"]["step"] == "0"
    assert by_id[jobs["bob_done"]]["steps"] == []


def test_hostile_job_names_print_literally(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    job = cluster.control.submit("alice", name="x\x1b[2J\x1b]0;owned\x07y").job_id
    out = cli_env.run("ls", "-j", str(job), "-H").out
    assert "\x1b" not in out and "\x07" not in out
    assert "x\\x1b[2J\\x1b]0;owned\\x07y" in out
    data = json.loads(cli_env.run("ls", "-j", str(job), "--json").out)
    assert data["jobs"][0]["name"] == "x\x1b[2J\x1b]0;owned\x07y"


def test_json_run_time_is_the_time_the_table_shows(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    # The simulated engine reports no run_time (0), as some engines do: --json said 0 for
    # every step while the table showed each step's time since its start.
    job = cluster.control.submit("alice", name="md", n_steps=1, duration=86400).job_id
    cluster.control.advance(3725)
    table = cli_env.run("ls", "-s", "-j", str(job), "-H")
    shown = {line.split()[0]: line.split()[5] for line in table.lines}
    document = json.loads(cli_env.run("ls", "-j", str(job), "--json").out)
    steps = document["jobs"][0]["steps"]
    assert steps and all(step["run_time"] > 3600 for step in steps)
    for step in steps:
        assert shown[step["step_id"]] == format_elapsed(step["run_time"])


def test_checkpoint_filter_selects_jobs_without_rewriting_their_summary(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    jobs = _jobs(cluster)
    assert cli_env.run("disable", f"{jobs['alice_run']}.1").code == 0
    result = cli_env.run("ls", "--ckpt", "disabled", "-u", "alice", "-H")
    assert _ids("\n" + result.out) == [jobs["alice_run"]]
    # The job's CKPT still counts every step, not only the one the filter matched.
    assert result.out.rstrip().endswith("1 disabled, 3 able")
    document = json.loads(cli_env.run("ls", "--ckpt", "disabled", "-u", "alice", "--json").out)
    (job,) = document["jobs"]
    assert job["checkpoint_summary"] == "1 disabled, 3 able" and len(job["steps"]) == 4


def test_the_consoles_filter_language_selects_jobs(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    jobs = _jobs(cluster)
    assert _ids(cli_env.run("ls", "user:bob", "state:R").out) == [jobs["bob_run"]]
    assert _ids(cli_env.run("ls", "part:gpu").out) == [jobs["bob_run"]]


def test_an_unknown_filter_field_is_refused_naming_the_known_ones(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    # It was ignored, and every job listed.
    _jobs(cluster)
    result = cli_env.run("ls", "usr:bob")
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith("sckpt: unknown field 'usr' in filter: expected one of id, user")
    assert result.err.count("\n") == 1


def test_a_checkpoint_word_naming_no_state_is_refused_as_ckpt_is(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    # ckpt:bogus said "no jobs match" (exit 0) where --ckpt bogus is refused.
    _jobs(cluster)
    for argv in (["ckpt:bogus"], ["--ckpt", "bogus"]):
        result = cli_env.run("ls", *argv)
        assert (result.code, result.out) == (2, ""), argv
        assert "'bogus'" in result.err and "able, disabled, in_progress" in result.err, argv
    assert cli_env.run("ls", "ckpt:dis").code == 0  # the start of a word is still a word
    assert cli_env.run("ls", "ckpt:err").code == 0


def test_a_filter_matching_nothing_says_so_instead_of_a_bare_header(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    _jobs(cluster)
    for argv in (["ls", "user:nobody"], ["ls", "--user", "nobody"]):
        result = cli_env.run(*argv)
        assert (result.code, result.out, result.err) == (0, "", "sckpt: no jobs match\n")
    document = json.loads(cli_env.run("ls", "user:nobody", "--json").out)
    assert document["jobs"] == []


def test_ckpt_failed_finds_a_step_whose_last_checkpoint_failed(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    # --ckpt error was refused, and the job's CKPT read "able" although a step's last
    # checkpoint had failed with 28 (ENOSPC).
    jobs = _jobs(cluster)
    job = jobs["alice_run"]
    assert cli_env.run("complete", f"{job}.1", "--error-code", "28").code == 0
    for argv in (["--ckpt", "failed"], ["--ckpt", "error"], ["ckpt:failed"], ["ckpt:err"]):
        result = cli_env.run("ls", "-H", *argv)
        assert _ids("\n" + result.out) == [job], argv
        assert result.out.rstrip().endswith("able; 1 failed (28)")
    steps = cli_env.run("ls", "-s", "-H", "--ckpt", "failed")
    assert [line.split()[0] for line in steps.lines] == [f"{job}.1"]
    document = json.loads(cli_env.run("ls", "--ckpt", "failed", "--json").out)
    assert [j["checkpoint_summary"] for j in document["jobs"]] == ["able; 1 failed (28)"]
    # A mistyped word names the known ones, failed among them.
    bad = cli_env.run("ls", "--ckpt", "fialed")
    assert bad.code == 2 and bad.err.rstrip().endswith("unknown, starting, failed")


def test_another_users_step_has_no_last_error_to_claim(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    # LAST_ERROR said 0 beside CKPT unknown: the controller was not asked either.
    job = cluster.control.submit("bob", name="theirs", n_steps=1).job_id
    result = cli_env.run("--as-user", "alice", "ls", "-s", "-j", str(job), "--parsable", "-h")
    assert result.code == 0, result.err
    for line in result.lines:
        assert line.split("|")[8:10] == ["unknown", "unknown"], line
