"""Frozen records built the cheap way: the same objects as their dataclass ``__init__`` makes.

Why: a 100,000-job demo builds ~100,000 ``Job``s (38 fields) and ~300,000 ``Step``s and
``StepId``s before its first screen.  A frozen dataclass's ``__init__`` sets each field with
``object.__setattr__(self, name, value)``, which looks the slot up by name every time;
calling each slot's own descriptor (``Job.name.__set__``), found once here, does the same
work ~45 % faster.  The result is an instance of the same class with the same fields:
equal, hashing and printing the same (nothing here applies to a class with a
``__post_init__`` or a ``default_factory``; ``fast_init`` refuses one).

Calls are positional, in the class's field order (``records.py`` checks the order of
``Job`` and ``Step`` when it is imported); the fields' defaults stay defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any, TypeVar

T = TypeVar("T")


def fast_init(cls: type[T]) -> Callable[..., T]:
    """A function that takes ``cls``'s fields positionally (defaults as the class has them)
    and returns the instance its ``__init__`` would have made."""
    if hasattr(cls, "__post_init__") or not hasattr(cls, "__slots__"):
        raise TypeError(f"{cls.__name__}: fast_init needs a slotted dataclass, no __post_init__")
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    space: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    params = []
    for i, f in enumerate(fields(cls)):  # type: ignore[arg-type]
        if f.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: fast_init cannot give a default_factory")
        space[f"_set{i}"] = getattr(cls, f.name).__set__
        if f.default is MISSING:
            params.append(f"a{i}")
        else:
            space[f"_default{i}"] = f.default
            params.append(f"a{i}=_default{i}")
    body = "".join(f"    _set{i}(o, a{i})\n" for i in range(len(names)))
    source = f"def make({', '.join(params)}):\n    o = _new(_cls)\n{body}    return o\n"
    exec(compile(source, f"<fast_init {cls.__name__}>", "exec"), space)
    make: Callable[..., T] = space["make"]
    make.__doc__ = f"{cls.__name__}({', '.join(names)}), built without its __init__."
    return make
