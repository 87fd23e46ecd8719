"""The audit log: concurrent writers never interleave, records carry what auditors need."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from sckpt.backend.audit import AuditLog, read_records

WRITER = """
import sys
from sckpt.backend.audit import AuditLog
log = AuditLog(sys.argv[1])
tag = sys.argv[2]
for i in range(int(sys.argv[3])):
    reservation = log.reserve()
    record = log.record(engine="simulated", operation="create", target=f"{tag}.{i}",
                        arguments={"pad": "x" * 3000, "i": i}, code=0, name="SLURM_SUCCESS",
                        message="accepted", duration=0.0)
    problem = log.write(reservation, record)
    assert not problem, problem
"""


def test_two_processes_write_2000_intact_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag, "1000"])
        for tag in ("a", "b")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    records = [json.loads(line) for line in lines[:-1]]  # any torn line fails here
    assert len(records) == 2000
    for tag in ("a", "b"):
        mine = [r["arguments"]["i"] for r in records if r["target"].startswith(tag + ".")]
        assert mine == list(range(1000))  # each writer's lines complete and in order


def test_log_and_directory_are_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "audit.log"
    log = AuditLog(path)
    log.write(
        log.reserve(),
        log.record(
            engine="e",
            operation="o",
            target="1",
            arguments={},
            code=0,
            name="n",
            message="m",
            duration=0,
        ),
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_record_fields(tmp_path: Path, monkeypatch: object) -> None:
    log = AuditLog(tmp_path / "a.log")
    rec = log.record(
        engine="native",
        operation="vacate",
        target="7.0",
        arguments={"max_wait": 10},
        code=2037,
        name="ESLURM_DISABLED",
        message="Requested operation is presently disabled",
        duration=0.25,
        acting_user="someone-else",
    )
    log.write(log.reserve(), rec)
    (line,) = read_records(tmp_path / "a.log")
    assert line["uid"] == os.getuid()
    assert line["result"] == {
        "code": 2037,
        "name": "ESLURM_DISABLED",
        "message": "Requested operation is presently disabled",
    }
    assert line["acting_user"] == "someone-else"
    assert set(line) >= {
        "time",
        "user",
        "uid",
        "host",
        "engine",
        "operation",
        "target",
        "arguments",
        "result",
        "duration",
    }
