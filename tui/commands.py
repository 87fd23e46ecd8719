"""The command palette's provider: every console action, searchable by name.

Built from the same key table as the footer and the help (``keys.py``); in read-only mode
the mutating actions are left out.  Each hit runs the action on the screen the palette was
opened from, exactly as its key would.
"""

from __future__ import annotations

from functools import partial
from typing import cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .context import ScreenContext
from .keys import ACTION_KEYS, CONSOLE_KEYS, STEP_KEYS, KeySpec


class ActionsProvider(Provider):
    """Create, vacate, restart, enable, disable, check, filter, sort, toggles."""

    def _specs(self) -> list[KeySpec]:
        app = cast(ScreenContext, self.app)
        screen_id = self.screen.id
        specs: list[KeySpec] = list(ACTION_KEYS)
        if screen_id == "console":
            specs += [s for s in CONSOLE_KEYS if s.bound]
        elif screen_id == "step-screen":
            specs += list(STEP_KEYS)
        else:
            return []
        return [s for s in specs if not (app.read_only and s.mutating)]

    async def discover(self) -> Hits:
        for spec in self._specs():
            yield DiscoveryHit(
                spec.description, partial(self.screen.run_action, spec.runs), help=spec.help
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for spec in self._specs():
            # The name decides; the help text only finds what the name does not
            # (so "disable" ranks Disable above Enable, whose help mentions disabling).
            score = matcher.match(spec.description) or matcher.match(spec.help) * 0.5
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(spec.description),
                    partial(self.screen.run_action, spec.runs),
                    help=spec.help,
                )
