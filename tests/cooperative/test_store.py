"""The shared state store: atomic, locked, owner-preserving, and never crashing on bad files."""

from __future__ import annotations

import json
import multiprocessing
import os
import pwd
import subprocess
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.protocol import (
    HISTORY_LIMIT,
    TIMEOUT_CODE,
    StepRecord,
    StoreError,
    TaskInfo,
    image_leaf,
    state_dir_for,
)
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.model import STEP_BATCH, StepId

from tests.cooperative.conftest import VENV_PYTHON

STEP = StepId(41, 0)


def _store(tmp_path: Path) -> StepStore:
    store = StepStore(tmp_path / ".sckpt", STEP)
    store.ensure_directory()
    return store


def _task(procid: int = 0) -> TaskInfo:
    return TaskInfo(procid=procid, host="n1", pid=1, since=1, signal="SIGUSR1", image_dir="/x")


def test_missing_file_is_none_and_update_without_create_is_reported(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.read() is None
    with pytest.raises(StoreError, match="does not exist"):
        store.update(lambda r: None)


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    store = _store(tmp_path)

    def change(rec: StepRecord) -> None:
        rec.tasks["0"] = _task()
        rec.disable_count = 2
        rec.begin_request("root", "/img/41.0", 10, "create", now=100)
        rec.last_image["0"] = "/img/41.0/task0"

    store.update(change, create=True)
    rec = store.read()
    assert rec is not None
    assert rec.disable_count == 2
    assert rec.in_progress is not None and rec.in_progress.start == 100
    assert rec.in_progress.deadline == 110 and rec.in_progress.pending == [0]
    assert rec.in_progress.by == "root"
    assert rec.last_image == {"0": "/img/41.0/task0"}
    assert [h["operation"] for h in rec.history] == ["create"]
    assert json.loads(store.path.read_text())["format"] == 1


@pytest.mark.parametrize(
    "content", [b"", b"{", b"\xff\xfe", b"[]", b'{"format": 99}', b'{"format": 1}']
)
def test_corrupt_file_is_reported_not_raised_as_crash(tmp_path: Path, content: bytes) -> None:
    store = _store(tmp_path)
    store.path.write_bytes(content)
    with pytest.raises(StoreError, match="corrupt") as info:
        store.read()
    assert str(store.path) in str(info.value)
    with pytest.raises(StoreError):
        store.update(lambda r: None)
    assert store.path.read_bytes() == content  # an operator's update never destroys evidence


def test_registration_moves_a_corrupt_file_aside(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.path.write_bytes(b"garbage")
    store.update(lambda r: r.tasks.update({"0": _task()}), create=True, reset_corrupt=True)
    rec = store.read()
    assert rec is not None and list(rec.tasks) == ["0"]
    aside = [p for p in store.directory.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == b"garbage"


def _bump(directory: str, n: int) -> None:
    store = StepStore(Path(directory), STEP)
    for _ in range(n):
        store.update(lambda r: setattr(r, "disable_count", r.disable_count + 1), create=True)


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_bump, args=(str(store.directory), 150)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    rec = store.read()
    assert rec is not None and rec.disable_count == 450
    assert not [p for p in store.directory.iterdir() if p.name.endswith(".tmp")]


def test_highest_error_is_kept_and_expiry_records_a_timeout(tmp_path: Path) -> None:
    rec = StepRecord(job_id=41, step="0", tasks={"0": _task(), "1": _task(1)})
    rec.keep_highest(42, "disk quota exceeded")
    rec.keep_highest(5, "smaller")
    assert (rec.error_code, rec.error_msg) == (42, "disk quota exceeded")
    req = rec.begin_request("alice", "/img", 3, "create", now=1000)
    assert rec.error_code == 0  # a new checkpoint resets the error state
    assert req.pending == [0, 1]
    assert not rec.expire(now=1002)
    assert rec.expire(now=1003)
    assert rec.in_progress is None and rec.error_code == TIMEOUT_CODE
    assert "max_wait=3s" in rec.error_msg
    assert rec.checkpoint_error().name == "ETIME"


def test_history_is_bounded() -> None:
    rec = StepRecord(job_id=41, step="0")
    for i in range(HISTORY_LIMIT + 20):
        rec.log("disable", "root", 0, str(i))
    assert len(rec.history) == HISTORY_LIMIT
    assert rec.events()[-1].message == str(HISTORY_LIMIT + 19)


def test_paths_follow_the_image_dir_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCKPT_STATE_DIR", raising=False)
    assert state_dir_for("/home/a/run") == Path("/home/a/run/.sckpt")
    assert state_dir_for("/home/a/run", "/shared/st") == Path("/shared/st")
    monkeypatch.setenv("SCKPT_STATE_DIR", "/site/st")
    assert state_dir_for("/home/a/run") == Path("/site/st")
    assert image_leaf(StepId(7, 3)) == "7.3"
    assert image_leaf(StepId(7, STEP_BATCH)) == "7"
    task = StepId(10, 0, array_job_id=9, array_task_id=1)  # images as squeue names the task
    assert (image_leaf(task), image_leaf(task, "cnt")) == ("9_1.0", "9_1.cnt")
    assert StepStore(tmp_path, StepId(7, STEP_BATCH)).path.name == "7.batch.json"


def test_an_array_task_s_files_are_named_by_its_own_job_id(tmp_path: Path) -> None:
    """The wrapper knows its step as ``SLURM_JOB_ID`` (the task's own record, 41); the
    listing names the same step ``7_3.0``: both must open one file (``state_file_step``)."""
    wrapper = StepStore(tmp_path, StepId(41, 0))
    listed = StepStore(tmp_path, StepId(41, 0, array_job_id=7, array_task_id=3, cluster="c"))
    assert listed.path == wrapper.path == tmp_path / "41.0.json"
    assert listed.lock_path == wrapper.lock_path and listed.done_file(1) == wrapper.done_file(1)
    wrapper.ensure_directory()
    wrapper.update(lambda r: r.tasks.setdefault("0", _task()), create=True)
    rec = listed.read()
    assert rec is not None and list(rec.tasks) == ["0"] and str(listed.step) == "41.0"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as two users")
def test_root_keeps_the_job_owner_and_other_users_cannot_rewrite(shared_dir: Path) -> None:
    tmp_path = shared_dir
    alice = pwd.getpwnam("sckpt-alice")
    base = tmp_path / "alice"
    base.mkdir()
    os.chown(base, alice.pw_uid, alice.pw_gid)
    state = base / ".sckpt"
    # The job (alice) creates the state directory and the file.
    code = (
        "from pathlib import Path; from sckpt.backend.checkpointing.store import StepStore;"
        "from sckpt.backend.model import StepId;"
        f"s=StepStore(Path('{state}'), StepId(41,0)); s.ensure_directory();"
        "s.update(lambda r: setattr(r,'disable_count',1), create=True)"
    )
    python = str(VENV_PYTHON)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    subprocess.run(
        ["runuser", "-u", "sckpt-alice", "--", python, "-c", code],
        env=env,
        check=True,
        cwd=tmp_path,
    )
    store = StepStore(state, STEP)
    # root (an operator) updates it: owner and mode stay alice's 0644.
    store.update(lambda r: setattr(r, "disable_count", r.disable_count + 1))
    st = store.path.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (alice.pw_uid, alice.pw_gid, 0o644)
    assert store.lock_path.stat().st_uid == alice.pw_uid
    # alice can still update after root did.
    bump = code.replace(
        "setattr(r,'disable_count',1)", "setattr(r,'disable_count',r.disable_count+1)"
    )
    subprocess.run(
        ["runuser", "-u", "sckpt-alice", "--", python, "-c", bump],
        env=env,
        check=True,
        cwd=tmp_path,
    )
    rec = store.read()
    assert rec is not None and rec.disable_count == 3
    # bob cannot: the refusal is a clean StoreError, and nothing changes.
    bob = subprocess.run(
        ["runuser", "-u", "sckpt-bob", "--", python, "-c", bump],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert bob.returncode != 0 and "StoreError" in bob.stderr
    assert "Traceback" in bob.stderr  # the raw script shows it; engines catch StoreError
    rec = store.read()
    assert rec is not None and rec.disable_count == 3
