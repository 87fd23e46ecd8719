"""Fixtures of the cooperative tests: directories other users can reach, and a python for them.

pytest's ``tmp_path`` lives under a 0700 directory, so a job or a test user could not reach
it; ``shared_dir`` is a fresh ``/tmp/sckpt-coop-*`` directory (0755) removed afterwards.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "counter.py"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
"""Built from Debian's python3 (scripts/bootstrap), so the test users can run it too."""
SCKPT = ROOT / ".venv" / "bin" / "sckpt"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="sckpt-coop-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
