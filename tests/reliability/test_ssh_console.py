"""The console over a real SSH session, as operators use it (issue: reliability, SSH part).

A private sshd on loopback (tests/sshd.py) lets the unprivileged test user log in with a
throwaway key; ``ssh -t`` runs the installed ``sckpt`` inside tmux at 80x24, and the test
drives it with send-keys and reads it with capture-pane.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.config import demo_audit_log_path

from ..conftest import SlurmCluster
from ..helpers import wait_for
from ..sshd import SshServer, ssh_server
from ..tmux import Tmux

SCKPT = Path(sys.executable).with_name("sckpt")
USER = "sckpt-alice"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the SSH user can write (config and audit log live there).

    Not under pytest's tmp_path: that sits in root's private /tmp/pytest-of-root.
    """
    directory = Path(tempfile.mkdtemp(prefix="sckpt-ssh-"))
    directory.chmod(0o777)
    (directory / "config.toml").write_text(
        f'audit_log = "{directory / "audit.log"}"\nrefresh_interval = 2.0\n'
    )
    (directory / "config.toml").chmod(0o644)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def server(slurm_cluster: SlurmCluster) -> Iterator[SshServer]:
    # The test user's login gets the cluster's config, as a site's /etc/environment would.
    with ssh_server(USER, env={"SLURM_CONF": str(slurm_cluster.conf)}) as running:
        yield running


def _remote(server: SshServer, config: Path, *argv: str) -> str:
    """The tty command line for tmux: ssh to the test user and run sckpt there."""
    remote = shlex.join(["env", f"SCKPT_CONFIG={config}", "TZ=UTC", str(SCKPT), *argv])
    ssh = shlex.join(server.ssh_argv(remote))
    return f"{ssh}; echo SSH-EXIT=$?; sleep 30"


def _first_able_numbered_step(server: SshServer, config: Path) -> tuple[str, int, str]:
    """Ask the CLI over the same SSH server (no tty) for a demo step that can checkpoint."""
    remote = shlex.join(
        ["env", f"SCKPT_CONFIG={config}", str(SCKPT), "--demo", "ls", "--json", "-s"]
    )
    listing = subprocess.run(
        server.ssh_argv(remote, tty=False), capture_output=True, text=True, timeout=120, check=True
    )
    for job in json.loads(listing.stdout)["jobs"]:
        if job["state"] != "RUNNING" or job["user"] != USER:
            continue
        for index, step in enumerate(job.get("steps", [])):
            step_id = str(step["step_id"])
            if step["checkpoint"]["kind"] == "able" and step_id.split(".")[-1].isdigit():
                return str(job["job_id"]), index, step_id
    raise AssertionError("the demo has no running job of the SSH user with an able step")


def _filter_to_job(term: Tmux, job_id: str) -> None:
    """Once the console shows its first data, filter it (``/``) down to job ``job_id``."""
    term.wait(lambda s: "JobID" in s and "updated" in s)
    term.press_until("/", lambda s: "field:value" in s)
    term.type(f"id:{job_id}")
    term.keys("Enter")
    term.wait(_only_job(job_id))  # type: ignore[arg-type]


def _only_job(job_id: str) -> object:
    def check(screen: str) -> bool:
        firsts = [ln.split()[0] for ln in screen.splitlines() if ln.strip()]
        rows = [w for w in firsts if w.split(".")[0].isdigit()]
        return bool(rows) and {r.split(".")[0] for r in rows} == {job_id}

    return check


