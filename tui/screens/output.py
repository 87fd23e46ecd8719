"""A job's output file in the console (``o``): its tail, followed while the job runs.

Like turm's output view, over SSH at 80x24: two title lines (which job, which stream, its
state; the path, or why it cannot be shown) above a ``Log`` of at most ``MAX_LINES`` lines,
and the footer.  The file is read by the backend (``backend/job_output.py``: at most the
last 64 KiB, then what is appended), in a worker thread of the app's action runner
(``ActionRunner.load_output``, answered by ``OutputLoaded``), since the path comes from
the controller and the file may sit on a slow network file system.  Following polls once a
second and asks the controller for the job's state every few polls; when the job has ended
the last bytes are read and polling stops.

The text is the job's own: control characters other than newline and tab are shown as
``\\xNN`` (a job printing terminal escapes must not drive the operator's terminal), and a
carriage return starts a new line.
"""

from __future__ import annotations

from typing import ClassVar, cast

from rich.text import Text
from sckpt.backend.control_chars import escape_controls
from sckpt.backend.job_output import OutputRead
from sckpt.backend.model import JobStdio, StepId
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Log, Static

from ..console_text import printable
from ..context import ScreenContext
from ..dialogs.help import Sections
from ..keys import GLOBAL_KEYS, OUTPUT_KEYS, bindings
from ..messages import OutputLoaded, OutputRequest
from ..widgets.key_footer import KeyFooter

POLL = 1.0
"""Seconds between two looks at the file while following."""
STATE_EVERY = 5
"""Ask the controller for the job's state every this many polls."""
MAX_LINES = 5_000
"""Lines kept in the view: a job writing fast must not grow the console without bound."""


def shown_text(data: bytes) -> str:
    """The bytes as the view shows them: UTF-8 (bad bytes replaced), ``\\r`` as a new line,
    other control characters (not newline, not tab) as ``\\xNN``."""
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    return escape_controls(text, keep_layout=True)


