"""backend/job_output.py: a bounded tail, what was appended, and why a file is not shown.

Real files in a temporary directory; "as another user" uses the uid of sckpt-alice (the
test users exist on the test machines) against a root-owned 0600 file.
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.access import file_read_problem
from sckpt.backend.job_output import last_lines, read_output
from sckpt.backend.model import JobState


def test_the_first_read_is_the_tail_cut_at_a_line(tmp_path: Path) -> None:
    path = tmp_path / "out"
    body = b"".join(b"line %05d\n" % i for i in range(10_000))  # 110,000 bytes
    path.write_bytes(body)
    read = read_output(str(path), max_bytes=1000)
    assert read.problem == "" and read.offset == len(body)
    assert body.endswith(read.data) and len(read.data) <= 1000
    assert read.data.startswith(b"line ")  # the cut partial line was dropped
    assert read.skipped == len(body) - len(read.data)


def test_following_reads_what_was_appended_and_notices_truncation(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"one\ntwo\n")
    first = read_output(str(path))
    with path.open("ab") as handle:
        handle.write(b"three\npartial")
    more = read_output(str(path), first.offset)
    assert (more.data, more.skipped, more.reset) == (b"three\npartial", 0, False)
    assert read_output(str(path), more.offset).data == b""
    path.write_bytes(b"new\n")  # rewritten: shorter than what was read
    again = read_output(str(path), more.offset)
    assert again.reset and again.data == b"new\n"


def test_a_burst_larger_than_the_bound_is_skipped_and_said(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"a\n")
    with path.open("ab") as handle:
        handle.write(b"x" * 5000)
    read = read_output(str(path), 2, max_bytes=100)
    assert len(read.data) == 100 and read.skipped == 4900 and read.offset == 5002


def test_why_not(tmp_path: Path) -> None:
    assert read_output("").problem.startswith("job has no output file")
    missing = str(tmp_path / "nope")
    assert read_output(missing, state=JobState.RUNNING).problem == f"not written yet: {missing}"
    assert "has not started" in read_output(missing, state=JobState.PENDING).problem
    assert "the job ended" in read_output(missing, state=JobState.COMPLETED).problem
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # would block a plain open() for ever
    assert read_output(str(fifo)).problem == f"cannot read {fifo}: not a regular file"
    assert "not a regular file" in read_output(str(tmp_path)).problem


def test_root_acting_for_a_user_is_refused_what_the_user_could_not_read() -> None:
    try:
        alice = pwd.getpwnam("sckpt-alice").pw_uid
    except KeyError:
        pytest.fail("the test user sckpt-alice does not exist (scripts/slurm-cluster up)")
    directory = Path(tempfile.mkdtemp(prefix="sckpt-job-output-"))  # pytest's is 0700
    directory.chmod(0o755)
    path = directory / "secret"
    path.write_bytes(b"secret\n")
    path.chmod(0o600)
    assert file_read_problem(str(path), alice)[0] != 0
    read = read_output(str(path), as_uid=alice)
    assert read.problem.startswith(f"cannot read {path}: permission denied")
    assert read.data == b""
    path.chmod(0o644)
    assert read_output(str(path), as_uid=alice).data == b"secret\n"
    directory.chmod(0o700)  # the file is readable, its directory cannot be entered
    assert "cannot enter" in read_output(str(path), as_uid=alice).problem
    shutil.rmtree(directory)


@pytest.mark.parametrize(
    ("data", "n", "expected"),
    [
        (b"a\nb\nc\n", 2, b"b\nc\n"),
        (b"a\nb\nc", 2, b"b\nc"),
        (b"a\nb\n", 5, b"a\nb\n"),
        (b"a\nb\n", 0, b""),
        (b"", 3, b""),
    ],
)
def test_last_lines_is_tail_n(data: bytes, n: int, expected: bytes) -> None:
    assert last_lines(data, n) == expected
