"""What the demo's cluster is made of: its users, programs, partitions and nodes, and the
draws that pick among them.

Everything random comes from ``random.Random(seed)`` (one big draw per job, cut into small
choices by ``Bits``) or from ``stable_hash`` of ids, so the same seed, size and clock give
the same cluster, and outcomes do not depend on call order.
"""

from __future__ import annotations

import errno
import functools
import pwd
import zlib
from pathlib import Path

from ..arguments import DEFAULT_MAX_RESTARTS, DEFAULT_MTBF
from ..checkpointing.dmtcp import DmtcpInstall, checkpointer_label
from ..checkpointing.policy import ASSUMED_COST, young_daly
from ..model import RUN_BY, AutoCheckpoints, JobState

DEMO_USERS = ("alice", "bob", "carol", "dmitri", "erin", "farid", "grace")

SLURM_USER = "slurm"

SLURM_UID = 64030

DEMO_HISTORY_JOBS = 40
"""The demo's jobs with an hourly checkpoint history (``DemoTouches`` hourly history)."""

TRANSPARENT_ONE_IN = 10
"""One running job in this many (chosen by a hash of the seed and its id) runs its steps
under ``sckpt run --transparent`` in the demo (``DemoTouches``)."""

DEMO_DMTCP = DmtcpInstall(Path("/var/cache/sckpt/dmtcp-4.2.0"), "4.2.0", "cache")
"""The DMTCP the demo's transparent steps pretend to run under (only its label is shown)."""
DEMO_CHECKPOINTER = checkpointer_label(DEMO_DMTCP)
"""Its label, one string shared by every transparent step of the demo."""

DEMO_POLICIES: tuple[AutoCheckpoints, ...] = (
    AutoCheckpoints(every=1800, set_by=RUN_BY),
    AutoCheckpoints(every=young_daly(ASSUMED_COST, DEFAULT_MTBF), auto=True, set_by=RUN_BY),
    AutoCheckpoints(before_end=600, max_restarts=DEFAULT_MAX_RESTARTS, set_by=RUN_BY),
    AutoCheckpoints(every=3600, before_end=900, max_restarts=DEFAULT_MAX_RESTARTS, set_by=RUN_BY),
)
"""The automatic-checkpoint policies of the demo's steps under ``sckpt run`` (``sckpt run
--every 30m``, ``--every auto``, ``--before-end 10m``, both), each job's in turn: shared by
every step that has one, so they cost nothing per step (``DemoTouches``)."""
DEMO_AUTO_JOBS = 40
"""At most this many of the demo's transparent jobs run under a policy, and as many of the
first user's, whom the demo acts as: a 100,000-job demo keeps its memory."""

APPS: tuple[tuple[str, str, str], ...] = (
    ("lammps-eq", "lmp_mpi", "cpu"),
    ("gromacs-md", "gmx_mpi", "cpu"),
    ("vasp-relax", "vasp_std", "cpu"),
    ("wrf-forecast", "wrf.exe", "cpu"),
    ("train-resnet50", "python", "gpu"),
    ("namd-apoa1", "namd2", "cpu"),
    ("cp2k-aimd", "cp2k.psmp", "cpu"),
    ("openfoam-motorbike", "simpleFoam", "cpu"),
    ("bwa-align", "bwa", "cpu"),
    ("nwchem-dft", "nwchem", "cpu"),
    ("qe-scf", "pw.x", "cpu"),
    ("paraview-render", "pvbatch", "cpu"),
    ("alphafold-msa", "python", "gpu"),
    ("cesm-b1850", "cesm.exe", "cpu"),
    ("ray-tune", "python", "gpu"),
    ("gatk-haplo", "gatk", "bigmem"),
    ("velvet-assembly", "velvetg", "bigmem"),
)

CPU_PARTITIONS = ("batch", "batch", "batch", "debug", "long")

CPU_NODES = (1, 1, 1, 2, 2, 4, 8)

NUMBERED = (1, 2, 3, 3, 4, 5)

COMMENTS = (
    "project CHEM-0042",
    "rerun of the failed March batch",
    "ticket #1187: slow I/O on /scratch",
    "ask alice before cancelling",
)
"""``sbatch --comment`` texts; one job in three carries one (see ``population.demo_comment``)."""

PENDING_REASONS = ("Priority", "Resources", "Priority", "Resources", "Dependency", "JobHeldUser")

STATE_WEIGHTS = (
    (JobState.PENDING, 14),
    (JobState.RUNNING, 64),
    (JobState.SUSPENDED, 3),
    (JobState.COMPLETED, 11),
    (JobState.FAILED, 4),
    (JobState.CANCELLED, 4),
)

REQUIRED_STATES = tuple(state for state, _ in STATE_WEIGHTS)

FAIL_CODES = (errno.ENOSPC, errno.EIO, errno.ENOMEM, errno.EACCES)
"""How a drawn checkpoint failure ends (one checkpoint in nine fails)."""

NODE_MEMORY = {"gpu": "512G", "bigmem": "2T"}

NODE_GPUS = {"gpu": 4}


def stable_hash(*parts: int) -> int:
    """A stable hash of ids: outcomes that do not depend on call order."""
    return zlib.crc32("/".join(map(str, parts)).encode())  # one encode: 200,000 calls a demo


def uid_for(name: str) -> int:
    """The uid of a simulated user: fixed for the demo users, else from passwd, else hashed."""
    if name == "root":
        return 0
    if name == SLURM_USER:
        return SLURM_UID
    if name in DEMO_USERS:
        return 1001 + DEMO_USERS.index(name)
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return 50000 + zlib.crc32(name.encode()) % 10000


def demo_users_for(acting_user: str) -> tuple[str, ...]:
    """The demo's owners: the acting user takes alice's place so they own some jobs."""
    if acting_user in ("root", SLURM_USER) or acting_user in DEMO_USERS:
        return DEMO_USERS
    return (acting_user, *DEMO_USERS[1:])


class Bits:
    """Many small choices from one big random draw (generation of 100,000 jobs in seconds)."""

    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value

    def take(self, n: int) -> int:
        """A number in ``range(n)`` (mixed-radix digits of the draw)."""
        value = self.value
        self.value = value // n
        return value % n


@functools.cache
def tres(partition: str, n_nodes: int, cpus: int) -> str:
    """A TRES string as Slurm writes one (``cpu=64,mem=250G,node=1,billing=64``, then
    ``gres/gpu=4`` on GPU nodes): what the simulated job asked for or was given.  Cached:
    a few shapes serve 100,000 jobs, which share their strings instead of holding two new
    ones each (15 MB)."""
    n = max(1, n_nodes)
    memory = NODE_MEMORY.get(partition, "250G")
    amount, unit = int(memory[:-1]) * n, memory[-1]
    text = f"cpu={max(1, cpus)},mem={amount}{unit},node={n},billing={max(1, cpus)}"
    gpus = NODE_GPUS.get(partition, 0) * n
    return f"{text},gres/gpu={gpus}" if gpus else text


@functools.cache
def node_memory_mb(partition: str) -> int:
    """The memory a simulated job asks per node (``--mem``), in MB: the node's, as TRES."""
    memory = NODE_MEMORY.get(partition, "250G")
    return int(memory[:-1]) * {"M": 1, "G": 1024, "T": 1024 * 1024}[memory[-1]]


def gres(partition: str) -> str:
    """``--gres`` of a simulated job, as 22.05's squeue ``-O tres-per-node`` writes it."""
    gpus = NODE_GPUS.get(partition, 0)
    return f"gres:gpu:{gpus}" if gpus else ""
