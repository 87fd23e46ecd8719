"""sckpt's settings: one TOML file, validated by a typed model, with defaults for everything.

Where the file is: ``$SCKPT_CONFIG`` when set, else the platform's user config directory
(``~/.config/sckpt/config.toml`` on Linux, via platformdirs).  A missing default file is not
an error (every key has a default); a missing file that was named explicitly (argument or
``$SCKPT_CONFIG``) is, because the user clearly meant one.

The file, with every key and its default::

    refresh_interval = 2.0        # seconds between console refreshes, 0.2 .. 3600
    engine = "auto"               # auto | native | cooperative | live | simulated
    read_only = false             # start in read-only mode
    max_wait = 10                 # default MaxWait for create/vacate/tasks, 0 .. 65535
    image_dir = ""                # default ImageDir (absolute), "" = the step's own dir
    keep_images = 2               # complete image generations sckpt run keeps per task
    audit_log = ""                # audit log path, "" = <user state dir>/sckpt/audit.log
    audit_required = true         # refuse an action when its audit line cannot be written
    theme = ""                    # the console's theme, "" = Textual's default; the
                                  # palette's theme command writes it here
    dmtcp_dir = ""                # DMTCP's install prefix for sckpt run --transparent,
                                  # "" = $SCKPT_DMTCP_DIR, else scripts/dmtcp's build

    [keys]                        # console key overrides: action name -> key
    create = "c"                  # names and defaults: keymap.py; unknown or taken: error

    [columns]                     # the console's columns, in order (columns.py's names)
    jobs = ["id", "user", "name", "partition", "state", "elapsed", "nodes", "steps",
            "checkpoint"]         # unknown, repeated or no "id": error; ``l`` cycles
    steps = ["id", "name", "state", "tasks", "nodes", "checkpoint", "error"]

    [demo]                        # the simulated cluster (``sckpt --demo``)
    seed = 42
    jobs = 48

    [auto]                        # site-wide defaults of ``sckpt run``'s automatic
    every = ""                    # checkpoints ("" = none; "30m", "auto"); a user's
    before_end = ""               # --every/--before-end/--max-restarts or $SCKPT_EVERY,
    max_restarts = 10             # $SCKPT_BEFORE_END, $SCKPT_MAX_RESTARTS win
    mtbf = "24h"                  # mean time between failures, for every = "auto"

Any mistake raises ``ConfigError`` naming the file, the key and the form expected; the
command line turns it into exit status 2.  The file's shape (types, bounds, the rules each
key borrows from its owner) is ``config_file.ConfigFile``; ``Settings`` is what the code
reads.  README's "Configuration" table documents every key;
``tests/backend/test_config_readme.py`` holds it equal to the model's keys and checks each
documented default loads as the default.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import platformdirs

from .arguments import DEFAULT_KEEP, DEFAULT_MAX_RESTARTS, DEFAULT_MTBF
from .errors import ConfigError

APP_NAME = "sckpt"
ENV_CONFIG = "SCKPT_CONFIG"
"""The config file to read instead of the XDG one."""
ENV_STATE_DIR = "SCKPT_STATE_DIR"
"""Where ``sckpt run`` keeps a job's state when the config's ``state_dir`` is not set."""
ENV_CACHE_DIR = "SCKPT_CACHE_DIR"
"""Where built libslurm shims are cached (else the XDG cache)."""
ENV_DMTCP_DIR = "SCKPT_DMTCP_DIR"
"""DMTCP's install prefix when the config's ``dmtcp_dir`` is not set."""
ENV_DMTCP_CACHE = "SCKPT_DMTCP_CACHE"
"""Where ``scripts/dmtcp build`` put its builds (else ``/var/cache/sckpt``)."""
ENV_MANA_CACHE = "SCKPT_MANA_CACHE"
"""Where ``scripts/mana build`` put its builds (else ``/var/cache/sckpt``)."""
ENV_SIGNAL = "SCKPT_CKPT_SIGNAL"
"""``sckpt run``'s default checkpoint signal."""
ENV_WORK_DIR = "SCKPT_WORK_DIR"
"""The job's working directory, for ``sckpt run`` when Slurm's environment lacks it."""
ENV_EVERY = "SCKPT_EVERY"
ENV_BEFORE_END = "SCKPT_BEFORE_END"
ENV_MAX_RESTARTS = "SCKPT_MAX_RESTARTS"
"""``sckpt run``'s ``--every``, ``--before-end`` and ``--max-restarts`` when not given: a
batch script sets them once for every step it runs."""
ENV_DMTCP_CEILING = "SCKPT_DMTCP_CEILING"
"""Seconds a transparent checkpoint may take when its request gives no MaxWait
(``checkpointing/stuck.py``)."""
ENV_PEERS_UNCHECKED = "SCKPT_PEERS_UNCHECKED"
"""Tests only: ``1`` skips ``checkpointing/peers.py``'s look before a transparent checkpoint."""
ENGINES = ("auto", "native", "cooperative", "live", "simulated")
"""Accepted values of ``engine``; ``live`` is the listing-only engine for modern Slurm."""


def default_config_path() -> Path:
    """``~/.config/sckpt/config.toml`` (or the platform's equivalent)."""
    return platformdirs.user_config_path(APP_NAME) / "config.toml"


