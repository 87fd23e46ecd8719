"""Terminal resizes: 40x10 and back on every screen, and SIGWINCH storms, never crash sckpt.

An operator's SSH window gets resized, tiled, minimised to a sliver and restored; tmux
sends a resize per pane change.  Each of those is a SIGWINCH and a Textual ``Resize``, and
the console refits its tables on each (``ConsoleScreen.on_resize``).  Two levels:

* Pilot (the simulated cluster, in-process): on the console, the filter box, the step
  screen, the action form, the confirmation, the help and the command palette, resize to
  40x10 and back, plus a storm of random sizes down to 1x1; afterwards the app is still
  running, a key still does what it does, and the tables show every column again;
* tmux (the installed ``sckpt --demo`` in a real terminal): ``tmux resize-window`` to
  40x10 and back, then a storm of ``kill -WINCH`` at the sckpt process interleaved with
  resizes; the process is alive, the screen repaints at 80x24, keys still answer and ``q``
  exits 0 without a traceback.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sckpt.tui.dialogs.confirm import Confirm
from sckpt.tui.dialogs.form import ActionForm
from sckpt.tui.dialogs.help import HelpScreen
from sckpt.tui.screens.console import ConsoleScreen
from sckpt.tui.screens.step import StepScreen
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widgets import Input

from ..tmux import Tmux
from ..tui import conftest as tui
from ..tui.conftest import screen_text, settle, submit_mine

# The console tests' fixtures: the simulated cluster on a frozen clock, no user config.
console = tui.console
isolated = tui.isolated

SIZE = (120, 36)
SMALL = (40, 10)
SCKPT = Path(sys.executable).with_name("sckpt")


def console_of(app: Any) -> ConsoleScreen:
    screen = app.console_screen()
    assert isinstance(screen, ConsoleScreen)
    return screen


async def squeeze(pilot: Pilot[Any]) -> None:
    """40x10, then back to the full size; the screen must render at both sizes."""
    await pilot.resize_terminal(*SMALL)
    await pilot.pause()
    assert pilot.app.size == SMALL
    assert screen_text(pilot.app)  # a frame at 40x10 was composed without error
    await pilot.resize_terminal(*SIZE)
    await pilot.pause()
    assert pilot.app.size == SIZE
    assert pilot.app.is_running


def test_every_screen_survives_40x10_and_back(console: Any) -> None:
    asyncio.run(every_screen(console()))


async def every_screen(c: Any) -> None:
    job_id = submit_mine(c.cluster, "resize-me", n_steps=2)
    async with c.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(c.app)
        full_columns = len(con.jobs_table.shown)
        await squeeze(pilot)
        # The tables refit to the width they get back: the same columns as at the start.
        assert len(con.jobs_table.shown) == full_columns
        # The filter box, open and focused.
        await pilot.press("slash")
        assert isinstance(c.app.focused, Input)
        await squeeze(pilot)
        await pilot.press(*"resize-me", "enter")
        await pilot.pause()
        assert con.jobs_table.row_keys_in_order == [str(job_id)]
        # The steps table, then the step screen.
        await pilot.press("enter")
        await pilot.press("down")
        await pilot.pause()
        await squeeze(pilot)
        target = con.selected_target()
        assert target is not None and target.job_id == job_id
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(c.app.screen, StepScreen)
        await squeeze(pilot)
        # The action form on the step screen, then its confirmation (vacate asks).
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(c.app.screen, ActionForm)
        await squeeze(pilot)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(c.app.screen, Confirm)
        await squeeze(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(c.app.screen, StepScreen)
        # Help, then the command palette.
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(c.app.screen, HelpScreen)
        await squeeze(pilot)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(c.app.screen, CommandPalette)
        await squeeze(pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(c.app.screen, StepScreen)
        # Still answering keys after all of it: back to the console, disable acts.
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(c.app.screen, ConsoleScreen)
        assert c.cluster.step_state(target).disable_count == 0
        await pilot.press("d")
        await settle(pilot)
        assert c.cluster.step_state(target).disable_count == 1


def test_a_storm_of_resizes_then_keys_still_work(console: Any) -> None:
    asyncio.run(resize_storm(console(n_jobs=30)))


async def resize_storm(c: Any) -> None:
    rng = random.Random(8)
    async with c.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(c.app)
        full_columns = len(con.jobs_table.shown)
        app = pilot.app

        # 300 resizes posted back to back (as a flood of SIGWINCH does), sizes down to 1x1,
        # with a data refresh arriving in the middle.  Each ``resize_terminal`` posts its
        # resize before its first wait, so started together they all land in the queue
        # before the app handles any.
        def storm(count: int) -> list[asyncio.Task[None]]:
            sizes = [(rng.randint(1, 200), rng.randint(1, 60)) for _ in range(count)]
            return [asyncio.ensure_future(pilot.resize_terminal(w, h)) for w, h in sizes]

        first = storm(150)
        await asyncio.sleep(0)
        c.clock.advance(5)
        app.refresh_now()
        await asyncio.gather(*first, *storm(150))
        await pilot.pause()
        await pilot.resize_terminal(*SIZE)
        await settle(pilot)
        assert app.is_running
        assert app.size == SIZE
        assert len(con.jobs_table.shown) == full_columns
        before = con.jobs_table.cursor_row
        await pilot.press("down")
        assert con.jobs_table.cursor_row == before + 1
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


# ------------------------------------------------------------------ a real terminal (tmux)


def _child_of(pid: int) -> int:
    """The single child process of ``pid`` (``sh -c`` runs sckpt as its child)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


