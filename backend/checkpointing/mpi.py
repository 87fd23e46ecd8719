"""MPI under ``sckpt run --transparent``: which launches DMTCP 4.2.0 checkpoints exactly, and
a refusal, before the program starts, of those it does not.

What was tried on Slurm 22.05 with Debian 12's MPICH 4.0.2 and Open MPI 4.1.4 (README,
"MPI"), with a ring program whose final hash shows any lost or repeated message:

* **mpiexec/mpirun inside one task** (``srun -n1 sckpt run --transparent -- mpiexec -n 2
  ./app``): every process of the run (the launcher, its proxy, the ranks) is under the task's
  one coordinator, and DMTCP drains and restores their sockets.  It works for both MPIs once
  their libraries are kept off what DMTCP 4.2.0 cannot handle, which ``MPI_ENV`` does:
  UCX's mmap hooks deadlock inside DMTCP's ``dlsym`` at load time (the ranks never reach
  ``main``); hwloc's udev probe opens a block device (DMTCP: "Unimplemented file type", the
  rank is ended); UCX's SysV shared memory fails DMTCP's ``shmctl`` wrapper; and the
  launchers must start the ranks on this node, not through ``srun``, so that no process of
  the run is outside the task.  A script that calls ``mpiexec`` is the same run.  Ranks
  then talk over TCP loopback (slower than shared memory, and exact), all on the task's node.
* **the step's tasks as ranks** (``srun --mpi=pmi2|pmix sckpt run --transparent -- ./app``):
  each rank holds a connection to its ``slurmstepd``'s PMI server, outside the computation,
  which DMTCP cannot restore.  Under one coordinator for the whole step, a restarted MPICH
  rank computed the right result and then failed in ``MPI_Finalize`` (``PMI_Barrier returned
  -1``, exit 15); an Open MPI rank under pmix died right after the restart (exit 195).  With
  one coordinator per task the ranks' own sockets would not be drained either.  Refused.

Standard library only: the wrapper imports it on compute nodes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

LAUNCHERS = frozenset(
    {
        "mpiexec",
        "mpirun",
        "mpiexec.hydra",
        "orterun",
        "prterun",
        "mpiexec.mpich",
        "mpirun.mpich",
        "mpiexec.openmpi",
        "mpirun.openmpi",
    }
)
"""Program names that start MPI ranks (the basename of the command sckpt runs)."""
RANK_VARIABLES = ("PMI_RANK", "PMI_FD", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "PMI_SIZE")
"""Set in a task started by ``srun --mpi=pmi2|pmix`` (or by an MPI launcher): it is a rank."""
HYDRA = "mpiexec.hydra"
ORTERUN = "orterun"
KNOWN = {HYDRA: "MPICH (hydra)", ORTERUN: "Open MPI (orterun)"}
"""The launchers tried and working under DMTCP 4.2.0, by the name their link resolves to."""

MPI_ENV = {
    # UCX's mmap hooks deadlock inside DMTCP's dlsym wrapper while the library loads.
    "UCX_MEM_MMAP_HOOK_MODE": "none",
    # UCX's SysV shared memory fails DMTCP's shmctl wrapper: TCP between ranks.
    "UCX_TLS": "tcp,self",
    # hwloc's udev probe opens /dev/vda-like devices, which DMTCP cannot checkpoint.
    "HWLOC_COMPONENTS": "-linuxio,-linux",
    # Open MPI: no UCX, TCP between ranks, and every rank on this node: no daemon started
    # through srun or ssh, and not Slurm's node list (its node names need not be this host's).
    "OMPI_MCA_pml": "ob1",
    "OMPI_MCA_btl": "self,tcp",
    "OMPI_MCA_plm": "isolated",
    "OMPI_MCA_ras": "^slurm",
    # MPICH's hydra: ranks started on this node by fork, not through srun.
    "HYDRA_LAUNCHER": "fork",
}
"""What ``sckpt run --transparent`` sets, whatever the job set: without each of these an
MPI run froze or a rank died under DMTCP (see the module's docstring).  Set for every
program, not only a launcher named on the command line: a script that calls ``mpiexec``
needs them as much, and they change nothing for a program that uses neither UCX, hwloc nor
an MPI launcher (one that does would fail under DMTCP without them)."""

SAVE_ITSELF = "let the program save itself (sckpt run -- ./app, the signal mode)"
INSTEAD = (
    "start the ranks inside one task instead (srun -n1 sckpt run --transparent -- "
    f"mpiexec -n N ./app: one node), or {SAVE_ITSELF}"
)


@dataclass(frozen=True, slots=True)
class MpiLaunch:
    """An MPI launch seen at ``sckpt run`` time."""

    how: str
    """``mpiexec`` (a launcher is the program) or ``srun`` (the task is a rank)."""
    what: str
    """What was seen, in the words of the refusal: ``mpiexec (MPICH (hydra))``,
    ``PMI_RANK=0 in the task's environment``."""
    launcher: str = ""
    """The launcher's real name (its links resolved): ``mpiexec.hydra``, ``orterun``..."""


def detect(program: Sequence[str], env: Mapping[str, str]) -> MpiLaunch | None:
    """The MPI launch of this task, or None when it shows no sign of one."""
    name = Path(program[0]).name if program else ""
    if name in LAUNCHERS:
        found = shutil.which(program[0], path=env.get("PATH"))
        real = Path(found).resolve() if found else Path(name)
        kind = KNOWN.get(real.name, str(real))
        return MpiLaunch("mpiexec", f"{name} ({kind})", real.name)
    for variable in RANK_VARIABLES:
        if variable in env:
            return MpiLaunch("srun", f"{variable}={env[variable]} in the task's environment")
    return None


def refusal(launch: MpiLaunch) -> str:
    """Why ``--transparent`` cannot checkpoint this launch exactly; "" when it can."""
    if launch.how == "srun":
        return (
            f"--transparent: this task is an MPI rank ({launch.what}, from srun "
            "--mpi): DMTCP cannot restore a rank's connection to slurmstepd's PMI server, "
            f"so a restart would fail (tried: MPICH/pmi2, Open MPI/pmix); {INSTEAD} "
            "(a program that is not MPI: srun --mpi=none)"
        )
    if launch.launcher not in KNOWN:
        return (
            f"--transparent: {launch.what} is an MPI launcher sckpt has not "
            f"checkpointed and restarted exactly (only {' and '.join(KNOWN.values())}); "
            f"start the run with one of those, or {SAVE_ITSELF}"
        )
    return ""


def transparent_env(program: Sequence[str], env: Mapping[str, str]) -> dict[str, str]:
    """What to add to the task's environment for ``--transparent`` (``MPI_ENV``);
    ``UsageError`` (one line, exit 2, before anything starts) for an MPI launch that would
    not restart exactly."""
    launch = detect(program, env)
    why = refusal(launch) if launch is not None else ""
    if why:
        raise UsageError(why)
    return dict(MPI_ENV)


def inherited_fds(env: Mapping[str, str]) -> tuple[int, ...]:
    """The descriptors the program must inherit from the wrapper: ``PMI_FD``, the rank's
    connection to ``slurmstepd``'s PMI server under ``srun --mpi=pmi2`` (closed, an MPICH
    rank fails ``MPI_Init`` with "PMI_Get_appnum returned -1")."""
    text = env.get("PMI_FD", "")
    if not text.isdigit():
        return ()
    fd = int(text)
    try:
        os.fstat(fd)
    except OSError:
        return ()
    return (fd,)
