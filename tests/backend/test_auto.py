"""``auto``: an operator changes a running step's automatic checkpoints (issue 32, item 5).

Through the facade, on every engine: the cooperative one (over the simulated controller's
client library, with a step's record written as ``sckpt run`` writes it) sets the policy in
the record; the demo's keeps it in the simulated controller, whose interval checkpoints then
happen by themselves as its clock moves (item 6); native and live refuse it.  Read-only
mode refuses it and audits the refusal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sckpt.backend.arguments import EVERY_AUTO
from sckpt.backend.audit import AuditLog
from sckpt.backend.checkpointing.engine import CooperativeEngine
from sckpt.backend.checkpointing.protocol import (
    CAUSE_BEFORE_END,
    CAUSE_INTERVAL,
    StepRecord,
    TaskInfo,
)
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.config import Settings
from sckpt.backend.engines.live import LiveEngine
from sckpt.backend.engines.native import NativeEngine
from sckpt.backend.errors import (
    AccessDenied,
    InvalidJobId,
    NotSupported,
    ReadOnlyError,
    UsageError,
)
from sckpt.backend.facade import Facade, simulated_engine
from sckpt.backend.model import StepId, StepView
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for


def _cluster() -> SimulatedCluster:
    return SimulatedCluster(
        seed=5, n_jobs=0, clock=ManualClock(), arrivals=False, demo_touches=False
    )


def _me() -> str:
    return "root" if os.getuid() == 0 else str(os.getuid())


def _cooperative(cluster: SimulatedCluster, tmp_path: Path, *, read_only: bool = False) -> Facade:
    engine = CooperativeEngine(
        cluster.connect(_me()), state_dir=str(tmp_path / "state"), clock=cluster.clock
    )
    return Facade(engine, read_only=read_only, audit=AuditLog(tmp_path / "audit.log"))


def _registered(tmp_path: Path, step: StepId) -> StepStore:
    """The step's record as ``sckpt run`` leaves it: one running task, no policy."""
    store = StepStore(tmp_path / "state", step)
    store.ensure_directory()

    def register(rec: StepRecord) -> None:
        rec.tasks["0"] = TaskInfo(0, "cn01", 4242, 0, "SIGUSR1", "/img")
        rec.ckpt_seconds["0"] = 8.0

    store.update(register, create=True)
    return store


def _read(store: StepStore) -> StepRecord:
    rec = store.read()
    assert rec is not None
    return rec


def test_the_cooperative_engine_sets_the_policy_in_the_record(tmp_path: Path) -> None:
    cluster = _cluster()
    job = cluster.control.submit("alice", n_steps=2, duration=36000).job_id
    stores = [_registered(tmp_path, StepId(job, n)) for n in (0, 1)]
    facade = _cooperative(cluster, tmp_path)
    now = int(cluster.clock())

    done = facade.auto(f"{job}.0", every="15m")
    assert done.detail == "every 15m"
    rec = _read(stores[0])
    assert (rec.policy.every, rec.policy.auto, rec.policy.set_by) == (900, False, _me())
    assert rec.next_due == now + 900
    assert (rec.history[-1]["operation"], rec.history[-1]["message"]) == ("auto", "every 15m")
    assert not _read(stores[1]).policy.active  # the other step is untouched

    # A value left out stays; a whole job means each of its steps under sckpt run.
    done = facade.auto(str(job), before_end="10m")
    assert done.detail == "" or "before end 10m" in done.detail
    assert [_read(s).policy.before_end for s in stores] == [600, 600]
    assert _read(stores[0]).policy.every == 900 and _read(stores[1]).next_due == 0

    facade.auto(f"{job}.1", every="auto")  # Young/Daly from the measured 8 s: sqrt(2*8*86400)
    rec = _read(stores[1])
    assert rec.policy.auto and rec.policy.every == 1175 and rec.next_due == now + 1175

    facade.auto(str(job), off=True)
    for store in stores:
        rec = _read(store)
        assert not rec.policy.active and rec.next_due == 0
        assert rec.policy.set_by == _me()  # an operator's "off" outlives a requeue too
        assert rec.history[-1]["message"] == "off"
    lines = [json.loads(x) for x in (tmp_path / "audit.log").read_text().splitlines()]
    assert [x["operation"] for x in lines] == ["auto"] * 4


def test_auto_refuses_bad_values_and_a_before_end_past_the_limit(tmp_path: Path) -> None:
    cluster = _cluster()
    job = cluster.control.submit("alice", n_steps=1, duration=3600).job_id
    store = _registered(tmp_path, StepId(job, 0))
    facade = _cooperative(cluster, tmp_path)
    for values, said in [
        ({}, "say what to change"),
        ({"off": True, "every": "1h"}, "off clears the policy"),
        ({"every": "0"}, "longer than zero"),
        ({"every": "5s"}, "at least 10s"),
        ({"every": "1x"}, "expected a duration"),
        ({"before_end": "-5m"}, "expected a duration"),
    ]:
        with pytest.raises(UsageError, match=said):
            facade.auto(f"{job}.0", **values)
    limit = cluster.job(job).end_time - cluster.job(job).start_time
    with pytest.raises(UsageError, match="not shorter than job"):
        facade.auto(f"{job}.0", before_end=limit)
    assert not _read(store).policy.active


def test_read_only_mode_refuses_auto_and_audits_it(tmp_path: Path) -> None:
    cluster = _cluster()
    job = cluster.control.submit("alice", n_steps=1, duration=36000).job_id
    store = _registered(tmp_path, StepId(job, 0))
    facade = _cooperative(cluster, tmp_path, read_only=True)
    with pytest.raises(ReadOnlyError, match=f"auto {job}.0 refused: sckpt is in read-only mode"):
        facade.auto(f"{job}.0", every="30m")
    assert not _read(store).policy.active
    (line,) = [json.loads(x) for x in (tmp_path / "audit.log").read_text().splitlines()]
    assert (line["operation"], line["target"], line["result"]["name"]) == (
        "auto",
        f"{job}.0",
        "READ_ONLY",
    )
    assert line["arguments"] == {"every": 1800, "before_end": None, "off": False}


