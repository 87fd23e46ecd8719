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
        """A short state note (``filter: user:alice``, ``mine``), set by the console."""
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
        text = self.line_text(now)
        if text != self._shown:
            self._shown = text
            self.update(text, layout=False)

    def overdue(self, age: float) -> bool:
        """Data this old means a refresh is late: one interval plus half of one (at least
        a second, for the refresh's own time and the once-a-second tick)."""
        return age > self.interval + max(1.0, self.interval / 2)

    def line_text(self, now: float) -> Text:
        """The header's text at time ``now``."""
        info = self.info
        text = Text()
        text.append("sckpt ", style="bold")
        text.append_text(literal(info.cluster_name, style="bold"))
        text.append("  ")
        if info.read_only:
            text.append(" READ-ONLY ", style="bold reverse yellow")
            text.append("  ")
        # Freshness comes early: on a narrow terminal the end of the line is cut off.
        if self.stale_since is not None and self.no_data:
            text.append(" NO DATA YET ", style="bold reverse red")
            if self.stale_error:  # the reason first: nothing else on the line is known yet
                text.append("  ")
                text.append_text(literal(self.stale_error, style="red"))
        elif self.stale_since is not None:
            text.append(
                f" STALE since {clock_time(self.stale_since)} ({ago(now - self.stale_since)}) ",
                style="bold reverse red",
            )
        elif self.updated_at is None:
            text.append("loading…", style="dim")
        elif self.overdue(now - self.updated_at):
            text.append(f"updated {ago(now - self.updated_at)}", style="yellow")
        else:
            text.append(f"updated every {_interval_text(self.interval)}")
        down = [c for c in self.clusters if c.stale] if self.stale_since is None else []
        for cluster in down:  # -M: only this cluster's rows are old; the others are fresh
            text.append("  ")
            text.append_text(literal(f" {cluster.name} STALE", style="bold reverse red"))
            since = f" since {clock_time(cluster.last_fresh)} " if cluster.last_fresh else " "
            text.append(since, style="bold reverse red")
        text.append("  ")
        text.append(info.engine, style="italic")
        text.append("  user ")
        text.append_text(literal(info.acting_user))
        text.append(f"  Slurm {info.slurm_version}", style="dim")
        if self.stale_since is not None and self.stale_error and not self.no_data:
            text.append("  ")
            text.append_text(literal(self.stale_error, style="red"))
        if down and down[0].error:
            text.append("  ")
            text.append_text(literal(f"{down[0].name}: {down[0].error}", style="red"))
        if self.note:
            text.append("  ")
            text.append_text(literal(self.note, style="dim"))
        return text


def _interval_text(seconds: float) -> str:
    """``2 s``, ``0.2 s``, ``5m``, ``1h00m``: the refresh interval as the header says it."""
    if seconds < 60:
        return f"{seconds:g} s"
    return compact_duration(seconds)
