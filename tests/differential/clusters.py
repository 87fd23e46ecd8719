"""Clusters that answer the scripted sequences, and the runner that records their answers.

``Cluster`` is what a scenario needs of a cluster: jobs in given states, and ``sckpt``
run as a given user.  Three implementations:

``Real1905``
    the real Slurm 19.05.8 cluster (``checkpoint/ompi``) driven by the installed ``sckpt``
    (engine auto = native), as root or as a test user through runuser; jobs made with
    sbatch and changed with scontrol suspend/resume and scancel.
``Simulated``
    the in-process ``SimulatedCluster`` in its ompi setting, jobs made with its public
    ``submit``/``set_job_state``, operations through ``sckpt.cli.main`` in-process with
    ``--as-user`` and ``open_facade`` acting on that cluster; the manual clock moves one
    second per step, as time passes between two commands on a real cluster.
``Cooperative``
    the cooperative engine on the real Slurm 22.05 cluster: every job's step 0 runs the
    example counter under ``sckpt run`` (as tests/cooperative do), so checkpoints really
    happen.

``run_scenario`` plays a scenario on one cluster and returns one ``Answer`` per operation,
normalised so that answers of two clusters compare (job ids become ``{label}``, test user
names lose their ``sckpt-`` prefix, times become ``TIME``, a pid left as a checkpoint error
message becomes ``PID``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol
from unittest import mock

from tests.conftest import SlurmCluster
from tests.helpers import catches_signal, wait_for

from .scenarios import OPERATIONS, Step

ROOT = Path(__file__).resolve().parents[2]
SCKPT = Path(sys.executable).with_name("sckpt")
EXAMPLE = ROOT / "examples" / "counter.py"
SLEEP = 900
"""How long a running job's step 0 runs (scancel ends it first)."""


@dataclass(frozen=True)
class Raw:
    """What one ``sckpt`` command did."""

    exit: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Answer:
    """One operation's answer, normalised: what two clusters must agree on."""

    step: str
    """The step as written in the scenario, with its options (``create {run}.0 max_wait=5``)."""
    user: str
    exit: int
    error: str
    """``NAME (code)`` as sckpt printed it, or ``""``."""
    stdout: str
    stderr: str

    def same(self, other: Answer) -> bool:
        return (self.exit, self.error, self.stdout, self.stderr) == (
            other.exit,
            other.error,
            other.stdout,
            other.stderr,
        )

    def without_hint(self) -> Answer:
        """The answer with sckpt's explanation after the message dropped (``...: msg; hint``)."""
        return replace(self, stderr=_HINT.sub(r"\1", self.stderr))

    def short(self) -> str:
        """One line: exit code, then the error or what was printed."""
        said = self.error or self.stdout.strip().replace("\n", " | ") or "(nothing)"
        return f"exit {self.exit}: {said}"


class Cluster(Protocol):
    """What a scenario needs of a cluster."""

    name: str

    def submit(self, user: str, state: str) -> int:
        """A batch job of ``user`` whose step 0 runs; ``state`` running or pending (held)."""
        ...

    def change(self, job: int, how: str) -> None:
        """``suspend``, ``resume``, ``finish`` (COMPLETED) or ``cancel`` (CANCELLED)."""
        ...

    def nodes(self, job: int) -> str:
        """The job's node list."""
        ...

    def sckpt(self, user: str, argv: Sequence[str]) -> Raw:
        """``sckpt ARGV`` as ``user`` (``root``, ``alice``, ``bob``)."""
        ...

    def after(self, argv: Sequence[str], raw: Raw) -> None:
        """Let what the command started settle (real clusters), or time pass (simulated)."""
        ...

    def cleanup(self, jobs: Sequence[int]) -> None:
        """Cancel the scenario's jobs."""
        ...


# ---------------------------------------------------------------- steps to command lines

_PLACEHOLDER = re.compile(r"\{(\w+)(?:@(\w+))?\}")


def _resolve(text: str, jobs: Mapping[str, int], cluster: Cluster) -> str:
    def one(match: re.Match[str]) -> str:
        job = jobs[match.group(1)]
        return cluster.nodes(job) if match.group(2) == "nodes" else str(job)

    return _PLACEHOLDER.sub(one, text)


def command(op: str, target: str, options: Mapping[str, object]) -> list[str]:
    """The ``sckpt`` words of one operation step (placeholders already resolved)."""
    if op.startswith("checkpoint "):
        words = ["checkpoint", op.split()[1], target]
        for key, value in options.items():
            words.append(_HISTORICAL[key].format(value=value))
        return words
    words = [op, target]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        else:
            words += [flag, str(value)]
    return words


