"""The first-use shim build says what it is doing, on a terminal's stderr only.

It takes seconds to a minute (once per Slurm release) and said nothing: a first ``sckpt ls``
looked like a hang.  Real processes against this machine's Slurm headers and library, each
with an empty shim cache (``SCKPT_CACHE_DIR``) so that the build really runs; ``doctor``
builds the shim whether or not a controller answers.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

SCKPT = Path(sys.executable).with_name("sckpt")
HEADERS = Path("/usr/include/slurm/slurm.h")

pytestmark = pytest.mark.skipif(not HEADERS.is_file(), reason="no Slurm headers to build with")


def _env(tmp_path: Path) -> dict[str, str]:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=progress\nSlurmctldHost=localhost\nSlurmctldPort=1\n")
    config = tmp_path / "config.toml"
    config.write_text("")
    return {
        **os.environ,
        "SLURM_CONF": str(conf),
        "SCKPT_CONFIG": str(config),
        "SCKPT_CACHE_DIR": str(tmp_path / "cache"),
    }


def test_a_terminal_hears_what_the_build_is_doing(tmp_path: Path) -> None:
    main, child = pty.openpty()
    try:
        done = subprocess.run(
            [str(SCKPT), "doctor"],
            env=_env(tmp_path),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=child,
            timeout=300,
            check=False,
        )
        os.set_blocking(main, False)
        said = os.read(main, 65536).decode()
    finally:
        os.close(main)
        os.close(child)
    lines = said.splitlines()
    assert lines[0].startswith("sckpt: building the libslurm shim for Slurm "), said
    assert "once per Slurm release" in lines[0] and str(tmp_path / "cache") in lines[0]
    assert lines[1].startswith("sckpt: shim built in "), said
    assert b"shim: built" in done.stdout  # doctor's own report: it really built it


def test_a_pipe_hears_nothing_extra(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(SCKPT), "doctor"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "shim: built" in done.stdout
    assert "building the libslurm shim" not in done.stderr and "shim built" not in done.stderr
