"""MPI launches as ``sckpt run --transparent`` sees them (``checkpointing/mpi.py``) and
``sckpt doctor``'s MPI and MANA lines (``checkpointing/mpi_install.py``).

The launchers are this machine's (Debian's MPICH and Open MPI, installed by
``scripts/test``) and, for what is not installed, small scripts on a PATH of the test's own.
The real launches on Slurm are in ``tests/cooperative/test_mpi.py``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sckpt.backend import config
from sckpt.backend.checkpointing import mpi
from sckpt.backend.checkpointing.dmtcp import BUILT_MARKER
from sckpt.backend.checkpointing.mpi_install import MANA_PROGRAMS, launchers
from sckpt.backend.doctor import mana_check, mpi_check
from sckpt.backend.errors import UsageError

NEEDS_MPI = pytest.mark.skipif(
    not (shutil.which("mpiexec.mpich") and shutil.which("mpirun.openmpi"))
    and os.environ.get("CI") != "true",
    reason="Debian's mpich and openmpi-bin are not installed (scripts/test installs them)",
)


def script(where: Path, name: str, says: str = "") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / name
    path.write_text(f"#!/bin/sh\nprintf '{says}'\n")
    path.chmod(0o755)
    return path


@NEEDS_MPI
@pytest.mark.parametrize(
    ("name", "kind"),
    [("mpiexec.mpich", "MPICH (hydra)"), ("mpirun.openmpi", "Open MPI (orterun)")],
)
def test_a_working_launcher_gets_the_environment_dmtcp_needs(name: str, kind: str) -> None:
    launch = mpi.detect([name, "-n", "2", "./app"], os.environ)
    assert launch is not None and (launch.how, launch.what) == ("mpiexec", f"{name} ({kind})")
    assert mpi.refusal(launch) == ""
    env = mpi.transparent_env([f"/usr/bin/{name}", "-n", "2", "./app"], {"PATH": "/usr/bin"})
    assert env == mpi.MPI_ENV and env["HYDRA_LAUNCHER"] == "fork"


@pytest.mark.parametrize("variable", mpi.RANK_VARIABLES)
def test_a_rank_started_by_srun_is_refused(variable: str) -> None:
    with pytest.raises(UsageError) as refused:
        mpi.transparent_env(["./app"], {variable: "1", "PATH": "/usr/bin"})
    assert refused.value.exit_code == 2
    assert str(refused.value).startswith(
        f"--transparent: this task is an MPI rank ({variable}=1 in the task's environment"
    )


def test_a_launcher_not_tried_is_refused_and_a_plain_program_passes(tmp_path: Path) -> None:
    prterun = script(tmp_path / "bin", "prterun")
    with pytest.raises(UsageError, match=rf"prterun \({prterun}\) is an MPI launcher"):
        mpi.transparent_env(["prterun", "-n", "2", "./app"], {"PATH": str(tmp_path / "bin")})
    # A program that is not a launcher may still call one (a script): the same environment.
    assert mpi.transparent_env(["/usr/bin/python3", "app.py"], {"PATH": "/usr/bin"}) == (
        mpi.MPI_ENV
    )
    assert mpi.detect(["./mpiexec-notes.sh"], {}) is None


def test_pmi_fd_is_inherited_only_when_it_is_open() -> None:
    read, write = os.pipe()
    try:
        assert mpi.inherited_fds({"PMI_FD": str(read)}) == (read,)
    finally:
        os.close(read)
        os.close(write)
    assert mpi.inherited_fds({"PMI_FD": str(read)}) == ()
    assert mpi.inherited_fds({"PMI_FD": "x"}) == mpi.inherited_fds({}) == ()


@NEEDS_MPI
def test_doctor_names_this_machines_mpis() -> None:
    found = {one.name: one for one in launchers()}
    assert found["mpiexec.mpich"].implementation == "MPICH 4.0.2"
    assert found["mpiexec.mpich"].real == "/usr/bin/mpiexec.hydra"
    assert found["mpirun.openmpi"].implementation.startswith("Open MPI 4.")
    line = mpi_check()
    assert line.informational and "mpiexec.mpich is MPICH 4.0.2 (/usr/bin/mpiexec.hydra)" in (
        line.detail
    )


def test_doctor_marks_a_launcher_it_does_not_checkpoint(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    script(bin_dir, "prterun", "prterun (PRRTE) 3.0.0\\n")
    line = mpi_check(str(bin_dir))
    assert line.detail.startswith(
        f"prterun is PRRTE 3.0.0 ({bin_dir}/prterun, not checkpointed by --transparent)"
    )
    nothing = mpi_check(str(tmp_path / "empty"))
    assert "no mpiexec" in nothing.detail and "apt-get install mpich" in nothing.fix


def test_doctor_lists_mana_once_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(config.ENV_MANA_CACHE, str(tmp_path))
    assert mana_check().detail.startswith("not built")
    prefix = tmp_path / "mana-1.4.0-0123456789abcdef"
    for name in MANA_PROGRAMS:
        script(prefix / "bin", name)
    assert mana_check().detail.startswith("not built")  # no marker: a half-built tree
    (prefix / BUILT_MARKER).write_text("sum\n")
    assert mana_check().detail.startswith(f"1.4.0 at {prefix} (built against MPICH)")
