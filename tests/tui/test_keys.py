"""The console's key table and the backend's (which checks ``[keys]``) name the same actions."""

from __future__ import annotations

from sckpt.backend import keymap
from sckpt.tui.keys import ACTION_KEYS, CONSOLE_KEYS, GLOBAL_KEYS, STEP_KEYS


def test_every_console_key_is_the_backends_default_for_that_action() -> None:
    # A key the console binds but the config check does not know would be refused in
    # [keys] (or a collision with it missed): the two tables must list the same actions.
    for specs, defaults in (
        (ACTION_KEYS, keymap.ACTION_DEFAULTS),
        (CONSOLE_KEYS, keymap.CONSOLE_DEFAULTS),
        (STEP_KEYS, keymap.STEP_DEFAULTS),
        (GLOBAL_KEYS, keymap.GLOBAL_DEFAULTS),
    ):
        assert {spec.id: spec.key for spec in specs} == dict(defaults)


def test_the_default_keys_collide_nowhere() -> None:
    assert keymap.key_problem({}) is None
