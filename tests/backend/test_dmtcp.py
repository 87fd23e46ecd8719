"""Finding DMTCP (``backend/checkpointing/dmtcp.py``), ``sckpt doctor``'s line, and ``sckpt run
--transparent`` on a machine without it.

The installs here are fake prefixes whose ``dmtcp_launch --version`` is a shell script, so
the search order and the refusals are checked without building DMTCP; the real build is
found in ``tests/cooperative/test_transparent.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sckpt.backend import config
from sckpt.backend.checkpointing import dmtcp
from sckpt.backend.doctor import dmtcp_check

ROOT = Path(__file__).resolve().parents[2]


def fake_install(prefix: Path, version: str = "4.2.0", built: bool = True) -> Path:
    """A prefix with the four programs; ``dmtcp_launch --version`` prints DMTCP's banner."""
    bin_dir = prefix / "bin"
    bin_dir.mkdir(parents=True)
    for name in dmtcp.PROGRAMS:
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\necho '{name} (DMTCP) {version}'\n")
        script.chmod(0o755)
    if built:
        (prefix / dmtcp.BUILT_MARKER).write_text("hash\n")
    return prefix


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No DMTCP anywhere: an empty cache, no variable, a PATH without dmtcp_launch."""
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv(config.ENV_DMTCP_CACHE, str(cache))
    monkeypatch.delenv(config.ENV_DMTCP_DIR, raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return cache


def test_nothing_found_says_how_to_get_one(clean_env: Path) -> None:
    with pytest.raises(dmtcp.DmtcpMissing) as caught:
        dmtcp.find_dmtcp()
    assert str(clean_env) in caught.value.message
    assert "scripts/dmtcp build" in caught.value.hint
    assert caught.value.exit_code == 3


def test_the_cache_build_is_found_with_its_version(clean_env: Path) -> None:
    fake_install(clean_env / "dmtcp-4.2.0-0123456789abcdef")
    found = dmtcp.find_dmtcp()
    assert found.prefix == clean_env / "dmtcp-4.2.0-0123456789abcdef"
    assert (found.version, found.source, found.label) == ("4.2.0", "cache", "DMTCP 4.2.0")


def test_a_half_built_cache_entry_is_never_taken(clean_env: Path) -> None:
    fake_install(clean_env / "dmtcp-4.2.0-0123456789abcdef", built=False)
    with pytest.raises(dmtcp.DmtcpMissing):
        dmtcp.find_dmtcp()


def test_the_variable_wins_over_the_cache_and_the_config_over_both(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_install(clean_env / "dmtcp-4.2.0-0123456789abcdef")
    other = fake_install(tmp_path / "site", version="3.0.0")
    monkeypatch.setenv(config.ENV_DMTCP_DIR, str(other))
    found = dmtcp.find_dmtcp()
    assert (found.prefix, found.version, found.source) == (other, "3.0.0", "$SCKPT_DMTCP_DIR")
    configured = fake_install(tmp_path / "configured", version="4.1.0")
    assert dmtcp.find_dmtcp(str(configured)).version == "4.1.0"


def test_a_named_install_that_is_wrong_is_an_error_not_a_fallback(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_install(clean_env / "dmtcp-4.2.0-0123456789abcdef")
    monkeypatch.setenv(config.ENV_DMTCP_DIR, str(tmp_path / "nowhere"))
    with pytest.raises(dmtcp.DmtcpMissing, match="no executable bin/dmtcp_coordinator"):
        dmtcp.find_dmtcp()


def test_doctor_says_which_dmtcp_or_how_to_get_one(clean_env: Path) -> None:
    missing = dmtcp_check()
    assert missing.informational and "DMTCP not found" in missing.detail
    assert "scripts/dmtcp build" in missing.fix
    fake_install(clean_env / "dmtcp-4.2.0-0123456789abcdef")
    found = dmtcp_check()
    assert found.detail.startswith(
        f"4.2.0 at {clean_env}/dmtcp-4.2.0-0123456789abcdef (from cache)"
    )


def test_sckpt_doctor_prints_the_line(clean_env: Path) -> None:
    fake_install(clean_env / "dmtcp-4.2.0-0123456789abcdef")
    env = {**os.environ, "SLURM_CONF": "/nonexistent/slurm.conf"}
    out = subprocess.run(
        [sys.executable, "-m", "sckpt", "doctor"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    lines = [line for line in out.stdout.splitlines() if "DMTCP:" in line]
    where = clean_env / "dmtcp-4.2.0-0123456789abcdef"
    assert lines == [
        f"  ok  DMTCP: 4.2.0 at {where} (from cache): "
        "sckpt run --transparent checkpoints unmodified programs"
    ], out.stdout


def test_run_transparent_without_dmtcp_refuses_in_one_line_and_starts_nothing(
    clean_env: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    work = tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        "SLURM_JOB_ID": "4242",
        "SLURM_STEP_ID": "0",
        "SCKPT_WORK_DIR": str(work),
        "SCKPT_CONFIG": str(tmp_path / "none.toml"),
    }
    env["SCKPT_CONFIG"] = str(tmp_path / "config.toml")
    (tmp_path / "config.toml").write_text(f'audit_log = "{tmp_path}/audit.log"\n')
    out = subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "sckpt"),
            "run",
            "--transparent",
            "--",
            "/bin/sh",
            "-c",
            f"touch {marker}",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=60,
        check=False,
    )
    assert out.returncode == 3
    assert out.stdout == ""
    assert len(out.stderr.splitlines()) == 1, out.stderr
    assert out.stderr.startswith("sckpt run: DMTCP not found")
    assert "scripts/dmtcp build" in out.stderr
    assert not marker.exists()
    assert list(work.iterdir()) == []  # no state directory, no image directory


def test_run_transparent_in_read_only_mode_is_refused_before_anything(
    clean_env: Path, tmp_path: Path
) -> None:
    fake_install(clean_env / "dmtcp-4.2.0-0123456789abcdef")
    marker = tmp_path / "started"
    work = tmp_path / "work"
    work.mkdir()
    config = tmp_path / "config.toml"
    config.write_text(f'read_only = true\naudit_log = "{tmp_path}/audit.log"\n')
    env = {
        **os.environ,
        "SLURM_JOB_ID": "4242",
        "SLURM_STEP_ID": "0",
        "SCKPT_WORK_DIR": str(work),
        "SCKPT_CONFIG": str(config),
    }
    out = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "sckpt"), "run", "--transparent", "--",
         "/bin/sh", "-c", f"touch {marker}"],
        capture_output=True, text=True, env=env, cwd=work, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 1
    assert "refused: sckpt is in read-only mode" in out.stderr
    assert not marker.exists() and list(work.iterdir()) == []
    assert '"READ_ONLY"' in (tmp_path / "audit.log").read_text()


SCRIPT = ROOT / "scripts" / "dmtcp"


def test_build_script_without_its_tarball_is_one_line_and_exit_3(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "SCKPT_DMTCP_TARBALL": str(tmp_path / "dmtcp-4.2.0.tar.xz"),
        "SCKPT_DMTCP_CACHE": str(tmp_path / "cache"),
    }
    out = subprocess.run(
        [str(SCRIPT), "build"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert out.returncode == 3
    assert out.stdout == ""
    assert out.stderr.splitlines() == [
        f"dmtcp: DMTCP source not found (looked for {tmp_path}/dmtcp-4.2.0.tar.xz); "
        "set SCKPT_DMTCP_TARBALL=/path/to/dmtcp-4.2.0.tar.xz"
    ]
    assert not (tmp_path / "cache").exists()  # nothing built, nothing made


def test_build_script_builds_once_keyed_by_the_tarball_hash() -> None:
    """The real build that scripts/test made: a second build finds it and builds nothing."""
    tarball = ROOT.parent / "shared" / "dmtcp" / "dmtcp-4.2.0.tar.xz"
    if not tarball.is_file():
        tarball = Path("/work/shared/dmtcp/dmtcp-4.2.0.tar.xz")
    if not tarball.is_file() or not os.access(dmtcp.DEFAULT_CACHE, os.W_OK):
        if os.environ.get("CI") == "true":
            pytest.fail(f"no DMTCP tarball at {tarball}, or {dmtcp.DEFAULT_CACHE} not writable")
        pytest.skip("the DMTCP tarball or a writable cache is missing here")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCKPT_DMTCP")}
    out = subprocess.run(
        [str(SCRIPT), "build"], capture_output=True, text=True, env=env, timeout=900, check=True
    )
    digest = subprocess.run(
        ["sha256sum", str(tarball)], capture_output=True, text=True, check=True
    ).stdout.split()[0]
    prefix = Path(out.stdout.strip())
    assert prefix == Path(dmtcp.DEFAULT_CACHE) / f"dmtcp-4.2.0-{digest[:16]}"
    assert (prefix / dmtcp.BUILT_MARKER).read_text().strip() == digest
    assert "building" not in out.stderr  # found, not rebuilt
    again = subprocess.run(
        [str(SCRIPT), "prefix"], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    assert again.stdout.strip() == str(prefix)
    assert dmtcp.find_dmtcp().prefix == prefix  # and sckpt finds that one with no variable
