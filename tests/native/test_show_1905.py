"""Issue 34's job record and squeue fields on the real Slurm 19.05.8, beside 19.05's own tools.

``sckpt show JOB`` against 19.05's ``scontrol show job`` field by field, and ``sckpt ls -o``
with the time and scheduling letters (``%l %L %e %Q %q %E %m``, and ``-O``'s names) against
19.05's ``squeue`` byte for byte: the native engine reads them through the 19.05 shim, whose
job record must carry the same fields as 22.05's.  Times tick between two commands, so the
oracle runs before and after sckpt and sckpt must equal one of its answers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..cli.test_real_cluster_show import SCKPT_OWN, WANTED, fields
from ..helpers import wait_for
from .conftest import Native

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def jobs_1905(native: Native) -> Iterator[dict[str, str]]:
    """A running job with a step, a limit, memory and a comment; a held job depending on it
    with a limit over a day; a job Slurm may not requeue."""
    made: list[str] = []

    def submit(*args: str) -> str:
        out = native.cluster.run("sbatch", "--parsable", "-o", "/dev/null", *args)
        made.append(out.stdout.strip().split(";")[0])
        return made[-1]

    try:
        run = submit("-t", "30", "--mem=100", "--comment=ask-me", "--wrap", "srun sleep 600")
        held = submit("-t", "1-2:03:04", "--hold", "-d", f"afterok:{run}", "--wrap", "sleep 60")
        fixed = submit("--no-requeue", "--wrap", "sleep 600")
        wait_for(lambda: f"{run}.0" in native.steps(int(run)), timeout=180)
        wait_for(lambda: native.job_state(int(fixed)) == "RUNNING", timeout=60)
        yield {"run": run, "held": held, "fixed": fixed}
    finally:
        native.cancel(*map(int, made))


@pytest.mark.parametrize("which", ["run", "held", "fixed"])
def test_show_prints_what_scontrol_1905_prints(
    native: Native, jobs_1905: dict[str, str], which: str
) -> None:
    job = jobs_1905[which]
    before = fields(native.scontrol("show", "job", job).stdout)
    ours = native.sckpt("show", job)
    after = fields(native.scontrol("show", "job", job).stdout)
    assert ours.returncode == 0 and ours.stderr == "", ours.stderr
    shown = fields(ours.stdout)
    assert set(shown) >= WANTED, sorted(WANTED - set(shown))
    for key, value in shown.items():
        if key not in SCKPT_OWN:
            assert key in before, (key, value, before)
            assert value in (before[key], after[key]), (key, value, before[key], after[key])
    assert ("Comment" in shown) == ("Comment" in before)
    expected = {
        "run": {"Comment": "ask-me", "MinMemoryNode": "100M", "TimeLimit": "00:30:00"},
        "held": {"Reason": "JobHeldUser", "TimeLimit": "1-02:04:00", "Dependency": "afterok:"},
        "fixed": {"Requeue": "0", "JobState": "RUNNING"},
    }[which]
    for key, value in expected.items():
        assert shown[key].startswith(value), (key, shown[key])


SQUEUE_CASES = [
    ["-o", "%i|%.10l|%.10L|%e|%Q|%q|%E|%m"],
    ["-O", "JobID,TimeLimit,TimeLeft,EndTime,PriorityLong,QOS,Dependency,MinMemory"],
    ["-o", "%i %l %L %e", "-S", "-L"],
    ["-o", "%i|%E", "-j", "{held}"],
]
"""%E of a job without a dependency is empty on 19.05, where 22.05's squeue (and sckpt once
printed on both) says ``(null)``."""


@pytest.mark.parametrize("case", SQUEUE_CASES, ids=[" ".join(c) for c in SQUEUE_CASES])
def test_the_time_and_scheduling_fields_are_squeue_1905s(
    native: Native, jobs_1905: dict[str, str], case: list[str]
) -> None:
    ids = ",".join(jobs_1905.values())
    sort = [] if "-S" in case else ["-S", "i"]
    where = [] if "-j" in case else ["-j", ids]
    for header in ([], ["-h"]):
        words = [*(w.format(**jobs_1905) for w in case), *sort, *header, *where]
        before = native.cluster.run("squeue", *words).stdout
        ours = native.sckpt("ls", *words)
        after = native.cluster.run("squeue", *words).stdout
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout in (before, after), (words, ours.stdout, before)
        assert len(ours.stdout.splitlines()) == (1 if where == [] else 3) + (not header)
