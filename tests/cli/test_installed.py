"""The installed ``sckpt`` command, run as a user runs it (a subprocess, real streams)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCKPT = Path(sys.executable).with_name("sckpt")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A private config and audit log; no SLURM_CONF, so nothing reaches a real cluster."""
    config = tmp_path / "config.toml"
    config.write_text(f'audit_log = "{tmp_path / "audit.log"}"\n[demo]\nseed = 42\njobs = 48\n')
    base = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    return {**base, "SCKPT_CONFIG": str(config), "NO_COLOR": "1"}


def run(env: dict[str, str], *argv: str | bytes, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCKPT), *argv],
        env=env,
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=120,
        check=False,
        **kw,  # type: ignore[call-overload]
    )


def test_the_script_is_installed() -> None:
    assert SCKPT.exists(), f"{SCKPT} missing: run scripts/bootstrap"


def test_version_and_help(env: dict[str, str]) -> None:
    version = run(env, "--version")
    assert version.returncode == 0 and version.stdout.startswith("sckpt ")
    helped = run(env, "--help")
    assert helped.returncode == 0 and "checkpoint" in helped.stdout and helped.stderr == ""


def test_python_dash_m_runs_the_same_command(env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sckpt", "create", "bad"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 2 and result.stderr.startswith("sckpt: invalid job")


def test_demo_listing_and_an_action(env: dict[str, str]) -> None:
    listing = run(env, "--demo", "ls", "--json", "--all")
    assert listing.returncode == 0, listing.stderr
    jobs = json.loads(listing.stdout)["jobs"]
    running = next(j for j in jobs if j["state"] == "RUNNING" and j["steps"])
    step = running["steps"][0]["step_id"]
    able = run(env, "--demo", "--as-user", "root", "able", step)
    assert able.returncode == 0, able.stderr
    assert able.stdout in ("Yes\n", "No\n") or able.stdout.startswith("Began at ")
    table = run(env, "--demo", "ls")
    assert table.returncode == 0 and table.stdout.splitlines()[0].startswith("JOBID")


def test_bad_usage_is_one_line_and_exit_2(env: dict[str, str]) -> None:
    for argv in (["create", "12x"], ["ls", "--bogus"], ["ch", "re", "1"], ["frobnicate"]):
        result = run(env, *argv)
        assert result.returncode == 2, argv
        assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
        assert "Traceback" not in result.stderr


def test_non_utf8_argv_is_refused_cleanly(env: dict[str, str]) -> None:
    result = subprocess.run(
        [os.fsencode(SCKPT), b"--demo", b"create", b"12\xff"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.count(b"\n") == 1 and b"Traceback" not in result.stderr
    name = subprocess.run(
        [os.fsencode(SCKPT), b"--demo", b"ls", b"--user", b"\xff\xfe"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert name.returncode in (0, 2) and b"Traceback" not in name.stderr


def test_no_slurm_configured_is_exit_3_and_suggests_the_demo(env: dict[str, str]) -> None:
    result = run(env, "ls")
    assert result.returncode == 3 and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_a_closed_pipe_is_not_an_error(env: dict[str, str], tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_text(f'audit_log = "{tmp_path / "audit.log"}"\n[demo]\njobs = 3000\n')
    env = {**env, "SCKPT_CONFIG": str(big)}  # far more output than a pipe buffer holds
    result = subprocess.run(
        f"'{SCKPT}' --demo ls --all --steps | head -n 1",
        shell=True,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.startswith("STEPID") and "Traceback" not in result.stderr
    assert "Exception ignored" not in result.stderr


def test_listing_and_actions_never_import_textual(env: dict[str, str]) -> None:
    code = (
        "import sys\n"
        "from sckpt.cli import main\n"
        "main(['--demo', 'ls', '--noheader'])\n"
        "main(['--demo', 'able', '184201'])\n"
        "main(['completion', 'bash'])\n"
        "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.splitlines()[-1] == "LOADED []"


def test_completion_scripts_from_the_installed_command(env: dict[str, str]) -> None:
    bash = run(env, "completion", "bash")
    assert bash.returncode == 0
    probe = subprocess.run(
        [
            "bash",
            "-c",
            'eval "$1"; COMP_WORDS=(sckpt checkpoint); COMP_CWORD=1; _shtab_sckpt;'
            ' echo "${COMPREPLY[*]}"',
            "bash",
            bash.stdout,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.split() == ["checkpoint"]
    zsh = run(env, "completion", "zsh")
    assert zsh.returncode == 0 and zsh.stdout.startswith("#compdef sckpt")


def test_doctor_reports_and_its_exit_code_says_usable_or_not(env: dict[str, str]) -> None:
    text = run(env, "doctor")
    assert text.returncode in (0, 2), text.stderr
    assert "configuration" in text.stdout and "Traceback" not in text.stderr
    data = run(env, "doctor", "--json")
    document = json.loads(data.stdout)
    assert data.returncode == document["exit_code"] == text.returncode
    assert document["report"]["usable"] is (data.returncode == 0)


def test_without_slurm_ls_and_actions_still_print_their_json_document(
    env: dict[str, str],
) -> None:
    # No slurm.conf: no facade can be opened. A script reading --json still gets the
    # document README promises (stale, with the reason; the error object), and exit 3.
    broken = {**env, "SLURM_CONF": "/nonexistent"}
    listing = run(broken, "ls", "--json")
    assert listing.returncode == 3
    document = json.loads(listing.stdout)
    assert document["stale"] is True and document["jobs"] == [] and document["cluster"] is None
    assert "/nonexistent" in document["error"]
    assert listing.stderr.startswith("sckpt: cannot reach Slurm: SLURM_CONF=/nonexistent")
    table = run(broken, "ls")
    assert (table.returncode, table.stdout) == (3, "")
    assert table.stderr.startswith("sckpt: cannot reach Slurm: ")
    able = run(broken, "able", "12.0", "--json")
    assert able.returncode == 3
    answer = json.loads(able.stdout)
    assert (answer["operation"], answer["exit_code"], answer["engine"]) == ("able", 3, None)
    (result,) = answer["results"]
    assert result["target"] == "12.0" and result["ok"] is False
    error = result["error"]
    assert error["exit_code"] == 3 and "/nonexistent" in error["message"]
    assert {"code", "name", "hint"} <= set(error)
