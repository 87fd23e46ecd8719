"""``sckpt doctor``'s report: facts equal Slurm's own, and failures say what to fix."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from sckpt.backend.doctor import DoctorReport, format_report, run_doctor

from tests.conftest import SlurmCluster

from .conftest import PYTHON, ROOT

DRIVER = r"""
import dataclasses, json
from sckpt.backend.doctor import format_report, run_doctor
report, code = run_doctor()
print(json.dumps({"code": code, "text": format_report(report),
                  "report": dataclasses.asdict(report)}))
"""


def _doctor(env: dict[str, str]) -> dict[str, object]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    proc = subprocess.run(
        [PYTHON, "-c", DRIVER],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, "PYTHONPATH": str(ROOT), **env},
        cwd="/tmp",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slurm
def test_usable_cluster_reports_its_facts(slurm_cluster: SlurmCluster) -> None:
    report, code = run_doctor()
    assert isinstance(report, DoctorReport)
    assert code == 0 and report.usable and report.controller_reachable
    shown = {}
    for line in slurm_cluster.run("scontrol", "show", "config").stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            shown[key.strip()] = value.strip()
    assert report.cluster_name == shown["ClusterName"]
    assert report.controller_version == shown["SLURM_VERSION"] == report.slurm_version
    assert report.switch_type == shown["SwitchType"]
    assert report.proctrack_type == shown["ProctrackType"]
    assert report.round_trip_ms > 0
    assert report.config_source.startswith(str(slurm_cluster.conf))
    assert report.shim_state in ("cached", "built") and Path(report.shim_path).is_file()
    assert not report.checkpoint_api and report.checkpoint_symbols == ()
    text = format_report(report)
    assert "checkpoint API: absent" in text and "FAIL" not in text


@pytest.mark.slurm
def test_unreachable_controller_exits_2(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    text = slurm_cluster.conf.read_text()
    lines = [
        "SlurmctldPort=47999" if line.startswith("SlurmctldPort=") else line
        for line in text.splitlines()
    ]
    conf.write_text("\n".join(lines) + "\n")
    conf.chmod(0o644)
    out = _doctor({"SLURM_CONF": str(conf)})
    assert out["code"] == 2
    report = out["report"]
    assert isinstance(report, dict) and report["controller_reachable"] is False
    assert "FAIL  controller:" in str(out["text"])
    assert "Unable to contact slurm controller" in str(out["text"])


def test_no_config_exits_2_with_the_fix(tmp_path: Path) -> None:
    if Path("/etc/slurm/slurm.conf").exists():
        pytest.skip("this machine has a default slurm.conf")
    out = _doctor({"SCKPT_CACHE_DIR": str(tmp_path)})
    assert out["code"] == 2
    assert "FAIL  configuration" in str(out["text"])
    assert "fix: set SLURM_CONF" in str(out["text"])


def test_missing_headers_exit_2_with_the_fix(tmp_path: Path) -> None:
    out = _doctor({"SLURM_INCLUDE_DIR": "/nonexistent", "SCKPT_CACHE_DIR": str(tmp_path)})
    assert out["code"] == 2
    assert "apt-get install libslurm-dev gcc python3-dev" in str(out["text"])
