"""The ``sckpt`` command line: the console's twin for one quick action or a script.

``sckpt`` with no command opens the console (``sckpt JOB.STEP`` opens it on that step).
The commands call the same facade as the console, so they share its engines, read-only guard
and audit log::

    sckpt able|error|create|vacate|restart|enable|disable|complete|tasks TARGET... [options]
    sckpt checkpoint <op> <jobid>[.<stepid>] [MaxWait=N] [ImageDir=DIR] [StickToNodes]
    sckpt ls [--json] [--steps] [filters]
    sckpt history JOB [--json] [--since WHEN] [--limit N]
    sckpt output JOB [--stderr] [--follow] [--lines N]
    sckpt doctor
    sckpt completion bash|zsh
    sckpt run [options] -- PROGRAM ARGS    (the job-side wrapper: backend/checkpointing)

Exit codes (``sckpt.exit_codes``): 0 success; 1 Slurm (or sckpt's read-only/audit guard)
refused, or an unexpected internal error; 2 bad usage or input; 3 Slurm cannot be reached or
the shim is unavailable; 130 interrupted by Ctrl-C.  Every failure is one line on stderr;
``--debug`` adds the traceback.  Every value is validated while argv is parsed, before a
facade is opened, so invalid input never reaches an engine.

This package holds no Textual: the console (``sckpt.tui.app``) is imported only when it is
opened (``dependencies.run_console``), so ``sckpt ls`` and the actions start fast and work on
machines where only the command line is used, and the console never imports the command
line (``tests/test_layering.py`` checks both).  This entry module runs one command and turns
every failure into its line and exit code; beside it: ``parser`` (the one grammar: commands,
options, completion), ``arguments`` (argv value types), ``historical`` (scontrol's
``checkpoint`` syntax), ``commands`` (one handler per command), ``dependencies`` (what the
commands reach beyond the command line, injected by ``main``'s keywords), ``actions`` (one
operation on each target, reported; ``wait_progress``: ``--wait``'s line), ``listing``
(``sckpt ls``), ``squeue_format`` (its squeue -o/-O/-S), ``history`` (``sckpt history``),
``job_output`` (``sckpt output``), ``output`` (what is printed) and ``terminal`` (whether
stdin, stdout and stderr are terminals).
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from sckpt.backend.errors import SckptError

from sckpt.exit_codes import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK

from . import output
from .commands import dispatch, run_command
from .dependencies import ConsoleRunner, Dependencies, FacadeFactory, WaitTiming
from .parser import COMMANDS, ParserExit, parse, split_command

if TYPE_CHECKING:
    from sckpt.backend.doctor import DoctorReport

__all__ = ["COMMANDS", "ConsoleRunner", "FacadeFactory", "WaitTiming", "main"]


def _flag_given(argv: Sequence[str], flag: str) -> bool:
    """``--debug``, ``--json`` ... anywhere before ``--`` (known even when parsing itself
    fails)."""
    for word in argv:
        if word == "--":
            return False
        if word == flag:
            return True
    return False


def _refusal_document(argv: Sequence[str], failure: SckptError) -> str:
    """The ``--json`` document of a refusal that came before any command could answer
    (bad usage, an invalid config): the keys an action's document has, no results, and the
    error object.  Why: a script reading ``--json`` got nothing on stdout for
    ``--max-wait 70000`` while other refusals gave it ``"name": "USAGE"``."""
    try:
        command = split_command(argv).word
    except SckptError:
        command = None
    if command is not None and command not in COMMANDS:
        command = None
    return output.dumps(
        {
            "operation": command,
            "engine": None,
            "read_only": _flag_given(argv, "--read-only"),
            "exit_code": failure.exit_code,
            "results": [],
            "error": output.error_json(failure),
        }
    )


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the final flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _print_traceback() -> None:
    """``--debug``'s traceback, whatever bytes the arguments held (a surrogate from an
    undecodable argument would make a strict stderr raise while printing it)."""
    text = traceback.format_exc().encode("utf-8", "backslashreplace").decode("utf-8")
    sys.stderr.write(text)


def main(
    argv: Sequence[str] | None = None,
    *,
    facade_factory: FacadeFactory | None = None,
    console: ConsoleRunner | None = None,
    missing_terminal: Callable[[], str] | None = None,
    wrapper: Callable[[list[str]], int] | None = None,
    doctor: Callable[[str | None], tuple[DoctorReport, int]] | None = None,
    wait: WaitTiming | None = None,
) -> int:
    """Run the command line; return the exit code (the ``sckpt`` script exits with it).

    The keyword arguments replace what the command line reaches beyond itself
    (``dependencies.Dependencies``; None: the real one): the facade each command opens, the console,
    the console's terminal check, ``sckpt run``'s wrapper, this machine's doctor and
    ``--wait``'s pace.
    """
    real = Dependencies()
    deps = Dependencies(
        facade_factory=facade_factory or real.facade_factory,
        console=console or real.console,
        missing_terminal=missing_terminal or real.missing_terminal,
        wrapper=wrapper or real.wrapper,
        doctor=doctor or real.doctor,
        wait=wait or real.wait,
    )
    words = list(sys.argv[1:] if argv is None else argv)
    debug = _flag_given(words, "--debug")
    try:
        split = split_command(words)
        if split.word == "run":  # the wrapper parses its own words: none is read here
            return run_command(split.before, split.after, deps)
        return dispatch(parse(words), deps)
    except ParserExit as done:
        return done.status
    except SckptError as failure:
        if debug:
            _print_traceback()
        if _flag_given(words, "--json"):
            output.to_stdout(_refusal_document(words, failure))
        output.to_stderr(output.failure_line("", failure))
        return failure.exit_code
    except KeyboardInterrupt:
        output.to_stderr("sckpt: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_OK
    except Exception as bug:
        if debug:
            _print_traceback()
        detail = output.clean(f"{type(bug).__name__}: {bug}")
        output.to_stderr(f"sckpt: internal error: {detail} (run with --debug for the traceback)")
        return EXIT_INTERNAL