_HISTORICAL = {"max_wait": "MaxWait={value}", "image_dir": "ImageDir={value}", "stick": "Stick"}


def describe_step(step: Step) -> str:
    """The step as text, placeholders kept: ``create {run}.0 max_wait=5``."""
    words = [str(word) for word in step[:2]]
    if len(step) > 2 and isinstance(step[2], Mapping):
        words += [f"{k}={v}" for k, v in step[2].items()]
    else:
        words += [str(word) for word in step[2:]]
    return " ".join(words)


def is_operation(step: Step) -> bool:
    op = str(step[0])
    return op in OPERATIONS or op.startswith("checkpoint ")


# ---------------------------------------------------------------- normalisation

_HINT = re.compile(r"^(sckpt: .*?: [A-Z][A-Z0-9_]+ \(-?\d+\): [^;\n]*);[^\n]*$", re.MULTILINE)
_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?\b")
_PID_MESSAGE = re.compile(r"^(error\(\d+\): )\d+$", re.MULTILINE)
_ERROR_NAME = re.compile(r": ([A-Z][A-Z0-9_]+ \(-?\d+\))(?::|$)", re.MULTILINE)


def normalize(text: str, jobs: Mapping[str, int], users: Mapping[str, str], home: str = "") -> str:
    """Job ids → ``{label}``, real user names → logical ones, times → TIME, pid → PID,
    the cluster's private directory → ``{home}``."""
    if home:
        text = text.replace(home, "{home}")
    text = _TIME.sub("TIME", text)
    text = _PID_MESSAGE.sub(r"\1PID", text)
    by_id = {str(job): label for label, job in jobs.items()}
    if by_id:
        ids = "|".join(sorted(map(re.escape, by_id), key=len, reverse=True))
        # a job id stands alone or before ".step"/":"; codes are "(2017)", never touched
        pattern = re.compile(rf"(?<![\w(.\-/])({ids})(?=[.:\s,;)]|$)", re.MULTILINE)
        text = pattern.sub(lambda m: "{" + by_id[m.group(1)] + "}", text)
    for logical, real in users.items():
        if real != logical:
            text = re.sub(rf"\b{re.escape(real)}\b", logical, text)
    return text


def error_name(stderr: str) -> str:
    """``NAME (code)`` of sckpt's error line (``sckpt: OP TARGET: NAME (code): message``)."""
    match = _ERROR_NAME.search(stderr)
    return match.group(1) if match else ""


# ---------------------------------------------------------------- the runner


@dataclass
class Run:
    """One scenario played on one cluster."""

    cluster: str
    scenario: str
    answers: list[Answer] = field(default_factory=list)


def run_scenario(cluster: Cluster, name: str, steps: Sequence[Step]) -> Run:
    """Play ``steps`` on ``cluster``; one normalised ``Answer`` per operation step."""
    jobs: dict[str, int] = {}
    user = "root"
    run = Run(cluster.name, name)
    users = getattr(cluster, "user_names", {})
    home = str(getattr(cluster, "home", ""))
    try:
        for step in steps:
            kind = str(step[0])
            if kind == "as":
                user = str(step[1])
            elif kind == "submit":
                jobs[str(step[1])] = cluster.submit(str(step[2]), str(step[3]))
            elif kind in ("suspend", "resume", "finish", "cancel"):
                cluster.change(jobs[str(step[1])], kind)
            elif is_operation(step):
                options = step[2] if len(step) > 2 and isinstance(step[2], Mapping) else {}
                target = _resolve(str(step[1]), jobs, cluster)
                values = {
                    k: _resolve(str(v), jobs, cluster) if isinstance(v, str) else v
                    for k, v in options.items()
                }
                argv = command(kind, target, values)
                raw = cluster.sckpt(user, argv)
                cluster.after(argv, raw)
                out = normalize(raw.stdout, jobs, users, home)
                err = normalize(raw.stderr, jobs, users, home)
                run.answers.append(
                    Answer(describe_step(step), user, raw.exit, error_name(err), out, err)
                )
            else:
                raise ValueError(f"unknown step {step!r} in scenario {name}")
    finally:
        cluster.cleanup(list(jobs.values()))
    return run


