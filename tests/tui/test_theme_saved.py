"""A theme picked in the palette is written to the config file, and the next start uses it.

Through the keyboard as an operator does it (ctrl+p, "theme", the theme's name): the
config file then holds ``theme = "nord"`` with its other lines untouched, and a console
started from that file has the theme.  When the file cannot be written (no usable home),
the console says so and goes on with the theme.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend.config import load_settings
from sckpt.backend.facade import open_facade
from sckpt.tui.app import build_app

from .conftest import Console, notifications, run_test, settle
from .console_keys import type_text as type_text_into


async def _pick_theme(pilot: Any, name: str) -> None:
    await pilot.press("ctrl+p")
    await settle(pilot)
    await type_text_into(pilot, "theme")
    await pilot.press("enter")
    await settle(pilot)
    await type_text_into(pilot, name)
    await pilot.press("enter")
    await settle(pilot)


async def test_a_theme_picked_in_the_palette_is_kept_for_the_next_start(
    console: Callable[..., Console], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "mine.toml"
    original = '# my settings\nrefresh_interval = 3600  # slow\n\n[keys]\ncreate = "k"\n'
    config.write_text(original)
    config.chmod(0o640)
    monkeypatch.setenv("SCKPT_CONFIG", str(config))
    c = console()
    async with run_test(c.app, size=(80, 24)) as pilot:
        await settle(pilot)
        assert c.app.theme != "nord"
        await _pick_theme(pilot, "nord")
        assert c.app.theme == "nord"
        assert any("theme nord saved in" in n for n in notifications(c.app))
    text = config.read_text()
    assert text == original.replace("\n[keys]", '\ntheme = "nord"\n[keys]')
    assert config.stat().st_mode & 0o777 == 0o640
    settings = load_settings()
    assert settings.theme == "nord" and settings.keys == {"create": "k"}
    app = build_app(open_facade(settings, as_user="alice", demo=True), settings)
    async with run_test(app, size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.theme == "nord"


async def test_no_home_no_crash_but_a_message(
    console: Callable[..., Console], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_dir = tmp_path / "home-is-a-file"
    not_a_dir.write_text("")
    monkeypatch.delenv("SCKPT_CONFIG")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(not_a_dir))
    c = console()
    async with run_test(c.app, size=(80, 24)) as pilot:
        await settle(pilot)
        await _pick_theme(pilot, "nord")
        assert c.app.theme == "nord"
        said = " ".join(notifications(c.app))
        assert "theme nord is used now but not saved: cannot read" in said
        assert "Not a directory" in said
        assert str(not_a_dir) in said


async def test_an_unknown_theme_in_the_config_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "c.toml"
    config.write_text('theme = "no-such-theme"\n')
    monkeypatch.setenv("SCKPT_CONFIG", str(config))
    settings = load_settings()
    app = build_app(open_facade(settings, as_user="alice", demo=True), settings)
    async with run_test(app, size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.theme == "textual-dark"
        assert any("'no-such-theme' from the config is not known" in n for n in notifications(app))
    assert config.read_text() == 'theme = "no-such-theme"\n'
