"""Slurm's accounting (slurmdbd): where the controller sends it, and a job's records there.

Only when a person asks (``sckpt history``, finished jobs, doctor), never on the refresh
path.  slurmdbd is one for every cluster it knows: records are asked by cluster name, not
through a cluster's route.
"""

from __future__ import annotations

import socket

from .. import errors
from ..errors import AccountingUnavailable
from ..model import JobRecord
from ..slurm_api import DEFAULT_SLURMDBD_PORT, AccountingConfig
from . import decode, reads
from .runtime import Runtime

CONNECT_TIMEOUT = 3.0
"""Seconds to wait for slurmdbd's port before saying it does not answer.  libslurm would
wait MessageTimeout (10 s by default) per attempt on an unreachable host, on the binding's
one thread, where the console's refresh waits behind it."""


def config(rt: Runtime) -> AccountingConfig:
    """The controller's AccountingStorageType/Host/Port (one ``slurm_load_ctl_conf``)."""
    return reads.loaded_conf(rt, decode.accounting_config)


def require_slurmdbd(conf: AccountingConfig) -> AccountingConfig:
    """``conf`` once slurmdbd is known to listen; else ``AccountingUnavailable`` saying
    which of "not configured" and "not answering".

    The port is tried from the calling thread with a short timeout, so a query to a
    slurmdbd that is down fails in seconds and never holds the runtime's thread.
    """
    if not conf.uses_slurmdbd:
        raise AccountingUnavailable(
            message="Slurm accounting is not configured on this cluster "
            f"(AccountingStorageType={conf.storage_type or 'none'})",
            hint="job history and finished jobs come from slurmdbd: set "
            "AccountingStorageType=accounting_storage/slurmdbd and run slurmdbd",
        )
    tried = []
    for host in (conf.host or "localhost", conf.backup_host):
        if not host:
            continue
        port = conf.port or DEFAULT_SLURMDBD_PORT
        try:
            with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT):
                return conf
        except OSError as exc:
            why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
            tried.append(f"{host}:{port} ({why})")
    raise AccountingUnavailable(
        message=f"slurmdbd does not answer at {', '.join(tried)}",
        hint="start slurmdbd (and its database), or check AccountingStorageHost/Port",
    )


def jobs(
    rt: Runtime, cluster: str, job_id: int, since: int, until: int, finished: bool
) -> tuple[JobRecord, ...]:
    """Records of ``cluster`` ("": the controller's own) in the window: every record of
    ``job_id`` (``sacct --duplicates -j JOB``), or with ``finished`` the jobs that ended
    (``sacct -X -s CD,CA,F,TO,...``)."""
    ffi, lib = rt.ffi, rt.lib
    handle = ffi.new("void **")
    count = ffi.new("uint32_t *")
    err = ffi.new("int *")
    name = cluster.encode() if cluster else ffi.NULL
    rc = lib.sckpt_acct_jobs(name, job_id, since, until, 1 if finished else 0, handle, count, err)
    try:
        if rc != 0:
            code = err[0] or int(lib.ESLURM_DB_CONNECTION)
            why = errors.describe(code)[1]
            raise AccountingUnavailable(
                code,
                message=f"slurmdbd did not answer the accounting query ({why})",
                hint="check that slurmdbd runs where this host's slurm.conf says "
                "(AccountingStorageHost/Port); sacct would fail the same way",
            )
        n = count[0]
        records = ffi.new("sckpt_acct_job_t[]", max(n, 1))
        lib.sckpt_acct_fill(handle[0], records, n)
        return tuple(decode.job_record(rt, records[i]) for i in range(n))
    finally:
        lib.sckpt_acct_free(handle[0])
