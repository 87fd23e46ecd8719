"""Engines are found one way: a name, one factory of one signature, the binding it is given.

Every engine the config accepts is a row of ``engines/registry.FACTORIES`` (and ``auto``
chooses one of them by what the binding offers); each factory builds its engine over the
very binding it is handed, here one user's client of a simulated Slurm 19.05 controller:
the engine then lists that controller's jobs and acts as that user.
"""

from __future__ import annotations

import pytest
from sckpt.backend.config import ENGINES, Settings
from sckpt.backend.engines.registry import FACTORIES, chosen
from sckpt.backend.facade import Facade, open_facade
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for


def _cluster() -> SimulatedCluster:
    return SimulatedCluster(
        seed=5, n_jobs=0, clock=ManualClock(), users=demo_users_for("alice"), arrivals=False
    )


def test_the_config_names_exactly_the_tables_engines_and_auto() -> None:
    assert ("auto", *FACTORIES) == ENGINES


@pytest.mark.parametrize("name", list(FACTORIES))
def test_each_factory_builds_its_engine_over_the_binding_it_is_given(
    name: str, settings: Settings
) -> None:
    cluster = _cluster()
    job = cluster.control.submit("alice", name="listed")
    engine = FACTORIES[name](settings, cluster.connect("alice"))
    assert engine.name == name
    listed = {view.job.job_id: view.job.user for view in engine.snapshot().jobs}
    assert listed == {job.job_id: "alice"}
    facade = Facade(engine, settings)
    facade.hold(str(job.job_id))  # acts through that client: the controller holds the job
    assert cluster.job(job.job_id).held
    engine.close()


class _ModernSlurm:
    """All ``chosen`` asks of a binding: a Slurm after 19.05 has no checkpoint API."""

    has_checkpoint_api = False


def test_auto_is_native_with_the_checkpoint_api_and_cooperative_without() -> None:
    client = _cluster().connect("alice")
    assert client.has_checkpoint_api  # the simulated controller is a Slurm 19.05
    assert chosen("auto", client) == "native"
    assert chosen("auto", _ModernSlurm()) == "cooperative"  # type: ignore[arg-type]
    assert chosen("live", client) == "live"


def test_the_demo_is_the_simulated_engine(settings: Settings) -> None:
    with open_facade(settings, demo=True) as facade:
        assert facade.engine_name == "simulated"
        cluster = facade.simulated_cluster
        assert cluster is not None
        listed = {view.job.job_id for view in facade.snapshot().jobs}
        assert listed and listed <= {job.job_id for job in cluster.listing().jobs}
