"""End to end: the installed ``sckpt --demo`` in a real terminal (tmux) at 80x24.

Open, filter, select a step, disable it, see it disabled, quit.  The keys go through tmux
(``send-keys``) and the checks read the screen (``capture-pane``), exactly as an operator
would see it; the audit log written by that process confirms the backend acted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCKPT = Path(sys.executable).with_name("sckpt")

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _tmux(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=check, timeout=20)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """A detached 80x24 tmux session name, a config with its own audit log, the environment."""
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
    name = f"sckpt-e2e-{uuid.uuid4().hex[:8]}"
    yield name, audit, env
    _tmux("kill-session", "-t", name, check=False)


def _screen(name: str) -> str:
    return _tmux("capture-pane", "-p", "-t", name).stdout


def _wait_screen(name: str, predicate: Callable[[str], bool], timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    text = _screen(name)
    while not predicate(text):
        if time.monotonic() > deadline:
            raise AssertionError(f"screen never matched; last screen:\n{text}")
        time.sleep(0.2)
        text = _screen(name)
    return text


def test_demo_in_tmux_filter_select_disable_quit(session: tuple[str, Path, dict[str, str]]) -> None:
    name, audit, env = session
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
    _tmux(
        "new-session", "-d", "-s", name, "-x", "80", "-y", "24",
        "env", *passed, "sh", "-c", command,
    )  # fmt: skip
    _wait_screen(name, lambda s: "updated" in s and "JobID" in s)
    # The first paint can come before the terminal's input mode is set: press / until the
    # filter box shows (a key is never lost once it has appeared).
    for _ in range(20):
        _tmux("send-keys", "-t", name, "/")
        try:
            _wait_screen(name, lambda s: "field:value" in s, timeout=1.0)
            break
        except AssertionError:
            continue
    _tmux("send-keys", "-t", name, "-l", f"id:{job['job_id']}")
    _tmux("send-keys", "-t", name, "Enter")
    jid = str(job["job_id"])

    def only_that_job(screen: str) -> bool:
        rows = [ln.split()[0] for ln in screen.splitlines() if ln.strip()[:6].isdigit()]
        return (
            bool(rows) and {r.split(".")[0] for r in rows} == {jid} and f"Steps of {jid}" in screen
        )

    _wait_screen(name, only_that_job)
    _tmux("send-keys", "-t", name, "Enter")  # into the job's steps
    time.sleep(0.3)
    for _ in range(step_index):
        _tmux("send-keys", "-t", name, "Down")
    time.sleep(0.3)
    _tmux("send-keys", "-t", name, "d")
    screen = _wait_screen(name, lambda s: "disabled ×1" in s)  # noqa: RUF001
    row = next(line for line in screen.splitlines() if line.strip().startswith(step_id + " "))
    assert "disabled ×1" in row  # noqa: RUF001
    # The backend acted: the audit log of that process has the disable, allowed.
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert any(step_id in json.dumps(line) and "disable" in json.dumps(line) for line in lines)
    _tmux("send-keys", "-t", name, "q")
    screen = _wait_screen(name, lambda s: "SCKPT-EXIT=" in s)
    assert "SCKPT-EXIT=0" in screen
    assert "Traceback" not in screen
