"""A job's owner never steers where root writes: the adversarial module (real Slurm 22.05).

sckpt-alice runs a job whose step 0 is under ``sckpt run`` in a directory of her own; ROOTDIR
is a directory of root's inside ``/root`` (mode 700 above it), holding root's own files named
like the step's (its state file a valid copy of alice's record, so that only the path could
stop root from writing there).  Each test is one attack alice makes on her side of the store
(as herself, through ``runuser``), then root acts on her step with the ``sckpt`` command, as
an operator would.  For each: root's files stay byte-identical with the same owner and mode
(compared before and after), the action is refused or confined to alice's own directory,
and the audit log records the refusal.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SlurmCluster

from .security_support import (
    ALICE,
    SCKPT,
    job_facts,
    run_as,
    running_steps,
    submit_under_run,
    tree_digest,
    uid_of,
    user_workdir,
)

pytestmark = pytest.mark.slurm


class Scene:
    """alice's job, her work dir, root's ROOTDIR and root's ``sckpt`` with an audit log."""

    def __init__(self, cluster: SlurmCluster, job: int, work: Path, root_dir: Path) -> None:
        self.cluster = cluster
        self.job = job
        self.work = work
        self.state = work / ".sckpt"
        self.root_dir = root_dir
        self.audit = root_dir.parent / "audit.log"
        self.config = root_dir.parent / "sckpt.toml"
        self.config.write_text(f'audit_log = "{self.audit}"\nengine = "cooperative"\n')
        self.before = tree_digest(root_dir)
        """ROOTDIR before the attack: entries, owners, modes and bytes."""

    def alice(self, script: str) -> None:
        """Run a shell script as alice in her work dir (her side of the attack)."""
        out = run_as(self.cluster, ALICE, "sh", "-c", f"cd {self.work} && {script}")
        assert out.returncode == 0, (script, out.stderr)

    def root(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``sckpt`` as root, the operator."""
        env = {**os.environ, "SLURM_CONF": str(self.cluster.conf), "SCKPT_CONFIG": str(self.config)}
        return subprocess.run(
            [str(SCKPT), *args], capture_output=True, text=True, env=env, timeout=120, cwd="/tmp"
        )

    def audited(self) -> list[dict[str, object]]:
        if not self.audit.exists():
            return []
        return [json.loads(line) for line in self.audit.read_text().splitlines()]


@pytest.fixture(scope="module")
def alice_job(slurm_cluster: SlurmCluster) -> Iterator[tuple[int, Path]]:
    with user_workdir(ALICE, prefix="sckpt-adv-") as work:
        job = submit_under_run(slurm_cluster, ALICE, work, f"adv-{uuid.uuid4().hex[:6]}")
        try:
            yield job, work
        finally:
            slurm_cluster.run("scancel", str(job), check=False)


@pytest.fixture
def scene(slurm_cluster: SlurmCluster, alice_job: tuple[int, Path]) -> Iterator[Scene]:
    """A fresh ROOTDIR with root's files; alice's store put back as it was afterwards."""
    job, work = alice_job
    top = Path(tempfile.mkdtemp(prefix="sckpt-adv-", dir="/root"))
    root_dir = top / "ROOTDIR"
    root_dir.mkdir(mode=0o755)
    state = work / ".sckpt"
    for name in (f"{job}.0.lock", f"{job}.images.json", "victim"):
        (root_dir / name).write_text(f"root's own {name}\n")
    # root's own copy of the step's record: valid, so nothing but the path stops a write
    (root_dir / f"{job}.0.json").write_bytes((state / f"{job}.0.json").read_bytes())
    saved = {p.name: p.read_bytes() for p in state.iterdir() if p.is_file()}
    made = Scene(slurm_cluster, job, work, root_dir)
    try:
        yield made
    finally:
        # alice's side back to a plain directory with her files (whatever the attack left)
        run_as(slurm_cluster, ALICE, "sh", "-c", f"cd {work} && rm -rf .sckpt .sckpt-old")
        state.mkdir()
        shutil.chown(state, ALICE, ALICE)
        for name, data in saved.items():
            (state / name).write_bytes(data)
            shutil.chown(state / name, ALICE, ALICE)
        shutil.rmtree(top, ignore_errors=True)


def root_untouched(scene: Scene) -> None:
    """ROOTDIR: the same entries, bytes, owners and modes as before the attack."""
    assert tree_digest(scene.root_dir) == scene.before
    assert all(p.stat().st_uid == 0 for p in scene.root_dir.iterdir())


def refused_and_audited(
    scene: Scene, out: subprocess.CompletedProcess[str], operation: str, *said: str
) -> None:
    assert out.returncode == 1, out
    assert "Traceback" not in out.stderr
    for part in said:
        assert part in out.stderr, (part, out.stderr)
    line = scene.audited()[-1]
    assert (line["operation"], line["target"]) == (operation, f"{scene.job}.0")
    result = line["result"]
    assert isinstance(result, dict) and result["code"] != 0 and result["name"] != "SLURM_SUCCESS"


def test_the_repro_a_link_as_the_state_directory(scene: Scene) -> None:
    scene.alice(f"mv .sckpt .sckpt-old && ln -s {scene.root_dir} .sckpt")
    facts = job_facts(scene.cluster, scene.job)
    for operation in ("disable", "enable", "create"):
        out = scene.root(operation, f"{scene.job}.0")
        refused_and_audited(
            scene, out, operation, f"{scene.state} is a symbolic link owned by uid {uid_of(ALICE)}"
        )
    # Reading through it is refused too: root's files are not shown as alice's state.
    able = scene.root("able", f"{scene.job}.0")
    assert able.returncode == 1 and "symbolic link" in able.stderr
    root_untouched(scene)
    assert job_facts(scene.cluster, scene.job) == facts
    assert f"{scene.job}.0" in running_steps(scene.cluster, scene.job)


@pytest.mark.parametrize("which", ["json", "lock", "images.json"])
def test_a_link_as_a_file_of_the_store(scene: Scene, which: str) -> None:
    name = f"{scene.job}.0.{which}" if which != "images.json" else f"{scene.job}.images.json"
    target = scene.root_dir / name
    scene.alice(f"rm -f .sckpt/{name} && ln -s {target} .sckpt/{name}")
    out = scene.root("disable", f"{scene.job}.0")
    if which == "images.json":  # not used by disable: it works, and the link is left alone
        assert out.returncode == 0, out.stderr
        assert (scene.state / name).is_symlink()
        scene.root("enable", f"{scene.job}.0")
    else:
        refused_and_audited(scene, out, "disable", "symbolic link (refused)")
    root_untouched(scene)


def test_a_hard_link_to_a_file_of_roots(scene: Scene) -> None:
    """With protected_hardlinks off (as on some sites), alice links root's file as her lock
    and as her state file: root neither changes nor takes over the file."""
    outside = Path(tempfile.mkdtemp(prefix="sckpt-adv-hard-", dir="/tmp"))
    outside.chmod(0o755)  # root's, and alice can reach it to link its file
    victim = outside / "hard-victim"
    victim.write_text("root's file, linked by alice\n")
    victim.chmod(0o644)
    sysctl = Path("/proc/sys/fs/protected_hardlinks")
    was = sysctl.read_text().strip()
    before = (victim.read_bytes(), victim.stat().st_uid, victim.stat().st_mode)
    try:
        sysctl.write_text("0")
        scene.alice(f"rm -f .sckpt/{scene.job}.0.lock && ln {victim} .sckpt/{scene.job}.0.lock")
        done = scene.root("disable", f"{scene.job}.0")  # a lock file is opened, never written
        assert done.returncode == 0, done.stderr
        scene.alice(f"rm -f .sckpt/{scene.job}.0.json && ln {victim} .sckpt/{scene.job}.0.json")
        out = scene.root("enable", f"{scene.job}.0")
        refused_and_audited(scene, out, "enable", "corrupt")
        assert (victim.read_bytes(), victim.stat().st_uid, victim.stat().st_mode) == before
        assert victim.stat().st_nlink == 3  # alice's two names for it, nothing replaced it
    finally:
        sysctl.write_text(was)
        shutil.rmtree(outside, ignore_errors=True)
    root_untouched(scene)


@pytest.mark.parametrize("where", ["image dir", "task dir"])
def test_a_link_as_an_image_directory_confines_the_checkpoint_to_alice(
    scene: Scene, where: str
) -> None:
    """Images are written by alice's own task (her uid), never by root: a link to ROOTDIR
    there makes her checkpoint fail, and nothing of root's changes.  ("task dir" is where
    her wrapper makes each generation, ``task0/g<N>.partial``, and the link ``current``.)"""
    images = f"{scene.job}.step0"
    if where == "image dir":
        scene.alice(f"rm -rf {images} && ln -s {scene.root_dir} {images}")
    else:
        scene.alice(f"rm -rf {images}/task0 && ln -s {scene.root_dir} {images}/task0")
    out = scene.root("create", f"{scene.job}.0", "--max-wait", "20")
    refused_and_audited(scene, out, "create", "the checkpoint did not complete")
    root_untouched(scene)
    assert f"{scene.job}.0" in running_steps(scene.cluster, scene.job)
    scene.alice(f"rm -rf {images} && mkdir -p {images}/task0")


def test_a_directory_swapped_while_root_acts(scene: Scene) -> None:
    """alice flips .sckpt between her directory and a link to ROOTDIR as fast as she can
    (bounded: 8 s) while root disables and enables: each action works on her directory or
    is refused, and ROOTDIR never changes."""
    flipper = (
        f"cd {scene.work} && mv .sckpt .sckpt-real && end=$(($(date +%s) + 8)); "
        f"while [ $(date +%s) -lt $end ]; do "
        f"ln -sfn {scene.root_dir} .sckpt; rm -f .sckpt; mv .sckpt-real .sckpt; "
        f"mv .sckpt .sckpt-real; done; mv .sckpt-real .sckpt"
    )
    loop = subprocess.Popen(
        ["runuser", "-u", ALICE, "--", "sh", "-c", flipper],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    outcomes = []
    deadline = time.monotonic() + 7
    while time.monotonic() < deadline:
        for operation in ("disable", "enable"):
            out = scene.root(operation, f"{scene.job}.0")
            assert out.returncode in (0, 1) and "Traceback" not in out.stderr, out
            outcomes.append(out.returncode)
    assert loop.wait(timeout=30) == 0
    assert outcomes
    root_untouched(scene)
    refused = [line for line in scene.audited() if line["result"]["code"] != 0]  # type: ignore[index]
    assert len(refused) == outcomes.count(1)  # every refusal is in the audit log


@pytest.mark.parametrize("content", ["oversize", "malformed", "another job", "another owner"])
def test_a_state_file_alice_wrote_herself(scene: Scene, content: str) -> None:
    path = scene.state / f"{scene.job}.0.json"
    record = json.loads(path.read_text())
    if content == "oversize":
        data = b" " * (5 * 1024 * 1024) + json.dumps(record).encode()
        said = "bytes: at most"
    elif content == "malformed":
        data = b'{"format": 1, "job_id": '
        said = "corrupt"
    elif content == "another job":
        record["job_id"] = scene.job + 1
        data = json.dumps(record).encode()
        said = f"describes step {scene.job + 1}.0, not {scene.job}.0"
    else:
        record["owner_uid"] = uid_of("sckpt-bob")
        data = json.dumps(record).encode()
        said = f"names uid {uid_of('sckpt-bob')} as its owner"
    planted = scene.work / "planted.json"
    planted.write_bytes(data)
    planted.chmod(0o644)
    scene.alice(f"cp planted.json .sckpt/{scene.job}.0.json")
    for operation in ("disable", "create"):
        out = scene.root(operation, f"{scene.job}.0")
        refused_and_audited(scene, out, operation, said)
    root_untouched(scene)


def test_an_error_message_of_5000_characters_is_bounded(scene: Scene) -> None:
    path = scene.state / f"{scene.job}.0.json"
    record = json.loads(path.read_text())
    record["error_code"], record["error_msg"] = 5, "x" * 5000
    (scene.work / "long.json").write_text(json.dumps(record))
    scene.alice(f"cp long.json .sckpt/{scene.job}.0.json")
    out = scene.root("--json", "error", f"{scene.job}.0")
    assert out.returncode == 0, out.stderr
    message = json.loads(out.stdout)["results"][0]["error_message"]
    assert len(message) == 1024 and message.endswith("…")  # README: at most 1,024
    text = scene.root("error", f"{scene.job}.0").stdout
    assert len(text) < 1100
