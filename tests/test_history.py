"""``sckpt history`` on the real setup: slurmdbd's records through libslurm, equal to sacct's.

A job requeued twice (``scontrol requeue``) has three records in slurmdbd; ``sckpt history
JOB --json`` must list the same three, field for field, as ``sacct -M CLUSTER -j JOB
--duplicates``.  Without accounting (the plain test cluster) and with a slurmdbd that does
not answer, the command fails in one line with exit 3, in seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import ROOT, AccountingSetup, SlurmCluster
from .helpers import wait_for

pytestmark = pytest.mark.slurm

SCKPT = ROOT / ".venv" / "bin" / "sckpt"
FIELDS = "jobid,state,exitcode,start,end,nodelist"


def sckpt(conf: Path, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLURM_CONF": str(conf), "NO_COLOR": "1"}
    env.pop("SCKPT_CONFIG", None)
    return subprocess.run(
        [str(SCKPT), *argv], env=env, capture_output=True, text=True, timeout=timeout
    )


def _sacct(cluster: SlurmCluster, name: str, job: str) -> list[list[str]]:
    """sacct's records of the job; a time not set (sacct: ``None`` for NO_VAL, ``Unknown``
    for 0) reads as ``Unknown``, sckpt's one word for it."""
    out = cluster.run(
        "sacct", "-M", name, "-j", job, "--duplicates", "--parsable2", "-n", "-X", "-o", FIELDS
    ).stdout
    rows = [line.split("|") for line in out.splitlines() if line]
    return [[*r[:3], *("Unknown" if t == "None" else t for t in r[3:5]), *r[5:]] for r in rows]


def _state(cluster: SlurmCluster, job: str) -> str:
    return cluster.run("squeue", "-h", "-j", job, "-o", "%T", check=False).stdout.strip()


