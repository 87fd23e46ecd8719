"""``sckpt doctor``: can sckpt talk to Slurm on this machine, and if not, what to fix.

A pure function over the machine's state: ``run_doctor()`` returns a :class:`DoctorReport`
and the exit code (0 usable, 2 not usable); ``format_report`` renders it for a terminal.
The command line wires ``sckpt doctor`` (and ``--json``) to these.  Each check names what
it looked at, so a user can compare with their own ``ls``/``scontrol`` findings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .checkpointing.dmtcp import find_dmtcp
from .checkpointing.mpi_install import launchers, mana_prefix
from .errors import SckptError
from .libslurm import find_config_source, get_binding, shim_build

if TYPE_CHECKING:
    from .config import Settings
    from .facade import Facade
    from .libslurm.binding import Binding
    from .libslurm.shim_build import BuildPlan

EXIT_USABLE = 0
EXIT_UNUSABLE = 2


@dataclass(frozen=True, slots=True)
class DoctorCheck:
    """One line of the report."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    informational: bool = False
    """A fact, not a requirement (e.g. "checkpoint API absent" on modern Slurm)."""


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """Everything ``sckpt doctor`` found (facts are empty strings when unknown)."""

    usable: bool
    checks: tuple[DoctorCheck, ...] = field(default=())
    libslurm_path: str = ""
    libslurm_api_version: str = ""
    headers: str = ""
    slurm_version: str = ""
    shim_state: str = ""
    """``cached``, ``built`` (just now) or ``unavailable``."""
    shim_path: str = ""
    cache_dir: str = ""
    config_source: str = ""
    controller_reachable: bool = False
    round_trip_ms: float = 0.0
    controller_version: str = ""
    cluster_name: str = ""
    checkpoint_api: bool = False
    checkpoint_symbols: tuple[str, ...] = ()
    """The ``slurm_checkpoint_*`` symbols found (all nine on Slurm <= 19.05)."""
    switch_type: str = ""
    proctrack_type: str = ""
    accounting: str = ""
    """``slurmdbd`` (it answered), ``unreachable`` (configured, no answer), ``none`` (not
    configured), or empty when the controller could not say."""
    demo: bool = False
    """``sckpt --demo doctor``: the simulated cluster was checked, not this machine's Slurm."""


def _api_text(value: int) -> str:
    return f"{(value >> 16) & 0xFF}.{(value >> 8) & 0xFF}.{value & 0xFF}"


def dmtcp_check(configured: str | None = None) -> DoctorCheck:
    """Which DMTCP ``sckpt run --transparent`` would use (where, which version), or how to
    get one.  Informational: sckpt talks to Slurm without it."""
    try:
        found = find_dmtcp(configured)
    except SckptError as exc:
        return DoctorCheck("DMTCP", True, exc.message, exc.hint, informational=True)
    version = found.version or "version unknown"
    return DoctorCheck(
        "DMTCP",
        True,
        f"{version} at {found.prefix} (from {found.source}): sckpt run --transparent "
        "checkpoints unmodified programs",
    )


def mpi_check(path: str | None = None) -> DoctorCheck:
    """Which MPI launchers ``PATH`` has, and which of them ``sckpt run --transparent``
    checkpoints (``checkpointing/mpi.py``).  Informational: sckpt needs no MPI."""
    found = launchers(path)
    if not found:
        return DoctorCheck(
            "MPI",
            True,
            "no mpiexec, mpiexec.mpich, mpirun.openmpi or prterun on PATH",
            "apt-get install mpich libmpich-dev openmpi-bin libopenmpi-dev (scripts/test does)",
            informational=True,
        )
    listed = "; ".join(
        f"{one.name} is {one.implementation} ({one.real}"
        f"{'' if one.checkpointed else ', not checkpointed by --transparent'})"
        for one in found
    )
    return DoctorCheck(
        "MPI",
        True,
        f"{listed}: sckpt run --transparent checkpoints an mpiexec run inside one task; "
        "ranks started by srun --mpi are refused (README, MPI)",
        informational=True,
    )


