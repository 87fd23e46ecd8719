"""An unprivileged user cannot act on another user's job through any path, and sckpt never
elevates privileges.

On the real cluster, sckpt-bob tries every action on a job of sckpt-alice: through the
command line (modern and historical syntax), the console (a real terminal over tmux, run as
bob), the ``sckpt run`` wrapper (registering into alice's step), the state store's files
(writing them directly), and libslurm itself (the calls the cooperative engine makes,
issued by bob's own process).  Each time the job is unchanged according to ``scontrol``,
its step still runs, and alice's state files are byte for byte what they were.

Root is the operator, and the state directory belongs to the job's user: the operator's
console must not be tricked into handing a system file to that user (a planted symlink),
into hanging (a FIFO), or into believing a record someone else planted in a shared state
directory.
"""

from __future__ import annotations

import ast
import os
import pwd
import stat
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend import errors as E
from sckpt.backend.checkpointing.protocol import TIMEOUT_CODE, Request, StepRecord
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.config import Settings
from sckpt.backend.facade import Facade, open_facade
from sckpt.backend.model import CheckpointKind, CheckpointState, Snapshot, StepId

from tests.conftest import SlurmCluster
from tests.helpers import catches_signal, wait_for
from tests.tmux import Tmux

from .security_support import (
    ALICE,
    BOB,
    PYTHON,
    ROOT,
    SCKPT,
    UNDER_RUN,
    Digest,
    job_facts,
    run_as,
    running_steps,
    submit_under_run,
    tree_digest,
    uid_of,
    user_env,
    user_workdir,
)

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def alice_job(slurm_cluster: SlurmCluster) -> Iterator[tuple[int, Path, str]]:
    """A running job of alice, step 0 under ``sckpt run``: (job id, work dir, job name)."""
    name = f"sec-alice-{uuid.uuid4().hex[:6]}"
    with user_workdir(ALICE) as workdir:
        job_id = submit_under_run(slurm_cluster, ALICE, workdir, name)
        try:
            yield job_id, workdir, name
        finally:
            slurm_cluster.run("scancel", str(job_id), check=False)


def _unchanged(cluster: SlurmCluster, job_id: int, facts: dict[str, str], files: Digest) -> None:
    """The job, its steps and alice's files are exactly as before."""
    assert job_facts(cluster, job_id) == facts
    assert f"{job_id}.0" in running_steps(cluster, job_id)
    assert tree_digest(_workdir_of(cluster, job_id)) == files


def _workdir_of(cluster: SlurmCluster, job_id: int) -> Path:
    out = cluster.run("scontrol", "show", "job", "-o", str(job_id)).stdout
    return Path(next(w.split("=", 1)[1] for w in out.split() if w.startswith("WorkDir=")))


# ------------------------------------------------------------------ the store's files


def test_state_files_belong_to_the_job_user_and_other_users_cannot_rewrite_them(
    slurm_cluster: SlurmCluster, alice_job: tuple[int, Path, str], tmp_path: Path
) -> None:
    job_id, workdir, _name = alice_job
    state = workdir / ".sckpt"
    # Root (an operator) changes the step, so root-written files are checked too.
    with open_facade(Settings(audit_log=tmp_path / "audit.log"), engine="cooperative") as f:
        f.disable(StepId(job_id, 0))
        f.enable(StepId(job_id, 0))
    alice = uid_of(ALICE)
    paths = [
        state,
        state / f"{job_id}.0.json",
        state / f"{job_id}.0.lock",
        workdir / f"{job_id}.step0",
        workdir / f"{job_id}.step0" / "task0",
        workdir / f"{job_id}.step0" / "task0" / "g1.partial",  # the generation written next
    ]
    for path in paths:
        st = path.lstat()
        assert st.st_uid == alice, f"{path} is owned by uid {st.st_uid}"
        assert not stat.S_ISLNK(st.st_mode)
        assert st.st_mode & 0o022 == 0, f"{path} has mode {stat.S_IMODE(st.st_mode):o}"
    assert list(state.glob(".*.tmp")) == []  # no temporary file left behind

    facts = job_facts(slurm_cluster, job_id)
    before = tree_digest(workdir)
    record = state / f"{job_id}.0.json"
    attempt = f"""
import os, sys
results = []
def tryit(what, fn):
    try:
        fn()
        results.append(what + ":DONE")
    except OSError as exc:
        results.append(what + ":" + (exc.strerror or str(exc)))
rec, d = {str(record)!r}, {str(state)!r}
tryit("append", lambda: open(rec, "a").write("x"))
tryit("truncate", lambda: os.truncate(rec, 0))
tryit("create", lambda: open(os.path.join(d, "{job_id}.0.json.new"), "w"))
tryit("rename", lambda: os.rename(rec, rec + ".moved"))
tryit("unlink", lambda: os.unlink(rec))
tryit("chmod", lambda: os.chmod(rec, 0o666))
tryit("lock", lambda: open(os.path.join(d, "{job_id}.0.lock"), "a"))
tryit("image", lambda: open({str(workdir / f"{job_id}.step0" / "task0" / "current" / "x")!r}, "w"))
print("\\n".join(results))
"""
    out = run_as(slurm_cluster, BOB, str(PYTHON), "-c", attempt)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 8, out.stdout
    for line in out.stdout.splitlines():
        _what, _, why = line.partition(":")
        assert why in ("Permission denied", "Operation not permitted"), line
    _unchanged(slurm_cluster, job_id, facts, before)


