"""Setup failures are clear typed errors and the process lives on (each case in a child).

libslurm's ``slurm_init`` calls ``exit()`` when it finds no configuration; the binding must
find out first.  Missing headers must say how to install them.  No cluster is needed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SlurmCluster

from .conftest import PYTHON, ROOT

DRIVER = r"""
import json
from sckpt.backend.errors import SckptError
from sckpt.backend.libslurm import get_binding
try:
    get_binding()
    result = {"loaded": True}
except SckptError as exc:
    result = {"type": type(exc).__name__, "text": str(exc), "exit_code": exc.exit_code}
# Still alive, and the error is not cached: a second attempt answers the same way.
try:
    get_binding()
except SckptError as exc:
    result["again"] = type(exc).__name__
print(json.dumps(result))
"""


def _run(env: dict[str, str]) -> dict[str, object]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    proc = subprocess.run(
        [PYTHON, "-c", DRIVER],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, "PYTHONPATH": str(ROOT), **env},
        cwd="/tmp",
    )
    assert proc.returncode == 0, f"process died ({proc.returncode}): {proc.stderr[-2000:]}"
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_no_config_is_a_clear_error_and_the_process_lives(tmp_path: Path) -> None:
    if Path("/etc/slurm/slurm.conf").exists() or Path("/run/slurm/conf/slurm.conf").exists():
        pytest.skip("this machine has a default slurm.conf")
    out = _run({"SCKPT_CACHE_DIR": str(tmp_path / "cache")})
    assert out["type"] == "NoConfig" and out["again"] == "NoConfig"
    assert "SLURM_CONF" in str(out["text"]) and "/etc/slurm/slurm.conf" in str(out["text"])
    assert out["exit_code"] == 3


def test_slurm_conf_naming_a_missing_file_is_no_config(tmp_path: Path) -> None:
    out = _run({"SLURM_CONF": str(tmp_path / "absent.conf")})
    assert out["type"] == "NoConfig"
    assert "absent.conf" in str(out["text"])


def test_unreadable_config_does_not_exit_the_process(tmp_path: Path) -> None:
    """A slurm.conf libslurm rejects (it would exit()) is refused after a child's try."""
    bad = tmp_path / "slurm.conf"
    bad.write_text("ThisIsNotASlurmOption=???\nSlurmctldHost=\n")
    out = _run({"SLURM_CONF": str(bad)})
    assert out["type"] == "NoConfig"
    assert "could not read its configuration" in str(out["text"])


def test_missing_headers_report_the_fix(tmp_path: Path) -> None:
    empty_cache = tmp_path / "cache"
    conf = tmp_path / "slurm.conf"  # a configuration is found first; the shim is what fails
    conf.write_text("ClusterName=x\n")
    out = _run(
        {
            "SLURM_CONF": str(conf),
            "SLURM_INCLUDE_DIR": "/nonexistent",
            "SCKPT_CACHE_DIR": str(empty_cache),
        }
    )
    assert out["type"] == "ShimUnavailable"
    assert "/nonexistent" in str(out["text"])
    assert "apt-get install libslurm-dev gcc python3-dev" in str(out["text"])
    assert not any(empty_cache.rglob("*.so"))


def test_missing_library_reports_the_fix(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    out = _run(
        {"SLURM_CONF": str(conf), "SLURM_LIB_DIR": str(tmp_path), "SCKPT_CACHE_DIR": str(tmp_path)}
    )
    assert out["type"] == "ShimUnavailable"
    assert "libslurm" in str(out["text"]) and "apt-get install" in str(out["text"])


def test_demo_still_works_without_headers(tmp_path: Path) -> None:
    """``sckpt --demo`` never needs the shim (it uses the simulated cluster)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    proc = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "sckpt"), "--demo", "--json", "ls"],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **base,
            "SLURM_INCLUDE_DIR": "/nonexistent",
            "SCKPT_CACHE_DIR": str(tmp_path / "cache"),
            "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
        },
        cwd="/tmp",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)


UNREACHABLE = r"""
import json
from sckpt.backend.errors import ControllerUnreachable
from sckpt.backend.libslurm import get_binding
b = get_binding()
out = {}
for name, call in (("jobs", lambda: b.load_jobs(0)), ("steps", lambda: b.get_steps(0))):
    try:
        call()
        out[name] = "answered"
    except ControllerUnreachable as exc:
        out[name] = [type(exc).__name__, exc.code, exc.name]
print(json.dumps(out))
"""


@pytest.mark.slurm
def test_unreachable_controller_is_typed(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """A controller that does not answer (wrong port) raises ControllerUnreachable."""
    conf = tmp_path / "slurm.conf"
    lines = [
        "SlurmctldPort=47999" if line.startswith("SlurmctldPort=") else line
        for line in slurm_cluster.conf.read_text().splitlines()
    ]
    conf.write_text("\n".join(lines) + "\n")
    base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    proc = subprocess.run(
        [PYTHON, "-c", UNREACHABLE],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, "PYTHONPATH": str(ROOT), "SLURM_CONF": str(conf)},
        cwd="/tmp",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in ("jobs", "steps"):
        kind, code, slurm_name = out[name]
        assert kind == "ControllerUnreachable" and code > 0
        assert "COMMUNICATIONS" in slurm_name or "SOCKET" in slurm_name
