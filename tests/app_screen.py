"""What a running Textual app shows, read through Textual's public API only.

Why: the tests read the screen as text and the notifications on it.  Reading them from
``Screen._compositor`` and ``App._notifications`` tied the tests to Textual's private
names, which may change in any release (the project pins Textual to the range it tests,
and moving that range must not mean rewriting the tests).  Public ways exist:

* ``App.export_screenshot`` renders the whole screen as SVG (what pytest-textual-snapshot
  compares); its ``<text>`` elements are placed on a grid of cells, so the text of each
  row comes back from their positions;
* notifications: each reaches the app as a ``Notify`` message, which the app's
  ``message_hook`` sees (``run_test`` below passes one to Textual's ``run_test``): the log
  (``NotificationLog``) says which are shown now (not timed out) and every one in order,
  for drivers that report them all after a run.
"""

from __future__ import annotations

import html
import re
from contextlib import AbstractAsyncContextManager
from typing import Any
from weakref import WeakKeyDictionary

from rich.cells import cell_len
from textual.app import App
from textual.message import Message
from textual.notifications import Notification, Notify
from textual.pilot import Pilot

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
    are still shown (``shown``: not timed out), as Textual keeps them.

    ``hook`` is the app's ``message_hook`` (``run_test``): Textual calls it with every
    message the app handles, and a notification reaches the app as ``Notify``.
    """

    def __init__(self) -> None:
        self.entries: list[dict[str, str]] = []
        self.notified: list[Notification] = []

    def hook(self, message: Message) -> None:
        if not isinstance(message, Notify):
            return
        notification = message.notification
        self.notified.append(notification)
        self.entries.append(
            {
                "title": notification.title,
                "severity": notification.severity,
                "message": notification.message,
            }
        )

    def shown(self) -> list[str]:
        return [n.message for n in self.notified if not n.has_expired]


_LOGS: WeakKeyDictionary[App[Any], NotificationLog] = WeakKeyDictionary()


def notification_log(app: App[Any]) -> NotificationLog:
    """The log of ``app``'s notifications (kept while it runs under ``run_test`` below)."""
    log = _LOGS.get(app)
    if log is None:
        log = _LOGS[app] = NotificationLog()
    return log


def notifications(app: App[Any]) -> list[str]:
    """The messages of the notifications shown now, in the order they were asked for."""
    return notification_log(app).shown()


def run_test(app: App[Any], **options: Any) -> AbstractAsyncContextManager[Pilot[Any]]:
    """``app.run_test(**options)``, with its notifications logged (``notifications``)
    through Textual's ``message_hook``."""
    return app.run_test(message_hook=notification_log(app).hook, **options)
