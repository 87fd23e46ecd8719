"""The checkpointing package reads time only through an injected clock (issue 35, item 8).

The rule, for every module under ``backend/checkpointing/``: the clock readers and the
sleep of the ``time`` module (``CLOCKS``) are named only as ``time.<name>`` (the module
imported whole, under any alias; never ``from time import ...``), and only as the default
value of a parameter (``clock: Callable[[], float] = time.time``) or of a field in a class
body (a dataclass's ``monotonic: Callable[[], float] = time.monotonic``).  Never called,
never bound anywhere else (``self.clock = clock or time.time`` hides the real clock from
whoever constructs the object): so whoever builds the object can pass a fake, and a test
drives the module's timing with no real wait.  Other ``time`` functions (``mktime``,
``strptime``) read no clock and are free.

Why a file of its own: ``test_layering.py`` has a size cap.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINTING = ROOT / "backend" / "checkpointing"

CLOCKS = {
    "time",
    "time_ns",
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "sleep",
}
"""What reads the clock or waits on it."""


def _defaults(tree: ast.AST) -> set[int]:
    """ids of the nodes that are, whole, a parameter's default or a class-body field's."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            args = node.args
            allowed.update(id(d) for d in [*args.defaults, *args.kw_defaults] if d is not None)
        elif isinstance(node, ast.ClassDef):
            allowed.update(
                id(s.value)
                for s in node.body
                if isinstance(s, ast.AnnAssign) and s.value is not None
            )
    return allowed


def clock_uses(source: str) -> list[str]:
    """Each use of ``CLOCKS`` in ``source`` that the rule forbids, as ``line N: text``."""
    tree = ast.parse(source)
    modules = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "time"
    }
    allowed = _defaults(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            named = sorted({a.name for a in node.names} & CLOCKS)
            if named:
                found.append((node.lineno, f"from time import {', '.join(named)}"))
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr in CLOCKS
            and id(node) not in allowed
        ):
            found.append((node.lineno, ast.unparse(node)))
    return [f"line {line}: {text}" for line, text in sorted(found)]


def test_the_rule_tells_an_injected_default_from_a_direct_use() -> None:
    """The checker itself, on the forms the package used before (each one a real wait or
    reading no test could replace) and the forms it uses now."""
    allowed = """
import time
from dataclasses import dataclass
from typing import Callable
def wait(sleep: Callable[[float], None] = time.sleep, *, clock=time.monotonic) -> None:
    sleep(clock())
class Relay:
    monotonic: Callable[[], float] = time.monotonic
also = lambda clock=time.time: clock()
stamp = time.mktime(time.strptime("2026", "%Y"))
"""
    assert clock_uses(allowed) == []
    forbidden = """
import time
import time as t
from time import monotonic, strptime
def arm(c):
    c.give_up_at = time.time() + 900
def wait(clock=None):
    clock = clock or time.monotonic
    t.sleep(0.1)
DEFAULT_CLOCK = time.time
class Watch:
    clock = time.time
"""
    assert clock_uses(forbidden) == [
        "line 4: from time import monotonic",
        "line 6: time.time",
        "line 8: time.monotonic",
        "line 9: t.sleep",
        "line 10: time.time",
        "line 12: time.time",
    ]


def test_checkpointing_reads_time_only_through_an_injected_clock() -> None:
    """Every module under ``backend/checkpointing/`` follows the rule (the module's
    docstring); what breaks it is listed by file and line."""
    bad = {
        str(path.relative_to(ROOT)): found
        for path in sorted(CHECKPOINTING.rglob("*.py"))
        if (found := clock_uses(path.read_text(encoding="utf-8")))
    }
    assert bad == {}
