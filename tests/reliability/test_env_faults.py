"""Faults of the machine sckpt runs on: each gives a clear message and a documented exit code.

The faults: munged stopped, slurm.conf removed / unreadable / syntactically bad, the shim
cache deleted or corrupted, Slurm's headers missing, libslurm replaced by an incompatible
library, and the audit log's filesystem full or read-only.  Every case runs the installed
``sckpt`` in a child process (``ls``, an action verb, the console's startup, ``doctor``) and
checks what a user would see: the exit code the CLI documents (1 refused, 3 Slurm or the
shim unusable; ``doctor`` 2), one ``sckpt:`` line saying what is wrong, no traceback, no
death by signal, no ``exit()`` from inside libslurm (its exit would not print sckpt's line),
and no hang (every run has a timeout).  Where an action was refused, the real job is checked
with ``squeue`` afterwards: nothing was done to it.

The shared cluster's daemons are never touched: munged is stopped only on the module's
``private_cluster``, and restarted at the end of that test.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import pty
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.generations import TaskImages

from tests.conftest import ROOT, PrivateCluster, SlurmCluster
from tests.helpers import catches_signal, wait_for
from tests.tmux import Tmux

pytestmark = pytest.mark.slurm

SCKPT = ROOT / ".venv" / "bin" / "sckpt"
EXAMPLE = ROOT / "examples" / "counter.py"
ALICE = "sckpt-alice"

# The exit codes sckpt/exit_codes.py names, and sckpt doctor's.
EXIT_REFUSED = 1
EXIT_UNREACHABLE = 3
EXIT_DOCTOR_UNUSABLE = 2


@dataclass(frozen=True)
class Run:
    """One finished ``sckpt`` run."""

    argv: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def clean_failure(self, code: int, *phrases: str) -> str:
        """Assert: exited (no signal) with ``code``, sckpt's own message, no traceback.

        Returns the stderr text in lower case for further checks.
        """
        where = f"sckpt {' '.join(self.argv)} -> {self.code}\nstderr: {self.stderr[-3000:]}"
        assert self.code >= 0, f"killed by signal {-self.code}: {where}"
        assert self.code == code, where
        for text in (self.stdout, self.stderr):
            assert "Traceback" not in text, where
            assert "internal error" not in text, where
        lowered = self.stderr.lower() + self.stdout.lower()
        for phrase in phrases:
            assert phrase.lower() in lowered, f"{phrase!r} not said: {where}"
        return lowered


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    """A directory the test user can reach: configs, caches, audit logs.

    Sticky, as /tmp is: sckpt refuses a state directory under one that others may write
    and that is not sticky (they could swap the job's directory for a link).
    """
    path = Path(tempfile.mkdtemp(prefix="sckpt-envfaults-", dir="/tmp"))
    path.chmod(0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def config(shared: Path) -> Path:
    """sckpt's config: the audit log in the test's directory, the cooperative engine."""
    path = shared / "config.toml"
    path.write_text(f'audit_log = "{shared}/audit/audit.log"\nengine = "cooperative"\n')
    path.chmod(0o644)
    return path


@pytest.fixture(scope="module")
def good_cache(shared: Path, slurm_cluster: SlurmCluster, config: Path) -> Path:
    """A shim cache built once by a successful run (tests copy it before breaking it)."""
    cache = shared / "cache-good"
    run = sckpt("ls", env=base_env(slurm_cluster.conf, config, cache))
    assert run.code == 0, run.stderr
    assert list(cache.glob("shim/*/*.so")), "the first run built no shim"
    return cache


def base_env(conf: Path | None, config: Path, cache: Path, **extra: str) -> dict[str, str]:
    """An environment with no Slurm or sckpt variables but the ones a test sets."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SCKPT_", "XDG_"))}
    env.update(
        SCKPT_CONFIG=str(config),
        SCKPT_CACHE_DIR=str(cache),
        XDG_STATE_HOME=str(config.parent / "state"),
        NO_COLOR="1",
    )
    if conf is not None:
        env["SLURM_CONF"] = str(conf)
    env.update(extra)
    return env


