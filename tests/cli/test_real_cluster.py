"""The command line against the real Slurm 22.05 cluster, with the engine it selects there.

Only jobs these tests submit are looked at, and each is cancelled at the end.  Checks:

* ``sckpt ls --json`` equals ``squeue --json`` for ids, states, users and nodes (jobs of two
  users, running and pending), and ``sckpt ls -s`` lists the steps ``squeue -s`` lists;
* the checkpoint commands answer what the selected engine answers on modern Slurm: the
  job-state errors first (pending, unknown), then "not supported" for a step that is not
  checkpoint-capable; the historical syntax gives the same answers;
* read-only refuses every mutating command and the real job is unchanged;
* invalid input never reaches Slurm: ``sdiag``'s per-user RPC count of a user that only
  these tests use does not move while that user runs every kind of bad command line (and
  does move when the same user runs a valid ``sckpt ls``, so the probe can see RPCs).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import SlurmCluster
from ..helpers import probe_user_home, rpc_count, settled_rpc_count, wait_for
from .test_parser import BAD_USAGE

pytestmark = pytest.mark.slurm

SCKPT = Path(sys.executable).with_name("sckpt")
PROBE_USER = "sckpt-cli-probe"
"""A user only these tests run commands as, so its sdiag RPC count is theirs alone."""


@pytest.fixture(scope="module")
def shared_dir() -> Iterator[Path]:
    """A directory every test user can read and write (config, audit log, shim cache)."""
    path = Path(tempfile.mkdtemp(prefix="sckpt-cli-real-"))
    path.chmod(0o777)
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=False)


@pytest.fixture(scope="module")
def config(shared_dir: Path) -> Path:
    """An empty config (every default): the audit log goes to each user's XDG state dir."""
    path = shared_dir / "config.toml"
    path.write_text("# sckpt CLI real-cluster tests: defaults\n")
    path.chmod(0o644)
    (shared_dir / "root").mkdir(exist_ok=True)
    return path


