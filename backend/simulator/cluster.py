"""The simulated cluster: an in-process Slurm 19.05 controller with a checkpoint plugin.

Why it exists: no Slurm release still supported has the checkpoint API, so the console's
demo (``sckpt --demo``), its UI tests and the rule tests need a cluster that follows the
historical rules (``shared/reference/checkpoint-semantics.md``).  ``SimulatedCluster`` is the
controller; ``connect(user)`` gives its client library, ``SimulatedSlurm`` (``client.py``),
a ``SlurmAPI`` like the cffi binding, so the demo is the native engine over it (several
connections, one per user, may share one controller: that is how the tests check access).
The rules themselves are ``backend/rules.py``'s; the controller calls them
(``checkpoint.py`` lists them in order), and its plugin (``plugins.py``) decides the rest.
Tests make things happen through ``SimulatedCluster.control`` (``control.py``).

Everything random comes from ``random.Random(seed)`` or from a hash of ids, so the same
seed, size and clock give the same cluster.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from functools import cached_property

from ..errors import UsageError
from ..gc_pause import cyclic_gc_paused, freeze_built
from ..rules import Caller
from .accounting import Accounting
from .autopolicy import AutoPolicies
from .catalog import DEMO_USERS, SLURM_UID, SLURM_USER, uid_for
from .client import SimulatedSlurm
from .clock import EventQueue
from .control import SimulatorControl
from .output import DemoOutput
from .plugins import CHECKPOINT_TYPES, plugin_for
from .records import DEFAULT_JOB_CHECKPOINT_DIR, Listing


class SimulatedCluster(AutoPolicies):
    """A deterministic in-process cluster following Slurm 19.05's checkpoint rules.

    Arguments: ``seed`` and ``n_jobs`` fix the generated cluster; ``clock`` (default
    ``time.time``; pass ``ManualClock()`` for tests) is read on every call; ``users`` are the
    job owners (default ``DEMO_USERS``); ``checkpoint_type`` is one of ``CHECKPOINT_TYPES``
    (``plugins.py``: blcr, the default, ompi as the real 19.05 test cluster runs it, none);
    ``job_checkpoint_dir`` is slurm.conf's JobCheckpointDir ("" = none configured);
    ``arrivals`` submits a new job every few minutes so the demo stays alive;
    ``demo_touches`` disables a few steps, starts one checkpoint and leaves one error so
    the demo shows every state; ``min_job_age`` is how long a job that finishes during
    the simulation stays known (slurm.conf's MinJobAge; jobs generated as finished stay);
    ``numbered_steps`` fixes how many numbered steps a batch job runs (default: 1-5 drawn
    per job), for benchmarks that need many steps per job; ``arrays`` adds the demo's job
    arrays after the generated jobs (``DemoTouches._demo_arrays``: running tasks, a pending
    range with a run limit, a held array), so the other jobs keep their ids and fields;
    ``output_dir`` (the demo's) gives batch jobs real output files there (``output.py``;
    "" = none, the paths alone).
    """

    def __init__(
        self,
        seed: int = 42,
        n_jobs: int = 48,
        clock: Callable[[], float] | None = None,
        *,
        users: Sequence[str] = DEMO_USERS,
        checkpoint_type: str = "checkpoint/blcr",
        prolog_contain: bool = True,
        checkpoint_dir_exists: bool = True,
        job_checkpoint_dir: str = DEFAULT_JOB_CHECKPOINT_DIR,
        cluster_name: str = "demo",
        arrivals: bool = True,
        demo_touches: bool = True,
        min_job_age: int = 3600,
        first_job_id: int = 184_201,
        numbered_steps: int | None = None,
        output_dir: str = "",
        arrays: bool = False,
    ) -> None:
        _check_arguments(n_jobs, users, checkpoint_type, numbered_steps)
        self.seed = seed
        self.clock = clock if clock is not None else time.time
        self._output_paths = {}
        self._output = DemoOutput(output_dir) if output_dir else None
        self.users = tuple(Caller(uid_for(name), name) for name in users)
        self.slurm_user = Caller(SLURM_UID, SLURM_USER, is_slurm_user=True)
        self.checkpoint_type = checkpoint_type
        self.plugin = plugin_for(checkpoint_type)
        self.prolog_contain = prolog_contain
        self.checkpoint_dir_exists = checkpoint_dir_exists
        self.job_checkpoint_dir = job_checkpoint_dir
        self.cluster_name = cluster_name
        self.arrivals = arrivals
        self.min_job_age = min_job_age
        self.numbered_steps = numbered_steps
        self._lock = threading.RLock()
        self._rng = random.Random(seed)
        self._jobs = {}
        self._listed_jobs = {}
        self._step_records = {}
        self._dirty = set()
        self._events = EventQueue()
        self._version = 0
        self._returned_version = -1
        self._listed = Listing(-1, (), (), {})
        self._last_snapshot = ()
        self._records = {}
        self._scripts = {}
        self._pending_codes = {}
        self._next_job_id = first_job_id
        self._first_job_id = first_job_id
        self._transparent = {}
        self._auto = {}
        self._pending_causes = {}
        self._dbd = Accounting(cluster_name, self.users)
        self._families = node_families(n_jobs)
        self._now = self.clock()
        # The records form no reference cycles, and the cyclic collector walking a
        # million young objects again and again costs half the time of a 100,000-job
        # build: pause it while building, and for big clusters move what was built out
        # of its sight (gc.freeze; the objects are still freed by reference counting).
        with cyclic_gc_paused():
            self._generate(n_jobs)
            self._dbd.seed(self._jobs, n_jobs, int(self._now), self._first_job_id)
            if demo_touches:
                self._demo_touches()
            if arrays:
                self._demo_arrays()
            self._rebuild_dirty()
            freeze_built(n_jobs)

    def connect(self, user: str) -> SimulatedSlurm:
        """This controller's client library, acting as ``user`` (a ``SlurmAPI``)."""
        return SimulatedSlurm(self, self.user(user))

    @cached_property
    def control(self) -> SimulatorControl:
        """What tests do to the cluster: move its clock, submit jobs, force outcomes."""
        return SimulatorControl(self)


def _check_arguments(
    n_jobs: int, users: Sequence[str], checkpoint_type: str, numbered_steps: int | None
) -> None:
    """One clear line for an argument the cluster cannot be built with."""
    if n_jobs < 0:
        raise UsageError("n_jobs must be 0 or more")
    if not users:
        raise UsageError("the simulated cluster needs at least one user")
    if checkpoint_type not in CHECKPOINT_TYPES:
        raise UsageError(f"checkpoint_type must be one of {', '.join(CHECKPOINT_TYPES)}")
    if numbered_steps is not None and numbered_steps < 0:
        raise UsageError("numbered_steps must be 0 or more")


def node_families(n_jobs: int) -> dict[str, tuple[str, int, int]]:
    """The cluster's node families for ``n_jobs`` jobs: kind -> (name prefix, width of the
    number, node count); a bigger cluster has more nodes (``cn001``... ``gpu01``...)."""
    cpu = max(32, n_jobs // 3)
    gpu = max(8, n_jobs // 40)
    bigmem = max(2, n_jobs // 200)
    return {
        "cpu": ("cn", max(3, len(str(cpu))), cpu),
        "gpu": ("gpu", 2 if n_jobs < 400 else len(str(gpu)), gpu),
        "bigmem": ("bigmem", 2 if n_jobs < 400 else len(str(bigmem)), bigmem),
    }
