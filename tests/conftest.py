"""Shared fixtures: the real single-node Slurm cluster, and the slow-test switch.

The cluster comes from ``scripts/slurm-cluster``.  When one is already up at
``$SCKPT_CLUSTER_DIR`` (a developer keeps it running), the tests reuse it and leave it up;
otherwise the session starts it and stops it at the end.  When it cannot start, tests marked
``slurm`` fail under ``CI=true`` and skip elsewhere with the reason printed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLUSTER_SCRIPT = ROOT / "scripts" / "slurm-cluster"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@dataclass(frozen=True)
class SlurmCluster:
    """The running test cluster: its config and the unprivileged users for permission tests."""

    conf: Path
    directory: Path
    node: str = "sckpt-node"
    users: tuple[str, str] = ("sckpt-alice", "sckpt-bob")

    user_env_keys: ClassVar[tuple[str, ...]] = ("SLURM_CONF",)
    """What of ``env()`` a command run as a test user gets (runuser starts afresh)."""

    def env(self, **extra: str) -> dict[str, str]:
        """An environment for Slurm's commands pointing at this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf), **extra}

    def program(self, name: str) -> str:
        """The command to run for ``name`` (this cluster's own build of it, if any)."""
        return name

    def run(
        self,
        *argv: str,
        user: str | None = None,
        check: bool = True,
        timeout: float = 60,
        cwd: str = "/tmp",
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm command (``squeue``, ``sbatch`` ...), optionally as a test user."""
        cmd = [self.program(argv[0]), *argv[1:]]
        if user is not None:
            passed = (f"{k}={v}" for k, v in self.env().items() if k in self.user_env_keys)
            cmd = ["runuser", "-u", user, "--", "env", *passed, *cmd]
        return subprocess.run(
            cmd,
            env=self.env(),
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
            cwd=cwd,
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="run the long variants too")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="long variant: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _cluster_dir() -> Path:
    return Path(os.environ.get("SCKPT_CLUSTER_DIR", "/tmp/sckpt-cluster"))


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"real Slurm cluster unavailable in CI: {reason}", pytrace=False)
    print(f"\nSKIP real-cluster tests: {reason}")
    pytest.skip(f"real Slurm cluster unavailable: {reason}")


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[IO[str]]:
    with path.open("a+") as handle:
        fcntl.flock(handle, mode)
        yield handle


@contextlib.contextmanager
def _shared(directory: Path, *release: str, timeout: float = 900) -> Iterator[None]:
    """A cluster of ``scripts/slurm-cluster`` (``release``: its ``--release`` arguments),
    up for as long as the ``with`` lasts, shared with other pytest sessions.

    Several sessions may share it (developers and their helpers run suites side by side):
    starting is serialized by ``<dir>.start.lock``, and every session holds a shared
    ``<dir>.use.lock`` while it runs.  The session that started the cluster stops it at its
    end only when no other session holds the use lock.
    """
    start_lock = directory.with_name(directory.name + ".start.lock")
    use_lock = directory.with_name(directory.name + ".use.lock")
    with contextlib.ExitStack() as stack:
        with _flock(start_lock, fcntl.LOCK_EX):
            status = [str(CLUSTER_SCRIPT), "status", *release]
            already_up = subprocess.run(status, capture_output=True, text=True).returncode == 0
            if not already_up:
                up = subprocess.run(
                    [str(CLUSTER_SCRIPT), "up", *release],
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
                if up.returncode != 0:
                    command = " ".join(["scripts/slurm-cluster up", *release])
                    _unavailable(f"{command} failed: {up.stderr.strip()[-2000:]}")
            using = stack.enter_context(_flock(use_lock, fcntl.LOCK_SH))
        try:
            yield
        finally:
            if not already_up:
                with _flock(start_lock, fcntl.LOCK_EX):
                    try:
                        fcntl.flock(using, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        pass  # another session still uses it: leave it up
                    else:
                        subprocess.run(
                            [str(CLUSTER_SCRIPT), "down", *release],
                            capture_output=True,
                            timeout=120,
                        )


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """Bring the cluster up once per session (or reuse a running one: ``_shared``)."""
    if os.geteuid() != 0:
        _unavailable("the test cluster needs root (it installs Slurm and starts daemons)")
    directory = _cluster_dir()
    with _shared(directory):
        cluster = SlurmCluster(conf=directory / "slurm.conf", directory=directory)
        previous = os.environ.get("SLURM_CONF")
        os.environ["SLURM_CONF"] = str(cluster.conf)
        try:
            yield cluster
        finally:
            if previous is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = previous


@dataclass(frozen=True)
class PrivateCluster(SlurmCluster):
    """A second cluster beside the shared one, whose daemons a test may kill, pause or restart.

    Fault tests break the controller; doing that to the shared cluster would fail every other
    test running at the same time.  It has its own directory, ports and node name.
    """

    ctld_port: int = 46827
    slurmd_port: int = 46828

    def script(self, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run scripts/slurm-cluster (``up``, ``down``, ``status``) on this cluster."""
        env = {
            **os.environ,
            "SCKPT_CLUSTER_DIR": str(self.directory),
            "SCKPT_CTLD_PORT": str(self.ctld_port),
            "SCKPT_SLURMD_PORT": str(self.slurmd_port),
            "SCKPT_NODE": self.node,
            "SCKPT_NODE_CPUS": "64",
        }
        return subprocess.run(
            [str(CLUSTER_SCRIPT), *argv], env=env, capture_output=True, text=True, timeout=timeout
        )

    def pid(self, daemon: str) -> int:
        """The pid of one of its daemons (``munged``, ``slurmctld``, ``slurmd``)."""
        return int((self.directory / "run" / f"{daemon}.pid").read_text().strip())


def _private_cluster(tag: int) -> PrivateCluster:
    """The private cluster numbered ``tag`` (0-399): its directory, node name and ports."""
    directory = Path(f"/tmp/sckpt-private-{tag}")
    return PrivateCluster(
        conf=directory / "slurm.conf",
        directory=directory,
        node=f"sckpt-p{tag}",
        ctld_port=47000 + 2 * tag,
        slurmd_port=47001 + 2 * tag,
    )


@pytest.fixture(scope="module")
def private_cluster(
    slurm_cluster: SlurmCluster, request: pytest.FixtureRequest
) -> Iterator[PrivateCluster]:
    """A cluster of the module's own (started once per module, stopped after it).

    Each test module gets its own directory, ports and node name (derived from the module's
    name and the checkout's path), so two modules breaking daemons never meet, even in
    suites run side by side.
    Depends on ``slurm_cluster`` so that packages and test users exist first.
    """
    # The checkout's path too: the same module run from two worktrees side by side gets
    # two clusters, not one that each session starts and stops under the other.
    first = zlib.crc32(f"{ROOT}:{request.module.__name__}".encode()) % 400
    failures: list[str] = []
    # A port another program holds (a connection given it as its local port before it was
    # reserved) is the machine's, not the test's: the next tag's ports are tried, twice.
    for tag in (first, (first + 131) % 400, (first + 262) % 400):
        cluster = _private_cluster(tag)
        up = cluster.script("up", timeout=600)
        if up.returncode == 0:
            break
        cluster.script("down")
        failures.append(up.stderr.strip()[-2000:])
        if "in use" not in up.stderr:
            break
    if up.returncode != 0:
        _unavailable(f"private cluster did not start: {' / '.join(failures)}")
    try:
        yield cluster
    finally:
        cluster.script("down", timeout=120)


@dataclass(frozen=True)
class Slurm1905(SlurmCluster):
    """The real Slurm 19.05.8 cluster (``scripts/slurm-cluster up --release 19.05``).

    ``env()`` points Slurm's commands *and* sckpt at it: its slurm.conf, its headers and
    libslurm (the shim is built against them), and its ``bin`` first on ``PATH``, so
    ``scontrol``/``squeue``/``sbatch`` are 19.05's.
    """

    prefix: Path = Path("/nonexistent")

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "SLURM_CONF": str(self.conf),
            "SLURM_INCLUDE_DIR": str(self.prefix / "include"),
            "SLURM_LIB_DIR": str(self.prefix / "lib"),
            "PATH": f"{self.prefix / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            **extra,
        }

    user_env_keys: ClassVar[tuple[str, ...]] = (
        "SLURM_CONF",
        "SLURM_INCLUDE_DIR",
        "SLURM_LIB_DIR",
        "PATH",
    )

    def program(self, name: str) -> str:
        own = self.prefix / "bin" / name
        return str(own) if own.is_file() else name


