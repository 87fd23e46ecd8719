"""A new operation is one table row and one engine method: nothing else is written for it.

The test adds a made-up operation, ``mute`` (disable a step's checkpoints and say for how
long), for its own duration: a row in ``operations.BY_NAME`` and a method on a subclass
of the demo's engine.  No other file knows the name, yet ``Facade.act`` runs it with its
arguments by name, read-only mode refuses it (in the facade and in the engine-side guard),
the ``-M`` router sends it to the target's cluster, and every attempt is audited.  When
its engine refuses it for lost work, the console asks the row's own question
(``force_words``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sckpt.backend.audit import read_records
from sckpt.backend.config import Settings
from sckpt.backend.engines.clusters import ClustersEngine
from sckpt.backend.errors import Disabled, NeedsForce, ReadOnlyError
from sckpt.backend.facade import Facade, simulated_engine
from sckpt.backend.model import ActionResult, StepId
from sckpt.backend.operations import BY_NAME, ForceWords, Operation
from sckpt.backend.readonly import ReadOnlyEngine
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for

ME = "alice"
MUTE = Operation(
    "mute",
    "disable a step's checkpoints for a while",
    arguments=("max_wait", "force"),
    force_words=ForceWords(
        unsaved="Still checkpointing", kept="it stays loud", anyway="mutes it mid-checkpoint."
    ),
)


@pytest.fixture(autouse=True)
def mute_row(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The made-up row, in the table for this test only."""
    monkeypatch.setitem(BY_NAME, MUTE.name, MUTE)
    yield


def _muting(cluster: SimulatedCluster) -> object:
    """The demo's engine plus the one method the new operation needs."""
    base = type(simulated_engine(cluster, ME))

    class Muting(base):  # type: ignore[valid-type, misc]
        # Its parameters in another order than the row's: they are passed by name.
        def mute(self, target: StepId, force: bool, max_wait: int) -> ActionResult:
            if max_wait == 0 and not force:  # "now": its checkpoint would be cut short
                raise NeedsForce(losses=(f"{target}: a checkpoint in progress",))
            self.disable(target)
            return ActionResult(target, "mute", f"muted for {max_wait}s, force={force}")

    return Muting(cluster.connect(ME))


def _running_step() -> tuple[SimulatedCluster, StepId]:
    cluster = SimulatedCluster(
        seed=3, n_jobs=0, clock=ManualClock(), users=demo_users_for(ME), arrivals=False
    )
    job = cluster.control.submit(ME, name="mutable")
    return cluster, StepId(job.job_id, 0)


def test_a_made_up_operation_is_reachable_from_act_with_its_arguments_by_name(
    settings: Settings,
) -> None:
    cluster, step = _running_step()
    facade = Facade(_muting(cluster), settings)  # type: ignore[arg-type]
    assert facade.able(step).in_progress_since == 0  # checkpoints can be issued
    result = facade.act("mute", str(step), max_wait=30, force=True)
    assert (result.operation, result.detail) == ("mute", "muted for 30s, force=True")
    with pytest.raises(Disabled):  # the simulated controller's counter went up
        facade.able(step)
    defaulted = facade.act("mute", str(step))  # left out: the config's max_wait
    assert defaulted.detail == f"muted for {settings.max_wait}s, force=False"
    lines = read_records(settings.audit_log)
    assert [(line["operation"], line["target"], line["arguments"]) for line in lines] == [
        ("mute", str(step), {"max_wait": 30, "force": True}),
        ("mute", str(step), {"max_wait": settings.max_wait, "force": False}),
    ]
    assert all(line["result"]["code"] == 0 for line in lines)


def test_a_made_up_operation_is_refused_in_read_only_mode_and_audited(
    settings: Settings,
) -> None:
    cluster, step = _running_step()
    engine = _muting(cluster)
    facade = Facade(engine, settings, read_only=True)  # type: ignore[arg-type]
    with pytest.raises(ReadOnlyError, match=f"mute {step} refused"):
        facade.act("mute", str(step), max_wait=30)
    guard = ReadOnlyEngine(engine)  # type: ignore[arg-type]
    with pytest.raises(ReadOnlyError, match=f"mute {step} refused"):
        guard.mute(step, force=False, max_wait=30)  # type: ignore[attr-defined]  # the second guard, by its row
    assert facade.able(step).in_progress_since == 0  # nothing was disabled
    (line,) = read_records(settings.audit_log)
    assert (line["operation"], line["target"]) == ("mute", str(step))
    assert line["result"]["name"] == "READ_ONLY"


def test_a_made_up_operation_is_routed_to_the_targets_cluster(settings: Settings) -> None:
    cluster, step = _running_step()
    facade = Facade(ClustersEngine([("east", _muting(cluster))]), settings)  # type: ignore[list-item]
    result = facade.act("mute", str(step), max_wait=5)
    assert result.target == StepId(step.job_id, 0, cluster="east")
    with pytest.raises(Disabled):
        facade.able(step)


def test_a_made_up_operation_refused_for_lost_work_asks_its_own_question(
    settings: Settings,
) -> None:
    from sckpt.tui.reports import force_declined, force_question

    cluster, step = _running_step()
    facade = Facade(_muting(cluster), settings)  # type: ignore[arg-type]
    with pytest.raises(NeedsForce) as refused:
        facade.act("mute", str(step), max_wait=0)
    assert facade.able(step).in_progress_since == 0  # nothing was muted
    assert force_question("mute", f"step {step}", refused.value).plain == (
        f"Mute step {step} anyway?\n\nStill checkpointing, it stays loud for now:\n"
        f"- {step}: a checkpoint in progress\n\nYes mutes it mid-checkpoint."
    )
    assert force_declined("mute", step) == f"mute {step} cancelled: it stays loud"
    forced = facade.act("mute", str(step), max_wait=0, force=True)
    assert forced.detail == "muted for 0s, force=True"
