"""10,000 load/free cycles against the real cluster leave RSS where it was (< 5 MB growth)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sckpt.backend.libslurm import Binding
from sckpt.backend.model import StepId

from tests.helpers import wait_for

from .conftest import Submit

pytestmark = pytest.mark.slurm

CYCLES = 10_000


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_load_free_cycles_do_not_grow_rss(binding: Binding, submit: Submit) -> None:
    running = submit("-n2", "-J", "bind-mem", "--wrap", "srun -n2 sleep 600")
    for _ in range(5):
        submit("-n1", "-J", "bind-mem-held", "--hold", "--wrap", "sleep 1")
    wait_for(lambda: any(s.step_id == StepId(running, 0) for s in binding.get_steps().steps))

    def cycle() -> None:
        jobs = binding.load_jobs(0)
        steps = binding.get_steps(0)
        assert jobs.changed and steps.changed and jobs.jobs and steps.steps

    for _ in range(500):  # warm up allocator, caches and the user-name table
        cycle()
    before = _rss_kb()
    for i in range(CYCLES):
        cycle()
        if i % 1000 == 0:
            binding.ctl_conf()
            binding.step_pids(StepId(running, 0))
    growth_kb = _rss_kb() - before
    assert growth_kb < 5 * 1024, f"RSS grew {growth_kb} KiB over {CYCLES} cycles"


def test_calls_from_many_threads_are_serialised(binding: Binding, submit: Submit) -> None:
    """Refreshes and actions may overlap (UI worker threads): every call still succeeds."""
    import threading

    job_id = submit("-n1", "-J", "bind-threads", "--hold", "--wrap", "sleep 1")
    failures: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            for _ in range(40):
                assert job_id in {j.job_id for j in binding.load_jobs(0).jobs}
                binding.get_steps(0)
                if i % 2:
                    binding.set_required_nodes(job_id, "sckpt-node")
                else:
                    binding.ctl_conf()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not failures, failures
    assert all(not t.is_alive() for t in threads)
