"""An action's target is resolved once (``targets.resolve``), and every later step reads it.

Issue 35 item 3: a target used to climb back and forth between the facade, the ``-M``
router, ``targets`` and ``arrays`` (the router resolving it a second time when it was
called).  These tests watch what reaches the engine, through ``Facade.wrap_engine``: one
listing for the array lookup, then exactly one engine call, given the finished target
(the task's own job record, its array names and its ``-M`` cluster); the refusals of a
target are made before any engine call, in the order they always were.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from sckpt.backend.audit import read_records
from sckpt.backend.config import Settings
from sckpt.backend.engines.base import Engine
from sckpt.backend.engines.clusters import ClustersEngine
from sckpt.backend.engines.registry import FACTORIES
from sckpt.backend.errors import (
    Disabled,
    InvalidJobId,
    NothingMatched,
    NotSupported,
    ReadOnlyError,
    UsageError,
)
from sckpt.backend.facade import Facade, simulated_engine
from sckpt.backend.model import STEP_BATCH, ActionResult, JobState, StepId
from sckpt.backend.operations import BY_NAME, Operation, operation
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for
from sckpt.backend.targets import ResolvedTarget, resolve

ME = "alice"


class Watched:
    """Between the facade and its engine: each call's name and target, in order."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.calls: list[tuple[str, object]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args[0] if args else None))
            return attr(*args, **kwargs)

        return call


def _watched(facade: Facade) -> Watched:
    made: list[Watched] = []

    def wrap(inner: Engine) -> Engine:
        made.append(Watched(inner))
        return made[-1]  # type: ignore[return-value]

    facade.wrap_engine(wrap)
    return made[0]


def _cluster(
    name: str = "east", seed: int = 3, clock: ManualClock | None = None
) -> SimulatedCluster:
    """An empty simulated controller named ``name`` (one ``-M`` cluster)."""
    return SimulatedCluster(
        seed=seed, n_jobs=0, clock=clock or ManualClock(), users=demo_users_for(ME),
        arrivals=False, demo_touches=False, cluster_name=name,
    )  # fmt: skip


def _on_east(cluster: SimulatedCluster, settings: Settings, **kw: Any) -> Facade:
    engine = ClustersEngine([("east", simulated_engine(cluster, ME))])  # type: ignore[abstract]
    return Facade(engine, settings, **kw)


def test_an_array_task_on_m_reaches_the_engine_once_fully_resolved(settings: Settings) -> None:
    cluster = _cluster()
    records = cluster.control.submit_array(ME, "1-3", running=3)
    array = records[0].array_job_id
    task2 = next(job for job in records if job.array_task_id == 2)
    facade = _on_east(cluster, settings)
    watched = _watched(facade)
    result = facade.act("create", f"{array}_2.0", max_wait=30)
    finished = StepId(task2.job_id, 0, array_job_id=array, array_task_id=2, cluster="east")
    assert watched.calls == [("snapshot", None), ("create", finished)]
    assert result.target == finished
    (line,) = read_records(settings.audit_log)
    assert (line["target"], line["cluster"]) == (str(finished), "east")


def test_read_only_refuses_the_resolved_target_without_an_engine_call(settings: Settings) -> None:
    cluster = _cluster()
    records = cluster.control.submit_array(ME, "1-2", running=2)
    array = records[0].array_job_id
    facade = _on_east(cluster, settings, read_only=True)
    watched = _watched(facade)
    with pytest.raises(ReadOnlyError, match=rf"hold {array}_1 on cluster east refused"):
        facade.act("hold", f"{array}_1")
    assert [name for name, _ in watched.calls] == ["snapshot"]
    (line,) = read_records(settings.audit_log)
    assert (line["target"], line["cluster"]) == (f"{array}_1", "east")


