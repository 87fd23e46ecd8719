"""Read-only mode on the real cluster: every key, palette command and CLI verb, and slurmctld
receives nothing but reads.

A private cluster of this module (its own slurmctld, so no other test's RPCs are counted)
runs a job of sckpt-alice whose step 0 is under ``sckpt run``.  Its RPC counters are reset
(``sdiag -r``), then, with read-only on:

* the console (Pilot, in a process of its own: ``security_readonly_driver.py``) gets every
  key of its key table on the jobs table, the steps table and the step screen, every
  command of the palette, and the app's action runner is asked for every mutating
  operation directly (past the UI, so the backend guard is what refuses);
* every command-line verb runs against the job and the step, in both syntaxes, with
  ``--read-only`` and with ``read_only = true`` in the config.

Then every message type ``sdiag`` counted must be a read, the audit logs hold only
refusals (one per mutating attempt), the job is unchanged per ``scontrol`` and its state
files are byte for byte what they were.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PrivateCluster, SlurmCluster

from .security_support import (
    ALICE,
    PYTHON,
    ROOT,
    SCKPT,
    job_facts,
    running_steps,
    submit_under_run,
    tree_digest,
    user_workdir,
)

pytestmark = pytest.mark.slurm

READ_TYPES = frozenset(
    {
        "REQUEST_JOB_INFO",
        "REQUEST_JOB_INFO_SINGLE",
        "REQUEST_JOB_USER_INFO",
        "REQUEST_JOB_STEP_INFO",
        "REQUEST_STEP_LAYOUT",
        "REQUEST_BUILD_INFO",
        "REQUEST_CONFIG",
        "REQUEST_PARTITION_INFO",
        "REQUEST_NODE_INFO",
        "REQUEST_NODE_INFO_SINGLE",
        "REQUEST_FED_INFO",
        "REQUEST_STATS_INFO",
        "REQUEST_PING",
        "REQUEST_RESERVATION_INFO",
        "REQUEST_LICENSE_INFO",
        "REQUEST_TOPO_INFO",
        "REQUEST_JOB_READY",
        "REQUEST_JOB_END_TIME",
    }
)
"""Message types that only read.  Anything else counted during the run fails the test."""
DAEMON_TYPES = frozenset({"MESSAGE_NODE_REGISTRATION_STATUS"})
"""Sent by slurmd itself (it answers the controller's periodic node ping with its
registration), whether or not sckpt runs; it changes no job.  Nothing else is excused."""
MUTATING_TYPES = (
    "REQUEST_UPDATE_JOB",
    "REQUEST_KILL_JOB",
    "REQUEST_CANCEL_JOB_STEP",
    "REQUEST_JOB_REQUEUE",
    "REQUEST_SUSPEND",
    "REQUEST_SUBMIT_BATCH_JOB",
    "REQUEST_JOB_NOTIFY",
    "REQUEST_SIGNAL_TASKS",
    "REQUEST_TERMINATE_TASKS",
    "REQUEST_JOB_STEP_CREATE",
    "REQUEST_RESOURCE_ALLOCATION",
    "REQUEST_UPDATE_NODE",
    "REQUEST_RECONFIGURE",
)
"""Named explicitly so a failure says which one it was (READ_TYPES already excludes them)."""

TARGET_FORMS = ("{j}.0", "{j}")
VERBS: list[list[str]] = [
    ["able", "{t}"],
    ["error", "{t}"],
    ["create", "{t}", "--max-wait", "5"],
    ["vacate", "{t}", "--max-wait", "5"],
    ["restart", "{t}", "--stick"],
    ["enable", "{t}"],
    ["disable", "{t}"],
    ["complete", "{t}", "--error-code", "3", "--error-msg", "x", "--begin-time", "now"],
    ["tasks", "{t}", "--nodelist", "{node}"],
    ["auto", "{t}", "--every", "30m"],
    ["checkpoint", "able", "{t}"],
    ["checkpoint", "error", "{t}"],
    ["checkpoint", "create", "{t}", "MaxWait=5"],
    ["checkpoint", "vacate", "{t}", "MaxWait=5", "ImageDir=/tmp"],
    ["checkpoint", "restart", "{t}", "StickToNodes"],
    ["checkpoint", "enable", "{t}"],
    ["checkpoint", "disable", "{t}"],
]
OTHER_VERBS: list[list[str]] = [
    ["ls"],
    ["ls", "--steps", "--json", "--all"],
    ["doctor"],
    ["completion", "bash"],
    ["run", "--", "/bin/true"],  # the job-side wrapper: refused in read-only mode, no RPC
]
MUTATING_VERBS = {
    "create",
    "vacate",
    "restart",
    "enable",
    "disable",
    "complete",
    "tasks",
    "auto",
    "run",
}
"""``run`` too: the wrapper writes the step's state file and carries out checkpoint requests,
so read-only mode refuses it (and audits the refusal) like the actions."""


@pytest.fixture(scope="module")
def ro_job(private_cluster: PrivateCluster) -> Iterator[tuple[int, Path]]:
    with user_workdir(ALICE) as workdir:
        job_id = submit_under_run(private_cluster, ALICE, workdir, f"ro-{uuid.uuid4().hex[:6]}")
        try:
            yield job_id, workdir
        finally:
            private_cluster.run("scancel", str(job_id), check=False)


def sdiag_types(cluster: SlurmCluster) -> dict[str, int]:
    """Message types slurmctld counted since the last reset, with their counts."""
    out = cluster.run("sdiag").stdout
    section = out.split("by message type", 1)[1].split("by user", 1)[0]
    found = re.findall(r"^\s+(\w+)\s+\(\s*\d+\)\s+count:(\d+)", section, re.MULTILINE)
    return {name: int(count) for name, count in found if int(count)}


def _mutating(argv: list[str]) -> bool:
    """Whether a command line asks for a mutating operation (either syntax)."""
    verb = argv[1] if argv[0] == "checkpoint" else argv[0]
    return verb in MUTATING_VERBS


def _records(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_read_only_console_and_cli_send_no_mutating_rpc(
    private_cluster: PrivateCluster, ro_job: tuple[int, Path], tmp_path: Path
) -> None:
    job_id, workdir = ro_job
    state = workdir / ".sckpt"
    # Settled: the job runs its step, the wrapper registered (no daemon traffic pending).
    assert f"{job_id}.0" in running_steps(private_cluster, job_id)
    facts = job_facts(private_cluster, job_id)
    files = tree_digest(state)
    private_cluster.run("sdiag", "-r")

    # 1. The console: every key and palette command, and the action runner past the UI.
    console_audit = tmp_path / "console-audit.log"
    report_path = tmp_path / "report.json"
    driven = subprocess.run(
        [str(PYTHON), "-m", "tests.reliability.security_readonly_driver",
         str(job_id), str(console_audit), str(report_path)],
        cwd=ROOT, env=private_cluster.env(XDG_CONFIG_HOME="/nonexistent", TZ="UTC"),
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert driven.returncode == 0, driven.stderr[-4000:]
    report = json.loads(report_path.read_text())

    # 2. Every command-line verb, with --read-only and with read_only = true in the config.
    cli_audit = tmp_path / "cli-audit.log"
    flagged = tmp_path / "flag.toml"
    flagged.write_text(f'audit_log = "{cli_audit}"\n')
    configured = tmp_path / "config.toml"
    configured.write_text(f'audit_log = "{cli_audit}"\nread_only = true\n')
    outcomes: list[tuple[list[str], int, str]] = []
    for words in VERBS:
        for form in TARGET_FORMS:
            argv = [w.format(t=form.format(j=job_id), node=private_cluster.node) for w in words]
            for config, extra in ((flagged, ["--read-only"]), (configured, [])):
                ran = subprocess.run(
                    [str(SCKPT), *extra, *argv],
                    env=private_cluster.env(SCKPT_CONFIG=str(config)),
                    capture_output=True, text=True, timeout=300, cwd="/tmp", check=False,
                )  # fmt: skip
                outcomes.append((argv, ran.returncode, ran.stderr))
    for words in OTHER_VERBS:
        ran = subprocess.run(
            [str(SCKPT), "--read-only", *words],
            env={**private_cluster.env(SCKPT_CONFIG=str(flagged)), "SLURM_JOB_ID": ""},
            capture_output=True, text=True, timeout=300, cwd="/tmp", check=False,
        )  # fmt: skip
        outcomes.append((words, ran.returncode, ran.stderr))

    # What slurmctld saw: reads only.
    seen = sdiag_types(private_cluster)
    assert seen, "sdiag counted nothing: the run did not reach this cluster"
    assert "REQUEST_JOB_INFO" in seen and "REQUEST_JOB_STEP_INFO" in seen
    mutating = {name: seen[name] for name in MUTATING_TYPES if name in seen}
    assert mutating == {}, f"mutating RPCs reached slurmctld: {mutating}"
    assert set(seen) <= READ_TYPES | DAEMON_TYPES, f"message types seen: {sorted(seen)}"

    # Nothing changed: the job, its steps, its state files (not even a lock file).
    assert job_facts(private_cluster, job_id) == facts
    assert f"{job_id}.0" in running_steps(private_cluster, job_id)
    assert tree_digest(state) == files

    # The audit logs: refusals only, one per mutating attempt.
    console_lines = _records(console_audit)
    assert len(console_lines) == 10, [  # 5 operations x (step, whole job), past the UI
        (line["operation"], line["target"]) for line in console_lines
    ]
    cli_lines = _records(cli_audit)
    attempts = [o for o in outcomes if _mutating(o[0])]
    assert len(cli_lines) == len(attempts)
    for line in console_lines + cli_lines:
        result = line["result"]
        assert isinstance(result, dict) and result["name"] == "READ_ONLY", line
    assert {str(line["operation"]) for line in cli_lines} == MUTATING_VERBS

    # What the user was told.
    for argv, code, stderr in outcomes:
        assert "Traceback" not in stderr, (argv, stderr)
        if _mutating(argv):
            assert code == 1 and "read-only" in stderr, (argv, code, stderr)
    assert report["selected"] == f"{job_id}.0"
    assert report["step_screen"] == "StepScreen" and report["back_to"] == "ConsoleScreen"
    palette_run = set(report["palette_run"])
    wanted = {"check", "filter", "sort", "reverse", "mine", "finished", "refresh", "pids", "back"}
    assert wanted <= palette_run
    for listing in report["palette_listing"]:
        offered = listing.split("Search for commands", 1)[-1]
        for name in ("Create", "Vacate", "Restart", "Enable", "Disable"):
            assert name not in offered, f"the read-only palette offers {name}"
    notes = report["notifications"]
    assert sum("read-only mode" in n for n in notes) == 10
    assert not any(": requested" in n or ": done" in n for n in notes)
