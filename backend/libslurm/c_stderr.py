"""Keep libslurm's own log lines off a full-screen terminal.

libslurm logs every failure itself ("error: Munge encode failed ... (Did you start
munged?)", "slurm_load_jobs error: ...") through the C library's ``stderr`` stream.  On a
command line those lines are useful context above sckpt's one-line message; under the
console they are written straight into the middle of the Textual screen, which also draws
on file descriptor 2.  So the console points the C ``stderr`` *stream* elsewhere while
Python's ``sys.stderr`` (and with it Textual) keeps descriptor 2: the C library's stream
and Python's file object are separate, and libslurm only uses the former.  The console
already shows every error's Slurm name, message and hint, so nothing a user needs is lost.
"""

from __future__ import annotations

import ctypes
import os

_diverted = False


def divert_c_stderr(path: str = os.devnull) -> bool:
    """Point the C library's ``stderr`` stream at ``path``; True when it was done.

    Process-wide and one-way (the console runs until the process ends).  Never raises:
    on a C library without an assignable ``stderr`` symbol the lines keep going to fd 2.
    """
    global _diverted
    if _diverted:
        return True
    try:
        libc = ctypes.CDLL(None)
        fdopen = libc.fdopen
        fdopen.restype = ctypes.c_void_p
        fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
        setvbuf = libc.setvbuf
        setvbuf.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t]
        stream_var = ctypes.c_void_p.in_dll(libc, "stderr")
    except (OSError, ValueError, AttributeError):
        return False
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return False
    stream = fdopen(fd, b"a")
    if not stream:
        os.close(fd)
        return False
    setvbuf(stream, None, 1, 0)  # _IOLBF: line buffered, as a log should be
    stream_var.value = stream
    _diverted = True
    return True