RELEASE_1905 = ("--release", "19.05")


@pytest.fixture(scope="session")
def slurm1905(slurm_cluster: SlurmCluster) -> Iterator[Slurm1905]:
    """Slurm 19.05.8 built from ../shared/slurm (cached) and started beside the 22.05 cluster.

    A missing source tarball or a failed build skips outside CI and fails under CI=true.
    Shared with other sessions as the 22.05 cluster is (``_shared``): stopped at the end of
    the session that started it, unless another still uses it.
    """
    # scripts/slurm-cluster's directory for --release 19.05 (its $DIR).
    directory = Path(os.environ.get("SCKPT_CLUSTER_DIR", "/tmp/sckpt-cluster-19.05"))
    with _shared(directory, *RELEASE_1905, timeout=1800):
        env_line = subprocess.run(
            [str(CLUSTER_SCRIPT), "env", *RELEASE_1905], capture_output=True, text=True, check=True
        ).stdout
        values = dict(word.split("=", 1) for word in env_line.split()[1:])
        yield Slurm1905(
            conf=Path(values["SLURM_CONF"]),
            directory=Path(values["SLURM_CONF"]).parent,
            prefix=Path(values["SLURM_LIB_DIR"]).parent,
        )


@dataclass(frozen=True)
class AccountingSetup:
    """``scripts/slurm-cluster up --accounting``: MariaDB, slurmdbd and two clusters in it.

    ``clusters`` maps each ClusterName (``sckpt-a``, ``sckpt-b``) to its own cluster, whose
    ``run`` uses that cluster's slurm.conf; ``-M`` reaches the other one through slurmdbd.
    """

    directory: Path
    clusters: dict[str, SlurmCluster]
    port: int = 46870

    @property
    def dbd_port(self) -> int:
        return self.port + 1