class OutputScreen(Screen[None]):
    """The output (or error) file of ``job``, tailed and followed."""

    DEFAULT_CSS = """
    #output-title {
        height: 1;
        background: $panel;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    #output-path {
        height: auto;
        max-height: 3;
        background: $panel;
    }
    #output-log {
        height: 1fr;
    }
    """
    """Beside the screen rather than in app.tcss: the view is self-contained.  The path
    line wraps (up to three lines): a long path cut at 80 columns would hide the file's
    name, the part an operator needs."""

    BINDINGS = bindings(OUTPUT_KEYS)
    HELP_SECTIONS: ClassVar[Sections] = (("Output", OUTPUT_KEYS), ("Everywhere", GLOBAL_KEYS))
    """The sections of ``?``'s help here: every key is offered (``dialogs.help.plain_help``)."""

    def __init__(self, job: StepId) -> None:
        super().__init__(id="output-screen")
        self.job = StepId(job.job_id)
        self.stream = "stdout"
        self.following = True
        self.stdio: JobStdio | None = None
        self.read_offset: int | None = None
        """Where the next read starts; None: read the tail first."""
        self.problem = ""
        self.ended = False
        """The job has ended and its last bytes were read: nothing more will come."""
        self._polls = 0
        self._busy = False

    @property
    def sckpt(self) -> ScreenContext:
        return cast(ScreenContext, self.app)

    def compose(self) -> ComposeResult:
        yield Static("", id="output-title", markup=False)
        yield Static("", id="output-path", markup=False)
        yield Log(id="output-log", max_lines=MAX_LINES, auto_scroll=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.show_title()
        self.query_one(Log).focus()
        self._start(fresh=True)
        self.set_interval(POLL, self.poll)

    # ------------------------------------------------------------------ reading

    def _start(self, *, fresh: bool, ask_state: bool = False) -> None:
        """Ask for one read, off the UI thread (the app's action runner), unless one is
        under way: the paths (first time, and for the state), then the bytes."""
        if self._busy:
            return
        self._busy = True
        offset = None if fresh else self.read_offset
        request = OutputRequest(self.job, self.stdio, self.stream, offset, fresh, ask_state)
        self.sckpt.load_output(request, self)

    def on_output_loaded(self, loaded: OutputLoaded) -> None:
        """A read's answer (``ActionRunner.load_output``)."""
        if loaded.stdio is None or loaded.read is None:
            self.show_failure(loaded.failure)
        else:
            self.show_read(loaded.stdio, loaded.request.stream, loaded.read, loaded.request.fresh)

    def _gone(self) -> bool:
        """The operator left the screen while a read was under way: drop its answer."""
        return self not in self.app.screen_stack

    def show_failure(self, why: str) -> None:
        """A read's answer: the controller could not say where the files are (dropped
        when the operator has left the screen)."""
        if self._gone():
            return
        self._busy = False
        self.problem = f"cannot ask the controller: {why}"
        self.show_title()

    def show_read(self, stdio: JobStdio, stream: str, read: OutputRead, fresh: bool) -> None:
        """A read's answer: the bytes read from ``stream`` (dropped when the operator has
        left the screen, or switched streams meanwhile)."""
        if self._gone():
            return
        self._busy = False
        if stream != self.stream:
            return  # the operator switched streams meanwhile: that read is for the other
        self.stdio = stdio
        log = self.query_one(Log)
        if fresh:
            log.clear()
        self.problem = read.problem
        if not read.problem:
            if read.reset and not fresh:
                log.clear()
                log.write_line("-- the file was truncated or replaced --")
            if read.skipped:
                log.write_line(f"-- {read.skipped} bytes not shown (older output) --")
            log.write(shown_text(read.data))
            self.read_offset = read.offset
        # The bytes were read after the state was asked: an ended job's file is complete.
        self.ended = stdio.state.is_finished
        self.show_title()

    def poll(self) -> None:
        """What the 1 s timer does: read what was appended, while following a job that
        has not ended (every ``STATE_EVERY``th time asking its state again)."""
        if not self.following or self.ended or self.stdio is None:
            return
        self._polls += 1
        self._start(fresh=self.read_offset is None, ask_state=self._polls % STATE_EVERY == 0)

    # ------------------------------------------------------------------ view

    def show_title(self) -> None:
        """Which job and stream, the job's state, following or not; then the path or why
        it cannot be shown."""
        title = Text(f"Output of job {self.job}", style="bold")
        view = self.sckpt.job(self.job.job_id)
        if view is not None:
            title.append(f" ({printable(view.job.name)})")
        title.append(f"  {self.stream}", style="bold")
        stdio = self.stdio
        if stdio is not None:
            title.append(f"  {stdio.state.value}")
            if stdio.state.is_finished:
                title.append("  (ended: nothing more will come)", style="dim")
            elif self.following:
                title.append("  following", style="green")
            else:
                title.append("  paused (f follows)", style="yellow")
        else:
            title.append("  loading…", style="dim")
        self.query_one("#output-title", Static).update(title)
        line = Text()
        if self.problem:
            line.append(printable(self.problem), style="yellow")
        elif stdio is not None:
            path = stdio.std_err if self.stream == "stderr" else stdio.std_out
            line.append(printable(path))
            if stdio.std_err == stdio.std_out:
                line.append("  (stdout and stderr)", style="dim")
        self.query_one("#output-path", Static).update(line)
        if self.following:
            # A path that wraps to a second line makes the log shorter after it was
            # written, and Log's auto_scroll acts only on a write: keep the end in sight.
            self.call_after_refresh(self.query_one(Log).scroll_end, animate=False)

    # ------------------------------------------------------------------ keys

    def action_output_back(self) -> None:
        """Escape: back to where ``o`` was pressed."""
        self.app.pop_screen()

    def action_output_stream(self) -> None:
        """``e``: the error file instead of the output file (or back)."""
        self.stream = "stderr" if self.stream == "stdout" else "stdout"
        self.read_offset = None
        self.ended = False
        self.problem = ""
        self._busy = False
        self.show_title()
        self._start(fresh=True)

    def action_output_follow(self) -> None:
        """``f``: stop following (to read at leisure) or follow again."""
        self.following = not self.following
        self.show_title()
        if self.following:
            self._start(fresh=self.read_offset is None, ask_state=True)
