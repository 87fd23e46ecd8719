"""Writing one top-level key back into the user's config file (the console's theme).

The config is the user's own TOML, with their comments and layout, which must survive.
The standard library only reads TOML; tomlkit could write it and keep the layout, but the
console writes exactly one top-level string key, which is simple to edit as text: its line
is replaced where it is (before the first table), or a line is added before the first
table.  No dependency is added for that one line.  The result is then parsed again and must hold
exactly the old data with only that key changed; otherwise (a multi-line string that looks
like the key, odd syntax) nothing is written and the caller is told why.  The new file is
written beside the old one and renamed over it, so a crash or a full disk never leaves a
half-written config, and the file's mode is kept.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from .config import default_config_path, environment
from .errors import ConfigError

_TABLE = re.compile(r"^\s*\[")


def config_path_to_write(source: Path | None) -> Path:
    """The file a setting is saved in: the one the settings came from, else
    ``$SCKPT_CONFIG``, else the default path (``~/.config/sckpt/config.toml``)."""
    if source is not None:
        return source
    named = environment().config
    if named:
        return Path(named)
    try:
        return default_config_path()
    except (KeyError, RuntimeError, OSError) as exc:  # no HOME and no passwd entry
        raise ConfigError(f"no config file to save in: no home directory ({exc})") from None


def set_top_level_string(path: Path, key: str, value: str) -> None:
    """Set ``key = "value"`` at the top level of the TOML file ``path`` (created if
    missing), keeping every other line; ``ConfigError`` says why when it cannot."""
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {_why(exc)}") from None
    try:
        before = tomllib.loads(old)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}): not changed") from None
    new = _edited(old, key, value)
    expected: dict[str, Any] = {**before, key: value}
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = None
    if after != expected:
        raise ConfigError(
            f"{path}: cannot set {key} safely in this file's layout: not changed "
            f"(add the line {key} = {json.dumps(value)} near the top by hand)"
        )
    _write_atomically(path, new)


def _edited(text: str, key: str, value: str) -> str:
    """``text`` with the top-level ``key`` line replaced, or added before the first table."""
    line = f"{key} = {json.dumps(value)}"  # a JSON string is a valid TOML basic string
    assignment = re.compile(rf"^\s*{re.escape(key)}\s*=")
    lines = text.splitlines(keepends=True)
    for index, existing in enumerate(lines):
        if _TABLE.match(existing):
            lines.insert(index, line + "\n")
            return "".join(lines)
        if assignment.match(existing):
            ending = "\n" if existing.endswith("\n") else ""
            lines[index] = line + ending
            return "".join(lines)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return "".join(lines) + line + "\n"


def _write_atomically(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {_why(exc)}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        Path(temporary).chmod(mode)
        Path(temporary).replace(path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise ConfigError(f"cannot write {path}: {_why(exc)}") from None


def _why(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
