"""The shim on the public headers of 12 Slurm releases, 19.05 to 26.05, checked honestly.

Operators upgrade Slurm under sckpt and the shim is rebuilt against whatever headers they
have.  Each header set of ``../shared/slurm/slurm-headers.tar.xz`` (unpacked by
``scripts/slurm-cluster headers``) goes through ``release_check`` -- the real build path,
cdef and C -- with this machine's ``/usr/include/slurm`` hidden (``unshare -m`` with an empty
directory over it, as root), and the test asserts with its own reading of each release:

* the module's header version is the headers' ``SLURM_VERSION_NUMBER``;
* the error-name table is not empty;
* the special step ids map as that release defines them (<= 20.02: batch 0xfffffffe and
  extern 0xffffffff, no interactive step; >= 20.11: batch 0xfffffffb, extern 0xfffffffc,
  interactive 0xfffffffa; pending 0xfffffffd throughout).

Only compiling and the shim's own translations are checked here: no libslurm of those
releases runs on this machine (19.05's does, in tests/native).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import CLUSTER_SCRIPT, IN_CI

RELEASES = [
    "19.05.8", "20.02.7", "20.11.9", "21.08.8", "22.05.11", "23.02.8",
    "23.11.11", "24.05.8", "24.11.7", "25.05.8", "25.11.7", "26.05.3",
]  # fmt: skip

LEGACY_STEPS = {"batch": 0xFFFFFFFE, "extern": 0xFFFFFFFF, "pending": 0xFFFFFFFD}
MODERN_STEPS = {
    "batch": 0xFFFFFFFB,
    "extern": 0xFFFFFFFC,
    "pending": 0xFFFFFFFD,
    "interactive": 0xFFFFFFFA,
}
CANONICAL = MODERN_STEPS


@pytest.fixture(scope="module")
def header_sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    dest = tmp_path_factory.mktemp("release-headers")
    out = subprocess.run(
        [str(CLUSTER_SCRIPT), "headers", str(dest)], capture_output=True, text=True, timeout=300
    )
    if out.returncode != 0:
        message = f"scripts/slurm-cluster headers: {out.stderr.strip()[-1500:]}"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return {Path(line).name: Path(line) for line in out.stdout.split()}


def release_check(
    include: Path, hide_system_headers: bool = True
) -> subprocess.CompletedProcess[str]:
    """``python -m sckpt.backend.libslurm.release_check DIR --json`` in a child process.

    As root, in its own mount namespace with an empty directory over ``/usr/include/slurm``.
    """
    argv = [sys.executable, "-m", "sckpt.backend.libslurm.release_check", str(include), "--json"]
    if hide_system_headers and os.geteuid() == 0 and shutil.which("unshare"):
        empty = include.parent / ".empty"
        empty.mkdir(exist_ok=True)
        script = 'mount --bind "$1" /usr/include/slurm && shift && exec "$@"'
        argv = ["unshare", "-m", "sh", "-c", script, "sh", str(empty), *argv]
    elif hide_system_headers and IN_CI:
        pytest.fail("CI runs as root: the system's Slurm headers must be hidden", pytrace=False)
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)


def _version_in_headers(include: Path) -> int:
    """SLURM_VERSION_NUMBER as the release writes it (slurm.h <= 20.11, slurm_version.h later)."""
    for name in ("slurm_version.h", "slurm.h"):
        path = include / "slurm" / name
        if path.is_file():
            m = re.search(r"#define\s+SLURM_VERSION_NUMBER\s+(0x[0-9a-fA-F]+)", path.read_text())
            if m:
                return int(m.group(1), 16)
    raise AssertionError(f"no SLURM_VERSION_NUMBER under {include}")


@pytest.mark.parametrize("release", RELEASES)
def test_shim_builds_right_for_release(release: str, header_sets: dict[str, Path]) -> None:
    include = header_sets[release]
    done = release_check(include)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr[-3000:]}"
    report = json.loads(done.stdout)
    version = _version_in_headers(include)
    text = f"{version >> 16 & 0xFF}.{version >> 8 & 0xFF:02d}.{version & 0xFF}"
    assert text == release
    assert report["header_version"] == report["module_header_version"] == release
    assert report["foreign_headers"] == []
    assert report["error_names"] > 150
    legacy = release < "20.11"
    expected = LEGACY_STEPS if legacy else MODERN_STEPS
    assert {kind: ids["release"] for kind, ids in report["step_ids"].items()} == expected
    for kind, ids in report["step_ids"].items():
        assert ids["to_canon"] == CANONICAL[kind] and ids["from_canon"] == ids["release"]
    assert report["flags"]["HAS_CHECKPOINT_HEADERS"] == (release < "20.02")
    assert report["flags"]["HAS_SLURM_INIT"] == (not legacy)


def test_a_header_taken_from_the_machine_is_caught(
    header_sets: dict[str, Path], tmp_path: Path
) -> None:
    """22.05's slurm.h includes slurm_version.h: without it in the set under test, the
    compiler would find this machine's copy.  The check names it instead of passing."""
    if not Path("/usr/include/slurm/slurm_version.h").is_file():
        pytest.skip("this machine has no /usr/include/slurm to be fooled by")
    broken = tmp_path / "22.05-without-version"
    shutil.copytree(header_sets["22.05.11"], broken)
    (broken / "slurm" / "slurm_version.h").unlink()
    fooled = release_check(broken, hide_system_headers=False)
    assert fooled.returncode == 1, fooled.stderr[-2000:]
    report = json.loads(fooled.stdout)
    assert report["foreign_headers"] == ["/usr/include/slurm/slurm_version.h"]
    assert any("slurm_version.h was read instead" in f for f in report["failures"])
    if os.geteuid() == 0:
        hidden = release_check(broken)
        assert hidden.returncode == 2
        assert "slurm_version.h" in hidden.stderr and "Traceback" not in hidden.stderr


def test_headers_of_another_release_than_libslurm_are_refused_by_name(
    header_sets: dict[str, Path], tmp_path: Path
) -> None:
    """19.05's headers with this machine's libslurm (22.05): no build, no call, both named."""
    from sckpt.backend.libslurm import shim_build

    lib_dir, lib_path = shim_build.find_library()
    library = shim_build.library_release(lib_path)
    assert library is not None and not library.startswith("19.05")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=none\n")
    env = {
        **os.environ,
        "SLURM_CONF": str(conf),
        "SLURM_INCLUDE_DIR": str(header_sets["19.05.8"]),
        "SLURM_LIB_DIR": str(lib_dir),
        "SCKPT_CACHE_DIR": str(tmp_path / "cache"),
        "NO_COLOR": "1",
    }
    sckpt = str(Path(sys.executable).with_name("sckpt"))
    for argv in (["ls"], ["doctor"]):
        done = subprocess.run(
            [sckpt, *argv], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        said = done.stdout + done.stderr
        assert done.returncode != 0, said
        assert f"is Slurm {library}" in said and "are Slurm 19.05.8" in said, said
        assert "SLURM_LIB_DIR and SLURM_INCLUDE_DIR" in said and "Traceback" not in said
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.so"))
