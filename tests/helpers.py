"""Small helpers shared by the tests (search here before writing another)."""

from __future__ import annotations

import contextlib
import pwd
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from sckpt.backend.engines.base import Engine
    from sckpt.backend.facade import Facade

    from .conftest import SlurmCluster

T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T], timeout: float = 30.0, interval: float = 0.2, *, what: str = ""
) -> T:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout``
    (saying ``what`` was awaited)."""
    deadline = time.monotonic() + timeout
    last: T = predicate()
    while not last:
        if time.monotonic() > deadline:
            awaited = what or "condition"
            raise AssertionError(f"{awaited} not met within {timeout} s (last value: {last!r})")
        time.sleep(interval)
        last = predicate()
    return last


def process_state(pid: int) -> str:
    """The process's one-letter state in ``/proc`` (``R``, ``S``, ``T`` ...)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


@contextlib.contextmanager
def sleeping_process() -> Iterator[subprocess.Popen[bytes]]:
    """A real process that only sleeps, for a test that looks at one in ``/proc`` or stops
    it: yielded once it is asleep (state ``S``; while it starts it is ``R``), killed and
    reaped afterwards."""
    child = subprocess.Popen(["sleep", "60"])

    def asleep() -> bool:  # exec'd into sleep, and in its nanosleep
        comm = Path(f"/proc/{child.pid}/comm").read_text()
        return comm == "sleep\n" and process_state(child.pid) == "S"

    try:
        wait_for(asleep, interval=0.01, what="asleep")
        yield child
    finally:
        child.kill()
        child.wait()


def rpc_count(cluster: SlurmCluster, user: str) -> int:
    """``sdiag``'s RPC count for ``user`` (0 when the user has sent none yet)."""
    out = cluster.run("sdiag").stdout
    match = re.search(rf"^\s*{re.escape(user)}\s+\(\s*\d+\)\s+count:(\d+)", out, re.MULTILINE)
    return int(match.group(1)) if match else 0


def settled_rpc_count(cluster: SlurmCluster, user: str) -> int:
    """``rpc_count`` once it stops moving: slurmctld counts an RPC after sending its
    reply, so a command that has just exited may still have its last RPCs uncounted."""
    count = rpc_count(cluster, user)
    for _ in range(20):
        time.sleep(0.5)
        again = rpc_count(cluster, user)
        if again == count:
            return count
        count = again
    return count


def probe_user_home(name: str, parent: Path) -> Path:
    """A system user that only tests use (created once, like the cluster script's test
    users) and a home of its own under ``parent``."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
        )
    home = parent / name
    home.mkdir(exist_ok=True)
    subprocess.run(["chown", name, str(home)], check=True)
    return home


def catches_signal(state_dir: Path, job: int, step: int = 0, tasks: int = 1) -> bool:
    """Whether ``tasks`` running tasks of ``job.step`` registered under ``sckpt run`` and
    their wrappers recorded that the program catches its checkpoint signal: until then the
    cooperative engine refuses checkpoints ("not yet known whether the program catches")."""
    from sckpt.backend.checkpointing.store import StepStore
    from sckpt.backend.model import StepId

    store = StepStore(state_dir, StepId(job, step))
    rec = store.read() if store.path.exists() else None
    caught = [t for t in rec.running_tasks if t.handler == "caught"] if rec is not None else []
    return len(caught) >= tasks


class ReplacedCalls:
    """An engine whose calls named in ``calls`` answer from there; every other name reaches
    the engine it wraps (``inner``).  Emptying ``calls`` puts the real engine back."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.calls: dict[str, Callable[..., Any]] = {}

    def __getattr__(self, name: str) -> Any:
        replaced = self.calls.get(name)
        return replaced if replaced is not None else getattr(self.inner, name)


def replace_engine_calls(facade: Facade, **calls: Callable[..., Any]) -> ReplacedCalls:
    """Replace some of the engine's calls behind ``facade`` (through ``Facade.wrap_engine``,
    so the facade and everything above it stay real); returns the wrapper to change them."""
    made: list[ReplacedCalls] = []

    def wrap(inner: Engine) -> Engine:
        made.append(ReplacedCalls(inner))
        return cast("Engine", made[-1])

    facade.wrap_engine(wrap)
    made[0].calls.update(calls)
    return made[0]
