"""Where libslurm will read slurm.conf from, found before libslurm is asked.

Why before: ``slurm_init`` calls ``exit()`` when it finds no configuration, or one it cannot
parse, and that would end sckpt without a word.  So the configuration is located here in
Python, with libslurm's own order, and a readable file is then handed to ``slurm_init`` in a
child process first (:func:`probe_init`): if libslurm would exit, only the child dies.
"""

from __future__ import annotations

import os
import pwd
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import NoConfig

DEFAULT_CONF = Path("/etc/slurm/slurm.conf")
"""Debian's (and Slurm's default ``--sysconfdir``) slurm.conf."""
CONFIGLESS_CACHE = Path("/run/slurm/conf/slurm.conf")
"""Where slurmd (configless mode, 21.08+) keeps the configuration it fetched."""


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """Where libslurm will read its configuration from (shown by ``sckpt doctor``)."""

    kind: str
    """``SLURM_CONF``, ``default``, ``configless-cache`` or ``SLURM_CONF_SERVER``."""
    path: str
    """The file, or the server for ``SLURM_CONF_SERVER``."""

    @property
    def file(self) -> str | None:
        """The file to hand to ``slurm_init``; None lets libslurm find it (cache, server)."""
        return self.path if self.kind in ("SLURM_CONF", "default") else None

    def __str__(self) -> str:
        return f"{self.path} ({self.kind})"


def find_config_source() -> ConfigSource:
    """Find libslurm's configuration *before* ``slurm_init`` (which exits when it finds none).

    Order as libslurm's: ``SLURM_CONF``, the default path, slurmd's configless cache, then an
    explicit ``SLURM_CONF_SERVER``.  DNS SRV discovery is not attempted: without one of these
    the answer is :class:`NoConfig`.
    """
    env = os.environ.get("SLURM_CONF")
    if env:
        if not Path(env).is_file():
            raise NoConfig(
                f"SLURM_CONF={env} does not name a readable file",
                hint="point SLURM_CONF at your cluster's slurm.conf",
            )
        _require_readable(Path(env), "SLURM_CONF")
        _require_includes(Path(env))
        return ConfigSource("SLURM_CONF", env)
    if DEFAULT_CONF.is_file():
        _require_readable(DEFAULT_CONF, "default")
        _require_includes(DEFAULT_CONF)
        return ConfigSource("default", str(DEFAULT_CONF))
    if CONFIGLESS_CACHE.is_file():
        return ConfigSource("configless-cache", str(CONFIGLESS_CACHE))
    server = os.environ.get("SLURM_CONF_SERVER")
    if server:
        return ConfigSource("SLURM_CONF_SERVER", server)
    raise NoConfig(
        f"no Slurm configuration: SLURM_CONF is unset and {DEFAULT_CONF} does not exist",
        hint="set SLURM_CONF=/path/to/slurm.conf, or use `sckpt --demo`",
    )


def _require_readable(path: Path, kind: str) -> None:
    """Say "permission denied" plainly, instead of libslurm's three lines ending in fatal()."""
    if not os.access(path, os.R_OK):
        user = user_name(os.geteuid())
        raise NoConfig(
            f"the Slurm configuration {path} ({kind}) is not readable by {user}",
            hint="slurm.conf must be readable by every user of the cluster (mode 0644)",
        )


_INCLUDE = re.compile(r"^\s*include\s+(\S+)\s*$", re.IGNORECASE | re.MULTILINE)


def _require_includes(conf: Path) -> None:
    """Refuse at once an ``Include`` of a file that does not exist.

    Why: libslurm's parser retries a missing file once a second for 60 s before it gives
    up (it waits for a shared filesystem), so every command would stall a minute and then
    fail.  Only plain paths are checked (relative ones from slurm.conf's directory, as
    Slurm resolves them); a path with a glob or ``%`` expansion is left to libslurm.
    """
    try:
        text = conf.read_text(errors="replace")
    except OSError:
        return
    for match in _INCLUDE.finditer(text):
        name = match.group(1)
        if any(c in name for c in "*?[%$"):
            continue
        target = Path(name) if name.startswith("/") else conf.parent / name
        if not target.exists():
            raise NoConfig(
                f"{conf} includes {target}, which does not exist",
                hint="fix slurm.conf's Include line or restore the file",
            )


def user_name(uid: int) -> str:
    """The login name of ``uid``, or ``uid N`` when the system has none."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _libslurm_log(text: str) -> str:
    """libslurm's log lines from the probe, on one line without the ``python:`` prefixes."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    prefix = re.compile(r"^[\w.-]+: (?=(error|fatal|debug\d?|info|verbose): )")
    return "; ".join(prefix.sub("", line) for line in lines)


def probe_init(lib_path: Path, source: ConfigSource) -> None:
    """Run ``slurm_init`` in a child process first: if libslurm would exit, only it dies.

    The child needs ctypes only: ``-S`` skips ``site`` (a venv's ``.pth`` hooks cost it
    40-70 ms of every console start on the bench machine)."""
    conf = source.file
    # Slurm before 20.11 has no slurm_init: its libslurm reads slurm.conf on the first call
    # through slurm_conf_init (exported, not in the headers), and exits there just the same.
    code = (
        "import ctypes,sys;"
        f"l=ctypes.CDLL({str(lib_path)!r},mode=ctypes.RTLD_GLOBAL);"
        "f=l.slurm_init if hasattr(l,'slurm_init') else l.slurm_conf_init;"
        "f.argtypes=[ctypes.c_char_p];"
        f"f({conf!r}.encode() if {conf!r} else None);"
        "sys.exit(0)"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired as exc:
        raise NoConfig(f"slurm_init with {source} did not finish", hint="check slurm.conf") from exc
    if proc.returncode != 0:
        tail = _libslurm_log(proc.stderr or proc.stdout)[-600:]
        if proc.returncode < 0:
            tail = f"{tail}; the probe process died of signal {-proc.returncode}".lstrip("; ")
        raise NoConfig(
            f"libslurm could not read its configuration from {source}: {tail}",
            hint="fix slurm.conf or SLURM_CONF",
        )