def sckpt(
    cluster: SlurmCluster,
    config: Path,
    *argv: str,
    user: str | None = None,
    home: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``sckpt`` against the cluster (as ``user`` when given).

    Every user gets its own XDG state dir (its audit log) under the shared test directory,
    so nothing is written to real home directories.
    """
    if home is None:
        home = config.parent / "root"
    env = {
        "SLURM_CONF": str(cluster.conf),
        "SCKPT_CONFIG": str(config),
        "NO_COLOR": "1",
        "XDG_STATE_HOME": str(home / "state"),
    }
    cmd = [str(SCKPT), *argv]
    if user is None:
        env = {**os.environ, **env}
    else:
        env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "cache"))
        cmd = ["runuser", "-u", user, "--", "env", *(f"{k}={v}" for k, v in env.items()), *cmd]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=300, check=False, cwd="/tmp"
    )


def audit_lines(config: Path, home: Path | None = None) -> list[dict[str, Any]]:
    """The audit log a user's commands wrote (default path under its XDG state dir)."""
    path = (home or config.parent / "root") / "state" / "sckpt" / "audit.log"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def submit(cluster: SlurmCluster, *args: str, user: str | None = None) -> int:
    out = cluster.run("sbatch", "--parsable", "-o", "/dev/null", *args, user=user).stdout
    return int(out.strip().split(";")[0])


def squeue_state(cluster: SlurmCluster, job: int) -> str:
    return cluster.run("squeue", "-h", "-j", str(job), "-o", "%T", check=False).stdout.strip()


@pytest.fixture(scope="module")
def jobs(slurm_cluster: SlurmCluster) -> Iterator[dict[str, int]]:
    """Own jobs: root running with a step, alice running, alice held (pending)."""
    alice = slurm_cluster.users[0]
    made: dict[str, int] = {}
    try:
        made["root_run"] = submit(
            slurm_cluster, "-J", "cli-run", "--wrap", "srun --overlap -n1 sleep 600"
        )
        made["alice_run"] = submit(
            slurm_cluster, "-J", "cli-alice", "--wrap", "srun --overlap -n1 sleep 600", user=alice
        )
        made["alice_held"] = submit(
            slurm_cluster, "-J", "cli-held", "--hold", "--wrap", "sleep 600", user=alice
        )
        for key in ("root_run", "alice_run"):
            job = made[key]
            wait_for(
                lambda job=job: (
                    f"{job}.0"
                    in slurm_cluster.run(
                        "squeue", "-h", "-s", "-j", str(job), "-o", "%i", check=False
                    ).stdout.split()
                ),
                timeout=60,
            )
        yield made
    finally:
        for job in made.values():
            slurm_cluster.run("scancel", str(job), check=False)


def test_ls_json_matches_squeue_json(
    slurm_cluster: SlurmCluster, config: Path, jobs: dict[str, int]
) -> None:
    ids = ",".join(str(job) for job in jobs.values())
    ours = sckpt(slurm_cluster, config, "ls", "--json", "--all", "--job", ids)
    assert ours.returncode == 0, ours.stderr
    theirs = json.loads(slurm_cluster.run("squeue", "--json").stdout)
    expected = {
        job["job_id"]: (job["job_state"], job["user_name"], job["nodes"])
        for job in theirs["jobs"]
        if job["job_id"] in set(jobs.values())
    }
    document = json.loads(ours.stdout)
    got = {job["job_id"]: (job["state"], job["user"], job["nodes"]) for job in document["jobs"]}
    assert got == expected
    assert expected[jobs["alice_held"]][0] == "PENDING"
    assert expected[jobs["root_run"]][0] == "RUNNING"
    assert document["stale"] is False
    assert document["cluster"]["engine"] in ("cooperative", "live", "native")


def test_ls_steps_match_squeue_steps(
    slurm_cluster: SlurmCluster, config: Path, jobs: dict[str, int]
) -> None:
    job = jobs["root_run"]
    listed = sckpt(slurm_cluster, config, "ls", "--steps", "--job", str(job), "--noheader")
    assert listed.returncode == 0, listed.stderr
    ours = sorted(line.split()[0] for line in listed.stdout.splitlines())
    theirs = slurm_cluster.run("squeue", "-h", "-s", "-j", str(job), "-o", "%i").stdout.split()
    # Both list the .extern step the cluster's PrologFlags=Contain creates.
    assert ours == sorted(theirs)
    assert f"{job}.extern" in ours


def test_ls_table_row_matches_squeue(
    slurm_cluster: SlurmCluster, config: Path, jobs: dict[str, int]
) -> None:
    job = jobs["alice_run"]
    row = sckpt(slurm_cluster, config, "ls", "-H", "-j", str(job)).stdout.split()
    squeue = slurm_cluster.run("squeue", "-h", "-j", str(job), "-o", "%i %P %u %t %N").stdout
    jobid, partition, user, short, nodes = squeue.split()
    assert row[0] == jobid and row[1] == partition and row[3] == user
    assert row[4] == short and row[7] == nodes


def test_ls_filters_on_the_real_cluster(
    slurm_cluster: SlurmCluster, config: Path, jobs: dict[str, int]
) -> None:
    alice = slurm_cluster.users[0]
    ids = ",".join(str(job) for job in jobs.values())
    mine = sckpt(slurm_cluster, config, "ls", "-H", "-j", ids, "--user", alice, "--state", "PD")
    assert [int(line.split()[0]) for line in mine.stdout.splitlines()] == [jobs["alice_held"]]


def _engine(slurm_cluster: SlurmCluster, config: Path) -> str:
    out = sckpt(slurm_cluster, config, "ls", "--json", "--job", "1").stdout
    return str(json.loads(out)["cluster"]["engine"])


def test_checkpoint_commands_answer_per_engine(
    slurm_cluster: SlurmCluster, config: Path, jobs: dict[str, int]
) -> None:
    engine = _engine(slurm_cluster, config)
    step = f"{jobs['root_run']}.0"
    able = sckpt(slurm_cluster, config, "able", step)
    if engine in ("live", "cooperative"):
        # a plain step (not under `sckpt run`): not supported, with the code named
        assert able.returncode == 1 and able.stdout == ""
        assert "ESLURM_NOT_SUPPORTED (2036)" in able.stderr and able.stderr.count("\n") == 1
        historical = sckpt(slurm_cluster, config, "checkpoint", "ABLE", step)
        assert (historical.returncode, historical.stderr) == (able.returncode, able.stderr)
    else:  # native: Slurm <= 19.05 answers itself
        assert able.returncode in (0, 1)
    pending = sckpt(slurm_cluster, config, "create", str(jobs["alice_held"]))
    assert pending.returncode == 1 and "ESLURM_JOB_PENDING (2024)" in pending.stderr
    unknown = sckpt(slurm_cluster, config, "disable", "4000000000.0")
    assert unknown.returncode == 1 and "ESLURM_INVALID_JOB_ID (2017)" in unknown.stderr
    several = sckpt(slurm_cluster, config, "error", str(jobs["alice_held"]), "4000000000")
    assert several.returncode == 1 and len(several.stderr.splitlines()) == 2


def test_an_unprivileged_user_is_refused_on_anothers_job(
    slurm_cluster: SlurmCluster, config: Path, jobs: dict[str, int], shared_dir: Path
) -> None:
    bob = slurm_cluster.users[1]
    home = shared_dir / bob
    home.mkdir(exist_ok=True)
    subprocess.run(["chown", bob, str(home)], check=True)
    result = sckpt(slurm_cluster, config, "disable", f"{jobs['alice_run']}.0", user=bob, home=home)
    assert result.returncode == 1
    assert "ESLURM_ACCESS_DENIED (2002)" in result.stderr  # access is checked before support
    assert squeue_state(slurm_cluster, jobs["alice_run"]) == "RUNNING"
    (line,) = audit_lines(config, home)
    assert line["operation"] == "disable" and line["user"] == bob


READ_ONLY_ARGV = [
    ["create", "{step}"],
    ["vacate", "{step}"],
    ["vacate", "{job}"],
    ["restart", "{job}"],
    ["enable", "{step}"],
    ["disable", "{step}"],
    ["complete", "{step}", "--error-code", "1"],
    ["tasks", "{step}", "--nodelist", "sckpt-node"],
    ["checkpoint", "vacate", "{job}"],
]


def test_read_only_refuses_every_mutating_command(
    slurm_cluster: SlurmCluster, config: Path, jobs: dict[str, int]
) -> None:
    job = jobs["root_run"]
    audited = len(audit_lines(config))
    for argv in READ_ONLY_ARGV:
        words = [w.format(job=job, step=f"{job}.0") for w in argv]
        result = sckpt(slurm_cluster, config, "--read-only", *words)
        assert result.returncode == 1, (words, result.stderr)
        assert "read-only" in result.stderr and result.stderr.count("\n") == 1
    assert squeue_state(slurm_cluster, job) == "RUNNING"
    steps = slurm_cluster.run("squeue", "-h", "-s", "-j", str(job), "-o", "%i").stdout.split()
    assert f"{job}.0" in steps
    refusals = audit_lines(config)[audited:]
    assert len(refusals) == len(READ_ONLY_ARGV)
    assert {line["result"]["name"] for line in refusals} == {"READ_ONLY"}


def test_as_user_is_refused_on_the_real_engine(slurm_cluster: SlurmCluster, config: Path) -> None:
    result = sckpt(slurm_cluster, config, "--as-user", "root", "ls")
    assert result.returncode == 2 and "simulated" in result.stderr
    assert result.stderr.count("\n") == 1


# ------------------------------------------------------------------ invalid input and sdiag


@pytest.fixture(scope="module")
def probe(shared_dir: Path) -> Path:
    return probe_user_home(PROBE_USER, shared_dir)


def test_invalid_input_never_reaches_slurm(
    slurm_cluster: SlurmCluster, config: Path, probe: Path
) -> None:
    before = settled_rpc_count(slurm_cluster, PROBE_USER)
    for argv in BAD_USAGE:
        result = sckpt(slurm_cluster, config, *argv, user=PROBE_USER, home=probe)
        assert result.returncode == 2, (argv, result.stderr)
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert settled_rpc_count(slurm_cluster, PROBE_USER) == before
    # The probe sees RPCs: a valid listing by the same user is counted.
    listed = sckpt(slurm_cluster, config, "ls", "-H", "-j", "1", user=PROBE_USER, home=probe)
    assert listed.returncode == 0, listed.stderr
    assert settled_rpc_count(slurm_cluster, PROBE_USER) > before


# ------------------------------------------------------------------ a step under `sckpt run`

ROOT = Path(__file__).resolve().parents[2]
COUNTER = ROOT / "examples" / "counter.py"


@pytest.fixture
def wrapped_job(slurm_cluster: SlurmCluster) -> Iterator[tuple[int, Path]]:
    """A batch job whose step 0 runs the example counter under ``sckpt run``."""
    work = Path(tempfile.mkdtemp(prefix="sckpt-cli-coop-"))
    work.chmod(0o755)
    step = (
        f"srun --overlap -n1 {SCKPT} run --name counter -- "
        f"python3 {COUNTER} --log {work}/log --interval 0.1"
    )
    job = submit(slurm_cluster, "-J", "cli-coop", "-D", str(work), "--wrap", step)
    try:
        yield job, work
    finally:
        slurm_cluster.run("scancel", str(job), check=False)
        subprocess.run(["rm", "-rf", str(work)], check=False)


def test_the_cli_drives_a_step_under_sckpt_run(
    slurm_cluster: SlurmCluster, config: Path, wrapped_job: tuple[int, Path]
) -> None:
    job, work = wrapped_job
    step = f"{job}.0"
    engine = _engine(slurm_cluster, config)

    def registered() -> bool:
        answer = sckpt(slurm_cluster, config, "able", step)
        return answer.returncode == 0 or (
            engine != "cooperative" and "ESLURM_NOT_SUPPORTED" in answer.stderr
        )

    wait_for(registered, timeout=90, interval=0.5)
    if engine != "cooperative":  # live: listing only; every step is "not supported"
        refused = sckpt(slurm_cluster, config, "create", step)
        assert refused.returncode == 1 and "ESLURM_NOT_SUPPORTED (2036)" in refused.stderr
        return
    assert sckpt(slurm_cluster, config, "able", step).stdout == "Yes\n"
    assert sckpt(slurm_cluster, config, "disable", step).returncode == 0
    assert sckpt(slurm_cluster, config, "checkpoint", "d", step).returncode == 0
    assert sckpt(slurm_cluster, config, "enable", step).returncode == 0
    still = sckpt(slurm_cluster, config, "able", step)
    assert (still.returncode, still.stdout) == (0, "No\n")  # the counter is at 1
    refused = sckpt(slurm_cluster, config, "create", step)
    assert refused.returncode == 1 and "ESLURM_DISABLED (2037)" in refused.stderr
    assert sckpt(slurm_cluster, config, "--read-only", "enable", step).returncode == 1
    assert sckpt(slurm_cluster, config, "ch", "en", step).returncode == 0
    assert sckpt(slurm_cluster, config, "ch", "able", step).stdout == "Yes\n"
    # complete keeps the highest code; tasks asks the step's tasks on a node to checkpoint
    reported = sckpt(
        slurm_cluster, config, "complete", step, "--error-code", "5", "--error-msg", "io trouble"
    )
    assert reported.returncode == 0, reported.stderr
    assert sckpt(slurm_cluster, config, "complete", step, "--error-code", "3").returncode == 0
    assert sckpt(slurm_cluster, config, "error", step).stdout == "error(5): io trouble\n"
    asked = sckpt(slurm_cluster, config, "tasks", step, "--nodelist", slurm_cluster.node)
    assert asked.returncode == 0, asked.stderr
    elsewhere = sckpt(slurm_cluster, config, "tasks", step, "--nodelist", "nonode")
    assert elsewhere.returncode == 1 and "ESLURM_INVALID_JOB_ID (2017)" in elsewhere.stderr
    wait_for(lambda: sckpt(slurm_cluster, config, "able", step).stdout == "Yes\n", timeout=60)
    created = sckpt(slurm_cluster, config, "create", step, "--max-wait", "60", "--json")
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["results"][0]["ok"] is True
    assert (work / f"{job}.counter" / "task0" / "g1" / "state").exists()  # <job>.<name>/task0/g1
    assert sckpt(slurm_cluster, config, "error", step).stdout == "error(0): \n"
    assert squeue_state(slurm_cluster, job) == "RUNNING"
    listed = json.loads(sckpt(slurm_cluster, config, "ls", "--json", "-j", str(job)).stdout)
    (row,) = listed["jobs"]
    kinds = {s["step_id"]: s["checkpoint"]["kind"] for s in row["steps"]}
    assert kinds[step] == "able"
    # vacate the whole job: checkpoint, then requeued held; restart brings it back
    vacated = sckpt(slurm_cluster, config, "vacate", str(job), "--max-wait", "60")
    assert vacated.returncode == 0, vacated.stderr
    wait_for(lambda: squeue_state(slurm_cluster, job) == "PENDING", timeout=60)
    restarted = sckpt(slurm_cluster, config, "restart", str(job))
    assert restarted.returncode == 0, restarted.stderr
    wait_for(lambda: squeue_state(slurm_cluster, job) == "RUNNING", timeout=90)
    operations = [line["operation"] for line in audit_lines(config)[-12:]]
    assert operations[-3:] == ["create", "vacate", "restart"]


def test_an_unreachable_controller_is_exit_3_with_the_reason(
    slurm_cluster: SlurmCluster, config: Path, shared_dir: Path
) -> None:
    """The same cluster's config with a port nobody listens on: slurmctld never answers."""
    dead = shared_dir / "dead-slurm.conf"
    text = slurm_cluster.conf.read_text()
    dead.write_text(re.sub(r"(?m)^SlurmctldPort=\d+", "SlurmctldPort=1", text))
    env = {**os.environ, "SLURM_CONF": str(dead), "SCKPT_CONFIG": str(config)}
    result = subprocess.run(
        [str(SCKPT), "ls", "--json"], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 3
    document = json.loads(result.stdout)
    assert document["stale"] is True and document["jobs"] == []
    assert result.stderr.startswith("sckpt: cannot reach Slurm: ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    # The table form: no empty header before the error, which comes alone on stderr.
    table = subprocess.run([str(SCKPT), "ls"], env=env, capture_output=True, text=True, timeout=300)
    assert (table.returncode, table.stdout) == (3, "")
    assert table.stderr.startswith("sckpt: cannot reach Slurm: ")
    assert table.stderr.count("\n") == 1


def test_doctor_on_the_real_cluster(slurm_cluster: SlurmCluster, config: Path) -> None:
    result = sckpt(slurm_cluster, config, "doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any(line.split()[:2] == ["ok", "controller:"] for line in lines)
    assert any(str(slurm_cluster.conf) in line for line in lines)


PROBE_SCRIPT = """
import sys
from hypothesis import HealthCheck, assume, given, settings
from sckpt import cli
from sckpt.backend.facade import open_facade
from tests.cli.test_properties import ARGV

counted = []


opened = []


def counting_open(settings, **flags):
    opened.append(flags)
    return open_facade(settings, **flags)


def refuse_open(settings, **flags):
    raise RuntimeError("would open a facade")


def dry_run(argv):
    # the same argv with the backend unreachable: is it refused before any facade is opened?
    return cli.main(argv, facade_factory=refuse_open)


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(argv=ARGV)
def invalid_input_is_refused_before_slurm(argv):
    assume("run" not in argv and "doctor" not in argv)
    assume(dry_run(argv) == 2)
    # now for real, against the real cluster: it must still stop at exit 2, before Slurm
    opened.clear()
    assert cli.main(argv, facade_factory=counting_open) == 2, argv
    assert not opened, ("a facade was opened for", argv)
    counted.append(argv)


invalid_input_is_refused_before_slurm()
print("EXAMPLES", len(counted))
"""


def test_random_invalid_input_never_reaches_slurm(
    slurm_cluster: SlurmCluster, config: Path, probe: Path
) -> None:
    """Hypothesis, run as the probe user against the real cluster: sdiag does not move."""
    script = probe / "probe_invalid.py"
    script.write_text(PROBE_SCRIPT)
    script.chmod(0o644)
    before = settled_rpc_count(slurm_cluster, PROBE_USER)
    env = {
        "SLURM_CONF": str(slurm_cluster.conf),
        "SCKPT_CONFIG": str(config),
        "HOME": str(probe),
        "XDG_CACHE_HOME": str(probe / "cache"),
        "XDG_STATE_HOME": str(probe / "state"),
        "PYTHONPATH": str(ROOT),
    }
    result = subprocess.run(
        [
            "runuser",
            "-u",
            PROBE_USER,
            "--",
            "env",
            *(f"{k}={v}" for k, v in env.items()),
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(probe),
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    examples = int(result.stdout.split("EXAMPLES")[-1])
    assert examples >= 50, examples
    assert rpc_count(slurm_cluster, PROBE_USER) == before


@pytest.mark.parametrize("engine", ["native", "live", "cooperative", "auto"])
def test_every_real_engine_lists_and_answers(
    slurm_cluster: SlurmCluster, config: Path, jobs: dict[str, int], engine: str
) -> None:
    """``--engine`` picks the engine; listing works with each; on 22.05 nothing checkpoints a
    plain step: native has no API (ESLURM_NOT_SUPPORTED), live never does, cooperative only
    under ``sckpt run``."""
    job = jobs["root_run"]
    listed = sckpt(slurm_cluster, config, "--engine", engine, "ls", "--json", "-j", str(job))
    assert listed.returncode == 0, listed.stderr
    document = json.loads(listed.stdout)
    assert [j["job_id"] for j in document["jobs"]] == [job]
    chosen = document["cluster"]["engine"]
    assert chosen == engine or (engine == "auto" and chosen in ("cooperative", "live"))
    able = sckpt(slurm_cluster, config, "--engine", engine, "able", f"{job}.0")
    assert able.returncode == 1 and "ESLURM_NOT_SUPPORTED (2036)" in able.stderr
    assert able.stderr.count("\n") == 1


def test_create_wait_on_a_step_under_sckpt_run(
    slurm_cluster: SlurmCluster, config: Path, wrapped_job: tuple[int, Path]
) -> None:
    """``--wait`` on the cooperative engine: MaxWait 0 (no bound), the outcome's words."""
    job, _work = wrapped_job
    step = f"{job}.0"
    if _engine(slurm_cluster, config) != "cooperative":
        pytest.skip("the cooperative engine is not installed here")
    wait_for(lambda: sckpt(slurm_cluster, config, "able", step).stdout == "Yes\n", timeout=90)
    created = sckpt(slurm_cluster, config, "create", step, "--wait")
    assert (created.returncode, created.stdout) == (0, f"{step}: create completed\n")
    assert created.stderr == ""
    (line,) = [a for a in audit_lines(config) if a["operation"] == "create"][-1:]
    assert line["arguments"]["max_wait"] == 0
    assert squeue_state(slurm_cluster, job) == "RUNNING"


def test_create_wait_reports_a_failed_checkpoint_with_its_error(
    slurm_cluster: SlurmCluster, config: Path
) -> None:
    """The program answers ``28 disk full``: ``failed (28)`` on stdout, the recorded error
    on stderr, exit 1 (the cooperative engine waited itself and raised)."""
    work = Path(tempfile.mkdtemp(prefix="sckpt-cli-fail-"))
    work.chmod(0o755)
    run = (
        f"srun --overlap -n1 {SCKPT} run --name counter -- "
        f"python3 {COUNTER} --log {work}/log --interval 0.1 --fail '28 disk full'"
    )
    job = submit(slurm_cluster, "-J", "cli-fail", "-D", str(work), "--wrap", run)
    try:
        if _engine(slurm_cluster, config) != "cooperative":
            pytest.skip("the cooperative engine is not installed here")
        step = f"{job}.0"
        wait_for(lambda: sckpt(slurm_cluster, config, "able", step).stdout == "Yes\n", timeout=90)
        failed = sckpt(slurm_cluster, config, "create", step, "--wait")
        assert (failed.returncode, failed.stdout) == (1, f"{step}: create failed (28)\n")
        assert failed.stderr.count("\n") == 1 and "error(28): disk full" in failed.stderr
        assert "Traceback" not in failed.stderr
    finally:
        slurm_cluster.run("scancel", str(job), check=False)
        subprocess.run(["rm", "-rf", str(work)], check=False)
