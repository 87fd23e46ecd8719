"""README's configuration table and ``backend/config.py`` cannot drift apart.

Issue 13: "README documents every config key in one table".  The table is parsed here: its
keys must be exactly those config.py accepts, each documented default must load, and load
as the built-in default (so the table cannot promise a default the code does not have).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend import config, config_file
from sckpt.backend.errors import ConfigError

README = Path(__file__).resolve().parents[2] / "README.md"


def _table() -> dict[str, str]:
    """``key -> default cell`` of the table under README's "## Configuration"."""
    text = README.read_text()
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"`[a-z_.<>]+`", cells[0]):
            rows[cells[0].strip("`")] = cells[2]
    return rows


def _mapping(key: str, value: Any) -> dict[str, Any]:
    """``demo.seed`` = 42 as the parsed TOML ``{"demo": {"seed": 42}}``."""
    table, _, name = key.partition(".")
    return {table: {name: value}} if name else {key: value}


def test_the_table_lists_exactly_the_keys_config_accepts() -> None:
    tables = config_file.TABLES
    expected = {
        *config_file.SCALAR_KEYS,
        f"{config_file.KEYS_TABLE}.<action>",
        "columns.<table>",
        *(f"{name}.{key}" for name in ("demo", "auto") for key in tables[name].model_fields),
    }
    assert set(_table()) == expected


@pytest.mark.parametrize("key", [k for k in _table() if "<" not in k])
def test_each_documented_default_loads_as_the_default(key: str) -> None:
    cell = _table()[key]
    assert re.fullmatch(r"`[^`]+`", cell), f"{key}: the default should be one TOML value"
    value = tomllib.loads(f"v = {cell.strip('`')}")["v"]
    assert config.settings_from_mapping(_mapping(key, value)) == config.Settings()


def test_a_key_not_in_the_table_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown key 'refresh'"):
        config.settings_from_mapping({"refresh": 2.0})
    with pytest.raises(ConfigError, match=re.escape("unknown key 'demo.size'")):
        config.settings_from_mapping({"demo": {"size": 3}})
    with pytest.raises(ConfigError, match=re.escape("unknown key 'auto.interval'")):
        config.settings_from_mapping({"auto": {"interval": "30m"}})
