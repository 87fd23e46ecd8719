"""What the command line reaches beyond itself, passed in rather than imported where used.

``main`` builds one ``Dependencies`` from its keyword arguments: by default the real facade
(``open_facade``), the Textual console, the terminal check, the job-side wrapper, this
machine's doctor and the wall clock; a test passes its own (a facade on a simulated cluster,
a console stub, a sleep that raises ``KeyboardInterrupt``) instead of patching a module.
The defaults import what they call only when called, so ``sckpt ls`` loads no Textual and
``sckpt run`` no libslurm.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sckpt.backend import early_snapshot

from . import terminal

if TYPE_CHECKING:
    from sckpt.backend.config import Settings
    from sckpt.backend.doctor import DoctorReport
    from sckpt.backend.facade import Facade
    from sckpt.backend.model import StepId


class FacadeFactory(Protocol):
    """``open_facade``'s keywords, as the command line passes them."""

    def __call__(
        self,
        settings: Settings,
        *,
        demo: bool,
        read_only: bool | None,
        as_user: str | None,
        engine: str | None,
        clusters: str | None,
    ) -> Facade: ...


class ConsoleRunner(Protocol):
    """Runs the console on an opened facade until it quits; returns its exit code."""

    def __call__(self, facade: Facade, settings: Settings, *, focus: StepId | None) -> int: ...


def open_facade(settings: Settings, **flags: Any) -> Facade:
    """The backend's ``open_facade``, imported when a command first needs a facade."""
    from sckpt.backend.facade import open_facade as backend_open_facade

    return backend_open_facade(settings, **flags)


def run_console(facade: Facade, settings: Settings, *, focus: StepId | None) -> int:
    """The Textual console (``sckpt.tui.app``): the one place the command line opens it.
    Its first listing is asked before Textual is imported (``backend/early_snapshot.py``)
    when it waits for a controller; the demo's in-process cluster answers in Python, which
    would only share the GIL with the imports."""
    if facade.simulated_cluster is None:
        early_snapshot.start(facade)
    from sckpt.tui.app import run_console as run_app

    return int(run_app(facade, settings, focus=focus))


def run_wrapper(words: list[str]) -> int:
    """``sckpt run``'s job-side wrapper (``backend/checkpointing/wrapper.py``): neither Textual nor
    libslurm is imported with it."""
    from sckpt.backend.checkpointing.wrapper import main as wrapper_main

    return wrapper_main(words)


def machine_doctor(dmtcp_dir: str | None) -> tuple[DoctorReport, int]:
    """``sckpt doctor``'s look at this machine's libslurm, shim and controller."""
    from sckpt.backend.doctor import run_doctor

    return run_doctor(dmtcp_dir)


WAIT_POLL_SECONDS = 1.0
"""How often ``--wait`` asks for the checkpoint's state: once a second is two small
requests a second to slurmctld per target, and a person waiting sees the outcome soon."""


@dataclass(frozen=True)
class WaitTiming:
    """``--wait``'s pace: how often it asks, how it sleeps between, and its clock."""

    poll_seconds: float = WAIT_POLL_SECONDS
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic


@dataclass(frozen=True)
class Dependencies:
    """Everything a command reaches outside the command line, one field each."""

    facade_factory: FacadeFactory = open_facade
    console: ConsoleRunner = run_console
    missing_terminal: Callable[[], str] = terminal.missing_terminal
    """Why the console cannot run here ("" when it can), asked before a facade is opened."""
    wrapper: Callable[[list[str]], int] = run_wrapper
    doctor: Callable[[str | None], tuple[DoctorReport, int]] = machine_doctor
    wait: WaitTiming = field(default_factory=WaitTiming)
