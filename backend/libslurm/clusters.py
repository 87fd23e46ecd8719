"""The clusters registered in slurmdbd (``-M``), as routes a call can be sent along.

``squeue -M`` looks the clusters up with ``slurmdb_get_info_cluster`` and points libslurm's
``working_cluster_rec`` at one of them before that cluster's calls; sckpt does the same: a
:class:`~.runtime.Route` names one record, and ``Runtime.call`` sets the global for one call.
The records stay in C memory until the runtime closes.
"""

from __future__ import annotations

from ..errors import SetupError, UsageError
from ..slurm_api import ClusterRoute
from .runtime import Route, Runtime


def look_up(rt: Runtime) -> tuple[Route, ...]:
    """Every cluster slurmdbd knows, in its order (on the runtime's thread).

    Raises ``SetupError`` when this Slurm has no slurmdbd to ask (``AccountingStorageType``
    is not slurmdbd, or it does not answer) or no ``slurmdb_get_info_cluster``.
    """
    ffi, lib = rt.ffi, rt.lib
    handle = ffi.new("void **")
    count = ffi.new("uint32_t *")
    err = ffi.new("int *")
    rc = lib.sckpt_clusters_load(b"all", handle, count, err)
    if rc == lib.SCKPT_CK_MISSING_CLUSTERS:
        raise SetupError(
            f"this libslurm ({rt.plan.version_text}) has no slurmdb_get_info_cluster: "
            "-M/--clusters cannot be used"
        )
    if rc != 0:
        why = rt.describe(err[0]) if err[0] else None
        raise SetupError(
            "-M/--clusters: slurmdbd could not be asked for the clusters"
            + (f" ({why[1]})" if why else ""),
            hint=f"-M asks slurmdbd: {rt.config.path} must set AccountingStorageType="
            "accounting_storage/slurmdbd, and slurmdbd must answer (sacctmgr show cluster)",
        )
    records = handle[0]
    rt.on_close(lambda: lib.sckpt_clusters_free(records))
    return tuple(
        Route(
            ClusterRoute(
                name=rt.string(lib.sckpt_cluster_name(records, i)),
                control_host=rt.string(lib.sckpt_cluster_host(records, i)),
                control_port=int(lib.sckpt_cluster_port(records, i)),
            ),
            records,
            i,
        )
        for i in range(count[0])
    )


def wanted(names: str) -> list[str]:
    """The names of ``-M NAME[,NAME...]`` (``all`` included); ``UsageError`` when none."""
    found = [n.strip() for n in names.split(",") if n.strip()]
    if not found:
        raise UsageError("-M/--clusters: expected NAME[,NAME...] or all")
    return found


def choose(known: tuple[Route, ...], names: list[str]) -> tuple[Route, ...]:
    """The routes ``names`` ask for, in their order without repeats (``all``: every one).

    sckpt always asks slurmdbd for all of them and chooses here: for an unknown name
    libslurm prints its own error line on stderr and answers nothing, where sckpt can say
    which names it knows.
    """
    if any(n.lower() == "all" for n in names):
        return known
    by_name = {route.cluster.name: route for route in known}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        registered = ", ".join(by_name) or "none"
        raise UsageError(
            f"-M/--clusters: no cluster {', '.join(unknown)} in slurmdbd (registered: {registered})"
        )
    return tuple(by_name[n] for n in dict.fromkeys(names))
