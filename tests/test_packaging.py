"""The built wheel carries the styles and runs from an installed (non-editable) copy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_NOT_SOURCE = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache")


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Build the wheel from this checkout and unpack-install it into a private directory."""
    out = tmp_path_factory.mktemp("wheel")
    # From a copy without build/: setuptools reuses build/lib, whose stale files once hid a
    # subpackage missing from pyproject's list.
    source = out / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        cwd=source,
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


def _installed_env(site: Path) -> dict[str, str]:
    """PYTHONPATH for ``python -S``: the installed copy, then the dependencies.

    ``-S`` skips the ``.pth`` files, and with them the editable install's import finder,
    which would otherwise serve any module the wheel lacks from the checkout.
    """
    deps = sysconfig.get_paths()["purelib"]
    return {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{deps}"}


def _run_installed(site: Path, code: str) -> str:
    """Run Python with the installed copy first on the path and the checkout out of sight."""
    result = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=site.parent,
        env=_installed_env(site),
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


def _installed_sckpt(site: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed copy's command line (``python -S -m sckpt``), the checkout out of sight."""
    code = f"import runpy, sys; sys.argv = ['sckpt', *{list(argv)!r}]; runpy.run_module('sckpt')"
    return subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=site.parent,
        env={**_installed_env(site), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_installed_copy_answers_version(installed_wheel: tuple[Path, Path]) -> None:
    _, site = installed_wheel
    result = _installed_sckpt(site, "--version")
    assert result.returncode == 0
    assert result.stdout.strip().startswith("sckpt ")


REPOSITORY_FILES = ("bench/", "scripts/", "backend/", "tests/", ".py")
"""What only a checkout has: an installed copy's help and doctor must not send a user there."""


def test_installed_copy_points_at_no_repository_file(installed_wheel: tuple[Path, Path]) -> None:
    # issue 34, 16: run --help named bench/README and a module's path, and doctor said
    # 'run scripts/dmtcp build', none of which an installed copy has.
    _, site = installed_wheel
    helped = _installed_sckpt(site, "run", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "--transparent" in helped.stdout and "--gzip" in helped.stdout
    doctor = _installed_sckpt(site, "doctor", SCKPT_DMTCP_DIR=str(site / "no-dmtcp"))
    assert "DMTCP not usable" in doctor.stdout, doctor.stdout
    assert "install DMTCP 4.2" in doctor.stdout and "README" in doctor.stdout
    for text in (helped.stdout, doctor.stdout):
        assert not [word for word in REPOSITORY_FILES if word in text], text


def test_wheel_carries_every_module(installed_wheel: tuple[Path, Path]) -> None:
    """Every module of backend/, tui/ and cli/ is in the wheel (a subpackage missing from
    pyproject's list once left the installed console unable to start)."""
    wheel, _ = installed_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    for top in ("backend", "tui", "cli"):
        for source in sorted((ROOT / top).rglob("*.py")):
            assert f"sckpt/{source.relative_to(ROOT).as_posix()}" in names


def test_installed_copy_imports_every_module_and_builds_the_console(
    installed_wheel: tuple[Path, Path],
) -> None:
    _, site = installed_wheel
    code = (
        "import importlib, pkgutil, sckpt\n"
        "mods = [m.name for m in pkgutil.walk_packages(sckpt.__path__, 'sckpt.')]\n"
        "mods = [m for m in mods if not m.endswith('__main__')]  # that one runs the CLI\n"
        "for name in mods: importlib.import_module(name)\n"
        "from sckpt.tui.app import build_app\n"
        "import sckpt.tui.screens.console as console\n"
        "print(len(mods)); print(console.__file__)\n"
    )
    count, origin = _run_installed(site, code).splitlines()
    assert origin.startswith(str(site))
    assert int(count) >= len(list((ROOT / "tui").rglob("*.py")))


def test_every_dependency_is_pinned_below_and_above() -> None:
    # Each dependency is pinned to the range the suite runs with, a lower and an upper
    # bound: an unbounded one lets a fresh machine install a release nobody has tested.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    requirements = [
        *project["build-system"]["requires"],
        *project["project"]["dependencies"],
        *(r for extra in project["project"]["optional-dependencies"].values() for r in extra),
    ]
    loose = [r for r in requirements if ">=" not in r.split(";")[0] or "<" not in r.split(";")[0]]
    assert loose == []