def sckpt(*argv: str, env: dict[str, str], user: str | None = None, timeout: float = 240) -> Run:
    """Run the installed sckpt (as ``user`` via runuser when given); a hang fails the test."""
    cmd = [str(SCKPT), *argv]
    if user is not None:
        keep = {k: v for k, v in env.items() if k.startswith(("SLURM_", "SCKPT_", "XDG_"))}
        keep.update(HOME=f"/home/{user}", NO_COLOR="1", PATH=env.get("PATH", "/usr/bin:/bin"))
        cmd = ["runuser", "-u", user, "--", "env", *(f"{k}={v}" for k, v in keep.items()), *cmd]
    if not argv:
        return _console_startup(cmd, env, timeout)
    try:
        proc = subprocess.run(
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd="/tmp",
        )
    except subprocess.TimeoutExpired as hung:
        raise AssertionError(f"sckpt {' '.join(argv)} hung for {timeout} s") from hung
    return Run(tuple(argv), proc.returncode, proc.stdout, proc.stderr)


def _console_startup(cmd: list[str], env: dict[str, str], timeout: float) -> Run:
    """The console's startup as an operator meets it: on a terminal (a pty for stdin, stdout
    and stderr; without one the console refuses at once, whatever the fault).  What it
    wrote comes back as ``stderr``."""
    main, child = pty.openpty()
    try:
        try:
            proc = subprocess.run(
                cmd,
                env={**env, "TERM": "xterm-256color"},
                stdin=child,
                stdout=child,
                stderr=child,
                timeout=timeout,
                cwd="/tmp",
            )
        except subprocess.TimeoutExpired as hung:
            raise AssertionError(f"the console's startup hung for {timeout} s") from hung
        os.set_blocking(main, False)
        said = b""
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(main, 65536):
                said += chunk
    finally:
        os.close(main)
        os.close(child)
    text = said.decode(errors="replace").replace("\r\n", "\n")
    return Run((), proc.returncode, "", text)


def step_running(cluster: SlurmCluster, step: str) -> bool:
    out = cluster.run("squeue", "-h", "-s", "-o", "%i", check=False).stdout.split()
    return step in out


@pytest.fixture(scope="module")
def plain_step(slurm_cluster: SlurmCluster) -> Iterator[str]:
    """A running step of the shared cluster: the target of the refused action verbs."""
    out = slurm_cluster.run(
        "sbatch", "--parsable", "-o", "/dev/null", "-J", "envfault",
        "--wrap", "srun -n1 sleep 900",
    )  # fmt: skip
    job = int(out.stdout.strip().split(";")[0])
    step = f"{job}.0"
    try:
        wait_for(lambda: step_running(slurm_cluster, step), timeout=90)
        yield step
    finally:
        slurm_cluster.run("scancel", str(job), check=False)


def every_surface(
    env: dict[str, str],
    target: str,
    code: int,
    *phrases: str,
    user: str | None = None,
    timeout: float = 240,
) -> None:
    """``ls``, an action verb, the console's startup and ``doctor`` all fail cleanly."""
    for argv in (("ls",), ("vacate", target), ()):
        sckpt(*argv, env=env, user=user, timeout=timeout).clean_failure(code, *phrases)
    doctor = sckpt("doctor", env=env, user=user, timeout=timeout)
    doctor.clean_failure(EXIT_DOCTOR_UNUSABLE, *phrases)
    assert "FAIL" in doctor.stdout


# -- slurm.conf ------------------------------------------------------------------------------


def test_slurm_conf_removed(
    shared: Path, config: Path, good_cache: Path, slurm_cluster: SlurmCluster, plain_step: str
) -> None:
    conf = shared / "removed.conf"
    shutil.copy(slurm_cluster.conf, conf)
    conf.unlink()
    env = base_env(conf, config, good_cache)
    every_surface(env, plain_step, EXIT_UNREACHABLE, str(conf), "SLURM_CONF")
    assert step_running(slurm_cluster, plain_step)


