"""``sckpt ls`` with squeue's habits: -o/-O/-S/-h/-w/-n/-A/--me and --parsable (simulated).

The real-cluster twin (``test_real_cluster_squeue.py``) compares the bytes with squeue's;
here each rule is pinned on values known in advance.
"""

from __future__ import annotations

import json

import pytest
from sckpt.backend.model import JobState
from sckpt.backend.simulator import SimulatedCluster
from sckpt.cli.squeue_format import squeue_time

from .conftest import CliEnv


def _two(cluster: SimulatedCluster) -> tuple[int, int]:
    run = cluster.control.submit("alice", name="md", n_steps=1, account="Proj").job_id
    pend = cluster.control.submit(
        "bob", name="queued", state=JobState.PENDING, partition="gpu"
    ).job_id
    return run, pend


def test_format_letters_widths_and_justification_as_squeue(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    run, pend = _two(cluster)
    nodes = cluster.job(run).nodes
    result = cli_env.run("ls", "-S", "i", "-o", "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R")
    assert result.code == 0, result.err
    assert result.out == (
        "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
        f"{run:>18}     batch       md    alice  R       0:00      1 {nodes}\n"
        f"{pend:>18}       gpu   queued      bob PD       0:00      0 (Priority)\n"
    )
    # prefix text, a cut right-justified header, suffixes, left-justified cut and pad
    cut = cli_env.run("ls", "-j", str(run), "-o", "pre %.3i|%3P|%.1u%=")
    assert cut.out == f"pre JOB|PAR|UCKPT\npre {str(run)[:3]}|bat|aable\n"


def test_long_format_names_default_width_and_suffix(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    run, _pend = _two(cluster)
    result = cli_env.run("ls", "-j", str(run), "-O", "jobid,USERNAME:.8|,State:,Checkpoint:6x")
    assert result.code == 0, result.err
    assert result.lines == [
        f"{'JOBID':<20}    USER|STATECKPT  x",
        f"{run:<20}   alice|RUNNINGable  x",
    ]


def test_h_is_no_header_and_help_stays(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    run, _pend = _two(cluster)
    for flag in ("-h", "-H", "--noheader"):
        assert cli_env.run("ls", "-j", str(run), flag, "-o", "%i").out == f"{run}\n"
    shown = cli_env.run("ls", "--help")
    assert shown.code == 0 and "--noheader" in shown.out and "--Format" in shown.out


def test_sort_keys_as_squeue(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    run, pend = _two(cluster)
    other = cluster.control.submit("alice", name="aaa", n_steps=1).job_id
    order = {
        "t,i": [pend, run, other],  # "PD" < "R" (strcmp), then the id
        "-t,i": [run, other, pend],  # a '-' reverses only the key after it
        "-ti": [run, other, pend],  # squeue reads letters, commas optional
        "-t,-i": [other, run, pend],
        "+j": [other, run, pend],
        "-u,-i": [pend, other, run],
    }
    for keys, expected in order.items():
        result = cli_env.run("ls", "-h", "-o", "%i", "-S", keys)
        assert [int(x) for x in result.lines] == expected, keys


def test_names_nodes_accounts_and_me_select(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    run, pend = _two(cluster)
    nodes = cluster.job(run).nodes

    def ids(*argv: str) -> list[int]:
        result = cli_env.run("ls", "-h", "-o", "%i", *argv)
        assert result.code == 0, result.err
        return [int(x) for x in result.lines]

    assert ids("-n", "queued,nothing") == [pend]
    assert ids("-w", nodes) == [run]
    assert ids("--nodelist", "zz[1-2]") == []
    assert ids("-A", "proj") == [run]  # any case, as squeue
    assert ids("--me", "--as-user", "bob") == [pend]
    steps = cli_env.run("ls", "-s", "-h", "-o", "%i", "-n", "batch")
    assert steps.lines == [f"{run}.batch"]


def test_parsable_output(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    run, pend = _two(cluster)
    nodes = cluster.job(run).nodes
    result = cli_env.run("ls", "--parsable", "-S", "i")
    assert result.lines == [
        "JOBID|PARTITION|NAME|USER|ST|TIME|NODES|NODELIST(REASON)|CKPT|",
        f"{run}|batch|md|alice|R|0:00|1|{nodes}|able|",
        f"{pend}|gpu|queued|bob|PD|0:00|0|(Priority)|pending|",
    ]
    chosen = cli_env.run("ls", "--parsable", "-h", "-j", str(run), "-o", "x%.30i %a")
    assert chosen.out == f"{run}|Proj|\n"
    steps = cli_env.run("ls", "-s", "--parsable", "-j", str(run), "-O", "StepID,Checkpoint")
    assert steps.lines[:2] == ["STEPID|CKPT|", f"{run}.batch|able|"]


def test_step_format_letters(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    run, _pend = _two(cluster)
    result = cli_env.run("ls", "-s", "-j", str(run), "-S", "-i", "-o", "%.14i %A %=")
    assert result.lines[0] == "        STEPID TASKS CKPT"
    assert [line.split()[0] for line in result.lines[1:]] == [
        f"{run}.extern",
        f"{run}.batch",
        f"{run}.0",
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-o", "%i %y"], "unknown or unsupported format field %y"),
        (["-o", "%-5j"], "format field %- (squeue has no '-'"),
        (["-o", "plain"], "has no field"),
        (["-o", "%all"], "%all is not supported"),
        (["-O", "JobID,Bogus"], "unknown or unsupported format field 'Bogus'"),
        (["-O", "JobID:-3"], "bad width in 'JobID:-3'"),
        (["-o", "%99999i"], "bad width in '%99999i'"),
        (["-S", "-t,p"], "unknown or unsupported sort key 'p'"),
        (["-S", "jobid"], "unknown or unsupported sort key 'o' in 'jobid'"),
        (["-s", "-o", "%t"], "unknown or unsupported format field %t"),
        (["-o", "%i", "-O", "JobID"], "not allowed with argument"),
        (["--json", "-o", "%i"], "--json prints every field"),
        (["-w", "node[2-1]"], "invalid node list"),
    ],
)
def test_bad_formats_and_sort_keys_are_one_line_exit_2(
    cli_env: CliEnv, cluster: SimulatedCluster, argv: list[str], message: str
) -> None:
    _two(cluster)
    result = cli_env.run("ls", *argv)
    if "--json" in argv:  # every refusal under --json prints the document too
        assert (result.code, json.loads(result.out)["error"]["name"]) == (2, "USAGE")
    else:
        assert (result.code, result.out) == (2, ""), result.err
    assert message in result.err and result.err.count("\n") == 1
    assert "Traceback" not in result.err


def test_defaults_unchanged_by_the_new_options(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    run, pend = _two(cluster)
    lines = cli_env.run("ls").lines
    assert lines[0].split() == [
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
    assert [int(line.split()[0]) for line in lines[1:]] == [run, pend]


def test_time_of_a_suspended_job_is_what_it_ran_everywhere(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    """squeue's TIME for a suspended job is the time it ran before the suspend (Slurm's
    pre_sus_time), and once resumed the suspended time is left out: the plain table,
    ``-o %M``, ``-O TimeUsed``, ``--parsable`` and ``-S M`` all say the same."""
    held = cluster.control.submit("alice", name="susp", n_steps=1).job_id
    cluster.control.advance(100)
    cluster.control.set_job_state(held, JobState.SUSPENDED)
    other = cluster.control.submit("alice", name="other", n_steps=1).job_id
    cluster.control.advance(1000)
    plain = cli_env.run("ls", "-j", str(held))
    assert plain.lines[1].split()[5] == "1:40", plain.out
    letters = cli_env.run("ls", "-h", "-j", str(held), "-o", "%.2t %.10M")
    assert letters.out == " S       1:40\n"
    named = cli_env.run("ls", "-h", "-j", str(held), "-O", "TimeUsed:8")
    assert named.out == "1:40    \n"
    parsable = cli_env.run("ls", "-h", "-j", str(held), "--parsable")
    assert "|1:40|" in parsable.out
    # the suspended job ran 100 s, the other one 1000 s: -S M puts it first
    ordered = cli_env.run("ls", "-h", "-S", "M", "-o", "%i")
    assert ordered.lines == [str(held), str(other)]
    cluster.control.set_job_state(held, JobState.RUNNING)
    cluster.control.advance(20)
    resumed = cli_env.run("ls", "-h", "-j", str(held), "-o", "%M")
    assert resumed.out == "2:00\n"


def test_demo_suspended_jobs_have_one_time(cli_env: CliEnv) -> None:
    """The demo's suspended jobs: ``-o %M`` is the plain table's TIME (it used to be end
    minus start, over a day, beside the table's hours)."""
    table = cli_env.run("--demo", "ls", "-t", "S")
    assert table.code == 0 and len(table.lines) > 1, table.err
    times = {line.split()[0]: line.split()[5] for line in table.lines[1:]}
    letters = cli_env.run("--demo", "ls", "-h", "-t", "S", "-o", "%i %M")
    assert dict(line.split() for line in letters.lines) == times


def test_iterate_lists_again_under_the_date_until_interrupted(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    """``ls -i SECONDS`` as squeue --iterate: the date (ctime), the listing, again."""
    from sckpt.cli import WaitTiming

    run, _pend = _two(cluster)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            raise KeyboardInterrupt
        cluster.control.advance(seconds)

    cli_env.inject["wait"] = WaitTiming(sleep=sleep)
    result = cli_env.run("ls", "-i", "5", "-h", "-j", str(run), "-o", "%i %M")
    assert result.code == 130 and slept == [5, 5]
    dates, listings = result.lines[0::2], result.lines[1::2]
    assert len(dates) == 2 and all(len(d.split()) == 5 for d in dates)  # Fri Nov 27 ... 2026
    assert listings == [f"{run} 0:00", f"{run} 0:05"]
    refused = cli_env.run("ls", "-i", "0")
    assert refused.code == 2 and "-i/--iterate" in refused.err


def test_time_limit_time_left_and_end_time_as_squeue(
    cli_env: CliEnv, cluster: SimulatedCluster
) -> None:
    """``%l %L %e`` (``-O TimeLimit,TimeLeft,EndTime``): what an operator reads before
    vacating anything.  The real-cluster module compares them with squeue's bytes."""
    job = cluster.control.submit("alice", name="md", n_steps=1, duration=5400).job_id
    cluster.control.advance(600)
    record = cluster.job(job)
    assert record.time_limit == 120  # the simulator's --time: whole hours
    end = squeue_time(record.end_time)
    letters = cli_env.run("ls", "-h", "-j", str(job), "-o", "%l|%L|%e")
    assert letters.out == f"2:00:00|1:50:00|{end}\n"
    names = cli_env.run("ls", "-j", str(job), "-O", "TimeLimit:11,TimeLeft:11,EndTime")
    assert names.lines[0].split() == ["TIME_LIMIT", "TIME_LEFT", "END_TIME"]
    assert names.lines[1].split() == ["2:00:00", "1:50:00", end]
    pending = cluster.control.submit("bob", name="q", state=JobState.PENDING).job_id
    assert cli_env.run("ls", "-h", "-j", str(pending), "-o", "%L %e").out == "1:00:00 N/A\n"
    ordered = cli_env.run("ls", "-h", "-S", "L", "-o", "%i")
    assert ordered.lines == [str(pending), str(job)]  # an hour left before 1:50:00


def test_priority_qos_and_dependency_as_squeue(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    """``%Q %q %E`` (``-O PriorityLong,QOS,Dependency``); a held job's priority is 0; no
    dependency is empty as the simulated controller's release (19.05) prints it."""
    run, pend = _two(cluster)
    shown = cli_env.run("ls", "-h", "-S", "i", "-o", "%i|%Q|%q|%E")
    rows = [line.split("|") for line in shown.lines]
    assert [r[0] for r in rows] == [str(run), str(pend)]
    assert all(int(r[1]) > 0 and r[2] == "normal" and r[3] == "" for r in rows), rows
    assert cli_env.run("--as-user", "bob", "hold", str(pend)).code == 0
    held = cli_env.run("ls", "-h", "-j", str(pend), "-O", "PriorityLong:4,QOS:7,Dependency:8")
    assert held.out == "0   " + "normal " + " " * 8 + "\n"  # widths 4, 7, 8


def test_min_memory_as_squeue_converts_it() -> None:
    """``%m``: squeue's convert_num_unit with CONVERT_NUM_UNIT_EXACT on MB (1024ths while
    nothing is lost, half values kept)."""
    from sckpt.cli.squeue_format import memory_text

    assert [memory_text(mb) for mb in (0, 512, 1000, 1024, 2560, 4000, 8192, 2 << 20)] == [
        "0",
        "512M",
        "1000M",
        "1G",
        "2.50G",
        "4000M",
        "8G",
        "2T",
    ]


def test_min_memory_field(cli_env: CliEnv, cluster: SimulatedCluster) -> None:
    run, _pend = _two(cluster)
    shown = cli_env.run("ls", "-j", str(run), "-o", "%.10m", "-O", "MinMemory")
    assert shown.code == 2  # -o and -O together, as before
    letters = cli_env.run("ls", "-j", str(run), "-o", "%.10m")
    assert letters.lines == ["MIN_MEMORY", "      250G"]