def test_complete_asks_for_the_checkpoint_in_progress_on_a_step_only(settings: Settings) -> None:
    cluster = _cluster()
    job = cluster.control.submit(ME, name="c").job_id
    facade = Facade(simulated_engine(cluster, ME), settings)
    watched = _watched(facade)
    with pytest.raises(NothingMatched, match=f"no checkpoint of {job}.0"):
        facade.act("complete", f"{job}.0", begin_time=5)
    assert [name for name, _ in watched.calls] == ["able", "complete"]
    watched.calls.clear()
    facade.act("complete", str(job), begin_time=5)  # a whole job: Slurm's answer stands
    facade.act("complete", f"{job}.0", begin_time=5, error_code=3)  # an error: kept as it is
    assert [name for name, _ in watched.calls] == ["complete", "complete"]


def _lookup(seen: list[tuple[StepId, bool]]) -> Callable[[StepId, bool], StepId]:
    def record(step: StepId, pending_ok: bool) -> StepId:
        seen.append((step, pending_ok))
        return replace(step, job_id=99) if step.unresolved else step

    return record


def test_resolve_looks_the_record_up_once_then_routes_and_checks_the_row() -> None:
    seen: list[tuple[StepId, bool]] = []
    got = resolve("7_3", operation("hold"), ("east",), _lookup(seen))
    assert got == ResolvedTarget(StepId(99, array_job_id=7, array_task_id=3, cluster="east"))
    assert seen == [(StepId(0, array_job_id=7, array_task_id=3), True)]  # hold: by name
    done = resolve("12.0", operation("complete"), (), _lookup(seen))
    assert done == ResolvedTarget(StepId(12, 0), matches_checkpoint=True)
    assert not resolve("12", operation("complete"), (), _lookup(seen)).matches_checkpoint
    assert seen[1:] == [(StepId(12, 0), False), (StepId(12), False)]


@pytest.mark.parametrize(
    ("typed", "name", "clusters", "refused"),
    [
        ("12.x", "create", (), "invalid step 'x'"),
        ("12.0", "hold", (), r"hold acts on a whole job: give JOB \(12\)"),
        ("12", "hold", ("east", "west"), "12: which cluster"),
        (StepId(12, cluster="north"), "hold", ("east",), "cluster north is not one of -M's"),
    ],
)
def test_resolve_refuses_as_usage(
    typed: object, name: str, clusters: tuple[str, ...], refused: str
) -> None:
    with pytest.raises(UsageError, match=refused):
        resolve(typed, operation(name), clusters, _lookup([]))


def test_a_lookup_that_finds_no_record_is_its_answer(settings: Settings) -> None:
    facade = _on_east(_cluster(), settings)
    watched = _watched(facade)
    with pytest.raises(InvalidJobId):
        facade.act("create", "40_1")
    assert [name for name, _ in watched.calls] == ["snapshot"]  # the lookup's listing only


def test_a_jobs_output_paths_are_asked_on_the_targets_own_cluster(settings: Settings) -> None:
    """The job a step names stays on the step's cluster: with two ``-M`` clusters the
    console's output view of a job on ``a`` was refused ("which cluster?")."""
    clock = ManualClock()
    sims = {name: _cluster(name, 3 + i, clock) for i, name in enumerate(("a", "b"))}
    job = sims["a"].control.submit(ME, name="x").job_id
    engines = [(name, simulated_engine(sim, ME)) for name, sim in sims.items()]
    facade = Facade(ClustersEngine(engines), settings)  # type: ignore[abstract]
    watched = _watched(facade)
    stdio = facade.job_stdio(StepId(job, 0, cluster="a"))
    assert stdio.job_id == job
    assert watched.calls == [("job_stdio", StepId(job, cluster="a"))]
    with pytest.raises(UsageError, match="which cluster"):
        facade.job_stdio(StepId(job))


# ---------------------------------------------------------------- a row's job-level rule

RESUME = Operation("resume", "bring a job back (the job or its batch step only)", job_level=True)
"""A made-up row with restart's whole-job rule: no engine checks it, the facade does."""


