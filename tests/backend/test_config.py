"""The TOML config: where it is read from, every key, and the messages for mistakes."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sckpt.backend.arguments import EVERY_AUTO
from sckpt.backend.config import (
    ENV_CONFIG,
    Environment,
    Settings,
    default_config_path,
    environment,
    load_settings,
)
from sckpt.backend.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_default_file_gives_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_CONFIG, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nothing"))
    assert default_config_path() == tmp_path / "nothing" / "sckpt" / "config.toml"
    settings = load_settings()
    assert settings.max_wait == 10 and settings.engine == "auto" and settings.audit_required
    assert settings.source is None


def test_xdg_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_CONFIG, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    write(tmp_path, "")
    (tmp_path / "cfg" / "sckpt").mkdir(parents=True)
    (tmp_path / "cfg" / "sckpt" / "config.toml").write_text("max_wait = 3\n")
    settings = load_settings()
    assert settings.max_wait == 3
    assert settings.audit_log == tmp_path / "state" / "sckpt" / "audit.log"


def test_every_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(
        tmp_path,
        """
refresh_interval = 5
engine = "simulated"
read_only = true
max_wait = 60
image_dir = "/scratch/ckpt"
audit_log = "/var/tmp/sckpt-audit.log"
audit_required = false
keep_images = 5
theme = "nord"
dmtcp_dir = "/opt/dmtcp"
[keys]
create = "C"
vacate = "ctrl+v"
[columns]
steps = ["id", "state"]
[demo]
seed = 7
jobs = 100
[auto]
every = "auto"
before_end = "10m"
max_restarts = 3
mtbf = "2d"
""",
    )
    monkeypatch.setenv(ENV_CONFIG, str(path))
    s = load_settings()
    assert s == Settings(
        refresh_interval=5.0,
        engine="simulated",
        read_only=True,
        max_wait=60,
        image_dir="/scratch/ckpt",
        keep_images=5,
        audit_log=Path("/var/tmp/sckpt-audit.log"),
        audit_required=False,
        keys=s.keys,
        demo_seed=7,
        demo_jobs=100,
        theme="nord",
        dmtcp_dir="/opt/dmtcp",
        columns=s.columns,
        auto_every=EVERY_AUTO,
        auto_before_end=600,
        auto_max_restarts=3,
        auto_mtbf=2 * 86400,
        source=path,
    )
    assert dict(s.keys) == {"create": "C", "vacate": "ctrl+v"}
    assert dict(s.columns) == {"steps": ("id", "state")}
    assert type(s.refresh_interval) is float and type(s.audit_log) is not str


def test_empty_strings_keep_the_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, 'image_dir = ""\naudit_log = ""\ndmtcp_dir = ""\ntheme = ""\n')
    assert load_settings(path) == Settings(source=path)
    auto = write(tmp_path, '[auto]\nevery = ""\nbefore_end = ""\n')
    assert load_settings(auto) == Settings(source=auto)


def test_argument_beats_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = write(tmp_path, "max_wait = 1\n")
    other = tmp_path / "other.toml"
    other.write_text("max_wait = 2\n")
    monkeypatch.setenv(ENV_CONFIG, str(env))
    assert load_settings(other).max_wait == 2
    assert load_settings().max_wait == 1


def test_named_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "absent.toml")


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ("max_wait = 70000", "max_wait", "0 to 65535"),
        ("max_wait = '10'", "max_wait", "whole number"),
        ("refresh_interval = 0", "refresh_interval", "0.2 to 3600"),
        ("engine = 'fast'", "engine", '"auto"'),
        ("read_only = 'yes'", "read_only", "true or false"),
        ("image_dir = 'relative'", "image_dir", "absolute"),
        ("audit_log = 'rel/a.log'", "audit_log", "absolute"),
        ("audit_log = '~nosuchuser0/a.log'", "audit_log", "absolute"),
        ("audit_required = 1", "audit_required", "true or false"),
        ("keys = 3", "keys", "table"),
        ("[keys]\ncreate = ''", "keys.create", "key name"),
        ("[keys]\n'Bad Action' = 'x'", "keys.Bad Action", "action name"),
        ("[demo]\njobs = 0", "demo.jobs", "1 to 200000"),
        ("[demo]\nsize = 3", "demo.size", "seed or jobs"),
        ("colour = 'red'", "colour", "one of"),
        ("columns = 3", "columns", "table"),
        ("[columns]\njobs = 'id'", "columns.jobs", "list of column names"),
        ("[columns]\njobs = ['id', 'usr']", "columns.jobs", "did you mean 'user'"),
        ("[columns]\njobs = ['id', 'state', 'id']", "columns.jobs", "listed twice"),
        ("[columns]\njobs = ['user', 'state']", "columns.jobs", "id column is missing"),
        ("[columns]\nsteps = ['id', 'tres']", "columns.steps", "unknown column 'tres'"),
        ("[columns]\nrows = ['id']", "columns.rows", "jobs or steps"),
        ("refresh_interval = true", "refresh_interval", "0.2 to 3600"),
        ("refresh_interval = nan", "refresh_interval", "0.2 to 3600"),
        ("keep_images = 0", "keep_images", "from 1 to 100"),
        ("keep_images = 2.0", "keep_images", "from 1 to 100"),
        ('theme = "nord\\u0007"', "theme", "a theme name"),
        ("dmtcp_dir = 'opt/dmtcp'", "dmtcp_dir", "absolute path"),
        ("[demo]\nseed = -1", "demo.seed", ">= 0"),
        ("auto = 3", "auto", "a table such as [auto]"),
        ("[auto]\nevery = '5s'", "auto.every", "at least 10s"),
        ("[auto]\nmax_restarts = ''", "auto.max_restarts", "from 1 to 10000"),
    ],
)
def test_invalid_values_name_the_key_and_the_form(
    tmp_path: Path, text: str, key: str, expected: str
) -> None:
    path = write(tmp_path, text + "\n")
    with pytest.raises(ConfigError) as exc:
        load_settings(path)
    message = str(exc.value)
    assert key in message and expected in message and str(path) in message
    assert exc.value.exit_code == 2


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("max_wait = -1\nzzz = 1\naaa = 2", "unknown key 'aaa'"),
        ("max_wait = -1\nread_only = 3", "key 'read_only' = 3"),
        ("[columns]\nsteps = 'x'\njobs = 'y'\nrows = 1", "unknown key 'columns.rows'"),
        ("[columns]\nsteps = 'x'\njobs = 'y'", "key 'columns.steps' = 'x'"),
        ("[keys]\ncreate = ''\nBad = 'x'", "key 'keys.create' = ''"),
    ],
)
def test_of_several_mistakes_the_first_is_told(tmp_path: Path, text: str, told: str) -> None:
    # An unknown key first, then the keys in a fixed order; inside a table, the file's.
    with pytest.raises(ConfigError) as exc:
        load_settings(write(tmp_path, text + "\n"))
    assert told in str(exc.value) and "\n" not in str(exc.value)


def test_invalid_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(write(tmp_path, "max_wait = = 3"))


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(b"max_wait = 3 # \xff\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        load_settings(path)


def test_columns_are_read_in_their_order(tmp_path: Path) -> None:
    path = write(tmp_path, "[columns]\njobs = ['id', 'start', 'tres', 'checkpoint']\n")
    settings = load_settings(path)
    assert settings.columns == {"jobs": ("id", "start", "tres", "checkpoint")}
    assert load_settings(write(tmp_path, "")).columns == {}


def test_the_sckpt_variables_are_read_when_asked_and_empty_is_unset() -> None:
    env = {
        "SCKPT_CONFIG": "/c.toml",
        "SCKPT_STATE_DIR": "/state",
        "SCKPT_CACHE_DIR": "",
        "SCKPT_DMTCP_DIR": "/opt/dmtcp",
        "SCKPT_CKPT_SIGNAL": "SIGUSR2",
        "OTHER": "x",
    }
    assert environment(env) == Environment(
        config="/c.toml",
        state_dir="/state",
        cache_dir=None,
        dmtcp_dir="/opt/dmtcp",
        dmtcp_cache=None,
        checkpoint_signal="SIGUSR2",
        work_dir=None,
    )


def test_only_the_config_module_names_the_variables_sckpt_reads() -> None:
    # One place says which SCKPT_* variables exist; the checkpoint protocol names only the
    # ones the wrapper sets for a program.
    root = Path(__file__).resolve().parents[2]
    named: dict[str, set[str]] = {}
    for top in ("backend", "cli", "tui", "sckpt"):
        for path in sorted((root / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and re.fullmatch(r"SCKPT_[A-Z_]+", node.value)
                ):
                    named.setdefault(str(path.relative_to(root)), set()).add(node.value)
    assert set(named) == {"backend/config.py", "backend/checkpointing/protocol.py"}
    assert named["backend/checkpointing/protocol.py"] == {"SCKPT_IMAGE_DIR", "SCKPT_CKPT_DONE"}


def test_without_a_config_file_the_model_is_never_built(tmp_path: Path) -> None:
    # Importing pydantic and building the model costs a command about 80 ms: only a
    # config file that exists pays it (config_file is imported when one is read).
    code = (
        "import sys\n"
        "from sckpt.backend.config import load_settings\n"
        "load_settings()\n"
        "wanted = ('pydantic', 'sckpt.backend.config')\n"
        "print(sorted(m for m in sys.modules if m.startswith(wanted)))\n"
        "load_settings(sys.argv[1])\n"
        "print('pydantic' in sys.modules)\n"
    )
    path = write(tmp_path, "max_wait = 3\n")
    env = {k: v for k, v in os.environ.items() if k != ENV_CONFIG}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "nothing")
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.splitlines() == ["['sckpt.backend.config']", "True"]
