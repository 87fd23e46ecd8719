"""The simulated Slurm 19.05: an in-process controller with a checkpoint plugin, and its
client library (``SimulatedSlurm``, a ``SlurmAPI`` like the cffi binding).

It stands where libslurm and slurmctld stand on a real cluster: the demo runs the native
engine over it (``engines/simulated.py``), the tests use it as their oracle and drive it through
``SimulatedCluster.control``.  Import the public names from here; ``cluster.py`` says how
the modules fit together.
"""

from .catalog import DEMO_USERS, demo_users_for
from .client import SimulatedSlurm
from .clock import ManualClock
from .cluster import SimulatedCluster
from .control import SimulatorControl
from .plugins import CHECKPOINT_TYPES, CheckpointPlugin
from .records import SavedRecord, TransparentStep
from .staging import DEMO_FIRST_PART

__all__ = [
    "CHECKPOINT_TYPES",
    "DEMO_FIRST_PART",
    "DEMO_USERS",
    "CheckpointPlugin",
    "ManualClock",
    "SavedRecord",
    "SimulatedCluster",
    "SimulatedSlurm",
    "SimulatorControl",
    "TransparentStep",
    "demo_users_for",
]
