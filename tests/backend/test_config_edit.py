"""backend/config_edit.py: one top-level key written into the user's TOML, nothing else."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from sckpt.backend.config_edit import set_top_level_string
from sckpt.backend.errors import ConfigError


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("", 'theme = "nord"\n'),
        ("refresh_interval = 5", 'refresh_interval = 5\ntheme = "nord"\n'),
        ('theme = "old"  # mine\nread_only = true\n', 'theme = "nord"\nread_only = true\n'),
        ('# top\n[keys]\ncreate = "k"\n', '# top\ntheme = "nord"\n[keys]\ncreate = "k"\n'),
    ],
)
def test_the_key_is_set_and_every_other_line_kept(tmp_path: Path, before: str, after: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(before)
    set_top_level_string(path, "theme", "nord")
    assert path.read_text() == after


def test_a_missing_file_and_its_directory_are_created(tmp_path: Path) -> None:
    path = tmp_path / "new" / "sckpt" / "config.toml"
    set_top_level_string(path, "theme", 'odd "name"')
    assert tomllib.loads(path.read_text()) == {"theme": 'odd "name"'}
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]  # no temporary left


def test_a_file_it_cannot_edit_safely_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    tricky = 'comment = """\ntheme = "inside a string"\n"""\n'
    path.write_text(tricky)
    with pytest.raises(ConfigError, match="cannot set theme safely"):
        set_top_level_string(path, "theme", "nord")
    assert path.read_text() == tricky
    path.write_text("not toml [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        set_top_level_string(path, "theme", "nord")
    assert path.read_text() == "not toml ["


def test_an_unwritable_place_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="Not a directory"):
        set_top_level_string(blocker / "config.toml", "theme", "nord")
