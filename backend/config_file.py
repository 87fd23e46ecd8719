"""The config file's shape: one typed model (pydantic) with every key, its type and bounds.

Why a model: the file was checked by a 127-line function of ``isinstance`` tests, one
branch per key, its bounds copied beside the modules that own them.  Here each key is one
field: its type (strict: ``max_wait = "10"`` or ``read_only = 1`` is refused, as before),
its bounds (imported from their owner: ``arguments`` for MaxWait and ``keep_images``), and
its ``description``, the form a mistake is told to expect.  A rule that has an owner is
that owner's check, with its own sentence: ``arguments.validate_image_dir``, the ``[auto]``
durations, ``keymap.key_problem``, ``columns.columns_problem``.

Every mistake becomes one line naming the file, the key and what was expected
(``ConfigError``, exit status 2): an unknown key first (the sorted first), else the first
mistake in the order of the fields, and inside a table the first in the file's order (its
unknown keys before its values).

In the package only ``config.settings_from_mapping`` imports this module, when a config
file is read: importing pydantic and building the model costs about 80 ms
(bench/README.md) that a command without a config file does not pay.  It imports nothing
of ``config`` (the engine names come in the validation context), so the two are no import
loop.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from .arguments import (
    MAX_KEEP,
    MAX_WAIT_LIMIT,
    validate_duration,
    validate_every,
    validate_image_dir,
    validate_restarts,
)
from .columns import columns_problem
from .errors import ConfigError, UsageError
from .keymap import key_problem

MIN_REFRESH = 0.2
"""The shortest console refresh interval, in seconds: a refresh is one RPC or two."""
MAX_REFRESH = 3600.0
MAX_DEMO_JOBS = 200_000
"""The largest simulated cluster ``[demo] jobs`` may ask for (twice the benchmarked one)."""
MAX_THEME = 60
MAX_KEY = 40
"""The longest theme name, and key name (``ctrl+shift+f12`` is 15)."""
_SHOWN = 60
"""A value is quoted in a message up to this many characters."""
_ACTION = re.compile(rf"[a-z][a-z0-9_]{{0,{MAX_KEY - 1}}}")


class Refusal(ValueError):
    """A field's check refusing a value: ``why`` (None: "expected" and the field's
    ``description``), ``at`` another key than the field's own (``keys.create`` for the
    whole ``[keys]`` table's check), ``show_value`` False when ``why`` quotes it already."""

    def __init__(
        self, why: str | None = None, *, at: tuple[str, ...] = (), show_value: bool = True
    ) -> None:
        super().__init__(why or "not the expected form")
        self.why = why
        self.at = at
        self.show_value = show_value


def _printable(value: str) -> str:
    if not value.isprintable():
        raise Refusal
    return value


def _action_name(value: object) -> str:
    """A ``[keys]`` name: an action name in lower case, as ``keymap.ACTIONS`` spells them."""
    if not isinstance(value, str) or not _ACTION.fullmatch(value):
        raise Refusal("expected an action name in lower case (create, vacate ...)")
    return value


def _key_name(value: object) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_KEY or not value.isprintable():
        raise Refusal('expected a key name such as "c", "f5" or "ctrl+k"')
    return value


def _keymap(keys: Mapping[str, str]) -> Mapping[str, str]:
    """The overrides the console can honour (``keymap.key_problem``: no unknown action, no
    key another action of the same screen keeps)."""
    problem = key_problem(keys)
    if problem is not None:
        action, why = problem
        raise Refusal(why, at=("keys", action))
    return MappingProxyType(dict(keys))


def _image_dir(value: str) -> str | None:
    """``""``: the step's own directory (None); else ``arguments.validate_image_dir``."""
    if not value:
        return None
    try:
        return validate_image_dir(value)
    except UsageError as exc:
        raise Refusal(exc.message, show_value=False) from None


def _audit_log(value: str) -> Path | None:
    """``""``: the default log (None); else an absolute path, ``~`` expanded."""
    if "\0" in value:
        raise Refusal
    if not value:
        return None
    try:
        path = Path(value).expanduser()
    except RuntimeError:  # ~name of no user (the old checks let this one through)
        raise Refusal("expected an absolute path (or ~/...)") from None
    if not path.is_absolute():
        raise Refusal("expected an absolute path (or ~/...)")
    return path


def _dmtcp_dir(value: str) -> str | None:
    if "\0" in value or (value and not value.startswith("/")):
        raise Refusal
    return value or None


