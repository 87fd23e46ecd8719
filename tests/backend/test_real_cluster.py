"""The facade on the real Slurm 22.05 cluster: listing, state checks first, read-only proof.

Every job here is submitted by the test (as sckpt-alice) and cancelled at the end; only
those jobs are looked at, because other tests share the cluster.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sckpt.backend import errors as E
from sckpt.backend.audit import read_records
from sckpt.backend.config import Settings
from sckpt.backend.engines.live import LiveEngine
from sckpt.backend.facade import Facade, libslurm_binding, open_facade
from sckpt.backend.model import STEP_BATCH, STEP_PENDING, ActionResult, CheckpointKind, StepId
from sckpt.backend.operations import MUTATING
from sckpt.backend.operations import operation as find_operation

from tests.conftest import SlurmCluster
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"


@dataclass(frozen=True)
class Jobs:
    running: int
    pending: int
    done: int


def _submit(cluster: SlurmCluster, *args: str) -> int:
    out = cluster.run(
        "sbatch", "--parsable", "-p", "debug", "-J", "sckpt-backend", *args, user="sckpt-alice"
    )
    return int(out.stdout.strip().split(";")[0])


def _squeue_state(cluster: SlurmCluster, job: int) -> str:
    out = cluster.run("squeue", "-h", "-t", "all", "-j", str(job), "-o", "%T", check=False)
    return out.stdout.strip()


@pytest.fixture(scope="module")
def jobs(slurm_cluster: SlurmCluster) -> Iterator[Jobs]:
    running = _submit(slurm_cluster, "--wrap", "srun sleep 600")
    pending = _submit(slurm_cluster, "--hold", "--wrap", "sleep 600")
    done = _submit(slurm_cluster, "--wrap", "sleep 600")
    try:
        slurm_cluster.run("scancel", str(done))
        wait_for(lambda: _squeue_state(slurm_cluster, running) == "RUNNING", timeout=60)
        wait_for(
            lambda: (
                f"{running}.0"
                in slurm_cluster.run("squeue", "-s", "-h", "-j", str(running), "-o", "%i").stdout
            ),
            timeout=60,
        )
        wait_for(lambda: _squeue_state(slurm_cluster, done) == "CANCELLED", timeout=60)
        yield Jobs(running, pending, done)
    finally:
        slurm_cluster.run("scancel", str(running), str(pending), str(done), check=False)


@pytest.fixture
def live(slurm_cluster: SlurmCluster, tmp_path: Path) -> Iterator[Facade]:
    facade = open_facade(Settings(audit_log=tmp_path / "audit.log"), engine="live")
    try:
        yield facade
    finally:
        facade.close()


def test_info_comes_from_the_controller(slurm_cluster: SlurmCluster, live: Facade) -> None:
    conf = slurm_cluster.run("scontrol", "show", "config").stdout
    cluster_name = re.search(r"^ClusterName\s*=\s*(\S+)", conf, re.M)
    version = re.search(r"^SLURM_VERSION\s*=\s*(\S+)", conf, re.M)
    assert cluster_name and version
    assert live.info.cluster_name == cluster_name[1]
    assert live.info.slurm_version == version[1]
    assert live.info.engine == "live" and live.info.acting_user == "root"


def test_listing_equals_squeue_for_our_jobs(
    slurm_cluster: SlurmCluster, live: Facade, jobs: Jobs
) -> None:
    ids = [jobs.running, jobs.pending, jobs.done]
    snap = live.snapshot()
    ours = {v.job.job_id: v for v in snap.jobs if v.job.job_id in ids}
    listed = slurm_cluster.run(
        "squeue", "-h", "-t", "all", "-j", ",".join(map(str, ids)), "-o", "%i|%u|%T|%P|%j|%N"
    ).stdout.split("\n")
    expected = {}
    for line in filter(None, listed):
        job_id, user, state, partition, name, nodes = line.split("|")
        expected[int(job_id)] = (user, state, partition, name, nodes)
    got = {
        jid: (v.job.user, v.job.state.value, v.job.partition, v.job.name, v.job.nodes)
        for jid, v in ours.items()
    }
    assert got == expected
    steps = slurm_cluster.run(
        "squeue", "-s", "-h", "-j", str(jobs.running), "-o", "%i|%j|%u|%N"
    ).stdout.split("\n")
    expected_steps = {tuple(line.split("|")) for line in steps if line}
    got_steps = {
        (str(s.step.step_id), s.step.name, s.step.user, s.step.nodes)
        for s in ours[jobs.running].steps
    }
    assert got_steps == expected_steps
    assert {s.checkpoint.kind for s in ours[jobs.running].steps} == {CheckpointKind.NOT_SUPPORTED}
    assert ours[jobs.pending].steps == () and ours[jobs.done].steps == ()


def test_checkpoint_ops_answer_not_supported_on_a_running_step(live: Facade, jobs: Jobs) -> None:
    for call in (
        lambda: live.able(f"{jobs.running}.0"),
        lambda: live.error(f"{jobs.running}.0"),
        lambda: live.create(f"{jobs.running}.0"),
        lambda: live.vacate(f"{jobs.running}"),
        lambda: live.disable(f"{jobs.running}.batch"),
        lambda: live.enable(f"{jobs.running}.0"),
        lambda: live.complete(f"{jobs.running}.0", 0, 0, ""),
        lambda: live.tasks(f"{jobs.running}.0", 0, "/tmp", 10, ""),
        lambda: live.restart(f"{jobs.done}"),
    ):
        with pytest.raises(E.NotSupported) as exc:
            call()
        assert exc.value.code == 2036
        assert "not supported by this Slurm" in str(exc.value)


def test_job_state_errors_take_precedence(live: Facade, jobs: Jobs) -> None:
    with pytest.raises(E.InvalidJobId):
        live.create("4000000000.0")
    with pytest.raises(E.JobPending):
        live.create(f"{jobs.pending}.0")
    with pytest.raises(E.AlreadyDone):
        live.create(f"{jobs.done}")
    with pytest.raises(E.InvalidJobId):
        live.create(f"{jobs.running}.77")  # no such step
    with pytest.raises(E.JobNotFinished):
        live.restart(f"{jobs.running}")
    with pytest.raises(E.NotSupported, match="whole job"):
        live.restart(f"{jobs.done}.0")


def test_suspended_job_is_disabled_or_job_suspended(
    slurm_cluster: SlurmCluster, live: Facade, jobs: Jobs
) -> None:
    slurm_cluster.run("scontrol", "suspend", str(jobs.running))
    try:
        wait_for(lambda: _squeue_state(slurm_cluster, jobs.running) == "SUSPENDED", timeout=30)
        with pytest.raises(E.Disabled):
            live.create(f"{jobs.running}.0")
        with pytest.raises(E.JobSuspended):
            live.create(f"{jobs.running}")
    finally:
        slurm_cluster.run("scontrol", "resume", str(jobs.running))
        wait_for(lambda: _squeue_state(slurm_cluster, jobs.running) == "RUNNING", timeout=30)


ACCESS_AS_BOB = """
import sys
from pathlib import Path
from sckpt.backend.config import Settings
from sckpt.backend.errors import SlurmError
from sckpt.backend.facade import open_facade
f = open_facade(Settings(audit_log=Path(sys.argv[2])), engine="live")
for target in (sys.argv[1] + ".0", sys.argv[1]):
    try:
        f.create(target)
    except SlurmError as exc:
        print(exc.name)