def test_engines_without_sckpt_runs_records_refuse_auto() -> None:
    cluster = _cluster()
    job = cluster.control.submit("alice", n_steps=1, duration=36000).job_id
    for engine in (NativeEngine(cluster.connect("alice")), LiveEngine(cluster.connect("alice"))):
        with pytest.raises(NotSupported) as refused:
            engine.auto(StepId(job, 0), 1800, None, False)
        assert "sckpt run" in refused.value.hint, engine.name
    with pytest.raises(InvalidJobId):
        NativeEngine(cluster.connect("alice")).auto(StepId(job + 99, 0), 1800, None, False)


def _demo() -> SimulatedCluster:
    return SimulatedCluster(
        seed=7, n_jobs=40, clock=ManualClock(), users=demo_users_for("alice"), arrivals=False
    )


def _view(facade: Facade, sid: StepId) -> StepView:
    found = [v for j in facade.snapshot().jobs for v in j.steps if v.step.step_id == sid]
    assert found, sid
    return found[0]


def test_the_demo_runs_steps_under_each_policy_with_their_due_times_moving(
    tmp_path: Path,
) -> None:
    cluster = _demo()
    facade = Facade(simulated_engine(cluster, "root"), Settings(audit_log=tmp_path / "a.log"))
    policies = {
        view.step.step_id: view.checkpoint.auto
        for job in facade.snapshot().jobs
        for view in job.steps
        if view.checkpoint.auto is not None
    }
    kinds = {(p.every > 0 and not p.auto, p.auto, p.before_end > 0) for p in policies.values()}
    assert {(True, False, False), (False, True, False), (False, False, True)} <= kinds
    sid, first = next((s, p) for s, p in policies.items() if p.every and not p.auto)
    assert first.next_due > cluster.clock()
    cluster.control.advance(first.next_due - cluster.clock() + 1)
    view = _view(facade, sid)
    assert view.checkpoint.auto is not None
    assert view.checkpoint.auto.next_due == first.next_due + first.every  # moved on
    events = [
        e.event for e in facade.engine.checkpoint_events(sid.job_id, "", 0) if e.step_id == sid
    ]
    started = events[-1]
    assert (started.operation, started.by, started.cause) == ("create", "sckpt run", CAUSE_INTERVAL)
    assert started.time == first.next_due
    cluster.control.advance(60)  # every simulated checkpoint ends within 42 s
    events = [
        e.event for e in facade.engine.checkpoint_events(sid.job_id, "", 0) if e.step_id == sid
    ]
    assert [(e.operation, e.cause) for e in events[-2:]] == [
        ("create", CAUSE_INTERVAL),
        ("done", CAUSE_INTERVAL),
    ]


def test_auto_on_the_demo_changes_the_policy_and_its_due_time(tmp_path: Path) -> None:
    cluster = _demo()
    facade = Facade(simulated_engine(cluster, "alice"), Settings(audit_log=tmp_path / "a.log"))
    mine = [
        view
        for job in facade.snapshot().jobs
        for view in job.steps
        if view.checkpoint.auto is not None and view.step.user == "alice"
    ]
    assert mine, "the demo's acting user has no step under a policy"
    sid = mine[0].step.step_id
    now = int(cluster.clock())
    assert facade.auto(str(sid), every="20m").detail.startswith("every 20m")
    auto = _view(facade, sid).checkpoint.auto
    assert auto is not None and (auto.every, auto.next_due, auto.set_by) == (
        1200,
        now + 1200,
        "alice",
    )
    facade.auto(str(sid), every=EVERY_AUTO)
    auto = _view(facade, sid).checkpoint.auto
    assert auto is not None and auto.auto and auto.every >= 60
    facade.auto(str(sid), off=True)
    assert _view(facade, sid).checkpoint.auto is None
    cluster.control.advance(3 * 3600)  # the stale due times start nothing
    history = [
        e.event for e in facade.engine.checkpoint_events(sid.job_id, "", 0) if e.step_id == sid
    ]
    assert (history[-1].operation, history[-1].by, history[-1].message) == ("auto", "alice", "off")
    others = [v for j in facade.snapshot().jobs for v in j.steps if v.step.user == "bob"]
    with pytest.raises(AccessDenied):
        facade.auto(str(others[0].step.step_id), every="1h")


def test_the_demos_before_end_checkpoint_comes_once_before_the_jobs_end(tmp_path: Path) -> None:
    cluster = _demo()
    facade = Facade(simulated_engine(cluster, "root"), Settings(audit_log=tmp_path / "a.log"))
    sid, auto = next(
        (view.step.step_id, view.checkpoint.auto)
        for job in facade.snapshot().jobs
        for view in job.steps
        if view.checkpoint.auto is not None and view.checkpoint.auto.before_end
    )
    assert auto.end_time == cluster.job(sid.job_id).end_time
    at = auto.end_time - auto.before_end
    cluster.control.advance(at - cluster.clock() - 1)
    causes = [e.event.cause for e in facade.engine.checkpoint_events(sid.job_id, "", 0)]
    assert CAUSE_BEFORE_END not in causes
    cluster.control.advance(2)
    events = [
        e.event for e in facade.engine.checkpoint_events(sid.job_id, "", 0) if e.step_id == sid
    ]
    assert [(e.time, e.cause) for e in events if e.cause == CAUSE_BEFORE_END] == [
        (at, CAUSE_BEFORE_END)
    ]
