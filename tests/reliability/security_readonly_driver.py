"""Drive the read-only console through every key and palette command (run in a subprocess).

``test_security_readonly.py`` runs this with ``SLURM_CONF`` pointing at its private cluster:
libslurm reads its configuration once per process, so the console must live in a process
of its own to talk to that cluster and not to the shared one.

    python -m tests.reliability.security_readonly_driver JOB_ID AUDIT_LOG REPORT_JSON

It presses every key of the console's key table on the console screen, the steps table
and the step screen (the mutating ones too: they are hidden, not unbound), opens and
closes every dialog, invokes every command the palette offers, then bypasses the UI and
asks the app to run each mutating operation itself (``run_operation``): the backend must
refuse those.  The report lists what the screens and notifications showed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, cast

from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.backend.model import StepId
from sckpt.tui.app import SckptApp, build_app
from sckpt.tui.keys import ACTION_KEYS, CONSOLE_KEYS, GLOBAL_KEYS, STEP_KEYS
from sckpt.tui.params import ActionParams
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot

from tests.tui.conftest import notifications, run_test, screen_text, settle, wait_until

SIZE = (160, 50)


def _app(pilot: Pilot[Any]) -> SckptApp:
    return cast(SckptApp, pilot.app)


async def _back_to(pilot: Pilot[Any], screen_type: type) -> None:
    """Escape out of whatever dialog a key opened, back to a ``screen_type`` screen."""
    for _ in range(5):
        if isinstance(pilot.app.screen, screen_type):
            return
        await pilot.press("escape")
        await settle(pilot)
    raise AssertionError(f"stuck on {pilot.app.screen!r}")


async def _press_all(pilot: Pilot[Any], keys: list[str], report: dict[str, Any]) -> None:
    for key in keys:
        screen = type(pilot.app.screen)
        await pilot.press(key)
        if key == "slash":  # the filter box: leave it with the filter as it was
            await pilot.press("enter")
        await settle(pilot)
        report["screens"].append(screen_text(_app(pilot)))
        await _back_to(pilot, screen)


async def _type(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*text)  # Pilot turns characters into their keys


def _palette_has_hits(app: SckptApp) -> bool:
    """The open palette lists at least one command for what was typed."""
    palette = app.screen
    return isinstance(palette, CommandPalette) and palette.query_one(CommandList).option_count > 0


async def _palette(pilot: Pilot[Any], report: dict[str, Any]) -> None:
    """Open the palette, note what it offers, and run each of sckpt's commands in turn."""
    app = _app(pilot)
    home = type(app.screen)
    await pilot.press("ctrl+p")
    await settle(pilot)
    assert isinstance(app.screen, CommandPalette)
    offered = screen_text(app)
    report["palette_listing"].append(offered)
    await _back_to(pilot, home)
    specs = [*ACTION_KEYS, *(CONSOLE_KEYS if home.__name__ == "ConsoleScreen" else STEP_KEYS)]
    specs.sort(key=lambda spec: spec.id == "back")  # "back" leaves the step screen: last
    for spec in specs:
        if spec.mutating or not spec.bound:
            continue
        await pilot.press("ctrl+p")
        await settle(pilot)
        await _type(pilot, spec.description)
        # The palette searches in a worker of its own: wait for its hits.
        await wait_until(pilot, lambda: _palette_has_hits(app))
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        report["palette_run"].append(spec.id)
        report["screens"].append(screen_text(app))
        if spec.id == "back":
            report["back_to"] = type(app.screen).__name__
        elif not isinstance(app.screen, home):
            await _back_to(pilot, home)
    console = app.console_screen()
    if console is not None and console.mine_only:  # "Mine" ran: everyone's jobs again
        console.action_mine()
        await settle(pilot)


async def _into_step(pilot: Pilot[Any], console: Any, target: StepId) -> None:
    """The jobs table's Enter (into the steps), then the cursor on ``target``."""
    console.jobs_table.focus()
    console.jobs_table.select_key(str(target.job_id))
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    if pilot.app.focused is not console.steps_table:
        console.steps_table.focus()
    console.steps_table.select_key(str(target))
    await settle(pilot)
    assert console.selected_target() == target, console.selected_target()


async def drive(job_id: int, audit: Path) -> dict[str, Any]:
    settings = Settings(audit_log=audit, refresh_interval=0.5, read_only=True, max_wait=5)
    facade = open_facade(settings, read_only=True, engine="cooperative")
    app: SckptApp = build_app(facade, settings)
    report: dict[str, Any] = {"screens": [], "palette_listing": [], "palette_run": []}
    target = StepId(job_id, 0)
    try:
        async with run_test(app, size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("slash")
            await _type(pilot, f"id:{job_id}")
            await pilot.press("enter")
            await settle(pilot)
            keys = [s.key for s in (*ACTION_KEYS, *CONSOLE_KEYS) if s.bound]
            keys += [s.key for s in GLOBAL_KEYS if s.bound and s.id != "quit"]
            # On the jobs table (whole job), then on step .0 of the steps table.
            await _press_all(pilot, [k for k in keys if k not in ("m", "f")], report)
            await _palette(pilot, report)
            console = app.console_screen()
            assert console is not None
            await _into_step(pilot, console, target)
            report["selected"] = str(console.selected_target())
            await _press_all(pilot, [k for k in keys if k not in ("m", "f")], report)
            await _palette(pilot, report)
            console.jobs_table.focus()
            await _press_all(pilot, ["m", "m", "f", "f", "tab", "tab", "tab"], report)
            # The step screen: Enter on the step, every key there, its palette, back.
            await _into_step(pilot, console, target)
            await pilot.press("enter")
            await settle(pilot)
            report["step_screen"] = type(app.screen).__name__
            step_keys = [s.key for s in (*ACTION_KEYS, *STEP_KEYS) if s.id != "back"]
            step_keys += [s.key for s in GLOBAL_KEYS if s.bound and s.id != "quit"]
            await _press_all(pilot, step_keys, report)
            await _palette(pilot, report)  # its last command, "Console", goes back
            # Past the UI: the app's own action runner, as a key would call it.
            params = ActionParams(max_wait=5, image_dir=None, stick=True)
            for operation in ("create", "vacate", "restart", "enable", "disable"):
                for where in (target, StepId(job_id)):
                    app.run_operation(operation, where, params)
                    await settle(pilot)
            report["notifications"] = notifications(app)
            report["final"] = screen_text(app)
            await pilot.press("q")
    finally:
        facade.close()
    return report


def main(argv: list[str]) -> int:
    job_id, audit, out = int(argv[0]), Path(argv[1]), Path(argv[2])
    report = asyncio.run(drive(job_id, audit))
    out.write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