"""


def test_a_non_owner_is_denied_before_anything_else(
    slurm_cluster: SlurmCluster, jobs: Jobs
) -> None:
    out = subprocess.run(
        [
            "runuser",
            "-u",
            "sckpt-bob",
            "--",
            "env",
            f"SLURM_CONF={slurm_cluster.conf}",
            "HOME=/tmp",
            str(VENV_PYTHON),
            "-c",
            ACCESS_AS_BOB,
            str(jobs.running),
            f"/tmp/sckpt-backend-bob-{os.getpid()}.log",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/tmp",
    )
    assert out.stdout.split() == ["ESLURM_ACCESS_DENIED", "ESLURM_ACCESS_DENIED"], out.stderr


def test_snapshot_is_stale_not_an_exception_when_the_controller_fails(
    live: Facade, jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = live.snapshot()
    engine = live.engine
    assert isinstance(engine, LiveEngine)

    def down(prev: int = 0) -> None:
        raise E.ControllerUnreachable(hint="simulated outage")

    monkeypatch.setattr(engine.binding, "load_jobs", down)
    stale = live.snapshot()
    assert stale.stale and stale.jobs == first.jobs and "outage" in stale.error


# ---------------------------------------------------------------- read-only proof

MUTATING_RPC = re.compile(
    r"^(REQUEST_UPDATE_JOB|REQUEST_JOB_REQUEUE|REQUEST_KILL_JOB|REQUEST_CANCEL_JOB_STEP|"
    r"REQUEST_SIGNAL\w*|REQUEST_SUSPEND|REQUEST_CHECKPOINT\w*|REQUEST_JOB_NOTIFY|"
    r"REQUEST_JOB_ALLOCATION_INFO)$"
)
"""Controller RPCs that change jobs.  REQUEST_JOB_ALLOCATION_INFO is a read, but it is the
only trace slurm_signal_job_step leaves at the controller (22.05 then signals the slurmd
daemons directly), and sckpt's cooperative engine signals steps that way."""


