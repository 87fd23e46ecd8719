"""Issue 13's console defects, as a new operator meets them at 80x24 and 160x50.

- Defect 1: the footer keeps ``? Help`` and ``q Quit`` (and ``p Pids`` on the step screen)
  at 80 columns, with no stray character after the palette hint; the header keeps the
  sort and filter state; at 160 columns the cut columns widen into the spare width.
- The help fits 80x24: its last section is on screen.
- Defect 10: in the steps table Home/End/PageUp/PageDown move the cursor and the action
  key acts on the row under it (the confirmation names it); Tab then a letter keeps the
  typed filter; another job's steps start with the cursor on their first row.
- Defect 11: a step that does not exist opens a screen naming it, with no action offered.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sckpt.backend.model import ClusterInfo, StepId
from sckpt.tui.dialogs.confirm import Confirm
from sckpt.tui.dialogs.form import ActionForm
from sckpt.tui.dialogs.help import HelpScreen
from sckpt.tui.screens.console import ConsoleScreen
from sckpt.tui.screens.step import StepScreen
from sckpt.tui.widgets.header import StatusHeader
from textual.pilot import Pilot
from textual.widgets import Input

from .conftest import ME, Console, notifications, run_test, screen_text, settle, submit_mine

NARROW = (80, 24)
WIDE = (160, 50)


def console_of(pilot: Pilot[Any]) -> ConsoleScreen:
    screen = pilot.app.console_screen()  # type: ignore[attr-defined]
    assert isinstance(screen, ConsoleScreen)
    return screen


def lines(pilot: Pilot[Any]) -> list[str]:
    return screen_text(pilot.app).splitlines()  # type: ignore[arg-type]


def demo(console: Callable[..., Console], **kwargs: Any) -> Console:
    return console(n_jobs=48, seed=42, demo_touches=True, **kwargs)


# ------------------------------------------------------------------ defect 1: footer, header


async def test_the_80_column_footer_keeps_help_quit_and_no_stray_character(
    console: Callable[..., Console],
) -> None:
    c = demo(console)
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        footer = lines(pilot)[-1]
        assert len(footer) == 80
        assert "? Help" in footer and "q Quit" in footer, footer
        assert "/ Filter" in footer and "v Vacate" in footer, footer
        # No character after the palette hint (it was "^p palettep"); at 80 columns the
        # hint gives way to the keys (the palette is in ? help).
        assert not footer.rstrip().endswith("palettep"), footer
        # The step screen: its own keys too.
        step = next(s.step.step_id for j in c.app.jobs() for s in j.steps if j.job.user == ME)
        c.app.open_step(step)
        await settle(pilot)
        footer = lines(pilot)[-1]
        for key in ("p Pids", "esc Console", "? Help", "q Quit", "c Create"):
            assert key in footer, footer
        assert not footer.rstrip().endswith("palettep"), footer


async def test_the_160_column_footer_shows_every_key_and_the_palette(
    console: Callable[..., Console],
) -> None:
    c = demo(console)
    async with run_test(c.app, size=WIDE) as pilot:
        await settle(pilot)
        footer = lines(pilot)[-1]
        for key in ("c Create", "x Check", "/ Filter", "? Help", "q Quit"):
            assert key in footer, footer
        assert footer.rstrip().endswith("^p palette"), footer


async def test_a_remapped_key_shows_in_the_footer(console: Callable[..., Console]) -> None:
    c = demo(console, keys={"help": "h"})
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        footer = lines(pilot)[-1]
        assert "h Help" in footer and "? Help" not in footer, footer


async def test_a_click_on_a_footer_key_presses_it(console: Callable[..., Console]) -> None:
    c = demo(console)
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        footer = lines(pilot)[-1]
        await pilot.click(offset=(footer.index("? Help") + 2, NARROW[1] - 1))
        await pilot.pause()
        assert isinstance(pilot.app.screen, HelpScreen)


async def test_the_80_column_header_keeps_the_sort_and_filter_state(
    console: Callable[..., Console],
) -> None:
    c = demo(console)
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        header = lines(pilot)[0]
        assert "sort id↑" in header and not header.rstrip().endswith("…"), header
        assert "updated every" in header, header  # freshness is never left out
        await pilot.press("slash", *"user:alice", "enter")
        await pilot.press("S", "m")
        await pilot.pause()
        header = lines(pilot)[0]
        assert "sort id↓" in header and "mine" in header, header
        assert "filter: user:alice" in header, header
        # What gave way: the version first, then the engine.
        assert "Slurm" not in header and "updated every" in header, header


async def test_a_long_filter_is_cut_but_the_sort_stays(console: Callable[..., Console]) -> None:
    c = demo(console)
    async with run_test(c.app, size=(60, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"user:alice state:R name:train-resnet50", "enter")
        await pilot.pause()
        header = lines(pilot)[0]
        assert "sort id↑" in header and "filter: user:al" in header, header
        assert header.rstrip().endswith("…"), header  # the filter's end, not the sort


async def test_at_160_columns_cut_names_and_reasons_widen(console: Callable[..., Console]) -> None:
    c = demo(console)
    async with run_test(c.app, size=WIDE) as pilot:
        await settle(pilot)
        await pilot.pause()
        text = screen_text(c.app)
        assert "openfoam-motorbike " in text and "openfoam-motorb…" not in text
        assert "(JobHeldUser)" in text and "(JobHeldUse…" not in text
        table = console_of(pilot).jobs_table
        widths = {col.key: col.width for col in table.shown}
        assert widths["name"] == len("openfoam-motorbike")
        # The flexible column keeps its share.
        assert (widths["checkpoint"] or 0) >= 24
    c = demo(console)
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        await pilot.pause()
        # 80 columns have nothing to spare: the name is cut as before.
        assert "openfoam-motorb…" in screen_text(c.app)


# ------------------------------------------------------------------ help at 80x24


async def test_the_help_fits_80x24_with_its_last_section(console: Callable[..., Console]) -> None:
    c = demo(console)
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HelpScreen)
        text = screen_text(c.app)
        for words in (
            "Actions",
            "create   checkpoint the selected step",
            "check    ask Slurm again: can it checkpoint, and its last error",
            "Console",
            "refresh now",
            "Everywhere",
            "quit the console",
            "search every action",
            "Esc closes",  # the dialog's bottom border: nothing below the fold
        ):
            assert words in text, words


async def test_the_help_names_each_action_as_the_footer_and_cli_do(
    console: Callable[..., Console],
) -> None:
    """Defect 12: ``?`` gave only descriptions; an operator who knows ``sckpt vacate`` or
    ``scontrol checkpoint vacate`` looked for the word."""
    c = demo(console)
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        text = screen_text(c.app)
        for key, name in (
            ("c", "create"),
            ("v", "vacate"),
            ("r", "restart"),
            ("e", "enable"),
            ("d", "disable"),
        ):
            assert re.search(rf"│\s+{key}\s+{name}\s+\w", text), name


# ------------------------------------------------------------------ defect 10: targets


async def steps_of_a_big_job(c: Console, pilot: Pilot[Any]) -> tuple[int, list[str]]:
    """Filter to the 9-step job, Enter into its steps: (job id, step keys in order)."""
    await pilot.press("slash", *"name:many-steps", "enter")
    await pilot.pause()
    await pilot.press("enter")
    await pilot.pause()
    con = console_of(pilot)
    assert pilot.app.focused is con.steps_table
    keys = con.steps_table.row_keys_in_order
    assert len(keys) == 9
    return int(keys[0].split(".")[0]), keys


def visible_cursor(con: ConsoleScreen) -> str:
    """The key of the steps row painted as the cursor (on screen, in the visible window)."""
    table = con.steps_table
    top = int(table.scroll_y)
    index = table.cursor_row
    assert top <= index < top + table.size.height - 1, "the cursor is off screen"
    return table.row_keys_in_order[index]


async def test_home_end_page_keys_move_the_steps_cursor_and_the_target(
    console: Callable[..., Console],
) -> None:
    c = console()
    submit_mine(c.cluster, name="many-steps", n_steps=7)
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        _, keys = await steps_of_a_big_job(c, pilot)
        con = console_of(pilot)
        assert con.steps_table.size.height - 1 < len(keys)  # the table scrolls at 80x24
        for key, wanted in (
            ("end", keys[-1]),
            ("home", keys[0]),
            ("pagedown", None),
            ("pageup", keys[0]),
            ("down", keys[1]),
        ):
            await pilot.press(key)
            await pilot.pause()
            shown = visible_cursor(con)
            if wanted is not None:
                assert shown == wanted, key
            assert str(con.selected_target()) == shown, key
        await pilot.press("pagedown")
        await pilot.pause()
        assert visible_cursor(con) != keys[1]


async def test_after_home_vacate_names_the_first_row(console: Callable[..., Console]) -> None:
    c = console()
    submit_mine(c.cluster, name="many-steps", n_steps=7)
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        _, keys = await steps_of_a_big_job(c, pilot)
        await pilot.press("down", "down", "end", "home")
        await pilot.pause()
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ActionForm)
        assert f"Vacate {keys[0]}" in screen_text(c.app)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, Confirm)
        assert f"Vacate step {keys[0]} (many-steps)?" in screen_text(c.app)
        await pilot.press("n")
        await settle(pilot)


async def test_another_jobs_steps_start_on_their_first_row(
    console: Callable[..., Console],
) -> None:
    c = console()
    first = submit_mine(c.cluster, name="steps-a", n_steps=3)
    second = submit_mine(c.cluster, name="steps-b", n_steps=3)
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"name:steps-", "enter")
        await pilot.pause()
        con = console_of(pilot)
        assert con.jobs_table.selected_key == str(first)
        await pilot.press("enter", "down")  # the steps of the first job: its extern step
        await pilot.pause()
        assert con.selected_target() == StepId(first, con.selected_target().step)  # type: ignore[union-attr]
        assert con.steps_table.cursor_row == 1
        await pilot.press("tab", "tab", "down")  # filter box, jobs table, next job
        await pilot.pause()
        assert con.jobs_table.selected_key == str(second)
        await pilot.press("tab")  # into the second job's steps
        await pilot.pause()
        assert pilot.app.focused is con.steps_table
        assert con.steps_table.cursor_row == 0
        target = con.selected_target()
        assert target is not None and str(target) == con.steps_table.row_keys_in_order[0]


async def test_tab_then_a_letter_keeps_the_typed_filter(console: Callable[..., Console]) -> None:
    c = demo(console)
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"user:alice", "enter")
        await pilot.pause()
        box = console_of(pilot).query_one("#filter", Input)
        await pilot.press("tab", "tab")  # steps, then the filter box
        await pilot.pause()
        assert pilot.app.focused is box
        await pilot.press("x")
        await pilot.pause()
        assert box.value == "user:alicex"  # typed on, not replaced by "x"


# ------------------------------------------------------------------ defect 11: missing step


async def test_a_step_that_does_not_exist_is_named_and_offers_no_action(
    console: Callable[..., Console],
) -> None:
    c = demo(console, focus=StepId(999999, 0))
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, StepScreen) and screen.missing
        text = screen_text(c.app)
        assert "Step 999999.0 not found" in text
        assert "no job 999999" in text
        footer = lines(pilot)[-1]
        assert "esc Console" in footer and "? Help" in footer and "q Quit" in footer
        for word in ("Create", "Vacate", "Restart", "Enable", "Disable", "Check", "Pids"):
            assert word not in footer, footer
        # Each action key is refused, saying why; none opens a form or reaches Slurm.
        assert not notifications(c.app)  # opening it said nothing yet
        for key in ("c", "v", "r", "e", "d", "x", "p", "K"):
            await pilot.press(key)
            await pilot.pause()
            assert pilot.app.screen is screen, key
        assert notifications(c.app).count("step 999999.0 not found: no action") == 8
        assert not c.audit.exists() or not c.audit.read_text().strip()
        # The help lists no action either.
        await pilot.press("question_mark")
        await pilot.pause()
        help_text = screen_text(c.app)
        assert "Actions" not in help_text and "back to the full console" in help_text
        await pilot.press("escape", "escape")
        await settle(pilot)
        assert isinstance(pilot.app.screen, ConsoleScreen)


async def test_a_missing_step_of_a_known_job_lists_the_jobs_steps(
    console: Callable[..., Console],
) -> None:
    c = console()
    job_id = submit_mine(c.cluster, name="known", n_steps=2)
    async with run_test(c.app, size=NARROW) as pilot:
        await settle(pilot)
        c.app.open_step(StepId(job_id, 7))
        await settle(pilot)
        text = screen_text(c.app)
        assert f"Step {job_id}.7 not found" in text
        assert f"{job_id}.batch" in text and f"{job_id}.1" in text


def test_an_outages_long_reason_is_cut_not_left_out() -> None:
    info = ClusterInfo("cluster-with-a-long-name", "22.05.11", "native", "alice")
    header = StatusHeader(info, interval=2.0)
    header.note = "sort id↑  filter: user:alice"
    reason = "Munge encode failed: Failed to access socket: No such file or directory " * 2
    header.updated_at = header.stale_since = 1000.0  # fresh once, then the outage
    header.stale_error = reason.strip()
    for width in (80, 160):
        line = header.line_text(1010.0, width).plain
        assert len(line) <= width, line
        assert "STALE since" in line and "Munge encod" in line, line
        assert "sort id↑" in line and "sckpt cluster-wit" in line, line
    wide = header.line_text(1010.0, 160).plain
    assert "Munge encode failed: Failed to access" in wide, wide
    assert "filter: user:alice" in wide, wide  # the reason was cut first


# ------------------------------------------------------------------ issue 34: narrow widths


async def test_the_checkpoint_column_stays_on_a_narrow_screen(
    console: Callable[..., Console],
) -> None:
    """At 60x15 the Checkpoint column fell off the screen while JobID and User kept their
    full width; at 80 the resources layout named Resources in the header but had no such
    column.  The other columns are narrowed (or left out) first."""
    c = demo(console)
    async with run_test(c.app, size=(60, 15)) as pilot:
        await settle(pilot)
        header = next(line for line in lines(pilot) if "JobID" in line)
        assert "Checkpoint" in header, header
        con = console_of(pilot)
        first = con.jobs_table.row_keys_in_order[0]
        row = next(line for line in lines(pilot) if line.lstrip().startswith(first))
        summary = con.jobs_table.cells_of(first)["checkpoint"].plain  # type: ignore[index]
        assert summary[:8] in row, (summary, row)
    wide = demo(console)
    async with run_test(wide.app, size=(80, 24)) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        while con.layouts()[con.layout_index][0] != "resources":
            await pilot.press("l")
        await pilot.pause()
        header = next(line for line in lines(pilot) if "JobID" in line)
        assert "Resources" in header and "Checkpoint" in header, header


async def test_the_60_column_footer_keeps_enable_disable_and_check(
    console: Callable[..., Console],
) -> None:
    """At 60x15 the footer lost ``d`` and ``x``: ``d`` undoes ``e`` and ``x`` reads what
    they did; ``/`` and ``r`` give way first (both are in ``?``)."""
    c = demo(console)
    async with run_test(c.app, size=(60, 15)) as pilot:
        await settle(pilot)
        footer = lines(pilot)[-1]
        for key in ("e Enable", "d Disable", "x Check", "? Help", "q Quit"):
            assert key in footer, footer


async def test_the_header_counts_the_jobs_shown_of_all(console: Callable[..., Console]) -> None:
    """An operator looked for a job count: ``N jobs``, ``shown/total`` while filtered."""
    c = demo(console)
    async with run_test(c.app, size=(160, 40)) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        shown = con.jobs_table.row_count
        assert f"sort id↑  {shown} jobs" in lines(pilot)[0]
        await pilot.press("slash", *"user:alice", "enter")
        await pilot.pause()
        mine = con.jobs_table.row_count
        total = len(list(c.app.jobs()))
        assert 0 < mine < shown <= total
        assert lines(pilot)[0].rstrip().endswith(f"filter: user:alice  {mine}/{total} jobs")