def mana_check(cache: str | None = None) -> DoctorCheck:
    """MANA when ``scripts/mana build`` built it (checkpointed MPICH by hand here; not used
    by ``sckpt run``)."""
    prefix = mana_prefix(cache)
    if prefix is None:
        return DoctorCheck(
            "MANA",
            True,
            "not built (sckpt run does not use it)",
            "a checkout of the project builds it (README, MPI) to try it by hand",
            informational=True,
        )
    version = prefix.name.split("-")[1]
    return DoctorCheck(
        "MANA",
        True,
        f"{version} at {prefix} (built against MPICH): mana_launch/mana_restart by "
        "hand; sckpt run does not use it (README, MPI)",
        informational=True,
    )


def run_doctor(dmtcp_dir: str | None = None) -> tuple[DoctorReport, int]:
    """Check headers, library, shim, configuration and controller; never raises.

    ``dmtcp_dir`` is the config's DMTCP prefix (None: the usual search).  Each step below
    appends its lines to ``checks`` and what it learnt to ``facts`` (the report's fields),
    in the order the report prints them."""
    checks: list[DoctorCheck] = []
    facts: dict[str, object] = {}
    plan = _library_checks(checks, facts)
    _configuration_check(checks, facts)
    binding = _shim_check(plan, checks, facts)
    if binding is not None:
        _controller_checks(binding, checks, facts)
        checks.append(_checkpoint_api_check(binding, facts))
    checks.append(dmtcp_check(dmtcp_dir))
    checks.extend((mpi_check(), mana_check()))
    usable = binding is not None and bool(facts.get("controller_reachable"))
    report = DoctorReport(usable=usable, checks=tuple(checks), **facts)  # type: ignore[arg-type]
    return report, EXIT_USABLE if usable else EXIT_UNUSABLE


def _library_checks(checks: list[DoctorCheck], facts: dict[str, object]) -> BuildPlan | None:
    """1. Headers and library (no compiling yet); the shim's build plan, None without one."""
    plan: BuildPlan | None = None
    try:
        plan = shim_build.plan()
        facts["headers"] = f"{plan.include_dir}/slurm (Slurm {plan.version_text})"
        facts["slurm_version"] = plan.version_text
        facts["libslurm_path"] = str(plan.lib_path)
        facts["cache_dir"] = str(plan.cache_root)
        if plan.headers_missing:
            # Running from a shim built earlier: fine until the next Slurm upgrade.
            checks.append(
                DoctorCheck(
                    "headers",
                    True,
                    f"{plan.headers_missing}; using the shim built earlier against "
                    f"{facts['headers']}",
                    f"a Slurm upgrade will need them to rebuild: {shim_build.FIX_PACKAGES}",
                    informational=True,
                )
            )
        else:
            checks.append(DoctorCheck("headers", True, str(facts["headers"])))
        try:
            api = shim_build.library_api_version(plan.lib_path)
            facts["libslurm_api_version"] = _api_text(api)
            release = shim_build.library_release(plan.lib_path)
            what = f"Slurm {release}, API {_api_text(api)}" if release else f"API {_api_text(api)}"
            shim_build.require_matching_release(plan)
            checks.append(DoctorCheck("libslurm", True, f"{plan.lib_path} ({what})"))
        except OSError as exc:
            checks.append(DoctorCheck("libslurm", False, f"{plan.lib_path}: {exc}"))
        except SckptError as exc:
            checks.append(DoctorCheck("libslurm", False, exc.message, exc.hint))
    except SckptError as exc:
        checks.append(DoctorCheck("headers/libslurm", False, exc.message, exc.hint))
    return plan


def _configuration_check(checks: list[DoctorCheck], facts: dict[str, object]) -> None:
    """2. Configuration source (before slurm_init, which would exit without one)."""
    try:
        source = find_config_source()
        facts["config_source"] = str(source)
        checks.append(DoctorCheck("configuration", True, str(source)))
    except SckptError as exc:
        checks.append(DoctorCheck("configuration", False, exc.message, exc.hint))


