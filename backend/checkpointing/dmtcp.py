"""Where DMTCP is on this machine, and which version: the transparent checkpointer's install.

DMTCP (checkpointing of unmodified programs from user space) is not carried by Debian nor by
any registry we use, so ``scripts/dmtcp build`` builds it once from the project's tarball into
``/var/cache/sckpt/dmtcp-<version>-<tarball hash>`` (``$SCKPT_DMTCP_CACHE`` moves the cache).
This module finds an install without the user setting anything, in this order:

1. ``dmtcp_dir`` in the config, else ``$SCKPT_DMTCP_DIR``: the prefix of another install (the
   user named it, so only it is looked at, and a wrong one is an error rather than a silent
   fallback to another version);
2. the project's cache: the newest complete build (one with ``.sckpt-built``, which the build
   script writes last, so a half-built tree is never taken);
3. ``dmtcp_launch`` on ``PATH`` (a site's module).

Standard library only: the wrapper (``sckpt run --transparent``) imports it on compute nodes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..config import ENV_DMTCP_DIR, environment
from ..errors import SetupError

DEFAULT_CACHE = "/var/cache/sckpt"
BUILT_MARKER = ".sckpt-built"
PROGRAMS = ("dmtcp_coordinator", "dmtcp_launch", "dmtcp_command", "dmtcp_restart")
"""The four programs sckpt runs; an install without one of them is not usable."""
BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dmtcp"
"""The build script of a source checkout; an installed copy (a wheel) has none."""


def how_to_get() -> str:
    """The hint of ``DmtcpMissing``: the build script only where this copy has one."""
    prefix = f"set {ENV_DMTCP_DIR} (or dmtcp_dir in the config) to a DMTCP 4.2 install prefix"
    if BUILD_SCRIPT.is_file():
        return (
            f"run {BUILD_SCRIPT} build (as root, once: builds the project's DMTCP 4.2.0 "
            f"tarball into {DEFAULT_CACHE}), or {prefix}"
        )
    return (
        f"install DMTCP 4.2 (github.com/dmtcp/dmtcp), then {prefix} or put its bin/ on PATH "
        "(the project's README, 'Checkpoint any program')"
    )


_VERSION = re.compile(r"\b(\d+\.\d+(?:\.\d+)?)\b")


class DmtcpMissing(SetupError):
    """No usable DMTCP install: the message says where sckpt looked, the hint how to get one."""


@dataclass(frozen=True, slots=True)
class DmtcpInstall:
    """One usable DMTCP install."""

    prefix: Path
    version: str
    """``4.2.0``; ``""`` when ``dmtcp_launch --version`` did not say."""
    source: str
    """How it was found: ``config``, ``$SCKPT_DMTCP_DIR``, ``cache`` or ``PATH``."""

    def program(self, name: str) -> str:
        return str(self.prefix / "bin" / name)

    @property
    def label(self) -> str:
        """``DMTCP 4.2.0``: what the checkpoint column and the step detail show."""
        return f"DMTCP {self.version}" if self.version else "DMTCP"


def checkpointer_label(install: DmtcpInstall) -> str:
    """``transparent (DMTCP 4.2.0)``: how the checkpoint column and the step detail name a
    step under ``sckpt run --transparent`` (the wrapper records it; the demo shows it)."""
    return f"transparent ({install.label})"


def _missing_programs(prefix: Path) -> list[str]:
    return [p for p in PROGRAMS if not os.access(prefix / "bin" / p, os.X_OK)]


def dmtcp_version(prefix: Path) -> str:
    """The version ``dmtcp_launch --version`` prints (``""`` when it cannot be run or read)."""
    try:
        out = subprocess.run(
            [str(prefix / "bin" / "dmtcp_launch"), "--version"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    match = _VERSION.search(out.stdout + out.stderr)
    return match.group(1) if match else ""


def cached_builds(cache: str | os.PathLike[str] | None = None) -> list[Path]:
    """The complete builds in the project's cache, newest first."""
    root = Path(cache or environment().dmtcp_cache or DEFAULT_CACHE)
    try:
        found = [
            p
            for p in root.glob("dmtcp-*-*")
            if p.is_dir() and (p / BUILT_MARKER).is_file() and not _missing_programs(p)
        ]
    except OSError:
        return []
    return sorted(found, key=lambda p: (p / BUILT_MARKER).stat().st_mtime, reverse=True)


def find_dmtcp(configured: str | None = None) -> DmtcpInstall:
    """The DMTCP to use (see the module's docstring), or ``DmtcpMissing`` saying how to get one.

    ``configured`` is the config's ``dmtcp_dir`` (None or ``""``: not set).
    """
    named, source = (
        (configured, "config") if configured else (environment().dmtcp_dir, ENV_DMTCP_DIR)
    )
    if named:
        prefix = Path(named)
        missing = _missing_programs(prefix)
        if missing:
            where = "dmtcp_dir in the config" if source == "config" else f"${ENV_DMTCP_DIR}"
            raise DmtcpMissing(
                f"DMTCP not usable at {prefix} ({where}): no executable bin/{missing[0]}",
                how_to_get(),
            )
        return DmtcpInstall(
            prefix, dmtcp_version(prefix), source if source == "config" else f"${ENV_DMTCP_DIR}"
        )
    for prefix in cached_builds():
        return DmtcpInstall(prefix, dmtcp_version(prefix), "cache")
    launch = shutil.which("dmtcp_launch")
    if launch:
        prefix = Path(launch).resolve().parent.parent
        if not _missing_programs(prefix):
            return DmtcpInstall(prefix, dmtcp_version(prefix), "PATH")
    cache = environment().dmtcp_cache or DEFAULT_CACHE
    raise DmtcpMissing(
        f"DMTCP not found (no {ENV_DMTCP_DIR}, no build in {cache}, no dmtcp_launch on PATH)",
        how_to_get(),
    )
