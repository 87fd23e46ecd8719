"""Which MPI launchers and which MANA this machine has: ``sckpt doctor``'s MPI lines.

``sckpt run --transparent`` checkpoints an MPI run started by ``mpiexec``/``mpirun`` inside
one task (``mpi.py`` says which and how); doctor names the launchers it would meet (the
``mpiexec`` on PATH and each implementation's own), with their versions, so a user can
tell which MPI a job will get.  MANA (``scripts/mana build``) is listed when built: it
checkpointed MPICH runs by hand here, but ``sckpt run`` does not use it (README, "MPI").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..config import environment
from .dmtcp import BUILT_MARKER, DEFAULT_CACHE
from .mpi import KNOWN

LAUNCHER_NAMES = ("mpiexec", "mpiexec.mpich", "mpirun.openmpi", "prterun")
"""The launchers doctor looks for on PATH: the default one and each implementation's own."""
MANA_PROGRAMS = ("mana_coordinator", "mana_launch", "mana_restart", "mana_status")
_VERSIONS = (
    (re.compile(r"\(Open MPI\)\s*(\S+)|\(OpenRTE\)\s*(\S+)"), "Open MPI"),
    (re.compile(r"\(PRRTE\)\s*(\S+)"), "PRRTE"),
    (re.compile(r"HYDRA build details:\s*\n\s*Version:\s*(\S+)"), "MPICH"),
)


@dataclass(frozen=True, slots=True)
class Launcher:
    """One MPI launcher on PATH."""

    name: str
    """As found on PATH: ``mpiexec``, ``mpiexec.mpich`` ..."""
    real: str
    """Its links resolved: ``/usr/bin/mpiexec.hydra``, ``/usr/bin/orterun`` ..."""
    implementation: str
    """``MPICH 4.0.2``, ``Open MPI 4.1.4`` or ``unknown`` (``--version`` said nothing known)."""

    @property
    def checkpointed(self) -> bool:
        """Whether ``sckpt run --transparent`` checkpoints runs it starts (``mpi.KNOWN``)."""
        return Path(self.real).name in KNOWN


def implementation(path: str) -> str:
    """``MPICH 4.0.2`` / ``Open MPI 4.1.4`` from ``PATH --version``; ``unknown`` otherwise."""
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    text = done.stdout + done.stderr
    for pattern, name in _VERSIONS:
        match = pattern.search(text)
        if match:
            return f"{name} {next(g for g in match.groups() if g)}"
    return "unknown"


def launchers(path: str | None = None) -> list[Launcher]:
    """The launchers of ``LAUNCHER_NAMES`` found on ``path`` (this process's PATH by default)."""
    found = []
    for name in LAUNCHER_NAMES:
        where = shutil.which(name, path=path)
        if where:
            real = os.path.realpath(where)
            found.append(Launcher(name, real, implementation(where)))
    return found


def mana_prefix(cache: str | os.PathLike[str] | None = None) -> Path | None:
    """The newest complete ``scripts/mana build`` (``.sckpt-built`` written last), or None."""
    root = Path(cache or environment().mana_cache or DEFAULT_CACHE)
    try:
        built = [
            p
            for p in root.glob("mana-*-*")
            if (p / BUILT_MARKER).is_file()
            and all(os.access(p / "bin" / name, os.X_OK) for name in MANA_PROGRAMS)
        ]
    except OSError:
        return None
    return max(built, key=lambda p: (p / BUILT_MARKER).stat().st_mtime, default=None)
