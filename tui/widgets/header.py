"""The console's top line: which cluster, which engine, who acts, and how fresh the data is.

The freshness part never lies.  While refreshes arrive on schedule it says "updated every
2 s" (the configured interval): a counter that flips between "0 s ago" and "1 s ago" on
every tick told the operator nothing more, yet repainted the line every second, which was
most of what an idle console sent over SSH.  As soon as the data is older than one interval
plus a grace (a late or slow refresh) it says "updated N s ago" in yellow and counts every
second; when the controller cannot be reached it turns into a red STALE marker with the
time the data was last fresh and the reason.  A console started during an outage has no
data to call stale: it says NO DATA YET and the reason right after it (not "STALE since"
the current time, which read as if data had just been fresh).  The line is repainted only
when its text changes, and without a layout pass (its size is fixed by the stylesheet).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from sckpt.backend.model import ClusterFreshness, ClusterInfo
from textual.widgets import Static

from ..console_text import ago, clock_time, compact_duration, literal


class StatusHeader(Static):
    """One or two lines: identity on the left, freshness on the right."""

    def __init__(self, info: ClusterInfo, *, interval: float, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self.info = info
        self.interval = interval
        """The configured refresh interval (seconds): "updated every ..." while on time."""
        self._shown: Text | None = None
        """The text on screen, so a tick that changes nothing repaints nothing."""
        self.updated_at: float | None = None
        """Unix time of the data shown (the last successful refresh)."""
        self.stale_since: float | None = None
        """When the data was last fresh, while the controller is unreachable."""
        self.stale_error: str = ""
        self.no_data = False
        """Stale with nothing ever loaded: the console started during an outage."""
        self.note: str = ""
        """A short state note (``sort id↑  mine  filter: user:alice``), set by the console:
        never left out of the line (only its end is cut, when nothing else can go)."""
        self._now = 0.0
        """The time of the last tick (a resize fits the line again at that time)."""
        self.clusters: tuple[ClusterFreshness, ...] = ()
        """With ``-M``: each cluster's freshness; a stale one is named after the data's."""

    def show_fresh(self, taken_at: float, now: float) -> None:
        """The latest refresh succeeded at ``taken_at``."""
        self.updated_at = taken_at
        self.stale_since = None
        self.stale_error = ""
        self.no_data = False
        self.tick(now)

    def show_stale(self, since: float, error: str, now: float) -> None:
        """The latest refresh failed; the data shown dates from ``since``.

        ``since`` 0, or ``now`` itself on a header that never saw fresh data, means nothing
        was ever loaded (the app passes ``now`` when it has no last-fresh time): the header
        then says NO DATA YET.  A header mounted later during an outage gets the app's real
        last-fresh time, which is in the past, so it still says STALE since that time.
        """
        self.no_data = not since or (self.updated_at is None and since >= now)
        self.stale_since = since or self.updated_at or now
        self.stale_error = error
        self.tick(now)

    def tick(self, now: float) -> None:
        """Re-render when the text changed (the "N s ago" parts move with the clock)."""
        self._now = now
        text = self.line_text(now, self.size.width)
        if text != self._shown:
            self._shown = text
            self.update(text, layout=False)

    def overdue(self, age: float) -> bool:
        """Data this old means a refresh is late: one interval plus half of one (at least
        a second, for the refresh's own time and the once-a-second tick)."""
        return age > self.interval + max(1.0, self.interval / 2)

    def line_text(self, now: float, width: int | None = None) -> Text:
        """The header's text at time ``now``, fitted to ``width`` cells when given.

        The line holds, left to right: the cluster, READ-ONLY, the freshness, the stale
        reason, the engine, the acting user, Slurm's version, and (on the right) the
        console's note -- the sort, the toggles and the filter.  When it is too long the
        least needed parts go first (``_Part.rank``: the version, then the engine, then
        the user); the cluster, READ-ONLY, the freshness, the outage's reason and the note
        are never left out, so the line cannot end in "…" where the sort and filter state
        should be.  Only then are the long ones cut (``_Part.keep``): the reason's end
        first, down to its first words, then the cluster's name, then the note's end (the
        filter's text).
        """
        parts = self._parts(now)
        if width is None or width <= 0:
            return _joined(parts, 0)
        while _length(parts) > width:
            droppable = [p for p in parts if p.rank]
            if not droppable:
                break
            parts.remove(max(droppable, key=lambda p: p.rank))
        for part in sorted((p for p in parts if p.keep), key=lambda p: p.cut_order):
            over = _length(parts) - width
            if over > 0 and part.text.cell_len > part.keep:
                part.text.truncate(max(part.keep, part.text.cell_len - over), overflow="ellipsis")
        return _joined(parts, width)

    def _parts(self, now: float) -> list[_Part]:
        """The line's parts in their order, each with its rank (0: never left out)."""
        info = self.info
        parts: list[_Part] = []
        title = Text("sckpt ", style="bold")
        title.append_text(literal(info.cluster_name, style="bold"))
        parts.append(_Part(title, keep=len("sckpt ") + KEPT, cut_order=2))
        if info.read_only:
            parts.append(_Part(Text(" READ-ONLY ", style="bold reverse yellow")))
        # Freshness comes early: it is never left out, and the reason of an outage next.
        reason = literal(self.stale_error, style="red") if self.stale_error else None
        if self.stale_since is not None and self.no_data:
            parts.append(_Part(Text(" NO DATA YET ", style="bold reverse red")))
        elif self.stale_since is not None:
            parts.append(
                _Part(
                    Text(
                        f" STALE since {clock_time(self.stale_since)} "
                        f"({ago(now - self.stale_since)}) ",
                        style="bold reverse red",
                    )
                )
            )
        elif self.updated_at is None:
            parts.append(_Part(Text("loading…", style="dim")))
        elif self.overdue(now - self.updated_at):
            parts.append(_Part(Text(f"updated {ago(now - self.updated_at)}", style="yellow")))
        else:
            parts.append(_Part(Text(f"updated every {_interval_text(self.interval)}")))
        down = [c for c in self.clusters if c.stale] if self.stale_since is None else []
        for cluster in down:  # -M: only this cluster's rows are old; the others are fresh
            stale = literal(f" {cluster.name} STALE", style="bold reverse red")
            since = f" since {clock_time(cluster.last_fresh)} " if cluster.last_fresh else " "
            stale.append(since, style="bold reverse red")
            parts.append(_Part(stale))
        if self.stale_since is not None and reason is not None:
            parts.append(_Part(reason, keep=KEPT, cut_order=1))
        if down and down[0].error:
            down_reason = literal(f"{down[0].name}: {down[0].error}", style="red")
            parts.append(_Part(down_reason, keep=KEPT, cut_order=1))
        parts.append(_Part(Text(info.engine, style="italic"), rank=3))
        user = Text("user ")
        user.append_text(literal(info.acting_user))
        parts.append(_Part(user, rank=2))
        parts.append(_Part(Text(f"Slurm {info.slurm_version}", style="dim"), rank=4))
        if self.note:
            sort = Text(self.note.split(SEPARATOR)[0]).cell_len + 1  # the sort, and "…"
            parts.append(_Part(literal(self.note, style="dim"), keep=sort, cut_order=3, note=True))
        return parts

    def on_resize(self) -> None:
        """Fit the line to the new width at once (not at the next tick)."""
        self._shown = None
        self.tick(self._now)


SEPARATOR = "  "
KEPT = 12
"""The first cells of an outage's reason and of the cluster's name, kept however short
the line (the freshness and the sort are never cut)."""


@dataclass(slots=True)
class _Part:
    """A piece of the header line."""

    text: Text
    rank: int = 0
    """0: always shown; otherwise the highest rank is left out first on a short line."""
    keep: int = 0
    """A part never left out may be cut down to this many cells (0: never cut)."""
    cut_order: int = 0
    """Which cuttable part is cut first: the reason, then the cluster, then the note."""
    note: bool = False
    """The console's note: shown at the right end of the line."""


def _length(parts: list[_Part]) -> int:
    return sum(p.text.cell_len for p in parts) + len(SEPARATOR) * max(0, len(parts) - 1)


def _joined(parts: list[_Part], width: int) -> Text:
    """The parts with two spaces between them, the note pushed to the right end."""
    text = Text(no_wrap=True, end="")
    for index, part in enumerate(parts):
        if index:
            gap = len(SEPARATOR)
            if part.note:
                gap = max(gap, width - _length(parts) + gap)
            text.append(" " * gap)
        text.append_text(part.text)
    return text


def _interval_text(seconds: float) -> str:
    """``2 s``, ``0.2 s``, ``5m``, ``1h00m``: the refresh interval as the header says it."""
    if seconds < 60:
        return f"{seconds:g} s"
    return compact_duration(seconds)
