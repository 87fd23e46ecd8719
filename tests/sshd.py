"""A throwaway OpenSSH server on loopback, for driving sckpt the way operators use it.

It runs the system's ``/usr/sbin/sshd`` with its own config, host key and authorized key in a
private directory, on a loopback port, for one test user.  Nothing of the system's SSH setup
is read or changed.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"


@dataclass(frozen=True)
class SshServer:
    """A running sshd: how to reach it as ``user`` with the generated key."""

    port: int
    user: str
    key: Path
    directory: Path

    def ssh_argv(self, *remote: str, tty: bool = True) -> list[str]:
        """The ``ssh`` command line that runs ``remote`` on the server."""
        return [
            "ssh",
            *(["-t"] if tty else ["-T"]),
            "-p",
            str(self.port),
            "-i",
            str(self.key),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "BatchMode=yes",
            f"{self.user}@127.0.0.1",
            *remote,
        ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def ssh_server(user: str, env: dict[str, str] | None = None) -> Iterator[SshServer]:
    """Start sshd for ``user`` (who must exist) and stop it afterwards."""
    if shutil.which("ssh") is None or not Path(SSHD).exists():
        raise RuntimeError("openssh-server and openssh-client are not installed")
    account = pwd.getpwnam(user)
    directory = Path(tempfile.mkdtemp(prefix="sckpt-sshd-"))
    directory.chmod(0o755)
    try:
        host_key = directory / "host_ed25519"
        client_key = directory / "client_ed25519"
        for key in (host_key, client_key):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True
            )
        authorized = directory / "authorized_keys"
        authorized.write_text(client_key.with_suffix(".pub").read_text())
        os.chown(authorized, account.pw_uid, account.pw_gid)
        authorized.chmod(0o600)
        env_lines = "".join(f"SetEnv {k}={v}\n" for k, v in (env or {}).items())
        port = _free_port()
        config = directory / "sshd_config"
        config.write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
            f"PidFile {directory / 'sshd.pid'}\nAuthorizedKeysFile {authorized}\n"
            "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
            f"AllowUsers {user}\nPermitUserEnvironment no\nAcceptEnv TERM NO_COLOR\n"
            f"{env_lines}"
        )
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=(directory / "sshd.log").open("w"),
        )
        try:
            server = SshServer(port=port, user=user, key=client_key, directory=directory)
            deadline = time.monotonic() + 20
            while True:
                probe = subprocess.run(
                    server.ssh_argv("true", tty=False), capture_output=True, timeout=20
                )
                if probe.returncode == 0:
                    break
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = (directory / "sshd.log").read_text()
                    raise RuntimeError(f"sshd did not accept the test key: {log[-2000:]}")
                time.sleep(0.2)
            yield server
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
