"""The console's ``o``: a job's output file, its tail, followed while the job runs.

On the simulated cluster, whose jobs write where the test says (``set_output_paths``): the
view must show the file's last bytes, what is appended later, the error file on ``e``, and
say why a file cannot be shown.  The real cluster's files are in test_output_real.py.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend.model import JobState
from sckpt.tui.screens.output import OutputScreen, shown_text

from .conftest import ME, Console, screen_text, settle, submit_mine


@pytest.fixture
def outdir() -> Iterator[Path]:
    """A directory every user may enter: pytest's own tmp_path is root's alone (0700), and
    the console reads as alice (the acting user), as it must."""
    path = Path(tempfile.mkdtemp(prefix="sckpt-output-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _job_writing(c: Console, tmp_path: Path, text: bytes, name: str = "writer") -> tuple[int, Path]:
    job_id = submit_mine(c.cluster, name=name)
    out = tmp_path / f"slurm-{job_id}.out"
    out.write_bytes(text)
    c.cluster.control.set_output_paths(job_id, str(out), str(tmp_path / f"slurm-{job_id}.err"))
    return job_id, out


async def _open_output(c: Console, job_id: int, pilot: Any) -> OutputScreen:
    await settle(pilot)
    console = c.app.console_screen()
    assert console is not None
    console.select_target(__import__("sckpt.backend.model", fromlist=["StepId"]).StepId(job_id))
    console.jobs_table.focus()
    await pilot.press("o")
    await settle(pilot)
    screen = c.app.screen
    assert isinstance(screen, OutputScreen)
    return screen


async def test_o_shows_the_tail_and_follows_appended_lines(
    console: Callable[..., Console], outdir: Path
) -> None:
    c = console()
    lines = b"".join(b"line %d\n" % i for i in range(1, 41))
    job_id, out = _job_writing(c, outdir, lines)
    async with c.app.run_test(size=(80, 24)) as pilot:
        screen = await _open_output(c, job_id, pilot)
        text = screen_text(c.app)
        assert f"Output of job {job_id} (writer)" in text
        assert str(out) in text
        assert "line 40" in text and "following" in text
        with out.open("ab") as handle:
            handle.write(b"appended later\n")
        screen.poll()  # what the 1 s timer does
        await settle(pilot)
        assert "appended later" in screen_text(c.app)
        assert "line 40" in screen_text(c.app)
        await pilot.press("question_mark")  # the footer offers it: it must answer
        await settle(pilot)
        assert "show the error file, or the output file again" in screen_text(c.app)
        await pilot.press("escape")  # the help
        await settle(pilot)
        assert isinstance(c.app.screen, OutputScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(c.app.screen, OutputScreen)


async def test_o_says_why_a_file_cannot_be_shown(
    console: Callable[..., Console], outdir: Path
) -> None:
    """Missing: "not written yet"; alice may not read it: "permission denied"; an
    interactive job: "no output file"; ``e`` shows the error file."""
    c = console()
    job_id, out = _job_writing(c, outdir, b"secret\n")
    out.chmod(0o600)  # root's file; the console acts as alice
    async with c.app.run_test(size=(80, 24)) as pilot:
        await _open_output(c, job_id, pilot)
        text = screen_text(c.app)
        assert "cannot read" in text and "permission denied" in text
        assert "secret" not in text
        await pilot.press("e")  # the error file: not written
        await settle(pilot)
        text = screen_text(c.app)
        assert "stderr" in text
        assert f"not written yet: {outdir}/slurm-{job_id}.err" in text.replace("\n", "")
        (outdir / f"slurm-{job_id}.err").write_bytes(b"oops on stderr\n")
        await pilot.press("e", "e")  # out and back: read again
        await settle(pilot)
        assert "oops on stderr" in screen_text(c.app)
    c = console()  # an app runs once: a new one for the next look
    interactive = c.cluster.control.submit(
        ME, name="salloc", state=JobState.RUNNING, n_steps=1, batch=False
    )
    async with c.app.run_test(size=(80, 24)) as pilot:
        await _open_output(c, interactive.job_id, pilot)
        assert "job has no output file" in screen_text(c.app)


def test_job_text_cannot_drive_the_terminal() -> None:
    """Escapes a job prints are shown as text; a carriage return starts a line."""
    assert shown_text(b"\x1b[2Jred\ttab\r\nprogress 1\rprogress 2\n\xff") == (
        "\\x1b[2Jred\ttab\nprogress 1\nprogress 2\n\ufffd"
    )


async def test_leaving_while_a_read_is_under_way_is_harmless(
    console: Callable[..., Console], outdir: Path
) -> None:
    """The answer of a read that comes after Escape is dropped, not shown on a gone
    screen (which would raise in the app)."""
    c = console()
    job_id, _out = _job_writing(c, outdir, b"x\n")
    async with c.app.run_test(size=(80, 24)) as pilot:
        screen = await _open_output(c, job_id, pilot)
        stdio, read = screen.stdio, None
        assert stdio is not None
        read = c.facade.read_output(stdio, "stdout")
        await pilot.press("escape")
        await settle(pilot)
        screen.show_read(stdio, "stdout", read, True)
        screen.show_failure("late")
        await settle(pilot)
        assert not isinstance(c.app.screen, OutputScreen)
        assert c.app.is_running