def mutating_rpc_counts(cluster: SlurmCluster) -> dict[str, int]:
    """sdiag's "Remote Procedure Call statistics by message type", mutating types only."""
    text = cluster.run("sdiag").stdout
    section = text.split("Remote Procedure Call statistics by message type", 1)[1]
    section = section.split("Remote Procedure Call statistics by user", 1)[0]
    counts = {}
    for match in re.finditer(r"^\s*(\w+)\s+\(\s*\d+\)\s+count:(\d+)", section, re.M):
        if MUTATING_RPC.match(match[1]):
            counts[match[1]] = int(match[2])
    return counts


class RpcProbeEngine(LiveEngine):
    """A stand-in for an engine that acts through libslurm: every mutating operation sends
    a harmless SIGCONT to the step through the controller (``slurm_kill_job_step``: a
    REQUEST_CANCEL_JOB_STEP RPC).  It shows that the sdiag measurement sees an engine's
    RPCs, so the read-only run below can fail."""

    name = "rpc-probe"

    def _poke(self, target: StepId, operation: str) -> ActionResult:
        step = target if not target.is_whole_job else StepId(target.job_id, STEP_BATCH)
        self.binding.kill_step(step, signal.SIGCONT)
        return ActionResult(target, operation)

    def create(self, target: StepId, max_wait: int, image_dir: str | None) -> ActionResult:
        return self._poke(target, "create")

    def vacate(
        self, target: StepId, max_wait: int, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        return self._poke(target, "vacate")

    def restart(
        self, target: StepId, stick: bool, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        return self._poke(target, "restart")

    def enable(self, target: StepId) -> ActionResult:
        return self._poke(target, "enable")

    def disable(self, target: StepId) -> ActionResult:
        return self._poke(target, "disable")

    def complete(
        self, target: StepId, begin_time: int, error_code: int, error_msg: str
    ) -> ActionResult:
        return self._poke(target, "complete")

    def tasks(
        self, target: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> ActionResult:
        return self._poke(target, "tasks")

    def auto(
        self, target: StepId, every: int | None, before_end: int | None, off: bool
    ) -> ActionResult:
        return self._poke(target, "auto")

    def cancel(self, target: StepId, signal: int | None) -> ActionResult:
        return self._poke(target, "cancel")

    def hold(self, target: StepId) -> ActionResult:
        return self._poke(target, "hold")

    def release(self, target: StepId) -> ActionResult:
        return self._poke(target, "release")

    def requeue(self, target: StepId) -> ActionResult:
        return self._poke(target, "requeue")


def _every_mutation(facade: Facade, job: int) -> list[str]:
    """Run each mutating operation once on ``job``; return the error names (or "ok")."""
    outcomes = []
    for operation in sorted(MUTATING):
        whole = operation == "restart" or find_operation(operation).whole_job
        target = f"{job}" if whole else f"{job}.0"
        given = {"every": "30m"} if operation == "auto" else {}  # something to change
        try:
            getattr(facade, operation)(target, **given)
            outcomes.append("ok")
        except E.SckptError as exc:
            outcomes.append(
                type(exc).__name__ + ("" if isinstance(exc, E.ReadOnlyError) else f": {exc}")
            )
    return outcomes


def _quiet_window(cluster: SlurmCluster, act: object, tries: int = 5) -> dict[str, int] | None:
    """Run ``act`` between two sdiag readings; the first window in which no mutating count
    moved proves ``act`` sent none (other tests share the cluster, so a moved count may be
    theirs: try again; an ``act`` that leaks moves the counts in every window)."""
    for _ in range(tries):
        before = mutating_rpc_counts(cluster)
        act()  # type: ignore[operator]
        after = mutating_rpc_counts(cluster)
        if after == before:
            return after
    return None


def test_read_only_sends_no_mutating_rpc_and_changes_no_job(
    slurm_cluster: SlurmCluster, jobs: Jobs, tmp_path: Path
) -> None:
    binding = libslurm_binding()
    probe_log = tmp_path / "probe.log"
    # Control: the same operations with read-only off do reach the controller.
    acting = Facade(RpcProbeEngine(binding), Settings(audit_log=probe_log))
    before = mutating_rpc_counts(slurm_cluster)
    assert _every_mutation(acting, jobs.running) == ["ok"] * len(MUTATING)
    after = mutating_rpc_counts(slurm_cluster)
    moved = after.get("REQUEST_CANCEL_JOB_STEP", 0) - before.get("REQUEST_CANCEL_JOB_STEP", 0)
    assert moved >= len(MUTATING)

    states = {j: _squeue_state(slurm_cluster, j) for j in (jobs.running, jobs.pending, jobs.done)}
    log = tmp_path / "audit.log"
    for engine in ("rpc-probe", "live", "auto"):
        if engine == "rpc-probe":
            guarded = Facade(RpcProbeEngine(binding), Settings(audit_log=log), read_only=True)
        else:
            guarded = open_facade(Settings(audit_log=log), engine=engine, read_only=True)
        outcomes: list[list[str]] = []

        def act(guarded: Facade = guarded, outcomes: list[list[str]] = outcomes) -> None:
            for job in (jobs.running, jobs.pending, jobs.done):
                outcomes.append(_every_mutation(guarded, job))

        assert _quiet_window(slurm_cluster, act) is not None, f"{engine}: mutating RPCs moved"
        assert all(o == ["ReadOnlyError"] * len(MUTATING) for o in outcomes)
        guarded.snapshot()  # reading still works in read-only mode
    assert {j: _squeue_state(slurm_cluster, j) for j in states} == states
    refused = [r for r in read_records(log) if r["result"]["name"] == "READ_ONLY"]
    assert len(refused) >= 3 * 3 * len(MUTATING)


def test_a_waiting_srun_is_not_listed_as_steps(
    slurm_cluster: SlurmCluster, live: Facade, tmp_path: Path
) -> None:
    """An srun waiting for CPUs shows up in libslurm's step list as SLURM_PENDING_STEP
    records, one per wait and all with the same id (at 10,000 jobs they once crashed the
    console's steps table).  The facade lists the job's steps as ``squeue -s`` does."""
    job = _submit(slurm_cluster, "-n1", "--wrap", "srun sleep 300 & sleep 2; srun sleep 300")
    binding = libslurm_binding()
    try:

        def waiting() -> bool:
            steps = [s for s in binding.get_steps().steps if s.step_id.job_id == job]
            return any(s.step_id.step == STEP_PENDING for s in steps)

        wait_for(waiting, timeout=60)  # the premise: Slurm lists the waiting srun
        listed = slurm_cluster.run("squeue", "-s", "-h", "-j", str(job), "-o", "%i").stdout
        expected = set(listed.split())
        got = [
            str(s.step.step_id)
            for v in live.snapshot().jobs
            if v.job.job_id == job
            for s in v.steps
        ]
        assert sorted(got) == sorted(expected)
        assert len(got) == len(set(got)) and f"{job}.0" in got
    finally:
        slurm_cluster.run("scancel", str(job), check=False)


def test_unchanged_jobs_keep_their_view_objects_across_a_change(
    slurm_cluster: SlurmCluster, live: Facade, jobs: Jobs
) -> None:
    """After a submission the snapshot is new, but the held job's ``JobView`` is the very
    same object: the console skips rows by identity, so a change to one job of 10,000
    must not rebuild them all."""
    first = {v.job.job_id: v for v in live.snapshot().jobs}
    extra = _submit(slurm_cluster, "--hold", "--wrap", "sleep 600")
    try:
        second = live.snapshot()
        assert second.changed
        now = {v.job.job_id: v for v in second.jobs}
        assert extra in now and extra not in first
        assert now[jobs.pending] is first[jobs.pending]
    finally:
        slurm_cluster.run("scancel", str(extra), check=False)