def _shim_check(
    plan: BuildPlan | None, checks: list[DoctorCheck], facts: dict[str, object]
) -> Binding | None:
    """3. Shim build and load (builds now when missing): the binding, None when not loaded."""
    binding: Binding | None = None
    if plan is not None and facts.get("config_source"):
        was_cached = plan.meta_path.is_file()
        try:
            binding = get_binding()
            facts["shim_state"] = "cached" if was_cached else "built"
            facts["shim_path"] = str(binding.module_path)
            checks.append(
                DoctorCheck("shim", True, f"{facts['shim_state']}: {binding.module_path}")
            )
        except SckptError as exc:
            facts["shim_state"] = "unavailable"
            checks.append(DoctorCheck("shim", False, exc.message, exc.hint))
    elif plan is not None:
        facts["shim_state"] = "cached" if plan.meta_path.is_file() else "not built"
        checks.append(
            DoctorCheck(
                "shim",
                True,
                f"{facts['shim_state']} ({plan.build_dir}); not loaded without a configuration",
                informational=True,
            )
        )
    return binding


def _controller_checks(binding: Any, checks: list[DoctorCheck], facts: dict[str, object]) -> None:
    """4. The controller (one timed round trip), its plugins, then accounting when it answered."""
    try:
        start = time.perf_counter()
        conf = binding.ctl_conf()
        rtt = (time.perf_counter() - start) * 1000
        facts.update(
            controller_reachable=True,
            round_trip_ms=round(rtt, 2),
            controller_version=conf.version,
            cluster_name=conf.cluster_name,
            switch_type=conf.switch_type,
            proctrack_type=conf.proctrack_type,
        )
        checks.append(
            DoctorCheck(
                "controller",
                True,
                f"{conf.control_host}:{conf.slurmctld_port} answered in {rtt:.1f} ms "
                f"(cluster {conf.cluster_name}, slurmctld {conf.version})",
            )
        )
        checks.append(
            DoctorCheck(
                "plugins",
                True,
                f"switch {conf.switch_type or '-'}, proctrack {conf.proctrack_type or '-'}",
                informational=True,
            )
        )
    except SckptError as exc:
        # An authentication failure never reached slurmctld: the fix is munge, not it.
        auth = getattr(exc, "name", "") == "SLURM_PROTOCOL_AUTHENTICATION_ERROR"
        fix = (
            "start munged (its socket is AuthInfo=socket=... in slurm.conf)"
            if auth
            else "start slurmctld or check SlurmctldHost/Port in the configuration"
        )
        checks.append(DoctorCheck("controller", False, str(exc), fix))
    if facts.get("controller_reachable"):
        checks.append(_accounting_check(binding, facts))


def _checkpoint_api_check(binding: Any, facts: dict[str, object]) -> DoctorCheck:
    """5. Which slurm_checkpoint_* calls libslurm still has: what engine = "auto" picks."""
    symbols = binding.checkpoint_symbols()
    found = tuple(name for name, present in symbols.items() if present)
    facts["checkpoint_symbols"] = found
    facts["checkpoint_api"] = len(found) == len(symbols)
    if facts["checkpoint_api"]:
        detail = (
            f"present (all {len(symbols)} slurm_checkpoint_* calls): "
            'engine = "auto" chooses the native engine'
        )
    elif found:
        detail = f"partial ({', '.join(found)}): the cooperative engine will be used"
    else:
        detail = "absent (removed in Slurm 20.02): the cooperative engine will be used"
    return DoctorCheck("checkpoint API", True, detail, informational=True)


