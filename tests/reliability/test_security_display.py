"""Values from Slurm and from the state store are displayed literally, never interpreted.

A job of sckpt-alice on the real cluster carries terminal escape sequences and Textual/Rich
markup in its name, comment, step name, working directory (so in its image paths) and in
the checkpoint error its program reported.  The console (Pilot: the screen's text; tmux: a
real terminal's screen and window title; a raw pty: every byte the console wrote) and the
command line (``ls`` table, ``ls --steps``, ``--json``) show those values as text: the markup
brackets appear as typed, control characters as ``\\xNN``, and no control byte from the
data ever reaches the terminal.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import pwd
import select
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.backend.model import StepId
from sckpt.tui.app import build_app
from sckpt.tui.screens.step import StepScreen

from tests.conftest import SlurmCluster
from tests.helpers import wait_for
from tests.tmux import Tmux
from tests.tui.conftest import screen_text, settle

from .security_support import ALICE, PYTHON, SCKPT, run_as, user_workdir

pytestmark = pytest.mark.slurm

MARKUP = "[bold red]x[/]"
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
JOB_NAME = f"{MARKUP}{TITLE}{CLEAR}z"
COMMENT = "[link=http://e]c[/]\x1b[31mred\x9bq"
STEP_NAME = f"st{CLEAR}[b]s[/b]"
DIR_NAME = f"w{CLEAR}[i]d"  # no "/": it is one path component
ERROR_MSG = f"err {MARKUP} {TITLE}{CLEAR}!"
ESCAPED_TITLE = "\\x1b]0;pwned\\x07"
"""How the console and the command line show ``TITLE``."""
ESCAPED_COMMENT = "[link=http://e]c[/]\\x1b[31mred\\x9bq"
"""How the console shows ``COMMENT`` (the step detail's Comment line)."""


@dataclass(frozen=True)
class HostileJob:
    job_id: int
    workdir: Path


@pytest.fixture(scope="module")
def hostile_job(slurm_cluster: SlurmCluster) -> Iterator[HostileJob]:
    """alice's running job whose every free-text field is hostile; step 0 under sckpt run."""
    with user_workdir(ALICE) as parent:
        workdir = parent / DIR_NAME
        workdir.mkdir()
        entry = pwd.getpwnam(ALICE)
        os.chown(workdir, entry.pw_uid, entry.pw_gid)
        script = parent / "job.sh"
        # Single quotes keep the control bytes of the step name as they are.
        script.write_text(
            f"#!/bin/bash\nsrun -n1 -J '{STEP_NAME}' {SCKPT} run -- sleep 900\n",
            encoding="utf-8",
            errors="surrogateescape",
        )
        script.chmod(0o755)
        out = slurm_cluster.run(
            "sbatch", "--parsable", "-p", "debug", "-J", JOB_NAME, "--comment", COMMENT,
            "-D", str(workdir), "-o", "/dev/null", str(script),
            user=ALICE,
        )  # fmt: skip
        job_id = int(out.stdout.strip().split(";")[0])
        try:
            wait_for(lambda: (workdir / ".sckpt" / f"{job_id}.0.json").exists(), timeout=90)
            # The program reports a failed checkpoint whose message is hostile (as the job's
            # user: the error is what a program writes, through the backend's complete).
            report = (
                "from sckpt.backend.facade import open_facade\n"
                "from sckpt.backend.config import Settings\n"
                "from sckpt.backend.model import StepId\n"
                "import sys, pathlib\n"
                "f = open_facade(Settings(audit_log=pathlib.Path.home() / 'sec-audit.log'),"
                " engine='cooperative')\n"
                f"f.complete(StepId({job_id}, 0), error_code=5, error_msg={ERROR_MSG!r})\n"
            )
            done = run_as(slurm_cluster, ALICE, str(PYTHON), "-c", report)
            assert done.returncode == 0, done.stderr
            yield HostileJob(job_id, workdir)
        finally:
            slurm_cluster.run("scancel", str(job_id), check=False)


def _no_control(text: str) -> None:
    bad = [hex(ord(c)) for c in text if (ord(c) < 0x20 and c not in "\n") or 0x7F <= ord(c) < 0xA0]
    assert not bad, f"control characters reached the output: {bad[:10]}"


# ------------------------------------------------------------------ the command line


def test_ls_table_and_steps_show_hostile_values_as_text(
    slurm_cluster: SlurmCluster, hostile_job: HostileJob
) -> None:
    for extra in ([], ["--steps"]):
        out = subprocess.run(
            [str(SCKPT), "ls", "-j", str(hostile_job.job_id), "--all", *extra],
            capture_output=True,
            timeout=120,
            env=slurm_cluster.env(XDG_CONFIG_HOME="/nonexistent"),
            check=False,
        )
        assert out.returncode == 0, out.stderr
        text = out.stdout.decode("utf-8")  # strict: no stray byte either
        _no_control(text)
        assert str(hostile_job.job_id) in text
        if extra:
            assert "st\\x1b[2J[b]s[/b]" in text
        else:
            assert MARKUP in text


def test_ls_json_keeps_the_values_exact_and_escaped(
    slurm_cluster: SlurmCluster, hostile_job: HostileJob
) -> None:
    out = subprocess.run(
        [str(SCKPT), "ls", "--json", "--steps", "-j", str(hostile_job.job_id), "--all"],
        capture_output=True,
        timeout=120,
        env=slurm_cluster.env(XDG_CONFIG_HOME="/nonexistent"),
        check=False,
    )
    assert out.returncode == 0, out.stderr
    raw = out.stdout
    assert all(b >= 0x20 or b == 0x0A for b in raw), "a control byte is in the JSON output"
    assert all(b < 0x80 for b in raw), "JSON output is ASCII (non-ASCII escaped)"
    data = json.loads(raw)
    (job,) = [j for j in data["jobs"] if j["job_id"] == hostile_job.job_id]
    # Scripts get the exact values back (escaping is the JSON encoder's, not a rewrite).
    assert job["name"] == JOB_NAME
    assert job["comment"].startswith("[link=http://e]c[/]\x1b[31mred")
    step = next(s for s in job["steps"] if str(s.get("step_id", "")).endswith(".0"))
    assert step["name"] == STEP_NAME
    assert ERROR_MSG in _strings(step)


def _strings(value: object) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


# ------------------------------------------------------------------ the console (Pilot)


def test_console_shows_hostile_values_literally(
    slurm_cluster: SlurmCluster, hostile_job: HostileJob, tmp_path: Path
) -> None:
    asyncio.run(_pilot(hostile_job, tmp_path))


async def _pilot(job: HostileJob, tmp_path: Path) -> None:
    settings = Settings(audit_log=tmp_path / "audit.log", refresh_interval=3600)
    facade = open_facade(settings, engine="cooperative")
    app = build_app(facade, settings, focus=StepId(job.job_id, 0))
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            await settle(pilot)
            console = screen_text(app)
            await pilot.press("escape")  # leave the step screen the focus opened
            await settle(pilot)
            console += "\n" + screen_text(app)
            app.open_step(StepId(job.job_id, 0))
            await settle(pilot)
            assert isinstance(app.screen, StepScreen)
            detail = screen_text(app)
    finally:
        facade.close()
    for text in (console, detail):
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    shown = console + detail
    assert MARKUP in shown  # the job name, as typed
    assert ESCAPED_TITLE in shown
    assert "st\\x1b[2J[b]s[/b]" in detail  # the step name
    assert "err [bold red]x[/] \\x1b]0;pwned\\x07\\x1b[2J!" in detail  # the error
    assert "w\\x1b[2J[i]d" in detail  # the work dir, in the image paths of the history
    # the job's sbatch --comment: markup as typed (no link), CSI and C1 escaped
    lines = [line.strip() for line in detail.splitlines()]
    assert [line.split(None, 1)[1] for line in lines if line.startswith("Comment ")] == [
        ESCAPED_COMMENT
    ]


# ------------------------------------------------------------------ a real terminal


def test_real_terminal_shows_text_and_keeps_its_title(
    slurm_cluster: SlurmCluster, hostile_job: HostileJob
) -> None:
    env = [f"SLURM_CONF={slurm_cluster.conf}", "TERM=xterm-256color", "XDG_CONFIG_HOME=/none"]
    with Tmux(f"{SCKPT} {hostile_job.job_id}.0", width=200, height=50, env=env) as term:
        title = _pane_title(term)
        screen = term.wait(lambda s: "st\\x1b[2J[b]s[/b]" in s, timeout=90)
        assert ESCAPED_TITLE in screen
        assert "err [bold red]x[/]" in screen
        assert ESCAPED_COMMENT in screen
        term.keys("Escape")
        screen = term.wait(lambda s: "JobID" in s and MARKUP in s, timeout=30)
        assert "sckpt" in screen.splitlines()[0]  # the header is still there: no clear
        assert _pane_title(term) == title != "pwned"
        term.keys("q")


def _pane_title(term: Tmux) -> str:
    out = subprocess.run(
        ["tmux", "display-message", "-p", "-t", term.name, "#{pane_title}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_no_escape_from_the_data_reaches_the_terminal_bytes(
    slurm_cluster: SlurmCluster, hostile_job: HostileJob
) -> None:
    """Every byte the console writes to its pty, read raw: the data's sequences never occur."""
    env = {
        **slurm_cluster.env(),
        "TERM": "xterm-256color",
        "XDG_CONFIG_HOME": "/nonexistent",
        "TEXTUAL_ANIMATIONS": "none",
    }
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    proc = subprocess.Popen(
        [str(SCKPT), f"{hostile_job.job_id}.0"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    data = bytearray()
    try:

        def read_for(seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                ready, _, _ = select.select([master], [], [], 0.2)
                if ready:
                    try:
                        data.extend(os.read(master, 65536))
                    except OSError:
                        return

        deadline = time.monotonic() + 90
        while b"st\\x1b[2J" not in data and time.monotonic() < deadline:
            read_for(0.5)
        os.write(master, b"\x1b")  # Escape: back to the jobs table
        read_for(3)
        os.write(master, b"q")
        read_for(3)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        os.close(master)
    text = data.decode("utf-8")  # strict: the console wrote no stray byte (such as 0x9b)
    assert "st\\x1b[2J[b]s[/b]" in text and ESCAPED_TITLE in text
    assert "\\x1b[31mred" in text  # the comment, shown as text
    sequences = (TITLE, "\x1b]0;pwned", f"{CLEAR}z", f"st{CLEAR}", f"{CLEAR}[b]", "\x9b")
    for sequence in (*sequences, "\x1b[31mred", "\x1b]8;"):  # + the comment's, a hyperlink
        assert sequence not in text, f"{sequence!r} reached the terminal"
