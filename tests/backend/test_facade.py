"""The facade on the simulated cluster: validation, read-only, audit, stale data, engines."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from sckpt.backend import errors as E
from sckpt.backend import facade as facade_module
from sckpt.backend.audit import read_records
from sckpt.backend.config import Settings, demo_audit_log_path
from sckpt.backend.facade import Facade, open_facade
from sckpt.backend.model import ActionResult, CheckpointKind, JobState, Snapshot, StepId
from sckpt.backend.operations import MUTATING, NAMES
from sckpt.backend.operations import operation as find_operation
from sckpt.backend.simulator import ManualClock, SimulatedCluster

from .spy import FailingEngine, SpyEngine


def demo(settings: Settings, **kw: object) -> Facade:
    return open_facade(settings, demo=True, as_user="root", clock=ManualClock(), **kw)  # type: ignore[arg-type]


def test_mutating_is_every_operation_but_able_and_error() -> None:
    assert frozenset(NAMES) - MUTATING == {"able", "error"}
    assert len(NAMES) == 9 + 1 + 4  # the checkpoint operations, auto, the job-control verbs


def test_demo_cluster_is_deterministic_and_shows_every_state(settings: Settings) -> None:
    one = demo(settings).snapshot()
    two = demo(settings).snapshot()
    assert one.jobs == two.jobs
    assert 40 <= len(one.jobs) <= 60
    states = {view.job.state for view in one.jobs}
    assert {
        JobState.PENDING,
        JobState.RUNNING,
        JobState.SUSPENDED,
        JobState.COMPLETED,
        JobState.FAILED,
        JobState.CANCELLED,
    } <= states
    kinds = {s.checkpoint.kind for v in one.jobs for s in v.steps}
    assert {CheckpointKind.ABLE, CheckpointKind.DISABLED, CheckpointKind.IN_PROGRESS} <= kinds
    assert any(s.checkpoint.last_error for v in one.jobs for s in v.steps)
    steps = {s.step.step_id.step_text for v in one.jobs for s in v.steps}
    assert {"batch", "extern", "0"} <= steps


def test_other_seed_other_cluster(settings: Settings) -> None:
    a = demo(settings).snapshot()
    b = demo(replace(settings, demo_seed=7)).snapshot()
    assert a.jobs != b.jobs


def test_snapshot_reports_no_change_until_time_moves(settings: Settings) -> None:
    f = demo(settings)
    assert f.snapshot().changed
    assert not f.snapshot().changed
    f.simulated_cluster.control.advance(3600)
    assert f.snapshot().changed


def test_info_names_engine_user_and_read_only(settings: Settings) -> None:
    f = open_facade(settings, demo=True, as_user="alice", read_only=True, clock=ManualClock())
    assert (f.info.engine, f.info.acting_user, f.info.read_only) == ("simulated", "alice", True)
    assert f.engine_name == "simulated" and f.read_only


def test_the_login_name_owns_the_demo_jobs_of_alices_slot(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(facade_module, "current_user", lambda: "zoe")
    f = open_facade(settings, demo=True, clock=ManualClock())
    assert any(v.job.user == "zoe" for v in f.snapshot().jobs)
    named = open_facade(settings, demo=True, as_user="zoe", clock=ManualClock())
    assert named.engine.acting_user == "zoe"


def test_as_user_refuses_a_user_the_demo_does_not_have(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--as-user zed`` used to take alice's place and show her jobs as zed's."""
    monkeypatch.setattr(facade_module, "current_user", lambda: "zoe")
    with pytest.raises(E.UsageError) as refused:
        open_facade(settings, demo=True, as_user="zed", clock=ManualClock())
    assert "no user 'zed'" in str(refused.value)
    assert "alice, bob, carol, dmitri, erin, farid, grace, root, slurm" in str(refused.value)
    for known in ("alice", "grace", "root", "slurm"):
        chosen = open_facade(settings, demo=True, as_user=known, clock=ManualClock())
        assert chosen.engine.acting_user == known


def test_settings_defaults_reach_the_engine(settings: Settings) -> None:
    spy = SpyEngine()
    f = Facade(spy, replace(settings, max_wait=33, image_dir="/scratch/ck"))
    f.create("12.3")
    f.tasks("12.3", begin_time=5)
    assert spy.calls[0] == ("create", StepId(12, 3), 33, "/scratch/ck")
    assert spy.calls[1] == ("tasks", StepId(12, 3), 5, "/scratch/ck", 33, "")


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda f: f.create("12.x"), "expected JOB"),
        (lambda f: f.create("12", max_wait=70000), "0 to 65535"),
        (lambda f: f.create("12", max_wait=-1), "0 to 65535"),
        (lambda f: f.vacate("12", image_dir="relative/dir"), "absolute"),
        (lambda f: f.restart("12", stick="yes"), "true or false"),
        (lambda f: f.complete("12", begin_time=-5), "begin_time"),
        (lambda f: f.complete("12", error_code=2**32), "error_code"),
        (lambda f: f.complete("12", error_msg="a\0b"), "NUL"),
        (lambda f: f.tasks("12", nodelist="cn[3-1]"), "node list"),
        (lambda f: f.able(12), "expected JOB"),
        (lambda f: f.enable(StepId(0, 1)), "job id"),
    ],
)
def test_invalid_input_is_refused_before_the_engine(
    settings: Settings, call: object, expected: str
) -> None:
    spy = SpyEngine()
    f = Facade(spy, settings)
    with pytest.raises(E.UsageError) as exc:
        call(f)  # type: ignore[operator]
    assert expected in str(exc.value)
    assert spy.calls == []


