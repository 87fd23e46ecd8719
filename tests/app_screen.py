"""What a running Textual app shows, read through Textual's public API only.

Why: the tests read the screen as text and the notifications on it.  Reading them from
``Screen._compositor`` and ``App._notifications`` tied the tests to Textual's private
names, which may change in any release (the project pins Textual to the range it tests,
and moving that range must not mean rewriting the tests).  Public ways exist:

* ``App.export_screenshot`` renders the whole screen as SVG (what pytest-textual-snapshot
  compares); its ``<text>`` elements are placed on a grid of cells, so the text of each
  row comes back from their positions;
* notifications: a wrapper on the app class's public ``notify`` logs each one as it is
  asked for (``NotificationLog``): which are shown now (what ``App._notifications`` held:
  not timed out, not cleared), and every one in order, for drivers that report them all
  after a run.  Importing this module installs it on ``SckptApp``.
"""

from __future__ import annotations

import html
import re
import time
from typing import Any
from weakref import WeakKeyDictionary

from rich.cells import cell_len
from sckpt.tui.app import SckptApp
from textual.app import App

_TEXT = re.compile(r"<text ([^>]*)>(.*?)</text>", re.S)
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')


def screen_text(app: App[Any]) -> str:
    """What the terminal shows right now, as plain text: one line per row, each as wide as
    the screen."""
    width, height = app.size
    return svg_text(app.export_screenshot(), width, height)


def svg_text(svg: str, width: int, height: int) -> str:
    """A screenshot's text (``export_screenshot``, or a pytest-textual-snapshot SVG file of
    a ``width`` x ``height`` terminal): one line per row, each ``width`` cells wide."""
    rows = [[" "] * width for _ in range(height)]
    for attributes, content in _TEXT.findall(svg):
        attrs = dict(_ATTR.findall(attributes))
        text = html.unescape(content).replace("\xa0", " ")
        if not text or "textLength" not in attrs:
            continue  # the window title
        cell = float(attrs["textLength"]) / len(text)  # Rich: textLength = cell width * len
        line_height = 2 * cell  # Rich: 1.22 x the font size; a cell is 0.61 x it
        column = round(float(attrs["x"]) / cell)
        row = round((float(attrs["y"]) - line_height / 1.22) / line_height)
        if not 0 <= row < height:
            continue
        for char in text:
            if column >= width:
                break
            rows[row][column] = char
            wide = cell_len(char)
            if wide == 2 and column + 1 < width:
                rows[row][column + 1] = ""  # the second cell of a wide character
            column += max(wide, 1)
    return "\n".join("".join(row) for row in rows)


class NotificationLog:
    """The notifications one app asked for: all of them in order (``entries``), and which
    are still shown (``shown``: not timed out, not cleared), as Textual keeps them."""

    def __init__(self) -> None:
        self.entries: list[dict[str, str]] = []
        self._deadlines: list[tuple[float, str]] = []

    def add(self, app: App[Any], message: str, options: dict[str, Any]) -> None:
        self.entries.append(
            {
                "title": str(options.get("title", "")),
                "severity": str(options.get("severity", "information")),
                "message": message,
            }
        )
        timeout = options.get("timeout")
        seconds = app.NOTIFICATION_TIMEOUT if timeout is None else float(timeout)
        self._deadlines.append((time.monotonic() + seconds, message))

    def clear(self) -> None:
        self._deadlines.clear()

    def shown(self) -> list[str]:
        now = time.monotonic()
        return [message for deadline, message in self._deadlines if deadline > now]


_LOGS: WeakKeyDictionary[App[Any], NotificationLog] = WeakKeyDictionary()


def notification_log(app: App[Any]) -> NotificationLog:
    """The log of ``app``'s notifications (kept since ``record_notifications``)."""
    log = _LOGS.get(app)
    if log is None:
        log = _LOGS[app] = NotificationLog()
    return log


def notifications(app: App[Any]) -> list[str]:
    """The messages of the notifications shown now, in the order they were asked for."""
    return notification_log(app).shown()


def record_notifications(app_class: type[App[Any]]) -> None:
    """Log the notifications of every app of ``app_class`` (once per class).

    Screens and widgets notify through their app's public ``notify`` (``Widget.notify``
    calls ``self.app.notify``), so a wrapper on the app class sees each one as it is asked
    for: a test reads it at once, while its toast is mounted only on a later turn of the
    message loop.
    """
    if "notify" in app_class.__dict__:
        return
    notify = app_class.notify
    clear = app_class.clear_notifications

    def recording(self: App[Any], message: str, **options: Any) -> None:
        notification_log(self).add(self, message, options)
        notify(self, message, **options)

    def clearing(self: App[Any]) -> None:
        notification_log(self).clear()
        clear(self)

    app_class.notify = recording  # type: ignore[method-assign]
    app_class.clear_notifications = clearing  # type: ignore[method-assign]


record_notifications(SckptApp)
