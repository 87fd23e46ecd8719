"""The console's top line: which cluster, which engine, who acts, and how fresh the data is.

The freshness part never lies: it says "updated N s ago" from the last successful refresh,
and when the controller cannot be reached it turns into a red STALE marker with the time
the data was last fresh and the reason.
"""

from __future__ import annotations

from rich.text import Text
from sckpt.backend.model import ClusterInfo
from textual.widgets import Static

from ..console_text import ago, clock_time, literal


class StatusHeader(Static):
    """One or two lines: identity on the left, freshness on the right."""

    def __init__(self, info: ClusterInfo, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self.info = info
        self.updated_at: float | None = None
        """Unix time of the data shown (the last successful refresh)."""
        self.stale_since: float | None = None
        """When the data was last fresh, while the controller is unreachable."""
        self.stale_error: str = ""
        self.note: str = ""
        """A short state note (``filter: user:alice``, ``mine``), set by the console."""

    def show_fresh(self, taken_at: float, now: float) -> None:
        """The latest refresh succeeded at ``taken_at``."""
        self.updated_at = taken_at
        self.stale_since = None
        self.stale_error = ""
        self.tick(now)

    def show_stale(self, since: float, error: str, now: float) -> None:
        """The latest refresh failed; the data shown dates from ``since``."""
        self.stale_since = since or self.updated_at or now
        self.stale_error = error
        self.tick(now)

    def tick(self, now: float) -> None:
        """Re-render (the "N s ago" part moves with the clock)."""
        self.update(self.line_text(now))

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
        if self.stale_since is not None:
            text.append(
                f" STALE since {clock_time(self.stale_since)} ({ago(now - self.stale_since)}) ",
                style="bold reverse red",
            )
        elif self.updated_at is None:
            text.append("loading…", style="dim")
        else:
            text.append(f"updated {ago(now - self.updated_at)}")
        text.append("  ")
        text.append(info.engine, style="italic")
        text.append("  user ")
        text.append_text(literal(info.acting_user))
        text.append(f"  Slurm {info.slurm_version}", style="dim")
        if self.stale_since is not None and self.stale_error:
            text.append("  ")
            text.append_text(literal(self.stale_error, style="red"))
        if self.note:
            text.append("  ")
            text.append_text(literal(self.note, style="dim"))
        return text
