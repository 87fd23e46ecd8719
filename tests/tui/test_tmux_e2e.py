"""End to end: the installed ``sckpt --demo`` in a real terminal (tmux) at 80x24.

Open, filter, select a step, disable it, see it disabled, quit.  The keys go through tmux
(``send-keys``) and the checks read the screen (``capture-pane``), exactly as an operator
would see it; the audit log written by that process confirms the backend acted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sckpt.backend.config import demo_audit_log_path

from ..tmux import Tmux

SCKPT = Path(sys.executable).with_name("sckpt")


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A config with its own audit log, and the environment the console runs in."""
    if not SCKPT.exists():
        pytest.fail(f"{SCKPT} is not installed (pip install -e .)")
    audit = tmp_path / "audit.log"
    config = tmp_path / "config.toml"
    config.write_text(f'audit_log = "{audit}"\nrefresh_interval = 1.0\n')
    env = {
        **os.environ,
        "SCKPT_CONFIG": str(config),
        "TERM": "xterm-256color",
        "TZ": "UTC",
    }
    env.pop("NO_COLOR", None)
    return audit, env


def test_demo_in_tmux_filter_select_disable_quit(setup: tuple[Path, dict[str, str]]) -> None:
    audit, env = setup
    listing = subprocess.run(
        [str(SCKPT), "--demo", "ls", "--json", "--steps"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    data = json.loads(listing.stdout)
    job, step_index, step_id = None, 0, ""
    for candidate in data["jobs"]:
        if candidate["state"] != "RUNNING":
            continue
        for index, step in enumerate(candidate.get("steps", [])):
            sid = str(step.get("step_id") or f"{candidate['job_id']}.{step.get('step')}")
            if step["checkpoint"]["kind"] == "able" and sid.split(".")[-1].isdigit():
                job, step_index, step_id = candidate, index, sid
                break
        if job is not None:
            break
    assert job is not None, "the demo has no running job with an able numbered step"

    command = f"{SCKPT} --demo; echo SCKPT-EXIT=$?; sleep 30"
    passed = [f"{k}={v}" for k, v in env.items() if k in ("SCKPT_CONFIG", "TERM", "TZ", "HOME")]
    with Tmux(command, 80, 24, env=passed) as term:
        _drive(term, audit, str(job["job_id"]), step_index, step_id)


def _drive(term: Tmux, audit: Path, jid: str, step_index: int, step_id: str) -> None:
    """Filter to the job, go into its steps, disable the chosen one, check, quit."""
    term.wait(lambda s: "updated" in s and "JobID" in s)
    term.press_until("/", lambda s: "field:value" in s)
    term.type(f"id:{jid}")
    term.keys("Enter")

    def only_that_job(screen: str) -> bool:
        rows = [ln.split()[0] for ln in screen.splitlines() if ln.strip()[:6].isdigit()]
        return (
            bool(rows) and {r.split(".")[0] for r in rows} == {jid} and f"Steps of {jid}" in screen
        )

    term.wait(only_that_job)
    term.keys("Enter")  # into the job's steps
    term.wait_cursor(lambda row: row.startswith(f"{jid}."))  # the steps table has the focus
    for _ in range(step_index):
        term.keys("Down")
    term.wait_cursor(lambda row: row.startswith(f"{step_id} "))
    term.keys("d")

    def step_row(screen: str) -> str:
        return next(
            (line for line in screen.splitlines() if line.strip().startswith(step_id + " ")), ""
        )

    screen = term.wait(lambda s: "disabled" in step_row(s))
    assert "disabled" in step_row(screen)
    # The backend acted: the (demo's) audit log of that process has the disable, allowed.
    demo_log = demo_audit_log_path(audit)
    lines = [json.loads(line) for line in demo_log.read_text().splitlines()]
    assert any(step_id in json.dumps(line) and "disable" in json.dumps(line) for line in lines)
    term.keys("q")
    screen = term.wait(lambda s: "SCKPT-EXIT=" in s)
    assert "SCKPT-EXIT=0" in screen
    assert "Traceback" not in screen


@pytest.mark.parametrize(("key", "status"), [("C-c", 130), ("q", 0)])
def test_ctrl_c_exits_130_and_q_exits_0(
    setup: tuple[Path, dict[str, str]], tmp_path: Path, key: str, status: int
) -> None:
    """The shell sees 130 after Ctrl-C (README's promise), 0 after ``q``."""
    _audit, env = setup
    status_file = tmp_path / "status"
    command = f"{SCKPT} --demo; echo rc=$? > {status_file}; sleep 30"
    passed = [f"{k}={v}" for k, v in env.items() if k in ("SCKPT_CONFIG", "TERM", "TZ", "HOME")]
    with Tmux(command, 80, 24, env=passed) as term:
        term.wait(lambda s: "updated" in s and "JobID" in s)
        term.keys(key)
        deadline = time.monotonic() + 20
        while not status_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        screen = term.screen()
    assert status_file.read_text() == f"rc={status}\n", screen
    assert "Traceback" not in screen


def test_80x24_footer_keys_and_header_state_in_a_real_terminal(
    setup: tuple[Path, dict[str, str]],
) -> None:
    """Issue 13's first defect, as an operator saw it in tmux: at 80x24 the footer lost
    ``? Help`` and ``q Quit`` (``p Pids`` on the step screen) and showed ``^p palettep``;
    the header ended in "…" where the sort and the filter should be."""
    _audit, env = setup
    command = f"{SCKPT} --demo; echo SCKPT-EXIT=$?; sleep 30"
    passed = [f"{k}={v}" for k, v in env.items() if k in ("SCKPT_CONFIG", "TERM", "TZ", "HOME")]

    def header(screen: str) -> str:
        return screen.splitlines()[0] if screen.strip() else ""

    def footer(screen: str) -> str:
        lines = screen.rstrip("\n").splitlines()
        return lines[-1] if len(lines) == 24 else ""

    with Tmux(command, 80, 24, env=passed) as term:
        screen = term.wait(lambda s: "JobID" in s and "sort id↑" in header(s))
        assert not header(screen).rstrip().endswith("…"), header(screen)
        screen = term.wait(lambda s: "q Quit" in footer(s))
        for key in ("c Create", "v Vacate", "/ Filter", "? Help", "q Quit"):
            assert key in footer(screen), footer(screen)
        assert "palettep" not in footer(screen), footer(screen)
        # A filter and a reversed sort: both stay on the header line.
        term.press_until("/", lambda s: "field:value" in s)
        term.type("user:alice")
        term.keys("Enter")
        term.wait(lambda s: "filter: user:alice" in header(s))
        term.wait_cursor(lambda row: row.split(" ")[0].isdigit())  # the jobs table has the focus
        screen = term.press_until("S", lambda s: "sort id↓" in header(s))
        assert "filter: user:alice" in header(screen), header(screen)
        # The step screen: its own keys, and still help and quit.
        term.keys("Tab")
        term.wait_cursor(lambda row: "." in row.split(" ")[0])  # the steps table has the focus
        term.keys("Enter")
        screen = term.wait(lambda s: "p Pids" in footer(s))
        for key in ("esc Console", "p Pids", "? Help", "q Quit"):
            assert key in footer(screen), footer(screen)
        assert "palettep" not in footer(screen), footer(screen)
        term.keys("q")
        screen = term.wait(lambda s: "SCKPT-EXIT=" in s)
        assert "SCKPT-EXIT=0" in screen and "Traceback" not in screen
