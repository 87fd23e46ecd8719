"""``-M``: two real clusters (sckpt-a, sckpt-b) registered in one slurmdbd, in one sckpt.

Everything runs with cluster sckpt-a's slurm.conf: sckpt-b is reached as ``squeue -M`` reaches
it, through its record in slurmdbd.  Compared with Slurm's own tools:

* ``sckpt ls -M all --json`` lists the jobs ``squeue -M all`` lists (ids, cluster, state), and
  the text form has squeue's ``CLUSTER: NAME`` sections;
* ``sckpt -M NAME hold/release JOB`` acts on that cluster's job and not on the other
  cluster's job with the same id (``scontrol -M NAME show job``); JSON, audit log and
  read-only refusals name the cluster;
* with sckpt-b's slurmctld stopped (SIGSTOP, SIGCONT in a ``finally``), ``ls`` lists
  sckpt-a's jobs and names sckpt-b as not answering (exit 3);
* the console (Pilot, in ``tests/clusters_driver.py``; and tmux at 80x24) lists both clusters'
  jobs as squeue does, and a stopped sckpt-b marks only its rows stale.

Only jobs these tests submit (named with a fresh tag) are looked at; all are cancelled.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import AccountingSetup, SlurmCluster
from .helpers import probe_user_home, wait_for
from .tmux import Tmux

pytestmark = pytest.mark.slurm

SCKPT = Path(sys.executable).with_name("sckpt")
ROOT = Path(__file__).resolve().parents[1]


def _sbatch(via: SlurmCluster, cluster: str, name: str, *args: str) -> int:
    out = via.run(
        "sbatch", "--parsable", "-M", cluster, "-J", name, "-o", "/dev/null", *args
    ).stdout.strip()
    return int(out.split(";")[0])


def _pending(via: SlurmCluster, cluster: str, name: str) -> int:
    return _sbatch(via, cluster, name, "--begin=now+2hours", "--wrap", "sleep 600")


@pytest.fixture(scope="module")
def tagged(slurm_accounting: AccountingSetup) -> Iterator[tuple[str, dict[str, list[int]]]]:
    """On each cluster a running and a pending job named with a fresh tag, and one more
    pending job on each with the same id on both (for routing: the other cluster's job of
    that id must not be touched)."""
    a = slurm_accounting.clusters["sckpt-a"]
    tag = f"mc-{uuid.uuid4().hex[:6]}"
    filler = f"pad-{uuid.uuid4().hex[:6]}"
    made: dict[str, list[int]] = {"sckpt-a": [], "sckpt-b": []}
    try:
        for cluster in made:
            made[cluster].append(_sbatch(a, cluster, tag, "--wrap", "sleep 600"))
            made[cluster].append(_pending(a, cluster, tag))
        # The same id on both: submit on whichever is behind until the ids meet (other
        # tests' jobs may advance either cluster meanwhile; give up after a few hundred).
        # Jobs named ``filler`` (cancelled afterwards: a cancelled job under the tag would
        # linger in the console's filter) until both clusters hand out the same id; that
        # pair is then renamed to the tag.
        ids = {c: _pending(a, c, filler) for c in made}
        extra: list[tuple[str, int]] = []
        for _ in range(400):
            if ids["sckpt-a"] == ids["sckpt-b"]:
                break
            behind = min(ids, key=lambda c: ids[c])
            extra.append((behind, ids[behind]))
            ids[behind] = _pending(a, behind, filler)
        assert ids["sckpt-a"] == ids["sckpt-b"], f"no common job id reached: {ids}"
        for cluster, job in extra:
            a.run("scancel", "-M", cluster, str(job), check=False)
        for cluster in made:
            a.run("scontrol", "-M", cluster, "update", f"JobId={ids[cluster]}", f"JobName={tag}")
        for cluster in made:
            made[cluster].append(ids[cluster])
        for cluster in made:
            job = made[cluster][0]
            wait_for(lambda c=cluster, j=job: _state(a, c, j) == "RUNNING", timeout=60)
        yield tag, made
    finally:
        for cluster, jobs in made.items():
            a.run("scancel", "-M", cluster, *map(str, jobs), check=False)


def _state(via: SlurmCluster, cluster: str, job: int) -> str:
    out = via.run("squeue", "-M", cluster, "-h", "-j", str(job), "-o", "%T", check=False)
    return out.stdout.strip()


def _squeue_all(via: SlurmCluster, name: str) -> set[tuple[str, int, str]]:
    """``squeue -M all -n NAME``: (cluster, job id, state) of every line under each heading."""
    out = via.run("squeue", "-M", "all", "-n", name, "-o", "%i %T").stdout
    rows: set[tuple[str, int, str]] = set()
    cluster = ""
    for line in out.splitlines():
        if line.startswith("CLUSTER: "):
            cluster = line.removeprefix("CLUSTER: ").strip()
        elif line.strip() and line.split()[0] != "JOBID":
            job, state = line.split()
            rows.add((cluster, int(job), state))
    return rows


def _sckpt(setup: AccountingSetup, home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    config = home / "config.toml"
    if not config.exists():
        config.write_text(f'audit_log = "{home / "audit.log"}"\n')
    env = {
        **os.environ,
        "SLURM_CONF": str(setup.clusters["sckpt-a"].conf),
        "SCKPT_CONFIG": str(config),
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [str(SCKPT), *argv], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _show(via: SlurmCluster, cluster: str, job: int) -> dict[str, str]:
    out = via.run("scontrol", "-M", cluster, "-o", "show", "job", str(job)).stdout
    return dict(re.findall(r"(\w+)=(\S*)", out))


def _audit(home: Path) -> list[dict[str, Any]]:
    path = home / "audit.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_ls_all_lists_both_clusters_jobs_as_squeue_all(
    slurm_accounting: AccountingSetup, tagged: tuple[str, dict[str, list[int]]], tmp_path: Path
) -> None:
    tag, made = tagged
    a = slurm_accounting.clusters["sckpt-a"]
    done = _sckpt(slurm_accounting, tmp_path, "ls", "-M", "all", "--json", "-n", tag)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    shown = {(j["cluster"], j["job_id"], j["state"]) for j in doc["jobs"]}
    expected = _squeue_all(a, tag)
    assert shown == expected
    assert {(c, j) for c, j, _ in shown} == {(c, j) for c, jobs in made.items() for j in jobs}
    assert [(c["name"], c["stale"]) for c in doc["clusters"]] == [
        ("sckpt-a", False),
        ("sckpt-b", False),
    ]
    assert doc["cluster"]["cluster_name"] == "sckpt-a,sckpt-b"
    # The table: squeue -M's CLUSTER headings, each cluster's jobs under its own.
    text = _sckpt(slurm_accounting, tmp_path, "-M", "sckpt-a,sckpt-b", "ls", "-n", tag).stdout
    sections = re.split(r"^CLUSTER: (\S+)$", text, flags=re.M)[1:]
    listed = {
        (sections[i], int(line.split()[0]))
        for i in range(0, len(sections), 2)
        for line in sections[i + 1].strip().splitlines()[1:]
    }
    assert listed == {(c, j) for c, j, _ in expected}


def test_hold_and_release_act_on_the_named_cluster_only(
    slurm_accounting: AccountingSetup, tagged: tuple[str, dict[str, list[int]]], tmp_path: Path
) -> None:
    _tag, made = tagged
    a = slurm_accounting.clusters["sckpt-a"]
    job = made["sckpt-b"][2]
    assert job == made["sckpt-a"][2]  # the same id on both clusters
    before_a = _show(a, "sckpt-a", job)["Priority"]
    assert before_a != "0"
    done = _sckpt(slurm_accounting, tmp_path, "-M", "sckpt-b", "--json", "hold", str(job))
    assert done.returncode == 0, done.stdout + done.stderr
    [result] = json.loads(done.stdout)["results"]
    assert (result["cluster"], result["target"], result["ok"]) == ("sckpt-b", str(job), True)
    assert _show(a, "sckpt-b", job)["Priority"] == "0"
    assert _show(a, "sckpt-a", job)["Priority"] == before_a  # the other job of that id
    done = _sckpt(slurm_accounting, tmp_path, "-M", "sckpt-b", "release", str(job))
    assert done.returncode == 0, done.stderr
    assert _show(a, "sckpt-b", job)["Priority"] != "0"
    lines = _audit(tmp_path)
    assert [(r["operation"], r["target"], r.get("cluster")) for r in lines] == [
        ("hold", str(job), "sckpt-b"),
        ("release", str(job), "sckpt-b"),
    ]
    # Read-only: refused, the refusal and its audit line name the cluster; nothing changes.
    done = _sckpt(slurm_accounting, tmp_path, "-M", "sckpt-a", "--read-only", "hold", str(job))
    assert done.returncode == 1
    assert f"hold {job} on cluster sckpt-a refused" in done.stderr
    assert _audit(tmp_path)[-1]["cluster"] == "sckpt-a"
    assert _show(a, "sckpt-a", job)["Priority"] == before_a
    # Several clusters and a bare job id: which one?  Refused, nothing asked of Slurm.
    done = _sckpt(slurm_accounting, tmp_path, "-M", "all", "hold", str(job))
    assert done.returncode == 2 and "which cluster" in done.stderr, done.stderr
    assert _show(a, "sckpt-b", job)["Priority"] != "0"


def test_vacate_and_restart_act_on_the_named_cluster(
    slurm_accounting: AccountingSetup, tmp_path: Path
) -> None:
    """A step under ``sckpt run`` on sckpt-b: ``-M sckpt-b vacate`` checkpoints it and leaves
    the job requeued (pending) there, ``-M sckpt-b restart`` runs it again; the console's
    slurm.conf is sckpt-a's, so only the routing reaches sckpt-b."""
    b = slurm_accounting.clusters["sckpt-b"]
    work = Path(tempfile.mkdtemp(prefix="sckpt-mc-coop-"))
    work.chmod(0o755)
    step = (
        f"srun --overlap -n1 {SCKPT} run --name counter -- "
        f"python3 {ROOT / 'examples' / 'counter.py'} --log {work}/log --interval 0.1"
    )
    # Submitted with sckpt-b's own slurm.conf: the job's srun must reach sckpt-b.
    job = int(
        b.run("sbatch", "--parsable", "-J", "mc-coop", "-D", str(work), "-o", "/dev/null",
              "--wrap", step).stdout.strip().split(";")[0]
    )  # fmt: skip
    try:
        target = f"{job}.0"

        def able() -> bool:
            done = _sckpt(slurm_accounting, tmp_path, "-M", "sckpt-b", "able", target)
            return done.stdout == "Yes\n"

        wait_for(able, timeout=90, interval=0.5)
        vacated = _sckpt(
            slurm_accounting, tmp_path, "-M", "sckpt-b", "vacate", str(job), "--max-wait", "60"
        )
        assert vacated.returncode == 0, vacated.stdout + vacated.stderr
        wait_for(lambda: _state(b, "sckpt-b", job) == "PENDING", timeout=60)
        restarted = _sckpt(slurm_accounting, tmp_path, "-M", "sckpt-b", "restart", str(job))
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        wait_for(lambda: _state(b, "sckpt-b", job) == "RUNNING", timeout=90)
        lines = _audit(tmp_path)
        acted = [(r["operation"], r.get("cluster")) for r in lines if r["operation"] != "able"]
        assert acted[-2:] == [("vacate", "sckpt-b"), ("restart", "sckpt-b")]
    finally:
        b.run("scancel", str(job), check=False)
        shutil.rmtree(work, ignore_errors=True)