def test_slurm_conf_unreadable_by_the_user(
    shared: Path, config: Path, slurm_cluster: SlurmCluster, plain_step: str
) -> None:
    """Run as sckpt-alice: root reads any file, so the fault needs an unprivileged user."""
    conf = shared / "unreadable.conf"
    shutil.copy(slurm_cluster.conf, conf)
    conf.chmod(0o000)
    cache = shared / "cache-alice"
    cache.mkdir(exist_ok=True)
    shutil.chown(cache, ALICE, ALICE)
    env = base_env(conf, config, cache)
    every_surface(env, plain_step, EXIT_UNREACHABLE, str(conf), "not readable", user=ALICE)
    # The same user with a readable copy gets past this point (so the probe could succeed).
    conf.chmod(0o644)
    run = sckpt("ls", "-j", plain_step.split(".")[0], env=env, user=ALICE)
    assert run.code == 0, run.stderr
    assert plain_step.split(".")[0] in run.stdout
    assert step_running(slurm_cluster, plain_step)


@pytest.mark.parametrize(
    "text, said",
    [
        ('ClusterName=x\nthis is = = not slurm\nSlurmctldHost=\n"unterminated\n', "parse error"),
        ("", "is empty"),
        ("Include /nonexistent/sckpt-include.conf\nClusterName=x\n", "sckpt-include.conf"),
    ],
    ids=["garbage", "empty", "missing-include"],
)
def test_slurm_conf_syntactically_bad(
    text: str,
    said: str,
    shared: Path,
    config: Path,
    good_cache: Path,
    slurm_cluster: SlurmCluster,
    plain_step: str,
) -> None:
    """libslurm's slurm_init would exit() on these; sckpt says so and lives."""
    conf = shared / "bad.conf"
    conf.write_text(text)
    conf.chmod(0o644)
    env = base_env(conf, config, good_cache)
    # 45 s per command: libslurm itself retries a missing Include for 60 s before failing
    # (it waits for a shared filesystem), which made every command stall; sckpt answers in
    # well under a second.  The bound is generous for a loaded machine, not a speed target.
    every_surface(env, plain_step, EXIT_UNREACHABLE, str(conf), said, "fix slurm.conf", timeout=45)
    assert step_running(slurm_cluster, plain_step)


# -- the shim cache --------------------------------------------------------------------------


def intact_builds(cache: Path) -> list[Path]:
    """Built modules whose bytes are the ones their build recorded (meta.json's digest)."""
    intact = []
    for module in cache.glob("shim/*/*.so"):
        try:
            meta = json.loads((module.parent / "meta.json").read_text())
        except (OSError, ValueError):
            continue
        if meta.get("module_sha256") == hashlib.sha256(module.read_bytes()).hexdigest():
            intact.append(module)
    return intact


def _copy_cache(good: Path, where: Path) -> tuple[Path, Path]:
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(good, where)
    (module,) = where.glob("shim/*/*.so")
    return where, module


def test_shim_cache_deleted_is_rebuilt(
    shared: Path, config: Path, good_cache: Path, slurm_cluster: SlurmCluster, plain_step: str
) -> None:
    cache, _module = _copy_cache(good_cache, shared / "cache-deleted")
    shutil.rmtree(cache)
    run = sckpt(
        "ls", "-j", plain_step.split(".")[0], env=base_env(slurm_cluster.conf, config, cache)
    )
    assert run.code == 0, run.stderr
    assert plain_step.split(".")[0] in run.stdout
    assert intact_builds(cache)  # built again