def default_audit_log_path() -> Path:
    """``~/.local/state/sckpt/audit.log`` (or the platform's equivalent)."""
    return platformdirs.user_state_path(APP_NAME) / "audit.log"


def demo_audit_log_path(audit_log: Path) -> Path:
    """Where the demo's actions are audited: beside the real log, ``demo-`` before its name
    (``~/.local/state/sckpt/demo-audit.log``), so that a simulated cancel never reads, in
    the real log, as one done to a real job."""
    return audit_log.with_name(f"demo-{audit_log.name}")


@dataclass(frozen=True)
class Settings:
    """Everything configurable, already validated.  Build one directly in tests."""

    refresh_interval: float = 2.0
    """Seconds between two console refreshes."""
    engine: str = "auto"
    """``auto`` picks native, cooperative or live from what the binding reports."""
    read_only: bool = False
    max_wait: int = 10
    """Default MaxWait for create, vacate and tasks (scontrol's default is 10 s)."""
    image_dir: str | None = None
    """Default ImageDir; None lets Slurm use the step's checkpoint dir (its work dir)."""
    keep_images: int = DEFAULT_KEEP
    """Complete image generations ``sckpt run`` keeps per task
    (``backend/checkpointing/generations.py``)."""
    audit_log: Path = field(default_factory=default_audit_log_path)
    audit_required: bool = True
    """Refuse a mutating action when its audit line cannot be written (checked before acting)."""
    keys: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Console key overrides: action name (``create``, ``vacate`` ...) to a key (``ctrl+k``)."""
    demo_seed: int = 42
    demo_jobs: int = 48
    theme: str = ""
    """The console's theme ("" = Textual's default); the console checks the name, since
    only Textual knows its themes."""
    dmtcp_dir: str | None = None
    """DMTCP's install prefix (``sckpt run --transparent``); None: ``$SCKPT_DMTCP_DIR``, else
    the project's build (``backend/checkpointing/dmtcp.py``)."""
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    """``[columns]``: ``jobs`` and/or ``steps`` to the column names shown, in order
    (``columns.py``); a table not given keeps the console's default."""
    auto_every: int = 0
    """``[auto] every``: seconds, ``arguments.EVERY_AUTO`` for ``auto``, 0 for none."""
    auto_before_end: int = 0
    auto_max_restarts: int = DEFAULT_MAX_RESTARTS
    auto_mtbf: int = DEFAULT_MTBF
    source: Path | None = None
    """The file these settings came from (None: built-in defaults)."""


@dataclass(frozen=True)
class Environment:
    """The ``SCKPT_*`` variables sckpt reads, each None when unset or empty.

    They are read here and nowhere else, so that one place says which exist and what each
    means; the variables the wrapper *sets* for a program (``$SCKPT_IMAGE_DIR`` ...) are the
    checkpoint protocol's (``checkpointing/protocol.py``).  Read when asked, not at import:
    a test or a job may set them after sckpt was imported.
    """

    config: str | None
    state_dir: str | None
    cache_dir: str | None
    dmtcp_dir: str | None
    dmtcp_cache: str | None
    checkpoint_signal: str | None
    work_dir: str | None
    every: str | None = None
    before_end: str | None = None
    max_restarts: str | None = None
    mana_cache: str | None = None


def environment(environ: Mapping[str, str] | None = None) -> Environment:
    """The ``SCKPT_*`` variables of ``environ`` (this process's environment by default)."""
    env = os.environ if environ is None else environ

    def get(name: str) -> str | None:
        return env.get(name) or None

    return Environment(
        config=get(ENV_CONFIG),
        state_dir=get(ENV_STATE_DIR),
        cache_dir=get(ENV_CACHE_DIR),
        dmtcp_dir=get(ENV_DMTCP_DIR),
        dmtcp_cache=get(ENV_DMTCP_CACHE),
        checkpoint_signal=get(ENV_SIGNAL),
        work_dir=get(ENV_WORK_DIR),
        every=get(ENV_EVERY),
        before_end=get(ENV_BEFORE_END),
        max_restarts=get(ENV_MAX_RESTARTS),
        mana_cache=get(ENV_MANA_CACHE),
    )


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """Read and validate the config file; defaults when the default file does not exist.

    ``path`` wins over ``$SCKPT_CONFIG``, which wins over the XDG path.
    """
    named = environment().config
    explicit = path is not None or named is not None
    if path is not None:
        chosen = Path(path)
    elif named is not None:
        chosen = Path(named)
    else:
        chosen = default_config_path()
    if "\0" in str(chosen):  # the OS cannot take it: Python raises ValueError, not OSError
        raise ConfigError(f"config file {str(chosen)!r}: a path cannot contain a NUL byte")
    try:
        raw = chosen.read_bytes()
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file {chosen} does not exist") from None
        return Settings()
    except OSError as exc:
        raise ConfigError(f"config file {chosen} cannot be read: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{chosen}: not UTF-8 text: expected a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{chosen}: not valid TOML: {exc}") from None
    return settings_from_mapping(data, source=chosen)


def settings_from_mapping(data: Mapping[str, Any], source: Path | None = None) -> Settings:
    """Validate a parsed TOML table into ``Settings`` (``ConfigError`` names the bad key).

    The file's shape is ``config_file.ConfigFile``, a typed model, imported here rather
    than at the top: a command run without a config file never builds it."""
    from .config_file import read_table

    return replace(Settings(source=source), **read_table(data, source, ENGINES).given())