def _sacct_time(value: int) -> str:
    """A Unix time as sacct prints it by default (local ISO 8601; Unknown when unset)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(value)) if value else "Unknown"


def _as_sacct(record: dict[str, object]) -> list[str]:
    """sckpt's JSON record in sacct's columns, computed here from the raw fields."""
    state = str(record["state"])
    if record["cancelled_by"] is not None:
        state = f"{state} by {record['cancelled_by']}"
    return [
        str(record["job_id"]),
        state,
        f"{record['exit_code']}:{record['signal']}",
        _sacct_time(int(str(record["start_time"]))),
        _sacct_time(int(str(record["end_time"]))),
        str(record["nodes"]),
    ]


def test_a_job_requeued_twice_shows_the_three_records_sacct_shows(
    slurm_accounting: AccountingSetup,
) -> None:
    name = "sckpt-a"
    a = slurm_accounting.clusters[name]
    job = a.run("sbatch", "--parsable", "-o", "/dev/null", "--wrap", "sleep 300").stdout.strip()
    try:
        for _ in range(2):
            # A requeued job starts again once its old credential expired (cred_expire=10).
            wait_for(lambda: _state(a, job) == "RUNNING", 90, 0.5, what=f"job {job} running")
            a.run("scontrol", "requeue", job)
        wait_for(lambda: _state(a, job) == "PENDING", 60, 0.5, what=f"job {job} pending again")
    finally:
        a.run("scancel", job, check=False)
    # slurmdbd gets the records late: wait for sacct's third, ended one.
    wait_for(
        lambda: (
            rows
            if len(rows := _sacct(a, name, job)) == 3 and rows[2][1].startswith("CANCELLED")
            else []
        ),
        90,
        0.5,
        what=f"three records of job {job} in sacct",
    )
    # slurmdbd may still amend the last record (its end, once the cancel completed): compare
    # with sacct's answer before and after sckpt's, once those two agree.
    document: dict[str, object] = {}

    def agreed() -> list[list[str]]:
        nonlocal document
        before = _sacct(a, name, job)
        done = sckpt(a.conf, "history", job, "--json")
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout)
        return before if before == _sacct(a, name, job) else []

    expected = wait_for(agreed, 60, 0.5, what=f"sacct's records of job {job} settled")
    assert document["cluster"] == name and document["job_id"] == int(job)
    records = document["records"]
    assert isinstance(records, list)
    assert [_as_sacct(r) for r in records] == expected
    assert [r["state"] for r in records] == ["REQUEUED", "REQUEUED", "CANCELLED"]
    # The table says the same, one line per record, oldest first.
    table = sckpt(a.conf, "history", job)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["RUN", "JOBID", "STATE"]
    assert [line.split()[:2] for line in lines[1:4]] == [
        ["first", "run"],
        ["restart", "1"],
        ["restart", "2"],
    ]
    assert [line.split()[3] for line in lines[1:3]] == ["REQUEUED", "REQUEUED"]
    assert "CANCELLED by 0" in lines[3]


def test_the_other_clusters_job_is_not_in_this_clusters_history(
    slurm_accounting: AccountingSetup,
) -> None:
    """History asks for the controller's own cluster: job ids of the two clusters overlap."""
    a, b = slurm_accounting.clusters["sckpt-a"], slurm_accounting.clusters["sckpt-b"]
    job = b.run("sbatch", "--parsable", "-o", "/dev/null", "--wrap", "true").stdout.strip()
    wait_for(lambda: _sacct(b, "sckpt-b", job), 90, 0.5, what=f"job {job} in sacct -M sckpt-b")
    done = sckpt(b.conf, "history", job, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    on_b = json.loads(done.stdout)
    assert {r["cluster"] for r in on_b["records"]} == {"sckpt-b"}
    on_a = sckpt(a.conf, "history", job, "--json")
    expected_a = _sacct(a, "sckpt-a", job)
    if expected_a:  # sckpt-a has a job of that number too: then only its records
        assert {r["cluster"] for r in json.loads(on_a.stdout)["records"]} == {"sckpt-a"}
    else:
        assert on_a.returncode == 1
        assert json.loads(on_a.stdout)["error"]["name"] == "ESLURM_INVALID_JOB_ID"


def test_without_accounting_history_says_so_in_one_line_and_exits_3(
    slurm_cluster: SlurmCluster,
) -> None:
    conf = slurm_cluster.conf
    assert "accounting_storage/slurmdbd" not in conf.read_text()
    started = time.monotonic()
    done = sckpt(conf, "history", "1")
    assert time.monotonic() - started < 20
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert "Slurm accounting is not configured on this cluster" in done.stderr
    assert "AccountingStorageType=accounting_storage/slurmdbd" in done.stderr
    as_json = sckpt(conf, "history", "1", "--json")
    assert as_json.returncode == 3
    error = json.loads(as_json.stdout)["error"]
    assert (error["name"], error["code"], error["exit_code"]) == ("ESLURM_DB_CONNECTION", 7000, 3)
    assert error["hint"].startswith("job history and finished jobs come from slurmdbd")


def test_a_slurmdbd_that_refuses_fails_in_seconds_with_exit_3(
    slurm_accounting: AccountingSetup, tmp_path: Path
) -> None:
    """This host's slurm.conf names a port nobody listens on (libslurm itself is asked)."""
    conf = tmp_path / "slurm.conf"
    port = slurm_accounting.dbd_port
    text = slurm_accounting.clusters["sckpt-a"].conf.read_text()
    assert f"AccountingStoragePort={port}\n" in text
    conf.write_text(text.replace(f"AccountingStoragePort={port}\n", "AccountingStoragePort=9\n"))
    conf.chmod(0o644)
    started = time.monotonic()
    done = sckpt(conf, "history", "1", "--json")
    assert time.monotonic() - started < 20
    assert done.returncode == 3, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["kind"] == "AccountingUnavailable"
    assert error["message"].startswith("slurmdbd did not answer the accounting query")


def test_the_binding_refuses_a_dead_slurmdbd_port_before_asking_libslurm(
    slurm_accounting: AccountingSetup,
) -> None:
    """The port check: a slurmdbd the controller names but that does not listen is refused
    from the calling thread in seconds (libslurm would wait MessageTimeout per attempt)."""
    code = (
        "import time\n"
        "from sckpt.backend.libslurm import get_binding\n"
        "from sckpt.backend.errors import AccountingUnavailable\n"
        "from sckpt.backend.slurm_api import AccountingConfig\n"
        "b = get_binding()\n"
        "b.accounting_config = lambda: AccountingConfig('accounting_storage/slurmdbd',"
        " '127.0.0.1', '', 9)\n"
        "t = time.monotonic()\n"
        "try:\n"
        "    b.job_records(1, 0)\n"
        "except AccountingUnavailable as e:\n"
        "    print(round(time.monotonic() - t, 1), e.message)\n"
    )
    env = {**os.environ, "SLURM_CONF": str(slurm_accounting.clusters["sckpt-a"].conf)}
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    seconds, _, message = done.stdout.strip().partition(" ")
    assert message == "slurmdbd does not answer at 127.0.0.1:9 (Connection refused)", done.stderr
    assert float(seconds) < 5


def _doctor(conf: Path) -> tuple[int, dict[str, object], str]:
    as_json = sckpt(conf, "doctor", "--json")
    text = sckpt(conf, "doctor")
    report: dict[str, object] = json.loads(as_json.stdout)["report"]
    return as_json.returncode, report, text.stdout


def test_doctor_without_accounting_says_what_it_would_add(slurm_cluster: SlurmCluster) -> None:
    code, report, text = _doctor(slurm_cluster.conf)
    assert (code, report["accounting"]) == (0, "none"), text
    line = next(line for line in text.splitlines() if "accounting:" in line)
    assert line.startswith("info  accounting: not configured (AccountingStorageType=")
    for words in ("sckpt history JOB", "f in the console", "-M"):
        assert words in line
    assert "FAIL" not in text


def test_doctor_with_slurmdbd_says_it_answers(slurm_accounting: AccountingSetup) -> None:
    code, report, text = _doctor(slurm_accounting.clusters["sckpt-b"].conf)
    assert (code, report["accounting"]) == (0, "slurmdbd"), text
    where = f"127.0.0.1:{slurm_accounting.dbd_port}"
    assert f"  ok  accounting: slurmdbd at {where} answered in " in text


def test_doctor_names_a_slurmdbd_that_does_not_answer(
    slurm_accounting: AccountingSetup, tmp_path: Path
) -> None:
    conf = tmp_path / "slurm.conf"
    port = slurm_accounting.dbd_port
    text = slurm_accounting.clusters["sckpt-b"].conf.read_text()
    conf.write_text(text.replace(f"AccountingStoragePort={port}\n", "AccountingStoragePort=9\n"))
    conf.chmod(0o644)
    code, report, shown = _doctor(conf)
    # The controller still answers: sckpt is usable, only accounting fails.
    assert (code, report["accounting"], report["usable"]) == (0, "unreachable", True), shown
    assert "FAIL  accounting: slurmdbd does not answer: " in shown
    assert "sckpt can talk to Slurm." in shown


FINISHED = "CD,CA,F,TO,NF,PR,BF,DL,OOM"


def _sacct_finished(cluster: SlurmCluster, since: str) -> set[tuple[str, str]]:
    out = cluster.run(
        "sacct", "-M", "sckpt-a", "-X", "-n", "-P", "-o", "jobid,state", "-S", since, "-E",
        "now", "-s", FINISHED,
    ).stdout  # fmt: skip
    return {(r.split("|")[0], r.split("|")[1].split()[0]) for r in out.splitlines() if r}


def _sckpt_finished(conf: Path, since: str) -> set[tuple[str, str]]:
    code = (
        "import json\n"
        "from sckpt.backend.facade import open_facade\n"
        "f = open_facade(engine='live')\n"
        f"found = f.finished_jobs(since={since!r})\n"
        "print(json.dumps([[str(r.job_id), r.state] for r in found.records]))\n"
    )
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", code],
        env={**os.environ, "SLURM_CONF": str(conf)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return {(job, state) for job, state in json.loads(done.stdout)}


def test_finished_jobs_are_the_ones_sacct_lists_for_the_window(
    slurm_accounting: AccountingSetup,
) -> None:
    """What ``f`` asks: the jobs that ended in the window, each once with its last state."""
    a = slurm_accounting.clusters["sckpt-a"]
    made = [
        a.run("sbatch", "--parsable", "-o", "/dev/null", "--wrap", wrap).stdout.strip()
        for wrap in ("true", "exit 3")
    ]
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 3600))
    wait_for(
        lambda: {j for j, _ in _sacct_finished(a, since)} >= set(made),
        90,
        0.5,
        what="both jobs ended in sacct",
    )

    def agreed() -> set[tuple[str, str]]:
        before = _sacct_finished(a, since)
        ours = _sckpt_finished(a.conf, since)
        return ours if ours == before == _sacct_finished(a, since) else set()

    found = wait_for(agreed, 60, 0.5, what="sckpt's finished jobs equal to sacct's, twice in a row")
    assert {(made[0], "COMPLETED"), (made[1], "FAILED")} <= found