@pytest.mark.parametrize("damage", ["truncate", "garbage", "meta-garbage", "module-removed"])
def test_shim_cache_corrupted_is_rebuilt(
    damage: str,
    shared: Path,
    config: Path,
    good_cache: Path,
    slurm_cluster: SlurmCluster,
    plain_step: str,
) -> None:
    """A truncated module made dlopen raise SIGBUS (the process died); now it is rebuilt."""
    cache, module = _copy_cache(good_cache, shared / f"cache-{damage}")
    if damage == "truncate":
        os.truncate(module, 1000)
    elif damage == "garbage":
        module.write_bytes(b"\x7fELF garbage" * 100)
    elif damage == "meta-garbage":
        (module.parent / "meta.json").write_text("{ not json")
    else:
        module.unlink()
    damaged = module.read_bytes() if module.exists() and damage != "meta-garbage" else b""
    env = base_env(slurm_cluster.conf, config, cache)
    run = sckpt("ls", "-j", plain_step.split(".")[0], env=env)
    assert run.code == 0, f"{run.code}: {run.stderr}"
    assert plain_step.split(".")[0] in run.stdout
    assert intact_builds(cache)
    if module.exists():  # (a concurrent edit of shim.c would change the key, so the path)
        assert module.read_bytes() != damaged
    doctor = sckpt("doctor", env=env)
    assert doctor.code == 0, doctor.stdout
    assert "FAIL" not in doctor.stdout


def test_shim_cache_unusable_is_refused_clearly(
    shared: Path, config: Path, slurm_cluster: SlurmCluster, plain_step: str
) -> None:
    """A cache path that cannot be a directory: the message names it and the fix."""
    blocker = shared / "cache-is-a-file"
    blocker.write_text("not a directory\n")
    env = base_env(slurm_cluster.conf, config, blocker)
    every_surface(env, plain_step, EXIT_UNREACHABLE, str(blocker), "SCKPT_CACHE_DIR")
    assert step_running(slurm_cluster, plain_step)


# -- headers and library -----------------------------------------------------------------------


def test_headers_missing_without_a_cache(
    shared: Path, config: Path, slurm_cluster: SlurmCluster, plain_step: str
) -> None:
    """SLURM_INCLUDE_DIR replaces the default prefixes, so an empty one hides /usr/include."""
    empty = shared / "no-headers"
    empty.mkdir(exist_ok=True)
    env = base_env(slurm_cluster.conf, config, shared / "cache-none", SLURM_INCLUDE_DIR=str(empty))
    every_surface(env, plain_step, EXIT_UNREACHABLE, "slurm/slurm.h", str(empty), "libslurm-dev")
    assert not (shared / "cache-none").exists() or not list((shared / "cache-none").rglob("*.so"))
    assert step_running(slurm_cluster, plain_step)


def test_headers_missing_with_a_built_cache(
    shared: Path, config: Path, good_cache: Path, slurm_cluster: SlurmCluster, plain_step: str
) -> None:
    """The shim built earlier for this very library keeps working without the headers."""
    cache, _module = _copy_cache(good_cache, shared / "cache-noheaders")
    empty = shared / "no-headers"
    empty.mkdir(exist_ok=True)
    env = base_env(slurm_cluster.conf, config, cache, SLURM_INCLUDE_DIR=str(empty))
    run = sckpt("ls", "-j", plain_step.split(".")[0], env=env)
    assert run.code == 0, run.stderr
    assert plain_step.split(".")[0] in run.stdout
    doctor = sckpt("doctor", env=env)
    assert doctor.code == 0, doctor.stdout
    assert "headers" in doctor.stdout and str(empty) in doctor.stdout


FAKE_LIBSLURM = r"""
/* A library that is not the Slurm of the installed headers: another API version. */
%(release)s
long slurm_api_version(void) { return 39L << 16; }
void slurm_init(const char *conf) { (void) conf; }
"""


def _fake_libslurm(where: Path, claims_release: bool) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    source = where / "fake.c"
    release = 'const char sckpt_fake_release[] = "slurm 22.05.8";' if claims_release else ""
    source.write_text(FAKE_LIBSLURM % {"release": release})
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-Wl,-soname,libslurm.so.39", "-o",
         str(where / "libslurm.so.39"), str(source)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    (where / "libslurm.so").symlink_to("libslurm.so.39")
    return where