def run_demo_doctor(facade: Facade, settings: Settings) -> tuple[DoctorReport, int]:
    """``sckpt --demo doctor``: what ``--demo`` uses (the simulated cluster, in this process,
    and the demo's own audit log), never this machine's Slurm; it told a demo user that
    "``sckpt --demo`` works without it"."""
    checks: list[DoctorCheck] = []
    info = facade.info
    checks.append(
        DoctorCheck(
            "demo",
            True,
            f"simulated cluster {info.cluster_name}, Slurm {info.slurm_version}, in this "
            f"process: {settings.demo_jobs} jobs from seed {settings.demo_seed}, acting as "
            f"{info.acting_user}; no Slurm, munge or shim is needed",
        )
    )
    start = time.perf_counter()
    usable = True
    try:
        jobs = len(facade.snapshot().jobs)
    except SckptError as exc:
        usable = False
        checks.append(DoctorCheck("controller", False, str(exc), "report this as a bug"))
    else:
        ms = (time.perf_counter() - start) * 1000
        checks.append(
            DoctorCheck(
                "controller", True, f"the simulated slurmctld listed {jobs} jobs in {ms:.1f} ms"
            )
        )
    checks.append(
        DoctorCheck(
            "audit log",
            True,
            f"the demo's actions go to {facade.audit.path}, apart from the real log "
            f"{settings.audit_log}",
        )
    )
    checks.append(
        DoctorCheck(
            "this machine",
            True,
            "not checked: 'sckpt doctor' without --demo checks its Slurm (libslurm, "
            "headers, shim, configuration, controller)",
            informational=True,
        )
    )
    report = DoctorReport(
        usable=usable,
        checks=tuple(checks),
        slurm_version=info.slurm_version,
        cluster_name=info.cluster_name,
        controller_reachable=usable,
        controller_version=info.slurm_version,
        checkpoint_api=True,
        demo=True,
    )
    return report, EXIT_USABLE if usable else EXIT_UNUSABLE


ACCOUNTING_ADDS = (
    "job history across requeues and restarts (sckpt history JOB), finished jobs after "
    "MinJobAge (f in the console) and several clusters (-M)"
)
"""What Slurm's accounting (slurmdbd) would add, in the words doctor uses."""


def _accounting_check(binding: Any, facts: dict[str, object]) -> DoctorCheck:
    """Whether slurmdbd keeps the jobs, and answers: one real, bounded query when it is
    configured (the jobs that ended in the last minute)."""
    try:
        conf = binding.accounting_config()
    except SckptError as exc:
        return DoctorCheck("accounting", False, str(exc), informational=True)
    if not conf.uses_slurmdbd:
        facts["accounting"] = "none"
        return DoctorCheck(
            "accounting",
            True,
            f"not configured (AccountingStorageType={conf.storage_type or 'none'}); "
            f"with slurmdbd sckpt adds {ACCOUNTING_ADDS}",
            "run slurmdbd and set AccountingStorageType=accounting_storage/slurmdbd and "
            "AccountingStorageHost in slurm.conf (Slurm's accounting guide)",
            informational=True,
        )
    start = time.perf_counter()
    try:
        binding.finished_jobs(int(time.time()) - 60)
    except SckptError as exc:
        facts["accounting"] = "unreachable"
        return DoctorCheck(
            "accounting",
            False,
            f"slurmdbd does not answer: {exc.message}",
            f"start slurmdbd (the controller names {conf.where}; this host's slurm.conf "
            "must agree), or fix AccountingStorageHost/Port; until then sckpt works "
            f"without {ACCOUNTING_ADDS}",
        )
    facts["accounting"] = "slurmdbd"
    ms = (time.perf_counter() - start) * 1000
    return DoctorCheck(
        "accounting",
        True,
        f"slurmdbd at {conf.where} answered in {ms:.1f} ms: sckpt history, finished jobs (f) "
        "and -M are available",
    )


def format_report(report: DoctorReport) -> str:
    """Plain text, one check a line, with what to fix under each failure."""
    lines = []
    for check in report.checks:
        mark = "info" if check.informational else ("ok" if check.ok else "FAIL")
        lines.append(f"{mark:>4}  {check.name}: {check.detail}")
        if check.fix and (not check.ok or check.informational):
            lines.append(f"      fix: {check.fix}")
    if report.cache_dir:
        lines.append(f"      shim cache: {report.cache_dir}")
    if report.demo:
        verdict = (
            "sckpt --demo works here."
            if report.usable
            else "sckpt --demo does not work here: see above."
        )
    else:
        verdict = (
            "sckpt can talk to Slurm."
            if report.usable
            else "sckpt cannot talk to Slurm here; `sckpt --demo` works without it."
        )
    lines.append(verdict)
    return "\n".join(lines)
