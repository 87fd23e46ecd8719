"""The native checkpoint path, against a stand-in library with 19.05's nine symbols.

Slurm 22.05 has no checkpoint API, so the tests build a small shared library exporting the
nine ``slurm_checkpoint_*`` symbols with 19.05's prototypes and return conventions and load
it RTLD_GLOBAL ahead of libslurm in a child process; the binding's ``dlsym`` finds it there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from sckpt.backend.errors import NotSupported
from sckpt.backend.libslurm import Binding
from sckpt.backend.model import STEP_BATCH, StepId

from tests.conftest import SlurmCluster

from .conftest import PYTHON, ROOT

pytestmark = pytest.mark.slurm

SOURCE = Path(__file__).parent / "data" / "standin_checkpoint.c"
LEGACY_BATCH = 0xFFFFFFFE  # 19.05's SLURM_BATCH_SCRIPT (== NO_VAL)


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = shutil.which("gcc") or shutil.which("cc")
    assert gcc, "the stand-in library needs a C compiler"
    out = tmp_path_factory.mktemp("standin") / "libstandin_checkpoint.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-O1", "-o", str(out), str(SOURCE)], check=True)
    return out


DRIVER = r"""
import ctypes, json, sys
standin = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
standin.standin_last_call.restype = ctypes.c_char_p
from sckpt.backend.errors import SckptError
from sckpt.backend.libslurm import get_binding
from sckpt.backend.model import StepId, STEP_BATCH
b = get_binding()

def last():
    return standin.standin_last_call().decode()

def attempt(call):
    try:
        value = call()
        return ["ok", value, last()]
    except SckptError as exc:
        return [type(exc).__name__, exc.code, exc.name, last()]

out = {"symbols": b.checkpoint_symbols(), "has": b.has_checkpoint_api}
for job in (7, 2037, 2017, 1001):
    s3, batch, whole = StepId(job, 3), StepId(job, STEP_BATCH), StepId(job)
    out[str(job)] = {
        "able": attempt(lambda: b.ckpt_able(s3)),
        "able_batch": attempt(lambda: b.ckpt_able(batch)),
        "disable": attempt(lambda: b.ckpt_disable(s3)),
        "enable_whole": attempt(lambda: b.ckpt_enable(whole)),
        "create": attempt(lambda: b.ckpt_create(s3, 30, "/img/dir")),
        "create_nodir": attempt(lambda: b.ckpt_create(s3, 10)),
        "vacate": attempt(lambda: b.ckpt_vacate(batch, 45, "/v")),
        "restart": attempt(lambda: b.ckpt_restart(whole, True, "/r")),
        "restart_nostick": attempt(lambda: b.ckpt_restart(whole, False)),
        "complete": attempt(lambda: b.ckpt_complete(s3, 1700000123, 2037, "boom")),
        "error": attempt(lambda: list(b.ckpt_error(s3))),
        "tasks": attempt(lambda: b.ckpt_tasks(s3, 1700000456, "/t", 60, "n[1-2]")),
    }
print(json.dumps(out))
"""


def _run(standin: Path, cluster: SlurmCluster, code: str, *args: str) -> str:
    proc = subprocess.run(
        [PYTHON, "-c", code, str(standin), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=cluster.env(PYTHONPATH=str(ROOT)),
        cwd="/tmp",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def test_every_call_marshals_and_returns_19_05_shapes(
    standin: Path, slurm_cluster: SlurmCluster
) -> None:
    out = json.loads(_run(standin, slurm_cluster, DRIVER))
    assert out["has"] is True and all(out["symbols"].values())

    ok = out["7"]
    assert ok["able"] == ["ok", 1700000003, "able 7 3"]
    assert ok["able_batch"] == [
        "ok",
        1700000000 + (LEGACY_BATCH & 0xFFFF),
        f"able 7 {LEGACY_BATCH}",
    ]
    assert ok["disable"] == ["ok", None, "disable 7 3"]
    assert ok["enable_whole"] == ["ok", None, f"enable 7 {0xFFFFFFFE}"]
    assert ok["create"] == ["ok", None, "create 7 3 30 /img/dir"]
    assert ok["create_nodir"] == ["ok", None, "create 7 3 10 (null)"]
    assert ok["vacate"] == ["ok", None, f"vacate 7 {LEGACY_BATCH} 45 /v"]
    assert ok["restart"] == ["ok", None, f"restart 7 {0xFFFFFFFE} 1 /r"]
    assert ok["restart_nostick"] == ["ok", None, f"restart 7 {0xFFFFFFFE} 0 (null)"]
    assert ok["complete"] == ["ok", None, "complete 7 3 1700000123 2037 boom"]
    code, message = ok["error"][1]
    assert code == 4242 and message.startswith("stand-in message ") and len(message) == 1023
    assert ok["tasks"] == ["ok", None, "tasks 7 3 1700000456 /t 60 n[1-2]"]

    # A positive return is the controller's code itself.
    for name, result in out["2037"].items():
        assert result[:3] == ["Disabled", 2037, "ESLURM_DISABLED"], name
    # -1 with errno.
    for name, result in out["2017"].items():
        assert result[:3] == ["InvalidJobId", 2017, "ESLURM_INVALID_JOB_ID"], name
    for name, result in out["1001"].items():
        assert result[:2] == ["ControllerUnreachable", 1001], name


LEAK_DRIVER = r"""
import ctypes, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
from sckpt.backend.errors import SckptError
from sckpt.backend.libslurm import get_binding
from sckpt.backend.model import StepId

def rss_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0

b = get_binding()
n = int(sys.argv[2])
for i in range(2000):
    b.ckpt_error(StepId(7, 1))
before = rss_kb()
for i in range(n):
    b.ckpt_error(StepId(7, 1))
    try:
        b.ckpt_error(StepId(2037, 1))
    except SckptError:
        pass
print(rss_kb() - before)
"""


def test_error_message_is_freed(standin: Path, slurm_cluster: SlurmCluster) -> None:
    """100,000 success + 100,000 refusal calls, each strdup'ing 1 KiB: a leak would be 200 MB."""
    growth_kb = int(_run(standin, slurm_cluster, LEAK_DRIVER, "100000"))
    assert growth_kb < 10 * 1024, f"RSS grew {growth_kb} KiB over 200,000 calls"


def test_without_the_symbols_every_call_is_not_supported(binding: Binding) -> None:
    """On 22.05 (no stand-in loaded in this process) the nine calls refuse, typed."""
    if binding.has_checkpoint_api:
        pytest.skip("this process sees a checkpoint API")
    step = StepId(1, 0)
    calls = [
        lambda: binding.ckpt_able(step),
        lambda: binding.ckpt_disable(step),
        lambda: binding.ckpt_enable(step),
        lambda: binding.ckpt_create(step, 10),
        lambda: binding.ckpt_vacate(step, 10),
        lambda: binding.ckpt_restart(StepId(1, STEP_BATCH)),
        lambda: binding.ckpt_complete(step, 0, 0),
        lambda: binding.ckpt_error(step),
        lambda: binding.ckpt_tasks(step, 0, "/d", 10, "n1"),
    ]
    for call in calls:
        with pytest.raises(NotSupported) as info:
            call()
        assert info.value.code == 2036 and info.value.name == "ESLURM_NOT_SUPPORTED"
        assert "removed in 20.02" in str(info.value)
