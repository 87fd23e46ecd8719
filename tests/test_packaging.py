"""The built wheel carries the styles and runs from an installed (non-editable) copy."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Build the wheel from this checkout and unpack-install it into a private directory."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("sckpt-*.whl")
    site = out / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), wheel],
        check=True,
        capture_output=True,
    )
    return wheel, site


def _run_installed(site: Path, code: str) -> str:
    """Run Python with the installed copy first on the path and the checkout out of sight."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=site.parent,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def test_wheel_contains_every_stylesheet(installed_wheel: tuple[Path, Path]) -> None:
    wheel, _ = installed_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    for tcss in sorted((ROOT / "styles").glob("*.tcss")):
        assert f"sckpt/styles/{tcss.name}" in names
    assert "sckpt/py.typed" in names
    assert not any(name.startswith(("tests/", "bench/")) for name in names)


def test_installed_copy_finds_its_styles(installed_wheel: tuple[Path, Path]) -> None:
    _, site = installed_wheel
    code = (
        "import sckpt, sckpt.styles\n"
        "from importlib.resources import files\n"
        "names = (p.name for p in files('sckpt.styles').iterdir())\n"
        "sheets = sorted(n for n in names if n.endswith('.tcss'))\n"
        "print(sckpt.__file__); print(','.join(sheets))\n"
    )
    origin, sheets = _run_installed(site, code).splitlines()
    assert origin.startswith(str(site))
    assert sheets.split(",") == sorted(p.name for p in (ROOT / "styles").glob("*.tcss"))


def test_installed_copy_answers_version(installed_wheel: tuple[Path, Path]) -> None:
    _, site = installed_wheel
    code = "import runpy, sys; sys.argv = ['sckpt', '--version']; runpy.run_module('sckpt')"
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=site.parent, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0
    assert result.stdout.strip().startswith("sckpt ")