def _columns(table: str) -> Callable[[object], tuple[str, ...]]:
    """``[columns] TABLE``'s check: ``columns.columns_problem``'s sentence."""

    def check(value: object) -> tuple[str, ...]:
        trouble = columns_problem(table, value)
        if trouble is not None or not isinstance(value, list):
            raise Refusal(trouble)
        return tuple(str(name) for name in value)

    return check


def _policy(check: Callable[[object, str], int], *, empty_is_none: bool = False) -> PlainValidator:
    """An ``[auto]`` key checked by the rule its ``sckpt run`` option uses (``arguments``);
    with ``empty_is_none``, ``""`` means no such checkpoint (0)."""

    def validate(value: object, info: ValidationInfo) -> int:
        if empty_is_none and value == "":
            return 0
        try:
            return check(value, f"auto.{info.field_name}")
        except UsageError as exc:
            raise Refusal(exc.message, show_value=False) from None

    return PlainValidator(validate)


_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
Flag = Annotated[bool | None, Field(description="true or false")]


class Table(BaseModel):
    """A ``[table]`` of the file: every key known, each one checked."""

    model_config = _STRICT


class ColumnsTable(Table):
    """``[columns]``: the console's columns, in order (``columns.py``'s names)."""

    jobs: Annotated[tuple[str, ...] | None, PlainValidator(_columns("jobs"))] = None
    steps: Annotated[tuple[str, ...] | None, PlainValidator(_columns("steps"))] = None


class DemoTable(Table):
    """``[demo]``: the simulated cluster of ``sckpt --demo``."""

    seed: Annotated[int, Field(ge=0, lt=2**63)] | None = Field(
        None, description="a whole number >= 0"
    )
    jobs: Annotated[int, Field(ge=1, le=MAX_DEMO_JOBS)] | None = Field(
        None, description=f"a whole number of jobs from 1 to {MAX_DEMO_JOBS}"
    )


class AutoTable(Table):
    """``[auto]``: site-wide defaults of ``sckpt run``'s automatic checkpoints."""

    every: Annotated[int | None, _policy(validate_every, empty_is_none=True)] = None
    before_end: Annotated[int | None, _policy(validate_duration, empty_is_none=True)] = None
    max_restarts: Annotated[int | None, _policy(validate_restarts)] = None
    mtbf: Annotated[int | None, _policy(validate_duration)] = None


class ConfigFile(BaseModel):
    """The whole file.  A field is None when the file does not give it: the defaults are
    ``config.Settings``'s, in one place.  The fields are in the order mistakes are told."""

    model_config = _STRICT
    refresh_interval: (
        Annotated[float, Field(ge=MIN_REFRESH, le=MAX_REFRESH, allow_inf_nan=False)] | None
    ) = Field(None, description=f"a number of seconds from {MIN_REFRESH} to {MAX_REFRESH:g}")
    engine: str | None = None
    read_only: Flag = None
    audit_required: Flag = None
    max_wait: Annotated[int, Field(ge=0, le=MAX_WAIT_LIMIT)] | None = Field(
        None, description=f"a whole number of seconds from 0 to {MAX_WAIT_LIMIT}"
    )
    keep_images: Annotated[int, Field(ge=1, le=MAX_KEEP)] | None = Field(
        None, description=f"a whole number of generations from 1 to {MAX_KEEP}"
    )
    image_dir: Annotated[str, AfterValidator(_image_dir)] | None = Field(
        None, description='an absolute path such as "/scratch/ckpt", or ""'
    )
    audit_log: Annotated[str, AfterValidator(_audit_log)] | None = Field(
        None, description='a file path such as "/var/log/sckpt/audit.log", or ""'
    )
    theme: Annotated[str, Field(max_length=MAX_THEME), AfterValidator(_printable)] | None = Field(
        None, description='a theme name such as "nord" (ctrl+p, then "theme")'
    )
    dmtcp_dir: Annotated[str, AfterValidator(_dmtcp_dir)] | None = Field(
        None, description='an absolute path such as "/opt/dmtcp", or ""'
    )
    keys: (
        Annotated[
            Mapping[
                Annotated[str, PlainValidator(_action_name)],
                Annotated[str, PlainValidator(_key_name)],
            ],
            AfterValidator(_keymap),
        ]
        | None
    ) = Field(None, description='a table such as [keys] create = "c"')
    columns: ColumnsTable | None = Field(
        None, description='a table such as [columns] jobs = ["id", "state"]'
    )
    demo: DemoTable | None = Field(None, description="a table such as [demo] seed = 42")
    auto: AutoTable | None = Field(None, description='a table such as [auto] every = "30m"')

    @field_validator("engine", mode="plain")
    @classmethod
    def _engine(cls, value: object, info: ValidationInfo) -> str:
        engines: Sequence[str] = (info.context or {})["engines"]
        if not isinstance(value, str) or value not in engines:
            raise Refusal("expected one of " + ", ".join(f'"{e}"' for e in engines))
        return value

    def given(self) -> dict[str, Any]:
        """The values the file gives, by ``Settings`` field name (``[demo] seed`` is
        ``demo_seed``); keys it leaves out keep ``Settings``' defaults."""
        out: dict[str, Any] = {
            name: getattr(self, name)
            for name in self.model_fields_set
            if name not in TABLES and getattr(self, name) is not None  # "" for the default
        }
        for prefix in ("demo", "auto"):
            table = getattr(self, prefix)
            if table is not None:
                out.update({f"{prefix}_{k}": getattr(table, k) for k in table.model_fields_set})
        if self.columns is not None:
            given = self.columns.model_fields_set
            out["columns"] = MappingProxyType({k: getattr(self.columns, k) for k in given})
        return out