@pytest.mark.parametrize("claims_release", [False, True], ids=["other-release", "same-release"])
def test_incompatible_libslurm_is_refused(
    claims_release: bool,
    shared: Path,
    config: Path,
    good_cache: Path,
    slurm_cluster: SlurmCluster,
    plain_step: str,
) -> None:
    """A libslurm of another soname and API version: refused before any call through it.

    ``same-release`` carries the headers' release text (defeating the cheap release check):
    the shim's unresolved symbols then refuse it when it is loaded, still with a message.
    """
    lib = _fake_libslurm(shared / f"fakelib-{claims_release}", claims_release)
    cache, _module = _copy_cache(good_cache, shared / f"cache-fakelib-{claims_release}")
    env = base_env(slurm_cluster.conf, config, cache, SLURM_LIB_DIR=str(lib))
    phrase = "does not load" if claims_release else "is not Slurm 22.05"
    every_surface(env, plain_step, EXIT_UNREACHABLE, str(lib), phrase, "libslurm-dev")
    assert step_running(slurm_cluster, plain_step)


# -- munged ------------------------------------------------------------------------------------


def test_munged_stopped(
    private_cluster: PrivateCluster, shared: Path, config: Path, good_cache: Path
) -> None:
    """No credential can be made: every surface says munge, the job is untouched after."""
    out = private_cluster.run(
        "sbatch", "--parsable", "-o", "/dev/null", "--wrap", "srun -n1 sleep 900"
    )
    job = int(out.stdout.strip().split(";")[0])
    step = f"{job}.0"
    env = base_env(private_cluster.conf, config, good_cache)
    try:
        wait_for(lambda: step_running(private_cluster, step), timeout=90)
        munged = private_cluster.pid("munged")
        os.kill(munged, signal.SIGTERM)
        wait_for(lambda: not Path(f"/proc/{munged}").exists(), timeout=30)
        for argv in (("ls",), ("vacate", step), ("disable", step)):
            sckpt(*argv, env=env).clean_failure(EXIT_UNREACHABLE, "munge")
        doctor = sckpt("doctor", env=env)
        doctor.clean_failure(EXIT_DOCTOR_UNUSABLE, "authentication", "start munged")
        _console_reports_outage(env)
    finally:
        up = private_cluster.script("up")
        assert up.returncode == 0, up.stderr
    wait_for(lambda: step_running(private_cluster, step), timeout=60)
    # Nothing was done while munged was down: the step runs, the job was never requeued.
    shown = private_cluster.run("scontrol", "show", "job", str(job)).stdout
    assert "Restarts=0" in shown and "JobState=RUNNING" in shown
    run = sckpt("ls", "-j", str(job), env=env)
    assert run.code == 0, run.stderr
    private_cluster.run("scancel", str(job), check=False)


def _console_reports_outage(env: dict[str, str]) -> None:
    """The console starts in a real terminal, says what failed, and quits on q.

    libslurm logs its own "Munge encode failed" lines on the C stderr stream; they must not
    be written over the screen (Textual draws on the same descriptor).  The header is read
    at 160 columns: at 80 it truncates the error to a few letters (the console's layout).
    """
    exported = [f"{k}={v}" for k, v in env.items() if k.startswith(("SLURM_", "SCKPT_", "XDG_"))]
    status = Path(env["XDG_STATE_HOME"]).parent / "console-status"
    status.unlink(missing_ok=True)
    command = f"{SCKPT}; echo $? > {status}; sleep 60"  # the pane outlives the console
    # COLUMNS/LINES as the pane's: an inherited COLUMNS=80 would make the app draw at 80.
    term_env = [*exported, "NO_COLOR=1", "TERM=xterm-256color", "COLUMNS=160", "LINES=40"]
    with Tmux(command, width=160, height=40, env=term_env) as term:
        screen = term.wait(lambda s: "authentication" in s.lower(), 90)
        time.sleep(3)  # more refreshes, each failing: libslurm logs again every time
        screen = term.screen()
        assert "NO DATA YET" in screen  # started during the outage: nothing loaded
        for noise in ("Traceback", "Munge encode failed", "error:"):
            assert noise not in screen, screen
        term.press_until("q", lambda _s: status.exists())
    code = wait_for(lambda: status.read_text().strip() if status.exists() else "", 30)
    assert code == "0", code


# -- the audit log -----------------------------------------------------------------------------