ACCOUNTING = ("--accounting",)
ACCOUNTING_CLUSTERS = ("sckpt-a", "sckpt-b")


def accounting_setup(directory: Path, port: int) -> AccountingSetup:
    """The setup the script runs (or would run) under ``directory`` from ``port`` on."""
    clusters = {
        name: SlurmCluster(
            conf=directory / name / "slurm.conf", directory=directory / name, node=f"{name}-node"
        )
        for name in ACCOUNTING_CLUSTERS
    }
    return AccountingSetup(directory=directory, clusters=clusters, port=port)


def accounting_script(
    setup: AccountingSetup, *argv: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run ``scripts/slurm-cluster ARGV --accounting`` on ``setup``'s directory and ports."""
    env = {**os.environ, "SCKPT_ACCT_DIR": str(setup.directory), "SCKPT_ACCT_PORT": str(setup.port)}
    return subprocess.run(
        [str(CLUSTER_SCRIPT), *argv, *ACCOUNTING],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def accounting_logs(setup: AccountingSetup, lines: int = 15) -> str:
    """The ends of slurmdbd's and mariadbd's logs, for a failure's message."""
    found = []
    for log in (
        setup.directory / "log" / "slurmdbd.log",
        setup.directory / "mariadb" / "mariadbd.log",
    ):
        with contextlib.suppress(OSError):
            found.append(f"--- {log}:\n" + "\n".join(log.read_text().splitlines()[-lines:]))
    return "\n".join(found)


@pytest.fixture(scope="session")
def slurm_accounting(slurm_cluster: SlurmCluster) -> Iterator[AccountingSetup]:
    """The accounting setup, up once per session (a running one is reused and left up).

    Locked like ``slurm_cluster`` (``<dir>.start.lock``, shared ``<dir>.use.lock``): the
    session that started it stops it at its end when no other session uses it.  When it
    cannot start, the tests skip outside CI and fail under CI=true.
    """
    setup = accounting_setup(
        Path(os.environ.get("SCKPT_ACCT_DIR", "/tmp/sckpt-acct")),
        int(os.environ.get("SCKPT_ACCT_PORT", "46870")),
    )
    start_lock = setup.directory.with_name(setup.directory.name + ".start.lock")
    use_lock = setup.directory.with_name(setup.directory.name + ".use.lock")
    with contextlib.ExitStack() as stack:
        with _flock(start_lock, fcntl.LOCK_EX):
            already_up = accounting_script(setup, "status", timeout=120).returncode == 0
            if not already_up:
                up = accounting_script(setup, "up", timeout=900)
                if up.returncode != 0:
                    logs = accounting_logs(setup)  # before down removes them
                    accounting_script(setup, "down", timeout=120)
                    _unavailable(
                        f"scripts/slurm-cluster up --accounting failed: {up.stderr.strip()[-2000:]}"
                        f"\n{logs}"
                    )
            using = stack.enter_context(_flock(use_lock, fcntl.LOCK_SH))
        try:
            yield setup
        finally:
            if not already_up:
                with _flock(start_lock, fcntl.LOCK_EX):
                    try:
                        fcntl.flock(using, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        pass  # another session still uses it: leave it up
                    else:
                        accounting_script(setup, "down", timeout=120)
