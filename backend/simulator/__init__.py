"""The simulated Slurm 19.05: an in-process controller with a checkpoint plugin, and its
client library (``SimulatedSlurm``, a ``SlurmAPI`` like the cffi binding).

It stands where libslurm and slurmctld stand on a real cluster: the demo runs the native
engine over it (``engines/demo.py``), the tests use it as their oracle and drive it through
``SimulatedCluster.control``.  Import the public names from here.
"""

from .cluster import (
    DEMO_USERS,
    ManualClock,
    SavedRecord,
    SimulatedCluster,
    SimulatedSlurm,
    TransparentStep,
    demo_users_for,
)

__all__ = [
    "DEMO_USERS",
    "ManualClock",
    "SavedRecord",
    "SimulatedCluster",
    "SimulatedSlurm",
    "TransparentStep",
    "demo_users_for",
]