def _resuming(cluster: SimulatedCluster) -> Engine:
    """The demo's engine plus the made-up operation's one method, which checks nothing."""
    base = type(simulated_engine(cluster, ME))

    class Resuming(base):  # type: ignore[valid-type, misc]
        def resume(self, target: StepId) -> ActionResult:
            return ActionResult(target, "resume", "resumed")

    return Resuming(cluster.connect(ME))  # type: ignore[no-any-return]


@pytest.mark.parametrize("read_only", [False, True])
def test_a_job_level_row_refuses_a_step_before_any_engine_call(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, read_only: bool
) -> None:
    """The row alone makes the refusal (the engine's method would accept anything), after
    read-only mode's: the controller's answer, ESLURM_NOT_SUPPORTED, audited as such."""
    monkeypatch.setitem(BY_NAME, RESUME.name, RESUME)
    cluster = _cluster()
    job = cluster.control.submit(ME, name="r", n_steps=2).job_id
    facade = Facade(_resuming(cluster), settings, read_only=read_only)
    watched = _watched(facade)
    refused = ReadOnlyError if read_only else NotSupported
    with pytest.raises(refused) as exc:
        facade.act("resume", f"{job}.1")
    assert watched.calls == []
    (line,) = read_records(settings.audit_log)
    assert line["target"] == f"{job}.1"
    if read_only:
        assert line["result"]["name"] == "READ_ONLY"
        return
    assert exc.value.hint == "resume applies to a whole job (JOB or JOB.batch), not one step"
    assert (line["result"]["code"], line["result"]["name"]) == (2036, "ESLURM_NOT_SUPPORTED")
    for target in (str(job), f"{job}.batch"):
        assert facade.act("resume", target).detail == "resumed"
    assert watched.calls == [("resume", StepId(job)), ("resume", StepId(job, STEP_BATCH))]


def test_restart_of_a_step_is_refused_before_the_engine_even_of_an_unknown_job(
    settings: Settings,
) -> None:
    """19.05's ``job_restart`` refused ``JOB.STEP`` before any lookup (OMPI.md): so does
    the facade, from restart's row, for every engine; the engine is not asked."""
    cluster = _cluster()
    job = cluster.control.submit(ME, name="r").job_id
    live = FACTORIES["live"](settings, cluster.connect(ME))
    for engine in (simulated_engine(cluster, ME), live):
        facade = Facade(engine, settings)
        watched = _watched(facade)
        for target in (f"{job}.0", "999999.0"):
            with pytest.raises(NotSupported, match="whole job"):
                facade.act("restart", target)
        assert watched.calls == []
    assert resolve(f"{job}.0", operation("restart"), (), _lookup([])) == ResolvedTarget(
        StepId(job, 0), job_level=True
    )


# ---------------------------------------------------------------- an engine without checkpoints


def test_complete_asks_nothing_before_an_engine_that_runs_no_checkpoints(
    settings: Settings,
) -> None:
    """The live engine (a modern Slurm without the cooperative one) answers every
    checkpoint operation with its own refusal: no ``able`` is asked before a ``complete``,
    and a suspended job's report is refused as unsupported, not as suspended (the report
    skips check 4, as ``job_step_checkpoint_comp`` did)."""
    cluster = _cluster()
    job = cluster.control.submit(ME, name="c").job_id
    facade = Facade(FACTORIES["live"](settings, cluster.connect(ME)), settings)
    watched = _watched(facade)
    with pytest.raises(NotSupported, match="not supported by this Slurm"):
        facade.act("complete", f"{job}.0", begin_time=5)
    assert [name for name, _ in watched.calls] == ["complete"]
    cluster.control.set_job_state(job, JobState.SUSPENDED)
    with pytest.raises(NotSupported, match="not supported by this Slurm"):
        facade.act("complete", f"{job}.0", begin_time=5)
    with pytest.raises(Disabled):  # the other operations keep check 4
        facade.act("create", f"{job}.0")