# ------------------------------------------------------------------ the command line

_ACTIONS = [
    ["create", "{s}", "--max-wait", "5"],
    ["vacate", "{s}", "--max-wait", "5"],
    ["vacate", "{j}", "--max-wait", "5"],
    ["restart", "{j}"],
    ["restart", "{j}", "--stick", "--image-dir", "/tmp"],
    ["enable", "{s}"],
    ["disable", "{s}"],
    ["disable", "{j}"],
    ["complete", "{s}", "--error-code", "5", "--error-msg", "forged"],
    ["tasks", "{s}", "--nodelist", "sckpt-node"],
    ["checkpoint", "disable", "{s}"],
    ["checkpoint", "vacate", "{s}", "MaxWait=5"],
    ["checkpoint", "restart", "{j}", "StickToNodes"],
]


@pytest.mark.parametrize("words", _ACTIONS, ids=lambda w: "-".join(w[:2]).replace("{", ""))
def test_another_user_is_refused_every_action_by_the_command_line(
    slurm_cluster: SlurmCluster, alice_job: tuple[int, Path, str], words: list[str]
) -> None:
    job_id, workdir, _name = alice_job
    facts = job_facts(slurm_cluster, job_id)
    before = tree_digest(workdir)
    argv = [w.format(s=f"{job_id}.0", j=str(job_id)) for w in words]
    out = run_as(slurm_cluster, BOB, str(SCKPT), *argv)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    # Restart too checks whose job it is first (issue 34: it said ESLURM_JOB_NOT_FINISHED,
    # the reference's and 19.05's order, before any ownership check).
    assert "ESLURM_ACCESS_DENIED" in out.stderr or "EPERM" in out.stderr, out.stderr
    assert f"belongs to {ALICE}" in out.stderr, out.stderr
    _unchanged(slurm_cluster, job_id, facts, before)


_REFUSALS = ("ESLURM_ACCESS_DENIED", "ESLURM_USER_ID_MISSING", "EPERM")
"""How slurmctld answers a user acting on someone else's job (signals: USER_ID_MISSING)."""


def test_the_cluster_itself_refuses_the_engines_calls_from_another_user(
    slurm_cluster: SlurmCluster, alice_job: tuple[int, Path, str]
) -> None:
    """Beyond sckpt's own check: bob's process asks slurmctld directly, through libslurm."""
    job_id, workdir, _name = alice_job
    facts = job_facts(slurm_cluster, job_id)
    before = tree_digest(workdir)
    attempt = f"""
from sckpt.backend.libslurm import get_binding
from sckpt.backend.model import StepId
from sckpt.backend.errors import SlurmError
b = get_binding()
calls = [
    ("signal_step", lambda: b.signal_step(StepId({job_id}, 0), 15)),
    ("kill_step", lambda: b.kill_step(StepId({job_id}, 0), 9)),
    ("requeue_hold", lambda: b.requeue({job_id}, hold=True)),
    ("requeue", lambda: b.requeue({job_id}, hold=False)),
    ("release", lambda: b.release({job_id})),
    ("set_required_nodes", lambda: b.set_required_nodes({job_id}, "sckpt-node")),
]
for name, call in calls:
    try:
        call()
        print(name, "ACCEPTED")
    except SlurmError as exc:
        print(name, exc.name, exc.code)
"""
    out = run_as(slurm_cluster, BOB, str(PYTHON), "-c", attempt)
    assert out.returncode == 0, out.stderr
    answers = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert set(answers) == {
        "signal_step", "kill_step", "requeue_hold", "requeue", "release", "set_required_nodes",
    }  # fmt: skip
    for name, answer in answers.items():
        assert "ACCEPTED" not in answer, f"slurmctld accepted {name} from {BOB}"
        assert answer.split()[0] in _REFUSALS, f"{name}: {answer}"
    _unchanged(slurm_cluster, job_id, facts, before)