def first_difference(
    ours: Run, theirs: Run, skip: Callable[[int], bool] = lambda index: False
) -> str | None:
    """A readable account of the first step where the two runs answer differently."""
    if len(ours.answers) != len(theirs.answers):
        return (
            f"{ours.scenario}: {ours.cluster} answered {len(ours.answers)} steps, "
            f"{theirs.cluster} {len(theirs.answers)}"
        )
    for index, (a, b) in enumerate(zip(ours.answers, theirs.answers, strict=True)):
        if skip(index) or a.same(b):
            continue
        width = max(len(ours.cluster), len(theirs.cluster))
        lines = [f"scenario {ours.scenario!r}, step {index} (as {a.user}): {a.step}"]
        for earlier in range(max(0, index - 3), index):
            e = ours.answers[earlier]
            lines.append(f"    before #{earlier}: {e.step} -> {e.short()}")
        for who, ans in ((ours.cluster, a), (theirs.cluster, b)):
            lines.append(f"  {who:<{width}}  exit {ans.exit}  error {ans.error or '-'}")
            lines.append(f"  {'':<{width}}  stdout {ans.stdout!r}")
            lines.append(f"  {'':<{width}}  stderr {ans.stderr!r}")
        return "\n".join(lines)
    return None


def all_differences(ours: Run, theirs: Run, hints: bool = True) -> list[tuple[int, Answer, Answer]]:
    """Every step where the runs differ (for reports; the tests stop at the first);
    ``hints=False`` compares the answers without sckpt's explanations."""
    return [
        (i, a, b)
        for i, (a, b) in enumerate(zip(ours.answers, theirs.answers, strict=False))
        if not (a.same(b) if hints else a.without_hint().same(b.without_hint()))
    ]


# ---------------------------------------------------------------- real clusters


def _state_of(cluster: SlurmCluster, job: int) -> str:
    out = cluster.run("squeue", "-h", "-t", "all", "-j", str(job), "-o", "%T", check=False)
    return out.stdout.strip()


def _has_step(cluster: SlurmCluster, job: int, step: str) -> bool:
    out = cluster.run("squeue", "-h", "-s", "-j", str(job), "-o", "%i", check=False)
    return f"{job}.{step}" in out.stdout.split()


class _RealCluster:
    """What the two real clusters share: users through runuser, job state changes."""

    name = "real"
    user_names: Mapping[str, str]

    def __init__(self, cluster: SlurmCluster, home: Path) -> None:
        self.cluster = cluster
        self.home = home
        self.user_names = {"root": "root", "alice": cluster.users[0], "bob": cluster.users[1]}
        self._nodes: dict[int, str] = {}
        for logical, real in self.user_names.items():
            where = home / logical
            where.mkdir(exist_ok=True)
            if real != "root":
                subprocess.run(["chown", real, str(where)], check=True)

    def real_user(self, user: str) -> str | None:
        real = self.user_names[user]
        return None if real == "root" else real

    def _env(self, user: str) -> dict[str, str]:
        raise NotImplementedError

    def sckpt(self, user: str, argv: Sequence[str]) -> Raw:
        where = self.home / user
        env = {
            **self._env(user),
            "NO_COLOR": "1",
            "HOME": str(where),
            "XDG_STATE_HOME": str(where / "state"),
            "XDG_CACHE_HOME": str(where / "cache"),
            **({"TZ": os.environ["TZ"]} if "TZ" in os.environ else {}),
        }
        cmd = [str(SCKPT), *argv]
        real = self.real_user(user)
        if real is not None:
            cmd = ["runuser", "-u", real, "--", "env", *(f"{k}={v}" for k, v in env.items()), *cmd]
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        done = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=300, check=False, cwd="/tmp"
        )
        return Raw(done.returncode, done.stdout, done.stderr)

    def _wait_state(self, job: int, *states: str) -> None:
        wait_for(lambda: _state_of(self.cluster, job) in states, timeout=90)

    def change(self, job: int, how: str) -> None:
        if how == "suspend":
            self.cluster.run("scontrol", "suspend", str(job))
            self._wait_state(job, "SUSPENDED")
        elif how == "resume":
            self.cluster.run("scontrol", "resume", str(job))
            self._wait_state(job, "RUNNING")
        elif how == "finish":
            self.cluster.run("scancel", f"{job}.0")
            self._wait_state(job, "COMPLETED")
        elif how == "cancel":
            self.cluster.run("scancel", str(job))
            self._wait_state(job, "CANCELLED")
        else:
            raise ValueError(f"unknown state change {how!r}")

    def nodes(self, job: int) -> str:
        if job not in self._nodes:
            out = self.cluster.run("squeue", "-h", "-t", "all", "-j", str(job), "-o", "%N")
            self._nodes[job] = out.stdout.strip() or self.cluster.node
        return self._nodes[job]

    def cleanup(self, jobs: Sequence[int]) -> None:
        if not jobs:
            return
        self.cluster.run("scancel", *map(str, jobs), check=False)
        ids = ",".join(map(str, jobs))
        wait_for(
            lambda: not self.cluster.run("squeue", "-h", "-j", ids, check=False).stdout.strip(),
            timeout=90,
        )


