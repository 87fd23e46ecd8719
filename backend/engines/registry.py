"""Which engine a name means: one table, and one factory signature.

``engine = "..."`` in the config and ``--engine`` name an engine (``config.ENGINES``: these
names and ``auto``); ``--demo`` is ``simulated``.  ``FACTORIES`` maps each name to the
function that makes that engine from the settings and the ``SlurmAPI`` it is given:
libslurm's ``Binding`` (or a ``-M`` cluster's, ``Binding.on_cluster``), or a simulated
controller's client (``SimulatedCluster.connect``).  No factory loads a binding of its own.
``auto`` is not an engine: ``chosen`` turns it into one by what the binding offers.

Each factory imports its engine's module when called, so that a command pays only for
the engine it uses.  ``tests/backend/test_engine_registry.py`` checks that the table and
``config.ENGINES`` name the same engines.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import Settings
from ..slurm_api import SlurmAPI
from .base import Engine

EngineFactory = Callable[[Settings, SlurmAPI], Engine]
"""Makes one engine over the binding it is given, with the settings it is given."""


def _native(settings: Settings, binding: SlurmAPI) -> Engine:
    from .native import NativeEngine

    return NativeEngine(binding)


def _cooperative(settings: Settings, binding: SlurmAPI) -> Engine:
    from ..checkpointing.engine import CooperativeEngine

    return CooperativeEngine(binding)


def _live(settings: Settings, binding: SlurmAPI) -> Engine:
    from .live import LiveEngine

    return LiveEngine(binding)


def _simulated(settings: Settings, binding: SlurmAPI) -> Engine:
    from ..simulator import SimulatedSlurm
    from .simulated import SimulatedEngine

    if not isinstance(binding, SimulatedSlurm):
        raise TypeError("the simulated engine runs over a simulated controller's client")
    return SimulatedEngine(binding)


FACTORIES: dict[str, EngineFactory] = {
    "native": _native,
    "cooperative": _cooperative,
    "live": _live,
    "simulated": _simulated,
}
"""Engine name (as the user writes it, the header shows it and the audit log records
it) -> its factory."""


def chosen(engine: str, binding: SlurmAPI) -> str:
    """The engine ``engine`` names over ``binding``: ``auto`` is native where the binding
    has the checkpoint API (Slurm <= 19.05), else cooperative; any other is itself."""
    if engine != "auto":
        return engine
    return "native" if binding.has_checkpoint_api else "cooperative"