# ------------------------------------------------------------------ the wrapper


@pytest.mark.parametrize("how", ["work-dir", "state-dir"])
def test_another_users_wrapper_cannot_register_into_the_step(
    slurm_cluster: SlurmCluster, alice_job: tuple[int, Path, str], how: str
) -> None:
    """bob runs ``sckpt run`` claiming to be a task of alice's step: nothing of hers changes.

    The wrapper still runs bob's program (the job matters more than its checkpoints) and
    says it has no checkpoint support.
    """
    job_id, workdir, _name = alice_job
    facts = job_facts(slurm_cluster, job_id)
    before = tree_digest(workdir)
    env = {
        "SLURM_JOB_ID": str(job_id),
        "SLURM_STEP_ID": "0",
        "SLURM_PROCID": "7",
        "SCKPT_WORK_DIR": str(workdir),
    }
    options = ["--state-dir", str(workdir / ".sckpt")] if how == "state-dir" else []
    options += ["--image-dir", str(workdir)]
    out = run_as(
        slurm_cluster, BOB, str(SCKPT), "run", *options, "--", "/bin/echo", "bob-ran", env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "bob-ran"
    assert "WITHOUT checkpoint support" in out.stderr
    # alice's directory is not bob's: his wrapper refuses to use it, naming it and why.
    assert f"{workdir} belongs to uid {uid_of(ALICE)}, neither root nor the job's user" in (
        out.stderr
    )
    _unchanged(slurm_cluster, job_id, facts, before)


# ------------------------------------------------------------------ the console, as bob


def _proc_ids(pid: int) -> tuple[list[int], list[int], int]:
    """(real/effective/saved/fs uids, gids, effective capabilities) of a process."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    uids = [int(x) for x in fields["Uid"].split()]
    gids = [int(x) for x in fields["Gid"].split()]
    return uids, gids, int(fields["CapEff"].strip(), 16)


def _descendants(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True)
    children: dict[int, list[int]] = {}
    for line in out.stdout.splitlines():
        child, parent = (int(x) for x in line.split())
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def test_the_console_run_by_another_user_is_refused_and_runs_unprivileged(
    slurm_cluster: SlurmCluster, alice_job: tuple[int, Path, str]
) -> None:
    job_id, workdir, name = alice_job
    facts = job_facts(slurm_cluster, job_id)
    before = tree_digest(workdir)
    env = user_env(slurm_cluster, BOB, TERM="xterm-256color", TEXTUAL_ANIMATIONS="none")
    command = f"runuser -u {BOB} -- env -i {' '.join(env)} {SCKPT}"
    with Tmux(command, width=160, height=40) as term:
        term.wait(lambda s: "sckpt" in s and "updated" in s, timeout=90)
        term.press_until("/", lambda s: "field:value" in s)
        term.type(f"id:{job_id}")
        term.wait(lambda s: f"id:{job_id}" in s, timeout=30)
        term.keys("Enter")
        term.wait(lambda s: name in s and f"Steps of {job_id}" in s, timeout=30)
        term.keys("Enter")  # into the job's steps: .batch, .extern, .0 (all alice's)
        term.wait(lambda s: f"{job_id}.0" in s, timeout=30)
        term.keys("Down", "Down")
        term.keys("d")
        screen = term.wait(lambda s: "refused" in s and "ACCESS_DENIED" in s, timeout=60)
        assert f"belongs to {ALICE}" in screen.replace("\n", "") or "ACCESS_DENIED" in screen
        term.keys("e")
        term.wait(lambda s: s.count("ACCESS_DENIED") >= 1, timeout=30)
        # Every process the console started runs as bob, with no capability at all.
        bob = uid_of(BOB)
        bob_gid = os.getgrouplist(BOB, pwd.getpwnam(BOB).pw_gid)
        sckpt_pids = [
            p
            for p in _descendants(term.pane_pid())
            if "sckpt" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
            and Path(f"/proc/{p}/comm").read_text().strip() != "runuser"
        ]
        assert sckpt_pids, "the console process was not found"
        for pid in sckpt_pids:
            uids, gids, caps = _proc_ids(pid)
            assert uids == [bob] * 4, f"pid {pid} uids {uids}"
            assert all(g in bob_gid for g in gids), f"pid {pid} gids {gids}"
            assert caps == 0, f"pid {pid} has capabilities {caps:x}"
        term.keys("q")
    _unchanged(slurm_cluster, job_id, facts, before)


# ------------------------------------------------------------------ root is not tricked


@pytest.fixture
def bob_job(slurm_cluster: SlurmCluster) -> Iterator[tuple[int, Path]]:
    """A running job of bob (step 0 under ``sckpt run``) in a directory bob owns."""
    with user_workdir(BOB) as workdir:
        job_id = submit_under_run(slurm_cluster, BOB, workdir)
        try:
            yield job_id, workdir
        finally:
            slurm_cluster.run("scancel", str(job_id), check=False)


@pytest.fixture
def victim() -> Iterator[Path]:
    """A root-only file standing for /etc/shadow."""
    path = Path(f"/tmp/sckpt-sec-victim-{uuid.uuid4().hex[:8]}")
    path.write_text("root secret\n")
    path.chmod(0o600)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def _assert_victim_intact(path: Path) -> None:
    st = path.lstat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, 0o600)
    assert path.read_text() == "root secret\n"


def test_root_operator_never_follows_a_users_planted_links_or_fifos(
    slurm_cluster: SlurmCluster, bob_job: tuple[int, Path], victim: Path, tmp_path: Path
) -> None:
    job_id, workdir = bob_job
    state = workdir / ".sckpt"
    target = StepId(job_id, 0)
    lock, record = state / f"{job_id}.0.lock", state / f"{job_id}.0.json"
    plant = """
import os, sys
what, path, dest = sys.argv[1:4]
if os.path.lexists(path):
    os.unlink(path)
if what == "link":
    os.symlink(dest, path)
elif what == "fifo":
    os.mkfifo(path, 0o644)
"""

    def as_bob(what: str, path: Path, dest: Path | str = "") -> None:
        out = run_as(slurm_cluster, BOB, str(PYTHON), "-c", plant, what, str(path), str(dest))
        assert out.returncode == 0, out.stderr

    settings = Settings(audit_log=tmp_path / "audit.log")
    with open_facade(settings, engine="cooperative") as facade:
        # 1. The lock file points at a root-only file: refused, the file is not touched
        #    (before the fix, root opened it through the link and chowned it to bob).
        as_bob("link", lock, victim)
        with pytest.raises(E.SckptError) as refused:
            facade.disable(target)
        assert "symbolic link" in str(refused.value) or "Permission" in str(refused.value)
        _assert_victim_intact(victim)

        # 2. The temporary file root will write (its name holds root's pid) is planted.
        as_bob("rm", lock)
        planted = state / f".{record.name}.{os.getpid()}.tmp"
        as_bob("link", planted, victim)
        facade.disable(target)
        _assert_victim_intact(victim)
        rec_st = record.lstat()
        assert stat.S_ISREG(rec_st.st_mode) and rec_st.st_uid == uid_of(BOB)
        assert stat.S_IMODE(rec_st.st_mode) == 0o644
        with pytest.raises(E.Disabled):
            facade.able(target)
        facade.enable(target)

        # 3. The record itself is a link to a root-only file: never read through it.
        as_bob("link", record, victim)
        views = _snapshot_within(facade, 60)
        shown = _state_of(views, target)
        assert shown.kind is CheckpointKind.UNKNOWN and "symbolic link" in shown.reason
        assert "root secret" not in repr(views)
        _assert_victim_intact(victim)

        # 4. The record is a FIFO: a refresh does not hang on it (it is not a file).
        as_bob("fifo", record)
        shown = _state_of(_snapshot_within(facade, 60), target)
        assert shown.kind is CheckpointKind.UNKNOWN and "not a regular file" in shown.reason
        with pytest.raises(E.SckptError):
            facade.disable(target)


def _snapshot_within(facade: Facade, limit: float) -> Snapshot:
    """``facade.snapshot()``, failing (not hanging) when it never returns: a hang guard."""
    box: list[Snapshot] = []
    thread = threading.Thread(target=lambda: box.append(facade.snapshot()), daemon=True)
    thread.start()
    thread.join(limit)
    assert box, f"snapshot did not return within {limit} s: it blocked on the state file"
    return box[0]


def _state_of(snapshot: Snapshot, target: StepId) -> CheckpointState:
    for job in snapshot.jobs:
        for view in job.steps:
            if view.step.step_id == target:
                return view.checkpoint
    raise AssertionError(f"{target} not in the snapshot")


def test_a_record_planted_by_another_user_in_a_shared_state_dir_is_not_believed(
    slurm_cluster: SlurmCluster,
    alice_job: tuple[int, Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``$SCKPT_STATE_DIR`` on a shared sticky directory, bob plants a record for
    alice's step whose wake signal is SIGKILL: the operator's create must not send it."""
    job_id, _workdir, _name = alice_job
    shared = Path(f"/tmp/sckpt-sec-shared-{uuid.uuid4().hex[:8]}")
    shared.mkdir()
    shared.chmod(0o1777)
    try:
        plant = f"""
import json, os, time
rec = {{"format": 1, "job_id": {job_id}, "step": "0", "owner_uid": os.getuid(),
        "tasks": {{"0": {{"procid": 0, "host": "sckpt-node", "pid": 1, "since": 0,
                        "signal": "SIGKILL", "image_dir": "/tmp", "wake": "SIGKILL"}}}}}}
with open({str(shared / f"{job_id}.0.json")!r}, "w") as fh:
    json.dump(rec, fh)
os.chmod({str(shared / f"{job_id}.0.json")!r}, 0o644)
"""
        out = run_as(slurm_cluster, BOB, str(PYTHON), "-c", plant)
        assert out.returncode == 0, out.stderr
        facts = job_facts(slurm_cluster, job_id)
        monkeypatch.setenv("SCKPT_STATE_DIR", str(shared))
        with open_facade(Settings(audit_log=tmp_path / "a.log"), engine="cooperative") as f:
            shown = _state_of(f.snapshot(), StepId(job_id, 0))
            assert shown.kind is CheckpointKind.UNKNOWN
            assert f"uid {uid_of(BOB)}" in shown.reason
            with pytest.raises(E.SckptError) as refused:
                f.create(StepId(job_id, 0), max_wait=2)
            assert "not to the job's user" in str(refused.value)
        assert job_facts(slurm_cluster, job_id) == facts
        assert f"{job_id}.0" in running_steps(slurm_cluster, job_id)
    finally:
        subprocess.run(["rm", "-rf", str(shared)], check=False)


# ------------------------------------------------------------------ no elevation

_PRIVILEGE_CALLS = {
    "setuid", "seteuid", "setreuid", "setresuid", "setgid", "setegid", "setregid",
    "setresgid", "setgroups", "initgroups", "setfsuid", "setfsgid",
}  # fmt: skip
_ELEVATORS = {"sudo", "su", "runuser", "pkexec", "doas", "setpriv", "chroot", "capsh"}


def test_sckpt_has_no_setuid_files_and_no_code_that_changes_identity() -> None:
    """No installed file is set-uid/gid, and no code switches user or runs an elevator."""
    package = ROOT
    for path in [*package.joinpath("backend").rglob("*"), *package.joinpath("tui").rglob("*")]:
        if path.is_file():
            assert not path.stat().st_mode & (stat.S_ISUID | stat.S_ISGID), path
    assert not SCKPT.stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
    offenders = []
    sources = [*package.joinpath("backend").rglob("*.py"), *package.joinpath("tui").rglob("*.py")]
    for path in sources:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in _PRIVILEGE_CALLS:
                offenders.append(f"{path}:{node.lineno} {node.attr}")
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                word = node.value.strip().split(" ")[0] if node.value.strip() else ""
                if word in _ELEVATORS or Path(word).name in _ELEVATORS:
                    offenders.append(f"{path}:{node.lineno} {node.value!r}")
    for source in package.joinpath("backend", "libslurm").glob("*.[ch]"):
        text = source.read_text()
        for call in _PRIVILEGE_CALLS:
            if f"{call}(" in text:
                offenders.append(f"{source}: {call}(")
    assert offenders == []


# ------------------------------------------------------------------ read-only reads


def test_read_only_reads_do_not_record_an_expired_checkpoint(
    slurm_cluster: SlurmCluster, alice_job: tuple[int, Path, str], tmp_path: Path
) -> None:
    """able/error find a request past its deadline: read-only reports the timeout without
    writing it to the state file; a normal console does record it (so this can fail)."""
    job_id, workdir, _name = alice_job
    target = StepId(job_id, 0)
    store = StepStore(workdir / ".sckpt", target)
    now = int(time.time())

    def overdue(rec: StepRecord) -> None:
        rec.in_progress = Request(
            request_id=f"{now}-sec", start=now - 60, by="sec-test", image_dir="",
            max_wait=5, deadline=now - 55, operation="create", pending=[0],
        )  # fmt: skip

    store.update(overdue)
    before = tree_digest(workdir / ".sckpt")
    settings = Settings(audit_log=tmp_path / "audit.log")
    with open_facade(settings, read_only=True, engine="cooperative") as facade:
        assert facade.error(target).code == TIMEOUT_CODE
        assert facade.able(target).in_progress_since == 0
    assert tree_digest(workdir / ".sckpt") == before
    assert not (tmp_path / "audit.log").exists()  # reads are not audited
    with open_facade(settings, engine="cooperative") as facade:
        assert facade.error(target).code == TIMEOUT_CODE
    record = store.read()
    assert record is not None and record.in_progress is None
    assert record.error_code == TIMEOUT_CODE
    assert tree_digest(workdir / ".sckpt") != before


def test_in_a_shared_state_dir_root_writes_leave_the_files_to_the_job_user(
    slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$SCKPT_STATE_DIR`` on a root-owned sticky directory: after an operator (root)
    disables and enables the step, its files are still alice's (her wrapper can update
    them) and bob can neither rewrite nor replace them."""
    shared = Path(f"/tmp/sckpt-sec-shared-{uuid.uuid4().hex[:8]}")
    shared.mkdir()
    shared.chmod(0o1777)
    try:
        with user_workdir(ALICE) as workdir:
            out = slurm_cluster.run(
                "sbatch", "--parsable", "-p", "debug", "-D", str(workdir), "-o", "/dev/null",
                f"--export=ALL,SCKPT_STATE_DIR={shared}",
                "--wrap", UNDER_RUN,
                user=ALICE,
            )  # fmt: skip
            job_id = int(out.stdout.strip().split(";")[0])
            try:
                record = shared / f"{job_id}.0.json"
                wait_for(lambda: catches_signal(shared, job_id), timeout=90)
                target = StepId(job_id, 0)
                monkeypatch.setenv("SCKPT_STATE_DIR", str(shared))
                with open_facade(Settings(audit_log=tmp_path / "a.log"), engine="cooperative") as f:
                    f.disable(target)
                    with pytest.raises(E.Disabled):
                        f.able(target)
                    f.enable(target)
                for path in (record, shared / f"{job_id}.0.lock"):
                    st = path.lstat()
                    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (uid_of(ALICE), 0o644), path
                assert list(shared.glob(".*.tmp")) == []
                # alice's own update (what her wrapper does) still works after root's.
                update = (
                    "from pathlib import Path; import os\n"
                    "from sckpt.backend.checkpointing.store import StepStore\n"
                    "from sckpt.backend.model import StepId\n"
                    f"s = StepStore(Path({str(shared)!r}), StepId({job_id}, 0),"
                    " owner=os.getuid())\n"
                    "s.update(lambda r: r.log('alice-update', 'alice'))\n"
                )
                done = run_as(slurm_cluster, ALICE, str(PYTHON), "-c", update)
                assert done.returncode == 0, done.stderr
                rec = StepStore(shared, target).read()
                assert rec is not None and rec.history[-1]["operation"] == "alice-update"
                # bob: neither rewrite nor replace nor remove (sticky directory).
                attack = (
                    "import os, sys\n"
                    "rec = sys.argv[1]\n"
                    "for what, fn in (('append', lambda: open(rec, 'a')),\n"
                    "                 ('replace', lambda: os.rename(sys.argv[2], rec)),\n"
                    "                 ('unlink', lambda: os.unlink(rec))):\n"
                    "    try:\n"
                    "        fn(); print(what, 'DONE')\n"
                    "    except OSError as exc:\n"
                    "        print(what, exc.strerror)\n"
                )
                mine = shared / f"bob-{uuid.uuid4().hex[:6]}"
                made = run_as(slurm_cluster, BOB, "/bin/sh", "-c", f"echo x > {mine}")
                assert made.returncode == 0, made.stderr
                tried = run_as(
                    slurm_cluster, BOB, str(PYTHON), "-c", attack, str(record), str(mine)
                )
                assert tried.returncode == 0, tried.stderr
                assert "DONE" not in tried.stdout, tried.stdout
                assert record.lstat().st_uid == uid_of(ALICE)
            finally:
                slurm_cluster.run("scancel", str(job_id), check=False)
    finally:
        subprocess.run(["rm", "-rf", str(shared)], check=False)