class Real1905(_RealCluster):
    """The real Slurm 19.05.8 cluster (checkpoint/ompi), sckpt's native engine."""

    name = "19.05"

    def __init__(self, cluster: SlurmCluster, home: Path) -> None:
        super().__init__(cluster, home)
        (home / "config.toml").write_text("# differential tests: defaults (engine auto)\n")
        (home / "config.toml").chmod(0o644)

    def _env(self, user: str) -> dict[str, str]:
        env = self.cluster.env()
        return {
            **{k: v for k, v in env.items() if k.startswith("SLURM_")},
            "PATH": env["PATH"],
            "SCKPT_CONFIG": str(self.home / "config.toml"),
        }

    def submit(self, user: str, state: str) -> int:
        hold = ["-H"] if state == "pending" else []
        out = self.cluster.run(
            "sbatch",
            "--parsable",
            *hold,
            "-o",
            "/dev/null",
            "--chdir",
            "/tmp",
            "--wrap",
            f"srun sleep {SLEEP}; exit 0",
            user=self.real_user(user),
        )
        job = int(out.stdout.strip().split(";")[0])
        if state == "running":
            wait_for(lambda: _has_step(self.cluster, job, "0"), timeout=60)
        return job

    def change(self, job: int, how: str) -> None:
        if how == "finish":
            # srun cannot end while its forks from an ompi create linger (OMPI.md)
            self.cluster.run("scancel", f"{job}.0")
            wait_for(lambda: not _has_step(self.cluster, job, "0"), timeout=60)
            _kill_stray_sruns([job])
            self._wait_state(job, "COMPLETED")
        else:
            super().change(job, how)

    def cleanup(self, jobs: Sequence[int]) -> None:
        self.cluster.run("scancel", *map(str, jobs), check=False)
        _kill_stray_sruns(jobs)
        super().cleanup(jobs)

    def after(self, argv: Sequence[str], raw: Raw) -> None:
        """After an accepted create/vacate of a step, srun reports back (ms later)."""
        if raw.exit != 0 or "." not in argv[1] or argv[0] not in ("create", "vacate"):
            return
        target = argv[1]

        def reported() -> bool:
            out = self.cluster.run("scontrol", "checkpoint", "error", target, check=False)
            return not out.stdout.rstrip().endswith("):")

        wait_for(reported, timeout=20, interval=0.1)


