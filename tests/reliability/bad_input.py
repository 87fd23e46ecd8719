"""What the bad-input tests share: the recording engine, which checks every engine call's
arguments independently of sckpt's own validators, generated paths, and TOML writing.

"Nothing invalid reaches Slurm" is checked in-process by wrapping the facade's engine in
``Recorder`` (a refused command must not call the engine at all); the real cluster's side of
it is in ``test_bad_input_real.py``.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from sckpt.backend.model import (
    STEP_BATCH,
    STEP_EXTERN,
    STEP_INTERACTIVE,
    WHOLE_JOB,
    StepId,
)
from sckpt.backend.operations import NAMES, operation

SPECIAL_STEPS = (WHOLE_JOB, STEP_BATCH, STEP_EXTERN, STEP_INTERACTIVE)
MAX_ID = 0xFFFFFFF0
HOSTLIST = re.compile(r"[A-Za-z0-9_.\-\[\],]*")


def bad_path(value: object, *, empty_ok: bool = False) -> str:
    """Why ``value`` is not an image dir sckpt may pass on ("" when it is fine).

    Written independently of ``sckpt.backend.targets``: absolute, no ``..`` component, no
    control character (Unicode category Cc: C0, DEL, C1), valid UTF-8, at most 4095 bytes.
    """
    if value is None or (empty_ok and value == ""):
        return ""
    if not isinstance(value, str) or not value.startswith("/"):
        return f"not an absolute path: {value!r}"
    if ".." in value.split("/"):
        return f"'..' in {value!r}"
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        return f"control character in {value!r}"
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return f"not UTF-8: {value!r}"
    return f"{size} bytes long" if size > 4095 else ""


def _bad_whole(value: object, low: int, high: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return f"{value!r} is not a whole number from {low} to {high}"
    return ""


def invalid_call(name: str, args: tuple[Any, ...]) -> str:
    """Why an engine call has arguments Slurm must never see ("" when they are valid)."""
    if name in ("snapshot", "cluster_info", "close", "refresh", "slurm_user", "now", "ping"):
        return ""
    if name == "finished_jobs":  # accounting's window: (since, until) in Unix seconds
        return "; ".join(p for p in (_bad_whole(a, 0, 2**63 - 1) for a in args) if p)
    if name in ("job_records", "checkpoint_events"):  # a job id first, as accounting has it
        return _bad_whole(args[0], 1, MAX_ID) if args else f"{name} without a job id"
    if not args:
        return f"{name} without a target"
    target = args[0]
    if not isinstance(target, StepId):
        return f"{name}: target {target!r} is not a StepId"
    if not 0 < target.job_id <= MAX_ID:
        return f"{name}: job id {target.job_id}"
    if target.step not in SPECIAL_STEPS and not 0 <= target.step <= MAX_ID:
        return f"{name}: step {target.step}"
    rest = args[1:]
    problems: list[str] = []
    if name == "create":
        max_wait, image_dir = rest
        problems += [_bad_whole(max_wait, 0, 65535), bad_path(image_dir)]
    elif name == "vacate":
        max_wait, image_dir, force = rest
        problems += [_bad_whole(max_wait, 0, 65535), bad_path(image_dir)]
        problems += ["" if isinstance(force, bool) else f"force {force!r}"]
    elif name == "restart":
        stick, image_dir, force = rest
        problems += ["" if isinstance(stick, bool) else f"stick {stick!r}", bad_path(image_dir)]
        problems += ["" if isinstance(force, bool) else f"force {force!r}"]
    elif name == "complete":
        begin, code, message = rest
        problems += [_bad_whole(begin, 0, 2**63 - 1), _bad_whole(code, 0, 2**32 - 1)]
        if not isinstance(message, str) or len(message) > 1024:
            problems.append(f"error_msg {message!r}")
        elif any(unicodedata.category(ch) == "Cc" for ch in message):
            problems.append(f"control character in error_msg {message!r}")
    elif name == "tasks":
        begin, image_dir, max_wait, nodelist = rest
        problems += [
            _bad_whole(begin, 0, 2**63 - 1),
            bad_path(image_dir, empty_ok=True),
            _bad_whole(max_wait, 0, 65535),
        ]
        if not isinstance(nodelist, str) or not HOSTLIST.fullmatch(nodelist):
            problems.append(f"nodelist {nodelist!r}")
    elif name == "cancel":  # scancel's signal, or None for scancel's own default
        (signal,) = rest
        if signal is not None:
            problems.append(_bad_whole(signal, 1, 64))
    elif rest:
        problems.append(f"{name}: unexpected arguments {rest!r}")
    return "; ".join(f"{name}: {p}" for p in problems if p)


@dataclass
class Recorder:
    """Wraps an engine: every public call is recorded and checked, then forwarded.

    A check failure is kept (not raised: a worker thread would turn it into a notification)
    and asserted by the test.
    """

    inner: Any
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name.startswith("_") or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            named = operation(name).arguments if name in NAMES else ()
            if kwargs and set(kwargs) == set(named):  # Facade.act: its row's arguments by name
                args, kwargs = (*args, *(kwargs[a] for a in named)), {}
            self.calls.append((name, args))
            problem = invalid_call(name, args) if not kwargs else f"{name}: keywords {kwargs}"
            if problem:
                self.invalid.append(problem)
            return attr(*args, **kwargs)

        return call

    @property
    def actions(self) -> list[str]:
        """The names of the calls that are more than a refresh."""
        return [n for n, _ in self.calls if n not in ("snapshot", "cluster_info", "close")]


def record_engine(facade: Any) -> Recorder:
    """Put a ``Recorder`` between the facade and its engine (the read-only guard included)."""
    made: list[Recorder] = []

    def wrap(engine: Any) -> Any:
        made.append(Recorder(engine))
        return made[-1]

    facade.wrap_engine(wrap)
    return made[0]


# Strategies: values that look almost right as often as plainly wrong ones.
NON_UTF8 = st.binary(min_size=1, max_size=12).map(lambda b: os.fsdecode(b"/ck/" + b))
"""Bytes as argv delivers them: undecodable ones become lone surrogates (surrogateescape)."""
CONTROL = st.characters(codec=None, categories=["Cc"])
PATHS = st.one_of(
    st.sampled_from(
        [
            "/scratch/ckpt",
            "/a/../b",
            "/..",
            "..",
            "../x",
            "/a/..",
            "/a/./b",
            "/a//b",
            "relative/dir",
            "",
            " ",
            "/" + "x" * 5000,
            "/" + "é" * 2048,
            "/" + "d/" * 2047,
            "/ck\x9bpwned",
            "/ck\x85",
            "/ck\u2028",
            "/ck\x1b[2J",
            "/ck\nnext",
            "/ck\x00nul",
            "~/ck",
            "-/ck",
            "--image-dir",
        ]
    ),
    NON_UTF8,
    st.builds(lambda a, c, b: f"/{a}{c}{b}", st.text(max_size=6), CONTROL, st.text(max_size=6)),
    st.lists(st.sampled_from(["a", "..", ".", "", "ckpt", "é", "x" * 300]), max_size=20).map(
        lambda parts: "/" + "/".join(parts)
    ),
    st.text(max_size=40),
)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    # json's escapes are TOML's, except a lone surrogate (\udcxx), which TOML refuses:
    # that is one more invalid file.
    return json.dumps(value)


def toml_document(table: dict[str, Any], keys: dict[str, Any], demo: dict[str, Any]) -> str:
    lines = [f"{k} = {toml_value(v)}" for k, v in table.items()]
    if keys:
        lines.append("[keys]")
        lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in keys.items()]
    if demo:
        lines.append("[demo]")
        lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in demo.items()]
    return "\n".join(lines) + "\n"