# ---------------------------------------------------------------- read-only


@pytest.mark.parametrize("operation", sorted(MUTATING))
def test_read_only_refuses_every_mutation_before_the_engine(
    settings: Settings, operation: str
) -> None:
    spy = SpyEngine()
    f = Facade(spy, settings, read_only=True)
    target = "12" if find_operation(operation).whole_job else "12.3"
    given = {"every": "30m"} if operation == "auto" else {}  # auto: something to change
    with pytest.raises(E.ReadOnlyError) as exc:
        getattr(f, operation)(target, **given)
    assert "read-only" in str(exc.value)
    assert spy.calls == []
    (line,) = read_records(settings.audit_log)
    assert line["operation"] == operation and line["result"]["name"] == "READ_ONLY"
    # Reading still works.
    f.able("12.3")
    f.snapshot()
    assert [c[0] for c in spy.calls] == ["able", "snapshot"]


def test_read_only_engine_wrapper_guards_on_its_own(settings: Settings) -> None:
    spy = SpyEngine()
    f = Facade(spy, settings, read_only=True)
    with pytest.raises(E.ReadOnlyError):
        f.engine.create(StepId(1, 0), 10, None)
    assert spy.calls == []


def test_read_only_demo_leaves_the_cluster_unchanged(settings: Settings) -> None:
    f = open_facade(settings, demo=True, as_user="root", read_only=True, clock=ManualClock())
    before = f.simulated_cluster.snapshot().jobs
    job = next(v.job.job_id for v in before if v.job.state is JobState.RUNNING)
    for op in sorted(MUTATING):
        given = {"off": True} if op == "auto" else {}
        with pytest.raises(E.ReadOnlyError):
            getattr(f, op)(str(job), **given)
    assert f.simulated_cluster.snapshot().jobs == before


# ---------------------------------------------------------------- audit


def test_every_mutating_attempt_is_audited(settings: Settings) -> None:
    f = demo(settings)
    view = next(v for v in f.snapshot().jobs if v.job.state is JobState.RUNNING)
    f.disable(f"{view.job.job_id}.0")
    with pytest.raises(E.Disabled):
        f.create(f"{view.job.job_id}.0", max_wait=7, image_dir="/scratch/ck")
    with pytest.raises(E.UsageError):
        f.enable("nonsense")
    f.able(f"{view.job.job_id}.extern")  # reading is not audited
    lines = read_records(demo_audit_log_path(settings.audit_log))
    assert [(r["operation"], r["result"]["name"]) for r in lines] == [
        ("disable", "SLURM_SUCCESS"),
        ("create", "ESLURM_DISABLED"),
        ("enable", "USAGE"),
    ]
    create = lines[1]
    assert create["target"] == f"{view.job.job_id}.0"
    assert create["arguments"] == {"max_wait": 7, "image_dir": "/scratch/ck"}
    assert create["result"]["code"] == 2037
    assert create["uid"] == os.getuid() and create["engine"] == "simulated"
    assert create["time"].endswith("Z") and create["duration"] >= 0
    assert {"user", "host"} <= set(create)


