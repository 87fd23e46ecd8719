"""``sckpt show JOB``: the job record an operator reads before acting (simulated cluster).

The lines and keys are ``scontrol show job``'s for the fields sckpt has; an array task is
shown by its name, an unknown job is Slurm's ESLURM_INVALID_JOB_ID with what it means.
"""

from __future__ import annotations

import json
import re

from sckpt.backend.model import JobState
from sckpt.backend.simulator import SimulatedCluster

from .conftest import CliEnv


def _fields(text: str) -> dict[str, str]:
    """``Key=Value`` pairs (a value up to the next blank, as scontrol's are read)."""
    return dict(re.findall(r"(\S+?)=(\S*)", text))


def test_show_prints_the_record_as_scontrol_show_job(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    job = cluster.control.submit(
        "alice", name="md", n_steps=1, duration=5400, account="proj", comment="ask me"
    ).job_id
    cluster.control.advance(600)
    result = cli_env.run("show", str(job))
    assert result.code == 0, result.err
    lines = result.lines
    assert lines[0] == f"JobId={job} JobName=md"
    assert all(line.startswith("   ") for line in lines[1:])  # scontrol's indentation
    fields = _fields(result.out)
    assert fields["UserId"] == f"alice({cluster.job(job).uid})"
    assert (fields["JobState"], fields["Reason"], fields["QOS"]) == ("RUNNING", "None", "normal")
    assert (fields["RunTime"], fields["TimeLimit"], fields["TimeLeft"]) == (
        "00:10:00",
        "02:00:00",
        "01:50:00",
    )
    assert (fields["Account"], fields["Comment"], fields["Checkpoint"]) == ("proj", "ask", "able")
    assert fields["NodeList"] == cluster.job(job).nodes and "StdOut" in fields
    assert fields["MinMemoryNode"] == "250G"
    document = json.loads(cli_env.run("show", str(job), "--json").out)
    assert (document["time_limit"], document["time_left"], document["run_time"]) == (
        120,
        6600,
        600,
    )


def test_show_names_an_array_task_and_refuses_an_unknown_job(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    records = cluster.control.submit_array("alice", "1-3", running=3)
    array = records[0].array_job_id
    task = next(r for r in records if r.array_task_id == 2)
    shown = cli_env.run("show", f"{array}_2")
    assert shown.lines[0] == f"JobId={task.job_id} ArrayJobId={array} ArrayTaskId=2 JobName=array"
    held = cluster.control.submit("bob", name="q", state=JobState.PENDING, held=True).job_id
    fields = _fields(cli_env.run("show", str(held)).out)
    assert (fields["JobState"], fields["Priority"]) == ("PENDING", "0")
    missing = cli_env.run("show", "999999")
    assert missing.code == 1 and missing.err.rstrip().endswith("there is no job 999999")