def _kill_stray_sruns(jobs: Sequence[int]) -> None:
    """SIGKILL the sruns of these jobs (by pid) that outlive them.

    19.05's srun forks on every ompi create/vacate and the fork never exits (OMPI.md), so a
    job's srun survives its step and the batch script waits for it forever.
    """
    wanted = {f"SLURM_JOB_ID={job}".encode() for job in jobs}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "comm").read_text().strip() != "srun":
                continue
            if wanted & set((proc / "environ").read_bytes().split(b"\0")):
                os.kill(int(proc.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue  # gone meanwhile, or a zombie


_COOP_SCRIPT = """#!/bin/bash
srun -n1 {sckpt} run --poll 0.5 --grace 0.5 --name step0 -- /usr/bin/python3 {example} \\
    --log $PWD/step0-$SLURM_JOB_ID.log
exit 0
"""


class Cooperative(_RealCluster):
    """The cooperative engine on the real Slurm 22.05 cluster, steps under ``sckpt run``."""

    name = "cooperative"

    def __init__(self, cluster: SlurmCluster, home: Path) -> None:
        super().__init__(cluster, home)
        home.chmod(0o755)
        audit = home / "audit"
        audit.mkdir(mode=0o777, exist_ok=True)
        audit.chmod(0o1777)
        for logical in self.user_names:
            config = home / f"{logical}.toml"
            config.write_text(f'audit_log = "{audit}/{logical}.log"\nengine = "cooperative"\n')
            config.chmod(0o644)
            work = home / logical / "work"
            work.mkdir(exist_ok=True)
            real = self.real_user(logical)
            if real is not None:
                subprocess.run(["chown", f"{real}:{real}", str(work)], check=True)
            script = work / "job.sh"
            script.write_text(_COOP_SCRIPT.format(sckpt=SCKPT, example=EXAMPLE))
            script.chmod(0o755)

    def _env(self, user: str) -> dict[str, str]:
        return {
            "SLURM_CONF": str(self.cluster.conf),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "SCKPT_CONFIG": str(self.home / f"{user}.toml"),
        }

    def submit(self, user: str, state: str) -> int:
        work = self.home / user / "work"
        hold = ["-H"] if state == "pending" else []
        out = self.cluster.run(
            "sbatch",
            "--parsable",
            *hold,
            "-n",
            "1",
            f"--chdir={work}",
            "-o",
            "/dev/null",
            str(work / "job.sh"),
            user=self.real_user(user),
            cwd=str(work),
        )
        job = int(out.stdout.strip().split(";")[0])
        if state == "running":
            state_file = work / ".sckpt" / f"{job}.0.json"
            wait_for(lambda: _has_step(self.cluster, job, "0") and state_file.exists(), 60)
            log = work / f"step0-{job}.log"
            wait_for(lambda: log.exists() and log.stat().st_size > 0, timeout=60)
            wait_for(lambda: catches_signal(work / ".sckpt", job), 60)
        return job

    def after(self, argv: Sequence[str], raw: Raw) -> None:
        return None


@contextlib.contextmanager
def private_home(prefix: str) -> Iterator[Path]:
    """A fresh 0755 directory under /tmp that the test users can reach; removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------- the simulated cluster


class Simulated:
    """The in-process simulated controller in its ompi setting, driven by the CLI in-process."""

    name = "simulated"
    user_names: Mapping[str, str] = {"root": "root", "alice": "alice", "bob": "bob"}

    def __init__(self, config: Path, plugin: str | None = "ompi") -> None:
        """``plugin`` None: the simulator's default (BLCR), to measure how far it drifts."""
        from sckpt.backend.simulator import ManualClock, SimulatedCluster

        self.clock = ManualClock()
        # The 19.05 test cluster: checkpoint/ompi, no PrologFlags=Contain (no extern step),
        # and its default JobCheckpointDir (/var/slurm/checkpoint) does not exist.
        options: dict[str, Any] = (
            {}
            if plugin is None
            else {
                "checkpoint_type": f"checkpoint/{plugin}",
                "prolog_contain": False,
                "checkpoint_dir_exists": False,
            }
        )
        self.cluster = SimulatedCluster(
            seed=1905,
            n_jobs=0,
            clock=self.clock,
            users=("alice", "bob"),
            arrivals=False,
            demo_touches=False,
            **options,
        )
        self.config = config
        config.write_text(f'audit_log = "{config.parent / "audit.log"}"\n')

    def submit(self, user: str, state: str) -> int:
        from sckpt.backend.model import JobState

        if state == "pending":
            job = self.cluster.control.submit(user, name="wrap", state=JobState.PENDING, held=True)
        else:
            job = self.cluster.control.submit(user, name="wrap", n_steps=1)
        return job.job_id

    def change(self, job: int, how: str) -> None:
        from sckpt.backend.model import JobState

        states = {
            "suspend": JobState.SUSPENDED,
            "resume": JobState.RUNNING,
            "finish": JobState.COMPLETED,
            "cancel": JobState.CANCELLED,
        }
        self.cluster.control.set_job_state(job, states[how])
        self.clock.advance(1)

    def nodes(self, job: int) -> str:
        return self.cluster.job(job).nodes

    def sckpt(self, user: str, argv: Sequence[str]) -> Raw:
        from sckpt.backend import facade as facade_module

        cli = importlib.import_module("sckpt.cli")
        shared = functools.partial(facade_module.open_facade, cluster=self.cluster)
        out, err = io.StringIO(), io.StringIO()
        env = {"SCKPT_CONFIG": str(self.config), "NO_COLOR": "1"}
        with (
            mock.patch.dict(os.environ, env),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            os.environ.pop("SLURM_CONF", None)
            code = cli.main(["--as-user", user, *argv], facade_factory=shared)
        return Raw(code, out.getvalue(), err.getvalue())

    def after(self, argv: Sequence[str], raw: Raw) -> None:
        self.clock.advance(1)

    def cleanup(self, jobs: Sequence[int]) -> None:
        return None