def test_demo_over_ssh_filter_select_create_quit(server: SshServer, shared_dir: Path) -> None:
    config = shared_dir / "config.toml"
    job_id, index, step_id = _first_able_numbered_step(server, config)
    with Tmux(_remote(server, config, "--demo"), env=["TERM=xterm-256color"]) as term:
        _filter_to_job(term, job_id)
        term.keys("Enter")  # into the job's steps
        term.wait_cursor(lambda row: row.startswith(f"{job_id}."))  # the focus moved over SSH
        for _ in range(index):
            term.keys("Down")
        term.wait_cursor(lambda row: row.startswith(f"{step_id} "))
        term.keys("c")
        form = term.wait(lambda s: "Max wait" in s)
        assert f"Create {step_id}" in form
        term.keys("Enter")  # confirm the form
        # The row says the checkpoint was requested, then runs (its time counting up),
        # then how it ended: progress.py's words, as --wait says them.
        words = ("requested", "in progress", "completed")

        def row_of(screen: str) -> str:
            lines = screen.splitlines()
            return next((ln for ln in lines if ln.strip().startswith(step_id + " ")), "")

        screen = term.wait(lambda s: any(w in row_of(s) for w in words))
        assert any(w in row_of(screen) for w in words), row_of(screen)
        term.keys("q")
        final = term.wait(lambda s: "SSH-EXIT=" in s)
    assert "SSH-EXIT=0" in final
    assert "Traceback" not in final
    # The backend acted as the SSH user: the audit line names them and the create (in the
    # demo's own log, beside the real one).
    demo_log = demo_audit_log_path(shared_dir / "audit.log")
    lines = [json.loads(x) for x in demo_log.read_text().splitlines()]
    creates = [x for x in lines if x["operation"] == "create" and x["target"] == step_id]
    assert creates and creates[-1]["user"] == USER


def test_demo_over_ssh_o_shows_the_jobs_output_file_or_why_not(
    server: SshServer, shared_dir: Path
) -> None:
    """``o`` over SSH at 80x24: the output screen names the job and its file, shows the
    demo job's simulated output (or says why it cannot), and Escape goes back."""
    config = shared_dir / "config.toml"
    job_id, _index, _step_id = _first_able_numbered_step(server, config)
    with Tmux(_remote(server, config, "--demo"), env=["TERM=xterm-256color"]) as term:
        _filter_to_job(term, job_id)
        term.wait_cursor(lambda row: row.split(" ")[0] == str(job_id))  # the table has the focus
        term.keys("o")
        shown = term.wait(lambda s: f"Output of job {job_id}" in s and "slurm-" in s)
        assert "steps/s" in shown or "cannot read" in shown, shown  # simulator/output.py
        assert "? Help" in shown and "q Quit" in shown  # the footer at 80 columns
        term.keys("Escape")
        term.wait(lambda s: "JobID" in s and f"Output of job {job_id}" not in s)
        term.keys("q")
        final = term.wait(lambda s: "SSH-EXIT=" in s)
    assert "SSH-EXIT=0" in final
    assert "Traceback" not in final


def test_real_cluster_over_ssh_lists_the_users_job(
    server: SshServer, shared_dir: Path, slurm_cluster: SlurmCluster
) -> None:
    job_id = slurm_cluster.run(
        "sbatch", "--parsable", "-J", "ssh-view", "-o", "/dev/null", "--wrap", "sleep 120",
        user=USER,
    ).stdout.strip()  # fmt: skip
    try:

        def squeue_state() -> str:
            out = slurm_cluster.run("squeue", "-h", "-j", job_id, "-o", "%t")
            return out.stdout.strip()

        # Running before the console opens, so the row and squeue cannot disagree only
        # because the job started between the screen and the squeue call.
        wait_for(lambda: squeue_state() == "R", timeout=60)
        config = shared_dir / "config.toml"
        with Tmux(_remote(server, config), env=["TERM=xterm-256color"]) as term:
            term.wait(lambda s: "JobID" in s and "updated" in s, timeout=60)
            term.press_until("/", lambda s: "field:value" in s)
            term.type(f"id:{job_id}")
            term.keys("Enter")
            screen = term.wait(_only_job(job_id), timeout=60)  # type: ignore[arg-type]
            row = next(ln for ln in screen.splitlines() if ln.strip().startswith(job_id))
            assert "ssh-view" in row and f" {squeue_state()} " in row
            term.keys("q")
            final = term.wait(lambda s: "SSH-EXIT=" in s)
        assert "SSH-EXIT=0" in final
    finally:
        slurm_cluster.run("scancel", job_id, check=False)