def test_an_unknown_cluster_is_named_with_those_slurmdbd_knows(
    slurm_accounting: AccountingSetup, tmp_path: Path
) -> None:
    done = _sckpt(slurm_accounting, tmp_path, "ls", "-M", "sckpt-a,nope")
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "sckpt: -M/--clusters: no cluster nope in slurmdbd (registered: sckpt-a, sckpt-b"
        )
    ), done.stderr


def _ctld_pid(setup: AccountingSetup, cluster: str) -> int:
    return int((setup.directory / cluster / "run" / "slurmctld.pid").read_text())


@contextlib.contextmanager
def _resumed(pid: int, at_most: float) -> Iterator[None]:
    """SIGCONT ``pid`` when the block ends, and at the latest after ``at_most`` seconds even
    if this process dies first: a session killed mid-test runs no ``finally``, and a
    controller left stopped would hang every other session's tests on it.  The deadline is
    kept by a detached ``sh`` of its own."""
    guard = subprocess.Popen(
        ["sh", "-c", f"sleep {at_most:.0f}; kill -CONT {pid}"],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
        os.killpg(guard.pid, signal.SIGKILL)
        guard.wait()


@contextlib.contextmanager
def _stopped(pid: int, at_most: float = 120) -> Iterator[None]:
    """``pid`` SIGSTOPped for the block (see ``_resumed``)."""
    with _resumed(pid, at_most):
        os.kill(pid, signal.SIGSTOP)
        yield


def test_ls_with_one_controller_stopped_lists_the_other(
    slurm_accounting: AccountingSetup, tagged: tuple[str, dict[str, list[int]]], tmp_path: Path
) -> None:
    tag, made = tagged
    with _stopped(_ctld_pid(slurm_accounting, "sckpt-b")):
        done = _sckpt(slurm_accounting, tmp_path, "ls", "-M", "all", "--json", "-n", tag)
    assert done.returncode == 3, done.stderr
    doc = json.loads(done.stdout)
    assert {(j["cluster"], j["job_id"]) for j in doc["jobs"]} == {
        ("sckpt-a", j) for j in made["sckpt-a"]
    }
    stale = {c["name"]: c["stale"] for c in doc["clusters"]}
    assert stale == {"sckpt-a": False, "sckpt-b": True}
    assert "sckpt: cannot reach cluster sckpt-b: " in done.stderr


def _driver(setup: AccountingSetup, *argv: str) -> dict[str, Any]:
    env = {**os.environ, "SLURM_CONF": str(setup.clusters["sckpt-a"].conf), "TZ": "UTC"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.clusters_driver", *argv],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    assert lines, done.stdout[-2000:] + done.stderr[-3000:]
    report: dict[str, Any] = json.loads(lines[-1].removeprefix("REPORT "))
    return report


def test_console_lists_both_clusters_jobs_as_squeue_all(
    slurm_accounting: AccountingSetup, tagged: tuple[str, dict[str, list[int]]]
) -> None:
    tag, _made = tagged
    report = _driver(slurm_accounting, "rows", tag, "160", "50")
    assert report["loaded_after"] is not None, report.get("screen")
    shown = {(r["cluster"], int(r["id"]), r["state"]) for r in report["rows"].values()}
    short = {"RUNNING": "R", "PENDING": "PD"}
    expected = {
        (c, j, short[s]) for c, j, s in _squeue_all(slurm_accounting.clusters["sckpt-a"], tag)
    }
    assert shown == expected
    header = report["screen"].splitlines()[0]
    assert header.startswith("sckpt sckpt-a,sckpt-b") and "STALE" not in header


def test_console_with_sckpt_b_stopped_marks_only_its_rows_stale(
    slurm_accounting: AccountingSetup, tagged: tuple[str, dict[str, list[int]]]
) -> None:
    tag, made = tagged
    pid = _ctld_pid(slurm_accounting, "sckpt-b")
    with _resumed(pid, at_most=300):  # the driver stops it, and resumes it itself
        report = _driver(slurm_accounting, "stop", tag, "160", "50", str(pid))
    assert report["stale_after"] is not None, report.get("stale_screen")
    rows = report["stale_rows"]
    assert {r["cluster"] for k, r in rows.items() if k.startswith("sckpt-b/")} == {"sckpt-b!"}
    assert {r["cluster"] for k, r in rows.items() if k.startswith("sckpt-a/")} == {"sckpt-a"}
    assert len(rows) == len(made["sckpt-a"]) + len(made["sckpt-b"])
    header = report["stale_screen"].splitlines()[0]
    assert "sckpt-b STALE since" in header and "sckpt-a STALE" not in header
    assert report["recovered_after"] is not None


def test_console_in_tmux_at_80x24_shows_both_clusters(
    slurm_accounting: AccountingSetup, tagged: tuple[str, dict[str, list[int]]], tmp_path: Path
) -> None:
    tag, made = tagged
    config = tmp_path / "config.toml"
    config.write_text(f'audit_log = "{tmp_path / "audit.log"}"\nrefresh_interval = 1.0\n')
    env = [
        f"SLURM_CONF={slurm_accounting.clusters['sckpt-a'].conf}",
        f"SCKPT_CONFIG={config}",
        "TERM=xterm-256color",
        "TZ=UTC",
        f"HOME={tmp_path}",
    ]
    with Tmux(f"{SCKPT} -M all; echo SCKPT-EXIT=$?; sleep 30", 80, 24, env=env) as term:
        term.wait(lambda s: "sckpt sckpt-a,sckpt-b" in s and "Cluster" in s, timeout=60)
        term.press_until("/", lambda s: "filter:" in s or "name:" in s)
        term.type(f"name:{tag}")
        term.keys("Enter")

        def both(screen: str) -> bool:
            listed = {
                (m.group(1), int(m.group(2)))
                for m in re.finditer(r"^\s*(sckpt-[ab])\s+(\d+)\s", screen, re.M)
            }
            wanted = {(c, j) for c, jobs in made.items() for j in jobs}
            return listed == wanted

        screen = term.wait(both, timeout=60)
        assert all(len(line) <= 80 for line in screen.splitlines())
        # The rows follow the filter as it is typed, so they may show before Enter has moved
        # the focus off the filter box: a "q" then would be typed into it.  Escape twice
        # leaves the box from either state (clears it, then hides it), then q quits.
        for key in ("Escape", "Escape", "q"):
            term.keys(key)
            time.sleep(0.3)
        term.wait(lambda s: "SCKPT-EXIT=0" in s, timeout=30)


def test_without_slurmdbd_m_says_what_it_needs(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """The shared test cluster's slurm.conf names no slurmdbd: -M cannot work there."""
    config = tmp_path / "config.toml"
    config.write_text(f'audit_log = "{tmp_path / "audit.log"}"\n')
    env = {**os.environ, "SLURM_CONF": str(slurm_cluster.conf), "SCKPT_CONFIG": str(config)}
    for argv in (["-M", "all", "ls"], ["-M", "sckpt-b", "hold", "5"]):
        done = subprocess.run(
            [str(SCKPT), *argv], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 3, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert "slurmdbd could not be asked for the clusters" in last
        assert f"{slurm_cluster.conf} must set AccountingStorageType=" in last
    assert (
        not (tmp_path / "audit.log").exists() or "hold" not in (tmp_path / "audit.log").read_text()
    )


PROBE_USER = "sckpt-mc-probe"
"""A user only this test runs sckpt as: sdiag's per-user count is then its own RPCs."""

_REFRESHER = """
import sys
from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
facade = open_facade(Settings(audit_log=sys.argv[1]), clusters="all")
facade.snapshot()
print("READY", flush=True)
for line in sys.stdin:
    if line.strip() != "go":
        break
    print(" ".join(str(int(facade.snapshot().changed)) for _ in range(5)), flush=True)
facade.close()
"""


def test_an_idle_refresh_is_one_rpc_per_cluster(
    slurm_accounting: AccountingSetup, tagged: tuple[str, dict[str, list[int]]], tmp_path: Path
) -> None:
    """The no-change reuse stays per cluster: an unchanged refresh of ``-M all`` asks each
    slurmctld for its jobs once (sdiag -M NAME's count for a user only this test uses)."""
    a = slurm_accounting.clusters["sckpt-a"]
    shared = Path(tempfile.mkdtemp(prefix="sckpt-mc-probe-"))
    shared.chmod(0o755)  # pytest's own tmp_path is root's alone
    home = probe_user_home(PROBE_USER, shared)
    env = [
        f"SLURM_CONF={a.conf}",
        f"HOME={home}",
        f"SCKPT_CACHE_DIR={home / 'cache'}",
        f"SCKPT_CONFIG={home / 'none.toml'}",
    ]
    code = ["runuser", "-u", PROBE_USER, "--", "env", *env, sys.executable, "-c", _REFRESHER]
    proc = subprocess.Popen(
        [*code, str(home / "audit.log")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/tmp",
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "READY", proc.stderr and proc.stderr.read()

        def counts() -> dict[str, int]:
            return {c: _user_rpcs(a, c, PROBE_USER) for c in ("sckpt-a", "sckpt-b")}

        # Other sessions' jobs change the listings now and then: repeat the round until
        # one had five unchanged refreshes (then each cost exactly one RPC per cluster).
        deadline = time.monotonic() + 120
        while True:
            before = _settled(counts)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            changed = [int(x) for x in proc.stdout.readline().split()]
            after = _settled(counts)
            assert len(changed) == 5
            if not any(changed):
                assert {c: after[c] - before[c] for c in after} == {"sckpt-a": 5, "sckpt-b": 5}
                break
            assert time.monotonic() < deadline, "no unchanged round in two minutes"
            time.sleep(1)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        shutil.rmtree(shared, ignore_errors=True)


def _user_rpcs(via: SlurmCluster, cluster: str, user: str) -> int:
    out = via.run("sdiag", "-M", cluster).stdout
    found = re.search(rf"^\s*{re.escape(user)}\s+\(\s*\d+\)\s+count:(\d+)", out, re.M)
    return int(found.group(1)) if found else 0


def _settled(read: Callable[[], dict[str, int]]) -> dict[str, int]:
    """``read()`` once it stops moving (slurmctld counts an RPC after its reply)."""
    value = read()
    for _ in range(20):
        time.sleep(0.5)
        again = read()
        if again == value:
            return value
        value = again
    return value