@pytest.fixture
def coop_step(shared: Path, slurm_cluster: SlurmCluster) -> Iterator[tuple[str, Path]]:
    """A checkpoint-capable step (sckpt run) of alice on the shared cluster, and its dir."""
    work = Path(tempfile.mkdtemp(prefix="work-", dir=shared))
    shutil.chown(work, ALICE, ALICE)
    out = slurm_cluster.run(
        "sbatch", "--parsable", "-o", "/dev/null", f"--chdir={work}", "-J", "envfault-coop",
        "--wrap",
        f"srun -n1 {SCKPT} run --poll 0.5 --grace 0.5 --name counter -- /usr/bin/python3 {EXAMPLE} "
        f"--log {work}/step0.log",
        user=ALICE, cwd=str(work),
    )  # fmt: skip
    job = int(out.stdout.strip().split(";")[0])
    step = f"{job}.0"
    try:
        wait_for(lambda: catches_signal(work / ".sckpt", job), timeout=90)
        wait_for(lambda: (work / "step0.log").exists(), timeout=60)
        yield step, work
    finally:
        slurm_cluster.run("scancel", str(job), check=False)
        wait_for(
            lambda: not slurm_cluster.run("squeue", "-h", "-j", str(job), check=False).stdout,
            timeout=90,
        )


@pytest.fixture
def audit_mount(shared: Path) -> Iterator[Path]:
    """A tiny tmpfs for the audit log (root mounts it; unmounted afterwards)."""
    mnt = Path(tempfile.mkdtemp(prefix="auditfs-", dir=shared))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0777", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    assert mounted.returncode == 0, f"cannot mount a tmpfs: {mounted.stderr}"
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(directory: Path) -> None:
    """Write until ENOSPC (the filesystem is then full)."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as full:
        assert full.errno == errno.ENOSPC, full
    finally:
        os.close(fd)
    st = os.statvfs(directory)
    assert st.f_bfree * st.f_frsize < 4096, "the tmpfs did not fill"


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_audit_log_unwritable_refuses_the_action(
    fault: str,
    audit_mount: Path,
    coop_step: tuple[str, Path],
    shared: Path,
    good_cache: Path,
    slurm_cluster: SlurmCluster,
) -> None:
    step, work = coop_step
    log = audit_mount / "audit.log"
    log.write_text("")  # the log exists: open() alone would succeed on a full disk
    conf = shared / f"audit-{fault}.toml"
    conf.write_text(f'audit_log = "{log}"\nengine = "cooperative"\n')
    if fault == "full":
        _fill(audit_mount)
    else:
        subprocess.run(["mount", "-o", "remount,ro", str(audit_mount)], check=True)
    env = base_env(slurm_cluster.conf, conf, good_cache)
    state_before = {p.name: p.read_bytes() for p in (work / ".sckpt").glob("*.json")}
    said = "no space" if fault == "full" else "read-only file system"
    for argv in (("create", step), ("disable", step), ("vacate", step)):
        sckpt(*argv, env=env).clean_failure(EXIT_REFUSED, "refused", str(log), said)
    # Nothing was done: the step runs, no image was written, the state store is unchanged.
    assert step_running(slurm_cluster, step)
    task = work / f"{step.split('.')[0]}.counter" / "task0"  # <job>.<step name>
    assert TaskImages(task).latest() is None and not list(task.glob("*/state"))
    after = {p.name: p.read_bytes() for p in (work / ".sckpt").glob("*.json")}
    assert {k: v for k, v in after.items() if k in state_before} == state_before
    assert log.read_text() == ""
    # Reading still works with the log unwritable (only actions need it).
    assert sckpt("ls", "-j", step.split(".")[0], env=env).code == 0
    # The same action with a writable log does act, so the refusal above was the log's.
    healthy = shared / f"audit-{fault}-ok.toml"
    healthy.write_text(f'audit_log = "{shared}/audit/{fault}-ok.log"\nengine = "cooperative"\n')
    done = sckpt("create", step, env=base_env(slurm_cluster.conf, healthy, good_cache))
    assert done.code == 0, done.stderr
    assert (task / "g1" / "state").exists()  # the first generation, complete