def test_unwritable_required_audit_log_refuses_before_acting(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    spy = SpyEngine()
    f = Facade(spy, Settings(audit_log=blocker / "audit.log", audit_required=True))
    with pytest.raises(E.AuditLogError) as exc:
        f.disable("12.0")
    assert "refused" in str(exc.value) and str(blocker) in str(exc.value)
    assert spy.calls == []


def test_unwritable_optional_audit_log_acts_and_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    spy = SpyEngine()
    f = Facade(spy, Settings(audit_log=blocker / "audit.log", audit_required=False))
    result = f.disable("12.0")
    assert spy.calls == [("disable", StepId(12, 0))]
    assert "audit log not written" in result.detail
    assert f.last_audit_problem


def test_audit_write_failure_after_acting_says_it_was_done(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = SpyEngine()
    f = Facade(spy, settings)
    monkeypatch.setattr(f.audit, "write", lambda reservation, record: "disk full")
    with pytest.raises(E.AuditLogError) as exc:
        f.enable("12.0")
    assert "WAS DONE" in str(exc.value)
    assert spy.calls == [("enable", StepId(12, 0))]


def test_audit_lines_are_json_objects(settings: Settings) -> None:
    f = Facade(SpyEngine(), settings)
    f.complete("5.1", begin_time=1, error_code=3, error_msg='quote " and \n newline')
    raw = settings.audit_log.read_text()
    assert raw.count("\n") == 1
    assert json.loads(raw)["arguments"]["error_msg"] == 'quote " and \n newline'


# ---------------------------------------------------------------- stale snapshots


def test_snapshot_never_raises_and_keeps_the_last_data(settings: Settings) -> None:
    engine = FailingEngine()
    f = Facade(engine, settings)
    first = f.snapshot()
    assert not first.stale and len(first.jobs) == 1
    engine.failing = True
    stale = f.snapshot()
    assert stale.stale and stale.jobs == first.jobs and stale.changed
    assert stale.stale_since == first.taken_at
    assert "Communication connection failure" in stale.error
    assert not f.snapshot().changed  # still stale, nothing new
    engine.failing = False
    fresh = f.snapshot()
    assert not fresh.stale and fresh.changed


def test_snapshot_before_any_data_is_empty_and_stale(settings: Settings) -> None:
    engine = FailingEngine()
    engine.failing = True
    snap = Facade(engine, settings).snapshot()
    assert snap == Snapshot(
        jobs=(), taken_at=0.0, changed=True, stale=True, stale_since=0.0, error=snap.error
    )


# ---------------------------------------------------------------- engine choice


def test_unknown_engine_is_a_usage_error(settings: Settings) -> None:
    with pytest.raises(E.UsageError):
        open_facade(settings, engine="quantum")


def test_as_user_on_a_real_engine_is_refused(settings: Settings) -> None:
    with pytest.raises(E.UsageError, match="simulated"):
        open_facade(settings, engine="live", as_user="alice")


def test_prebuilt_cluster_is_shared(settings: Settings) -> None:
    sim = SimulatedCluster(seed=3, n_jobs=10, clock=ManualClock(), arrivals=False)
    a = open_facade(settings, cluster=sim, as_user="root")
    assert a.simulated_cluster is sim
    listed = [(v.job, [s.step for s in v.steps]) for v in a.snapshot().jobs]
    assert listed == [(v.job, [s.step for s in v.steps]) for v in sim.snapshot().jobs]


def test_refreshes_and_actions_from_threads_at_once(settings: Settings) -> None:
    import threading

    f = demo(settings)
    sim = f.simulated_cluster
    view = next(
        v
        for v in f.snapshot().jobs
        if v.job.state is JobState.RUNNING and v.job.end_time > sim.now() + 1000
    )
    step = f"{view.job.job_id}.extern"
    failures: list[BaseException] = []

    def refresher() -> None:
        try:
            for _ in range(300):
                f.snapshot()
                sim.control.advance(1)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    def actor() -> None:
        try:
            for _ in range(200):
                f.disable(step)
                f.enable(step)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=refresher), threading.Thread(target=actor)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert failures == []
    assert sim.step_state(StepId(view.job.job_id, 0xFFFFFFFC)).disable_count == 0
    assert len(read_records(demo_audit_log_path(settings.audit_log))) == 400


def test_audit_names_the_simulated_acting_user(settings: Settings) -> None:
    f = open_facade(settings, demo=True, as_user="bob", clock=ManualClock())
    with pytest.raises(E.SlurmError):
        f.disable("1.0")  # no such job: refused, still audited
    (line,) = read_records(demo_audit_log_path(settings.audit_log))
    assert line["acting_user"] == "bob" and line["result"]["code"] == 2017


def test_checkpoint_progress_follows_a_checkpoint_to_its_outcome(
    settings: Settings, sim: SimulatedCluster
) -> None:
    """progress.py's words, read with able and error; disabling meanwhile does not end it."""
    f = open_facade(settings, as_user="alice", cluster=sim)
    job = sim.control.submit("alice", n_steps=2).job_id
    failing, vacated = StepId(job, 0), StepId(job, 1)
    sim.control.script_checkpoint(failing, duration=5, code=28)
    sim.control.script_checkpoint(vacated, duration=5)
    assert f.checkpoint_progress(failing) == "completed"  # none ever ran: nothing failed
    f.create(failing, max_wait=0)
    f.vacate(vacated, max_wait=0)
    f.disable(failing)  # able answers No now: the checkpoint still runs
    assert f.checkpoint_progress(failing) == "in progress"
    assert f.checkpoint_progress(vacated) == "in progress"
    sim.control.advance(6)
    assert f.checkpoint_progress(failing) == "failed (28)"  # told by error, while disabled
    assert f.checkpoint_progress(vacated) == "ended"  # the vacate ended the step


def test_ctrl_c_during_an_action_is_still_audited(settings: Settings) -> None:
    """A cooperative create waits for its outcome inside the engine: Ctrl-C there comes
    after the request went out, so the attempt must be in the audit log."""

    class Interrupted(SpyEngine):
        def create(self, target: StepId, max_wait: int, image_dir: str | None) -> ActionResult:
            raise KeyboardInterrupt

    f = Facade(Interrupted(), settings)
    with pytest.raises(KeyboardInterrupt):
        f.create("12.3", max_wait=0)
    (line,) = read_records(settings.audit_log)
    assert line["operation"] == "create" and line["result"]["name"] == "KeyboardInterrupt"
    assert "may have acted" in line["result"]["message"]