@pytest.mark.parametrize(
    "exported", [(), ("COLUMNS=80", "LINES=24")], ids=["plain", "columns-lines-exported"]
)
def test_tmux_resize_and_sigwinch_storm(tmp_path: Path, exported: tuple[str, ...]) -> None:
    """``columns-lines-exported``: a shell (or a tmux server started from a test run) that
    exports the start size; the console must still follow the terminal's real size."""
    audit = tmp_path / "audit.log"
    config = tmp_path / "config.toml"
    config.write_text(f'audit_log = "{audit}"\nrefresh_interval = 0.5\n')
    env = [f"SCKPT_CONFIG={config}", "TERM=xterm-256color", "TZ=UTC", f"HOME={tmp_path}"]
    env += exported
    command = f"{SCKPT} --demo; echo SCKPT-EXIT=$?; sleep 60"
    with Tmux(command, 80, 24, env=env) as term:
        term.wait(lambda s: "JobID" in s and "updated" in s)
        pid = _child_of(term.pane_pid())
        assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1].endswith(b"sckpt")

        def resize(width: int, height: int) -> None:
            subprocess.run(
                ["tmux", "resize-window", "-t", term.name, "-x", str(width), "-y", str(height)],
                check=True,
                timeout=20,
            )

        resize(40, 10)
        small = term.wait(lambda s: len(s.splitlines()) <= 10 and "updated" in s)
        assert all(len(line) <= 40 for line in small.splitlines())
        resize(80, 24)
        term.wait(lambda s: "JobID" in s and any(len(line) > 40 for line in s.splitlines()))
        # The storm: 2,000 SIGWINCH at the process, the window changing size under it.
        rng = random.Random(3)
        for index in range(2000):
            os.kill(pid, signal.SIGWINCH)
            if index % 100 == 0:
                resize(rng.randint(20, 120), rng.randint(5, 40))
        resize(40, 10)
        resize(80, 24)
        assert Path(f"/proc/{pid}").exists(), "sckpt died during the SIGWINCH storm"
        screen = term.wait(lambda s: "JobID" in s and "updated" in s and len(s.splitlines()) >= 20)
        assert "Traceback" not in screen
        # Keys still answer: the help opens and closes, the filter box opens.
        # (The help's first lines: at 80x24 its last sections are below the fold.)
        help_shown = "checkpoint the selected step"
        term.press_until("?", lambda s: help_shown in s)
        term.keys("Escape")
        term.wait(lambda s: help_shown not in s and "JobID" in s)
        term.press_until("/", lambda s: "field:value" in s)
        term.keys("Escape")
        term.wait(lambda s: "field:value" not in s)
        term.keys("q")
        screen = term.wait(lambda s: "SCKPT-EXIT=" in s)
        assert "SCKPT-EXIT=0" in screen
        assert "Traceback" not in screen