TABLES: Mapping[str, type[Table]] = {"columns": ColumnsTable, "demo": DemoTable, "auto": AutoTable}
"""The file's ``[tables]`` whose keys are fixed (``[keys]`` takes any action name)."""
KEYS_TABLE = "keys"
SCALAR_KEYS: tuple[str, ...] = tuple(
    name for name in ConfigFile.model_fields if name not in TABLES and name != KEYS_TABLE
)
"""The top-level keys that take one value (README's table lists each)."""


def read_table(data: Mapping[str, Any], source: Path | None, engines: Sequence[str]) -> ConfigFile:
    """``data`` (a parsed TOML document) as a ``ConfigFile``, or ``ConfigError`` with the
    line that names the first mistake; ``engines``: the accepted values of ``engine``."""
    try:
        return ConfigFile.model_validate(data, context={"engines": engines})
    except ValidationError as exc:
        where = f"{source}: " if source is not None else ""
        raise ConfigError(where + _first_mistake(exc, data)) from None


def _first_mistake(exc: ValidationError, data: Mapping[str, Any]) -> str:
    """The line for the mistake the user is told of first (see the module's docstring)."""
    errors = exc.errors()
    unknown = sorted(e["loc"][0] for e in errors if _unknown(e["type"], e["loc"], 1))
    if unknown:
        known = ", ".join(sorted(ConfigFile.model_fields))
        return f"unknown key {unknown[0]!r}: expected one of {known}"
    first = errors[0]
    table = str(first["loc"][0])
    inside = [e for e in errors if len(e["loc"]) > 1 and e["loc"][0] == table]
    if inside and isinstance(data.get(table), Mapping):
        order = list(data[table])  # a table's keys are told in the file's order
        first = min(inside, key=lambda e: order.index(e["loc"][1]))
    extra = sorted(str(e["loc"][1]) for e in errors if _unknown(e["type"], e["loc"], 2, table))
    if extra:
        keys = list(TABLES[table].model_fields)
        known = " or ".join(keys) if len(keys) == 2 else "one of " + ", ".join(keys)
        return f"unknown key '{table}.{extra[0]}': expected {known}"
    refusal = first.get("ctx", {}).get("error")
    if not isinstance(refusal, Refusal):
        refusal = Refusal()
    loc = refusal.at or tuple(str(part) for part in first["loc"] if part != "[key]")
    line = f"key {'.'.join(loc)!r}"
    if refusal.show_value:
        line += f" = {_shown(_value_at(data, loc))}"
    return f"{line}: {refusal.why or 'expected ' + _form(loc)}"


def _unknown(kind: str, loc: tuple[int | str, ...], depth: int, table: str | None = None) -> bool:
    return kind == "extra_forbidden" and len(loc) == depth and (table is None or loc[0] == table)


def _form(loc: tuple[str, ...]) -> str:
    """The ``description`` of the field at ``loc``: the form its value should have."""
    model: type[BaseModel] = TABLES[loc[0]] if len(loc) > 1 else ConfigFile
    return model.model_fields[loc[-1]].description or "another value"


def _value_at(data: Mapping[str, Any], loc: tuple[str, ...]) -> object:
    value: Any = data
    for part in loc:
        value = value[part]
    return value


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= _SHOWN else shown[: _SHOWN - 3] + "..."
