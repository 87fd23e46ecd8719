"""The console's theme: the config's at start, and every theme the operator picks saved.

The operator picks a theme in the palette (ctrl+p, theme); it is written into the config
file (``theme = "..."``, the file's other lines untouched) so the next console starts
with it.  Writing happens in a thread worker: a home on NFS may be slow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sckpt.backend.config import Settings
from sckpt.backend.config_edit import config_path_to_write, set_top_level_string
from sckpt.backend.errors import SckptError
from textual.app import App
from textual.theme import Theme


class ThemeKeeper:
    """Applies the config's theme to ``app`` and saves the ones chosen later.

    ``settings`` reads the app's current settings and ``saved`` hands it new ones once a
    theme is written (their ``theme`` and ``source``), so the next pick compares with it.
    """

    def __init__(
        self,
        app: App[Any],
        settings: Callable[[], Settings],
        saved: Callable[[Settings], None],
    ) -> None:
        self.app = app
        self.settings = settings
        self.saved = saved

    def start(self) -> None:
        """Start with the config's theme, then save every theme the operator picks.

        Subscribed after the config's theme is applied, so starting writes nothing.
        """
        app = self.app
        wanted = self.settings().theme
        if wanted:
            if wanted in app.available_themes:
                app.theme = wanted
            else:
                app.notify(
                    f"theme {wanted!r} from the config is not known: using the default "
                    f"({', '.join(sorted(app.available_themes)[:6])}, ...; ctrl+p, theme)",
                    severity="warning",
                    markup=False,
                )
        app.theme_changed_signal.subscribe(app, self._chosen)

    def _chosen(self, theme: Theme) -> None:
        if theme.name != self.settings().theme:
            self.app.run_worker(
                lambda: self._save(theme.name),
                name="save_theme",
                thread=True,
                exit_on_error=False,
                group="theme",
            )

    def _save(self, name: str) -> None:
        """Write the chosen theme into the config file (in a worker thread), and say
        where, or why not."""
        app = self.app
        try:
            path = config_path_to_write(self.settings().source)
            set_top_level_string(path, "theme", name)
        except SckptError as exc:
            app.call_from_thread(
                app.notify,
                f"theme {name} is used now but not saved: {exc}",
                severity="warning",
                markup=False,
            )
            return
        self.saved(replace(self.settings(), theme=name, source=path))
        app.call_from_thread(app.notify, f"theme {name} saved in {path}", markup=False)
