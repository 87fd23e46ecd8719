"""Slurm's compressed host lists (``cn[001-004,007]``): expansion, and printing a block.

Not specific to the simulator: the facade validates ``tasks``'s node list with it, the
cooperative engine expands a step's nodes with it, and the simulated cluster prints node
lists exactly as ``squeue`` does with it.  Only the forms Slurm itself prints are supported:
comma-separated items, each a name or ``prefix[ranges]``.
"""

from __future__ import annotations

import re

from .errors import UsageError

_ITEM = re.compile(
    r"(?P<prefix>[A-Za-z0-9_.\-]*)\[(?P<ranges>[0-9,\-]+)\](?P<suffix>[A-Za-z0-9_.\-]*)"
)
MAX_EXPANDED = 100_000


def _split_top(text: str) -> list[str]:
    """Split at commas that are not inside brackets."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


def expand_hostlist(text: str) -> list[str]:
    """``"cn[001-003],gpu01"`` -> ``["cn001", "cn002", "cn003", "gpu01"]`` (UsageError if bad)."""
    names: list[str] = []
    for item in _split_top(text.strip()):
        match = _ITEM.fullmatch(item)
        if match is None:
            if "[" in item or "]" in item or not re.fullmatch(r"[A-Za-z0-9_.\-]+", item):
                raise UsageError(f"invalid node list {text!r}: expected names like cn[001-004]")
            names.append(item)
            continue
        prefix, suffix = match["prefix"], match["suffix"]
        for rng in match["ranges"].split(","):
            if not rng:
                raise UsageError(f"invalid node list {text!r}: empty range")
            low, _, high = rng.partition("-")
            if not low.isdigit() or (high and not high.isdigit()):
                raise UsageError(f"invalid node list {text!r}: expected ranges like 001-004")
            width = len(low)
            first, last = int(low), int(high) if high else int(low)
            if last < first or len(names) + last - first + 1 > MAX_EXPANDED:
                raise UsageError(f"invalid node list {text!r}: range {rng} is backwards or huge")
            names.extend(f"{prefix}{n:0{width}d}{suffix}" for n in range(first, last + 1))
    return names


def node_name(prefix: str, index: int, width: int) -> str:
    """The ``index``-th node (1-based) of a family: ``node_name("cn", 7, 3) == "cn007"``."""
    return f"{prefix}{index:0{width}d}"


def compress_range(prefix: str, first: int, last: int, width: int) -> str:
    """A contiguous block, printed as Slurm prints it: ``cn007`` or ``cn[007-010]``."""
    if first == last:
        return node_name(prefix, first, width)
    return f"{prefix}[{first:0{width}d}-{last:0{width}d}]"
