"""The shim compiles against the headers of other Slurm releases, not only the machine's 22.05.

Operators upgrade Slurm under sckpt; the shim is rebuilt on first use against whatever headers
they have.  ``scripts/slurm-headers`` fetches Debian's own libslurm-dev of bullseye (20.11),
trixie (24.11) and sid (the newest release) and unpacks them; each is compiled here with the
same cffi build the loader runs, warnings-as-errors included.  Only compiling is checked: no
library of those releases can run on this machine.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sckpt.backend.libslurm import _build

from ..conftest import IN_CI, ROOT

SUITES = {"bullseye": (20, 11), "trixie": (24, 11), "sid": None}


@pytest.fixture(scope="module")
def include_dirs() -> dict[str, Path]:
    out = subprocess.run(
        [str(ROOT / "scripts" / "slurm-headers")], capture_output=True, text=True, timeout=600
    )
    if out.returncode != 0:
        message = f"scripts/slurm-headers failed: {out.stderr.strip()[-1500:]}"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    dirs = [Path(line) for line in out.stdout.split()]
    return {d.parents[1].name: d for d in dirs}


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_shim_compiles_against_release(
    suite: str, include_dirs: dict[str, Path], tmp_path: Path
) -> None:
    include = include_dirs[suite]
    version = _build.header_version(include)
    release = ((version >> 16) & 0xFF, (version >> 8) & 0xFF)
    expected = SUITES[suite]
    if expected is not None:
        assert release == expected
    else:
        assert release > (22, 5)  # sid carries a release newer than this machine's
    lib_dir, lib_path = _build.find_library()
    plan = _build.BuildPlan(
        include_dir=include,
        lib_dir=lib_dir,
        lib_path=lib_path,
        slurm_version=version,
        key=f"release{release[0]}{release[1]:02d}",
        cache_root=tmp_path,
    )
    built = _build._compile(plan, tmp_path / "out")
    assert built.is_file() and built.stat().st_size > 10_000
    assert plan.module_name in built.name
