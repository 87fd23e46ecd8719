"""``sckpt history JOB`` on the simulated cluster: its accounting, table and ``--json``.

The simulated controller records each run of a job when it ends (requeue, node failure,
end) as slurmdbd does; these tests requeue jobs through ``sckpt``'s own facade's cluster
and read the records back through the command line.
"""

from __future__ import annotations

import json

from sckpt.backend.model import StepId
from sckpt.backend.simulator import SimulatedCluster

from .conftest import CliEnv


def _requeued(cluster: SimulatedCluster, times: int) -> int:
    job = cluster.control.submit("alice", name="md", n_steps=1, duration=36000).job_id
    for _ in range(times):
        cluster.requeue_job(cluster.user("alice"), job, hold=False)
        cluster.control.advance(200)  # past the requeue's begin time: it runs again
    return job


def test_a_job_requeued_twice_has_three_records_oldest_first(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = _requeued(cluster, 2)
    done = cli_env.run("history", str(job), "--json")
    assert (done.code, done.err) == (0, "")
    document = json.loads(done.out)
    records = document["records"]
    assert [r["state"] for r in records] == ["REQUEUED", "REQUEUED", "RUNNING"]
    assert [r["restart_count"] for r in records] == [0, 1, 2]
    assert all(r["job_id"] == job for r in records)
    assert records[0]["end_time"] <= records[1]["start_time"]
    assert records[2]["end_time"] == 0 and records[2]["exit_text"] == "0:0"
    assert (document["exit_code"], document["truncated"], document["limit"]) == (0, False, 100)
    table = cli_env.run("history", str(job))
    assert table.code == 0
    lines = table.lines
    assert lines[0].split() == [
        "RUN", "JOBID", "STATE", "EXITCODE", "SUBMIT", "START", "END", "NODELIST", "PARTITION"
    ]  # fmt: skip
    assert [line.split()[:4] for line in lines[1:]] == [
        ["first", "run", str(job), "REQUEUED"],
        ["restart", "1", str(job), "REQUEUED"],
        ["restart", "2", str(job), "RUNNING"],
    ]
    assert lines[3].split()[7] == "Unknown"  # still running: no end, as sacct says


def test_limit_keeps_the_newest_and_says_so(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    job = _requeued(cluster, 2)
    done = json.loads(cli_env.run("history", str(job), "--json", "--limit", "2").out)
    assert [r["state"] for r in done["records"]] == ["REQUEUED", "RUNNING"]
    assert (done["truncated"], done["skipped"]) == (True, 1)
    table = cli_env.run("history", str(job), "--limit", "2")
    assert table.lines[-1] == "(only the newest 2 records: more with --limit)"
    assert table.lines[1].split()[:2] == ["restart", "1"]


def test_since_bounds_the_window(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    job = _requeued(cluster, 1)
    cluster.control.advance(3 * 3600)
    assert cli_env.run("history", str(job), "--since", "1h").code == 0  # the run goes on
    cluster.kill_job(cluster.user("alice"), job, 9)
    cluster.control.advance(2 * 3600)
    gone = cli_env.run("history", str(job), "--since", "1h", "--json")
    assert gone.code == 1
    error = json.loads(gone.out)["error"]
    assert error["name"] == "ESLURM_INVALID_JOB_ID"
    assert error["message"].startswith(f"accounting has no record of job {job} since ")
    assert error["hint"] == "look further back with --since, or check the job id"
    whole = json.loads(cli_env.run("history", str(job), "--json").out)
    assert [r["state"] for r in whole["records"]] == ["REQUEUED", "CANCELLED"]


def test_bad_input_is_refused_before_anything_is_asked(cli_env: CliEnv) -> None:
    for argv, words in (
        (["history", "12.3"], "invalid job id '12.3': expected a job id without a step"),
        (["history", "x"], "invalid"),
        (["history", "12", "--since", "soon"], "invalid --since 'soon'"),
        (["history", "12", "--limit", "0"], "invalid --limit '0'"),
        (["history", "12", "--limit", "many"], "invalid --limit 'many'"),
    ):
        done = cli_env.run(*argv)
        assert done.code == 2, argv
        assert done.out == "" and len(done.err.splitlines()) == 1 and words in done.err, argv


def test_an_unknown_job_is_one_line_and_exit_1(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    done = cli_env.run("history", "99999")
    assert (done.code, done.out) == (1, "")
    assert done.err.startswith("sckpt: ESLURM_INVALID_JOB_ID (2017): accounting has no record")


def test_runs_are_counted_from_the_left_out_records_when_slurm_has_no_restart_count() -> None:
    """Before 24.11 slurmdbd records no restart count: the run is the record's position,
    counting the older records ``--limit`` left out."""
    from sckpt.backend.model import JobHistory, JobRecord
    from sckpt.cli.history import render_text

    def record(state: str, start: int) -> JobRecord:
        return JobRecord(7, "c", "md", "alice", 1001, "debug", state, start_time=start)

    shown = JobHistory(
        7, "c", (record("REQUEUED", 10), record("RUNNING", 20)), limit=2, truncated=True, skipped=1
    )
    lines = render_text(shown).splitlines()
    assert [line.split()[:2] for line in lines[1:3]] == [["restart", "1"], ["restart", "2"]]
    assert lines[-1] == "(only the newest 2 records: more with --limit)"


def test_records_of_several_clusters_name_their_cluster() -> None:
    """``-M a,b history JOB``: job ids repeat across clusters, so a table holding records of
    more than one cluster gains sacct -M's CLUSTER column (one cluster: no column)."""
    from sckpt.backend.model import JobHistory, JobRecord
    from sckpt.cli.history import render_text

    def record(cluster: str, start: int) -> JobRecord:
        return JobRecord(7, cluster, "md", "alice", 1001, "debug", "COMPLETED", start_time=start)

    both = render_text(JobHistory(7, "", (record("sckpt-a", 10), record("sckpt-b", 20))))
    lines = both.splitlines()
    assert lines[0].split()[:2] == ["CLUSTER", "RUN"]
    assert [line.split()[0] for line in lines[1:3]] == ["sckpt-a", "sckpt-b"]
    one = render_text(JobHistory(7, "sckpt-a", (record("sckpt-a", 10),)))
    assert one.splitlines()[0].split()[0] == "RUN"


def test_an_arrays_history_names_its_tasks_and_lists_every_one(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    """``history 7_2`` printed the record's own id (and ``array_job_id: 0``), and
    ``history 7`` one record where ``sacct -j 7`` lists every task."""
    records = cluster.control.submit_array("alice", "1-3", running=3)
    array = records[0].array_job_id
    one = cli_env.run("history", f"{array}_2")
    assert one.code == 0, one.err
    assert [line.split()[2] for line in one.lines[1:]] == [f"{array}_2"]
    document = json.loads(cli_env.run("history", f"{array}_2", "--json").out)
    (record,) = document["records"]
    assert (record["id"], record["array_job_id"], record["array_task_id"]) == (
        f"{array}_2",
        array,
        2,
    )
    every = cli_env.run("history", str(array))
    assert [line.split()[:3] for line in every.lines[1:]] == [
        ["first", "run", f"{array}_1"],
        ["first", "run", f"{array}_2"],
        ["first", "run", f"{array}_3"],
    ]


def test_a_checkpoint_is_one_line_with_its_outcome_and_in_progress_until_it_ends(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    """A create still in progress was listed ``completed``, and one that ended was listed
    twice (``create`` and ``done``)."""
    job = cluster.control.submit("alice", name="md", n_steps=1, duration=36000).job_id
    step = f"{job}.0"
    cluster.control.script_checkpoint(StepId(job, 0), 5.0)
    assert cli_env.run("create", step).code == 0
    running = cli_env.run("history", str(job))
    cause, by = running.lines[-1].split()[3:5]  # what started it (an operator), who
    assert cause in ("operator", "-")
    assert running.lines[-1].split()[1:] == [step, "create", cause, by, "in", "progress"]
    cluster.control.advance(60)
    done = cli_env.run("history", str(job))
    events = done.lines[done.lines.index("") + 2 :]
    assert [line.split()[1:] for line in events] == [[step, "create", cause, by, "completed"]]
    document = json.loads(cli_env.run("history", str(job), "--json").out)
    assert [e["result"] for e in document["checkpoints"]] == ["completed", "completed"]
