"""Fixtures for the command-line tests: a private config, audit log and simulated cluster.

``SCKPT_CONFIG`` points at a file under the test's tmp dir (the audit log too), so no user
configuration leaks in and every audit line a test causes is visible to it.  ``SLURM_CONF``
is removed so that nothing here can reach a real cluster by accident.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend.config import demo_audit_log_path
from sckpt.backend.facade import open_facade
from sckpt.backend.simulator import ManualClock, SimulatedCluster

from sckpt import cli


@dataclass
class CliResult:
    """Exit code and captured output of one in-process ``sckpt`` run."""

    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


@dataclass
class CliEnv:
    """A private config (audit log under tmp) and a way to run ``sckpt`` in-process."""

    config: Path
    audit_log: Path
    run: Callable[..., CliResult]
    inject: dict[str, Any] = field(default_factory=dict)
    """What every run passes to ``cli.main`` besides argv (``facade_factory``, ``wait``...):
    the fixtures below fill it."""

    def audit(self, *, demo: bool = False) -> list[dict[str, Any]]:
        """Every line of the audit log so far, parsed; ``demo``: the ``--demo`` one's."""
        path = demo_audit_log_path(self.audit_log) if demo else self.audit_log
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def cli_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> CliEnv:
    audit_log = tmp_path / "state" / "audit.log"
    config = tmp_path / "config.toml"
    config.write_text(f'audit_log = "{audit_log}"\n[demo]\nseed = 7\njobs = 40\n')
    monkeypatch.setenv("SCKPT_CONFIG", str(config))
    monkeypatch.delenv("SLURM_CONF", raising=False)

    inject: dict[str, Any] = {}

    def run(*argv: str) -> CliResult:
        capsys.readouterr()
        code = cli.main(list(argv), **inject)
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return CliEnv(config, audit_log, run, inject)


@pytest.fixture
def cluster(cli_env: CliEnv) -> Iterator[SimulatedCluster]:
    """One simulated cluster shared by every ``sckpt`` run of the test (state persists).

    Each command's facade is opened on this cluster (``main``'s ``facade_factory``), as
    successive commands act on one real cluster; everything else (validation, read-only
    guard, audit log, engine choice) is the real facade.
    """
    shared = SimulatedCluster(
        seed=3,
        n_jobs=0,
        clock=ManualClock(),
        users=("alice", "bob"),
        arrivals=False,
        demo_touches=False,
    )
    cli_env.inject["facade_factory"] = functools.partial(open_facade, cluster=shared)
    yield shared
