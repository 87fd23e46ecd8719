"""Read-only mode: an engine wrapper whose mutating operations never reach the engine.

The facade refuses mutating calls itself (so it can audit the refusal), and it also wraps
the engine in ``ReadOnlyEngine``: a second, independent guard, so that no code path that
holds the engine (a future helper, a bug in the facade) can reach libslurm or the
cooperative store while read-only mode is on.

Which calls are refused is not written here, nor which methods there are: every method
of the ``Engine`` interface (``engines.base.engine_methods``), and any other an engine has,
is ``guarded``; an operation the table (``operations.py``) marks ``mutating`` raises
``refusal``; everything else (snapshot, able, error, processes, accounting ...) is passed
to the wrapped engine unchanged.  A new operation is guarded by its row alone.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from .engines.base import Engine, engine_methods
from .errors import ReadOnlyError
from .model import StepId
from .operations import BY_NAME

E = TypeVar("E", bound=Engine)


def refusal(operation: str, target: StepId | str) -> ReadOnlyError:
    """The error every refused mutating call raises (the same text everywhere); with
    ``-M`` it names the target's cluster."""
    where = f" on cluster {target.cluster}" if isinstance(target, StepId) and target.cluster else ""
    return ReadOnlyError(
        f"{operation} {target}{where} refused: sckpt is in read-only mode",
        "start sckpt without --read-only (and read_only = false in the config) to act",
    )


def guarded(name: str) -> Callable[..., Any]:
    """``ReadOnlyEngine``'s method ``name``: a mutating operation raises ``refusal``, any
    other call goes to the wrapped engine.  A method of ``Engine`` keeps its signature
    (``__wrapped__``), which ``tests/test_operations.py`` compares with the table
    (``updated=()``: not its ``__isabstractmethod__``)."""
    row = BY_NAME.get(name)
    if row is not None and row.mutating:

        def refuse(self: ReadOnlyEngine, target: StepId, *_args: object, **_kw: object) -> Any:
            raise refusal(name, target)

        call = refuse
    else:

        def forward(self: ReadOnlyEngine, *args: Any, **kwargs: Any) -> Any:
            return getattr(self.inner, name)(*args, **kwargs)

        call = forward
    interface = getattr(Engine, name, None)
    if interface is None:
        call.__name__ = call.__qualname__ = name
        return call
    return functools.update_wrapper(call, interface, updated=())


def _derived(cls: type[E]) -> type[E]:
    """``cls`` with ``guarded`` for every method of the ``Engine`` interface, in its order
    (``engine_methods``): no method name is written in the class."""
    for name in engine_methods():
        setattr(cls, name, guarded(name))
    return abc.update_abstractmethods(cls)


@_derived
class ReadOnlyEngine(Engine):
    """Passes reads to ``inner``; raises ``ReadOnlyError`` for every mutating operation."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.name = inner.name
        self.writes_allowed = False
        inner.writes_allowed = False  # its reads must not write either (state file expiry)

    def __getattr__(self, name: str) -> Any:
        """A method outside the interface (an operation a row added after ``Engine`` was
        written, such as a test's): guarded by its row as the others are."""
        if name.startswith("_"):
            raise AttributeError(name)
        return guarded(name).__get__(self)
