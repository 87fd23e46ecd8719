"""Property tests: no input crashes the facade, and invalid input never reaches an engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sckpt.backend.config import Settings, settings_from_mapping
from sckpt.backend.errors import ConfigError, NotSupported, UsageError
from sckpt.backend.facade import Facade
from sckpt.backend.model import StepId
from sckpt.backend.operations import operation
from sckpt.backend.targets import MAX_JOB_ID, parse_target

from .spy import SpyEngine

PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=50),
    st.binary(max_size=10),
    st.lists(st.integers(), max_size=3),
)
target_text = st.one_of(
    st.text(max_size=30),
    st.from_regex(
        r"[0-9]{1,12}(\.([0-9]{1,11}|batch|extern|interactive|[a-z]{1,8}))?", fullmatch=True
    ),
)


def facade(tmp: Path) -> tuple[Facade, SpyEngine]:
    spy = SpyEngine()
    return Facade(spy, Settings(audit_log=tmp / "audit.log")), spy


@PROPS
@given(target_text)
def test_parse_target_never_crashes(text: str) -> None:
    try:
        step = parse_target(text)
    except UsageError as exc:
        assert "expected" in str(exc) or "at most" in str(exc)
    else:
        assert 0 < step.job_id <= MAX_JOB_ID
        assert parse_target(str(step)) == step  # round trip


@PROPS
@given(
    op=st.sampled_from(["create", "vacate", "restart", "tasks", "complete", "enable", "able"]),
    target=st.one_of(target_text, anything),
    a=anything,
    b=anything,
    c=anything,
)
def test_invalid_input_never_reaches_the_engine(
    tmp_path_factory: Any, op: str, target: object, a: object, b: object, c: object
) -> None:
    f, spy = facade(tmp_path_factory.mktemp("p"))
    kwargs: dict[str, object] = {}
    if op in ("create", "vacate"):
        kwargs = {"max_wait": a, "image_dir": b}
    elif op == "restart":
        kwargs = {"stick": a, "image_dir": b}
    elif op == "tasks":
        kwargs = {"begin_time": a, "image_dir": b, "max_wait": c}
    elif op == "complete":
        kwargs = {"begin_time": a, "error_code": b, "error_msg": c}
    try:
        getattr(f, op)(target, **kwargs)
    except UsageError:
        assert spy.calls == []  # refused: the engine never saw it
        return
    except NotSupported:  # restart of one step: the controller's answer, given before it
        assert operation(op).job_level and spy.calls == []
        return
    # Accepted: the engine got a valid StepId and well-typed arguments.
    (call,) = spy.calls
    assert call[0] == op
    assert isinstance(call[1], StepId) and 0 < call[1].job_id <= MAX_JOB_ID
    for value in call[2:]:
        assert isinstance(value, int | str | bool) or value is None
    if op in ("create", "vacate"):
        assert 0 <= call[2] <= 65535
        assert call[3] is None or call[3].startswith("/")


toml_values = st.recursive(
    st.one_of(
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.floats(allow_nan=False),
        st.text(max_size=20),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=8,
)
config_keys = st.sampled_from(
    [
        "refresh_interval",
        "engine",
        "read_only",
        "max_wait",
        "image_dir",
        "audit_log",
        "audit_required",
        "keys",
        "demo",
        "other",
    ]
)


@PROPS
@given(st.dictionaries(config_keys, toml_values, max_size=5))
def test_any_config_table_is_settings_or_a_config_error(data: dict[str, object]) -> None:
    try:
        result = settings_from_mapping(data)
    except ConfigError as exc:
        assert "expected" in str(exc)
    else:
        assert isinstance(result, Settings)
