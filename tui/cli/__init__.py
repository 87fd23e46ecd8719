"""The ``sckpt`` command line: the console's twin for one quick action or a script.

``sckpt`` with no command opens the console (``sckpt JOB.STEP`` opens it on that step).
The commands call the same facade as the console, so they share its engines, read-only guard
and audit log::

    sckpt able|error|create|vacate|restart|enable|disable|complete|tasks TARGET... [options]
    sckpt checkpoint <op> <jobid>[.<stepid>] [MaxWait=N] [ImageDir=DIR] [StickToNodes]
    sckpt ls [--json] [--steps] [filters]
    sckpt doctor
    sckpt completion bash|zsh
    sckpt run [options] -- PROGRAM ARGS    (the job-side wrapper, sckpt.backend.wrapper)

Exit codes: 0 success; 1 Slurm (or sckpt's read-only/audit guard) refused, or an unexpected
internal error; 2 bad usage or input; 3 Slurm cannot be reached or the shim is unavailable;
130 interrupted by Ctrl-C.  Every failure is one line on stderr; ``--debug`` adds the
traceback.  Every value is validated while argv is parsed, before a facade is opened, so
invalid input never reaches an engine.

This package holds no Textual: the console (``..app.run_console``) is imported only when it
is opened, so ``sckpt ls`` and the actions start fast and work on machines where only the
command line is used (``tests/test_layering.py`` checks it).  Beside this entry module:
``arguments`` (argv value types), ``historical`` (scontrol's ``checkpoint`` syntax),
``listing`` (``sckpt ls``) and ``output`` (what is printed).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

from sckpt.backend.config import ENGINES
from sckpt.backend.errors import ConfigError, Disabled, SckptError, UsageError
from sckpt.backend.model import AbleResult, ActionResult, CheckpointError, ClusterInfo, StepId

from sckpt import __version__

from . import arguments, output
from .historical import is_checkpoint_keyword, parse_historical

if TYPE_CHECKING:
    from sckpt.backend.config import Settings
    from sckpt.backend.facade import Facade

ACTIONS = ("able", "error", "create", "vacate", "restart", "enable", "disable", "complete", "tasks")
COMMANDS = (*ACTIONS, "ls", "doctor", "completion", "checkpoint", "run")
_GLOBAL_WITH_VALUE = frozenset({"--as-user", "--config", "--engine", "--step"})

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_INTERRUPTED = 130
EXIT_INTERNAL = EXIT_REFUSED
"""An unexpected exception is a bug: one line and exit code 1 ("it did not happen")."""

_SUMMARIES = {
    "able": "say whether checkpoints can be issued (Yes, Began at <time>, No)",
    "error": "show the last checkpoint error: error(<code>): <msg>",
    "create": "checkpoint and continue",
    "vacate": "checkpoint, then end the step (a batch job is requeued held on modern Slurm)",
    "restart": "resume a checkpointed job under the same job id (whole job only)",
    "enable": "decrement the step's disable counter (never below zero)",
    "disable": "increment the step's disable counter",
    "complete": "report that a checkpoint finished, with its error code and message",
    "tasks": "ask the step's tasks on the named nodes to checkpoint themselves",
}


class _ParserExit(Exception):
    """argparse wanted to exit (``--help``, ``--version``): carry the status to ``main``."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """argparse that never calls ``sys.exit``: errors become one-line ``UsageError``s."""

    def error(self, message: str) -> NoReturn:
        unknown = re.match(r"argument COMMAND: invalid choice: (.*?) \(choose from", message)
        if unknown:
            message = (
                f"unknown command {unknown.group(1)}: expected one of {', '.join(COMMANDS)}, "
                "or JOB[.STEP] to open the console there"
            )
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise _ParserExit(status)


# Shell functions completing TARGET with the job and step ids squeue shows (silent when
# squeue is missing or the controller does not answer).  Emitted once, in the preamble.
_TARGET_COMPLETION = {"bash": "_sckpt_targets", "zsh": "_sckpt_targets"}
_COMPLETION_PREAMBLE = {
    "bash": (
        "_sckpt_targets() {\n"
        '  compgen -W "$(squeue -h -o %i 2>/dev/null; squeue -h -s -o %i 2>/dev/null)" -- "$1"\n'
        "}\n"
    ),
    "zsh": (
        "_sckpt_targets() {\n"
        "  local -a ids\n"
        '  ids=(${(f)"$(squeue -h -o %i 2>/dev/null; squeue -h -s -o %i 2>/dev/null)"})\n'
        "  compadd -a ids\n"
        "}\n"
    ),
}


def _complete_with(action: argparse.Action, spec: object) -> argparse.Action:
    """Tell shtab how to complete an option's value (files, directories)."""
    vars(action)["complete"] = spec
    return action


def _global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Options accepted before or after the command (``sckpt --demo ls`` = ``sckpt ls --demo``).

    Sub-parsers get them with SUPPRESS defaults, so a value given before the command is not
    overwritten by the sub-parser's default.
    """
    import shtab

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument(
        "--demo", action="store_true", default=default(False), help="use the simulated cluster"
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        default=default(False),
        help="refuse every mutating action, and 'sckpt run' (the backend guard; refusals "
        "are audited)",
    )
    parser.add_argument(
        "--as-user",
        metavar="USER",
        default=default(None),
        help="act as USER (simulated cluster only), e.g. --as-user root",
    )
    _complete_with(
        parser.add_argument(
            "--config",
            metavar="PATH",
            default=default(None),
            help="configuration file (default: $SCKPT_CONFIG, else the XDG config path)",
        ),
        shtab.FILE,
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default=default(None),
        help="override the engine (default: from the config, normally auto)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=default(False),
        help="show the traceback of a failure",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="print JSON for scripts (commands; ignored by the console)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (also the source of the shell completion scripts)."""
    import shtab

    parser = _Parser(
        prog="sckpt",
        description=(
            "A terminal console for Slurm operators: jobs, steps and their checkpoints. "
            "Without a command, opens the console."
        ),
        epilog=(
            "Historical syntax: sckpt checkpoint <op> <jobid>[.<stepid>] [MaxWait=N] "
            "[ImageDir=DIR] [StickToNodes]. Exit codes: 0 ok, 1 refused, 2 bad usage, "
            "3 Slurm unreachable."
        ),
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"sckpt {__version__}")
    _global_options(parser, suppress=False)
    parser.add_argument(
        "--step",
        metavar="JOB.STEP",
        type=arguments.target,
        default=None,
        help="open the console on this step (same as 'sckpt JOB.STEP')",
    )
    common = _Parser(add_help=False, allow_abbrev=False)
    _global_options(common, suppress=True)

    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in ACTIONS:
        action = sub.add_parser(
            name,
            parents=[common],
            help=_SUMMARIES[name],
            description=_SUMMARIES[name].capitalize() + ".",
            allow_abbrev=False,
        )
        _complete_with(
            action.add_argument(
                "targets",
                metavar="TARGET",
                nargs="+",
                type=arguments.target,
                help="JOB (every running step), JOB.STEP, JOB.batch, JOB.extern, JOB.interactive",
            ),
            _TARGET_COMPLETION,
        )
        if name in ("create", "vacate", "tasks"):
            action.add_argument(
                "--max-wait",
                metavar="SECONDS",
                type=arguments.max_wait,
                help="seconds the checkpoint may take, 0-65535 (default: config, 10)",
            )
        if name in ("create", "vacate", "restart", "tasks"):
            _complete_with(
                action.add_argument(
                    "--image-dir",
                    metavar="DIR",
                    type=arguments.image_dir,
                    help="absolute directory for the images (default: config, else per step)",
                ),
                shtab.DIRECTORY,
            )
        if name == "restart":
            action.add_argument(
                "--stick", action="store_true", help="run again on the nodes it used before"
            )
        if name == "vacate":
            action.add_argument(
                "--force",
                action="store_true",
                help="end the job even where tasks have no image (a failed checkpoint, a "
                "step not under sckpt run): restart then starts those from the beginning",
            )
        if name == "complete":
            action.add_argument(
                "--error-code",
                metavar="N",
                type=arguments.error_code,
                default=0,
                help="the checkpoint's result code (0 = success; only the highest is kept)",
            )
            action.add_argument(
                "--error-msg",
                metavar="TEXT",
                type=arguments.error_msg,
                default="",
                help="the message that goes with the error code",
            )
        if name in ("complete", "tasks"):
            action.add_argument(
                "--begin-time",
                metavar="TIME",
                type=arguments.begin_time,
                default=None,
                help="when the checkpoint began: now, Unix seconds or YYYY-MM-DDTHH:MM[:SS]",
            )
        if name == "tasks":
            action.add_argument(
                "--nodelist",
                metavar="NODES",
                type=arguments.nodelist,
                required=True,
                help="the nodes whose tasks should checkpoint (a Slurm host list)",
            )

    ls = sub.add_parser(
        "ls",
        parents=[common],
        help="list jobs (or steps) with their checkpoint state, like squeue",
        description=(
            "List jobs (or, with --steps, steps) and their checkpoint state. Without --state "
            "or --all, only pending, running and suspended jobs are listed, as squeue does."
        ),
        allow_abbrev=False,
    )
    ls.add_argument("-s", "--steps", action="store_true", help="one row per step")
    ls.add_argument("-u", "--user", type=arguments.names, action="append", help="user(s): a,b")
    ls.add_argument(
        "-t", "--state", type=arguments.states, action="append", help="job state(s): R,PD or all"
    )
    ls.add_argument("-j", "--job", type=arguments.job_ids, action="append", help="job id(s): 12,34")
    ls.add_argument("-p", "--partition", type=arguments.names, action="append", help="partition(s)")
    ls.add_argument(
        "--ckpt",
        type=arguments.checkpoint_kinds,
        action="append",
        help="steps whose checkpoint state is one of: able, disabled, in_progress, ...",
    )
    ls.add_argument("--mine", action="store_true", help="only the acting user's jobs")
    ls.add_argument("-a", "--all", action="store_true", help="include finished jobs")
    ls.add_argument("-H", "--noheader", action="store_true", help="no header line")

    sub.add_parser(
        "doctor",
        parents=[common],
        help="check libslurm, the shim, the configuration and the controller",
        allow_abbrev=False,
    )

    completion = sub.add_parser(
        "completion",
        help="print the shell completion script (bash or zsh)",
        parents=[common],
        description=(
            "Print a completion script. bash: sckpt completion bash > "
            "~/.local/share/bash-completion/completions/sckpt ; zsh: sckpt completion zsh > "
            "~/.zfunc/_sckpt (a directory in $fpath)."
        ),
        allow_abbrev=False,
    )
    completion.add_argument("shell", choices=("bash", "zsh"))

    run = sub.add_parser(
        "run",
        help="run PROGRAM as a checkpoint-capable Slurm task (srun sckpt run -- ./app); "
        "refused in read-only mode",
        description="The job-side wrapper; 'sckpt run --help' lists its options.",
        add_help=False,
        allow_abbrev=False,
    )
    run.add_argument("words", nargs=argparse.REMAINDER, metavar="[options] -- PROGRAM ARGS")

    checkpoint = sub.add_parser(
        "checkpoint",
        parents=[common],
        help="scontrol's historical syntax: checkpoint <op> <jobid>[.<stepid>] [args]",
        description=(
            "scontrol checkpoint, as admins typed it: ops match case-insensitively by prefix "
            "(able, disable from 1 letter; enable, create, vacate, restart, error from 2). "
            "requeue is refused: use 'sckpt vacate JOB.batch' then 'sckpt restart JOB'."
        ),
        allow_abbrev=False,
    )
    checkpoint.add_argument(
        "words",
        nargs="*",
        metavar="WORD",
        help="<op> <jobid>[.<stepid>] [MaxWait=N] [ImageDir=DIR] [StickToNodes]",
    )
    return parser


def _command_index(argv: Sequence[str]) -> int | None:
    """Where the command word is: the first word that is neither an option nor its value."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            return None
        if word.startswith("-"):
            index += 2 if word in _GLOBAL_WITH_VALUE else 1
            continue
        return index
    return None


def _rewrite(argv: list[str]) -> list[str]:
    """Map the forms argparse cannot express onto ones it can.

    ``sckpt JOB.STEP`` becomes ``sckpt --step JOB.STEP``; scontrol's abbreviated, any-case
    ``checkpoint`` keyword (``ch``, ``CHECK``) becomes ``checkpoint``.
    """
    out = list(argv)
    index = _command_index(out)
    if index is None or out[index] in COMMANDS:
        return out
    word = out[index]
    if is_checkpoint_keyword(word):
        out[index] = "checkpoint"
    elif word[:1].isdigit():
        out[index : index + 1] = ["--step", word]
    return out


def _cmd_run(before: list[str], words: list[str]) -> int:
    """``sckpt run``: hand everything after ``run`` to the job-side wrapper, untouched.

    The wrapper has its own options and exits like the program it runs (any status), so the
    words after ``run`` are not parsed here; importing it pulls in neither Textual nor
    libslurm.  The global options given before ``run`` are parsed, so that none is silently
    dropped: ``--read-only`` and ``--config`` are passed on (the wrapper refuses to run in
    read-only mode), ``--as-user`` and ``--step`` are refused (the wrapper runs as whoever
    started it and opens no console); ``--demo``, ``--engine`` and ``--json`` choose the
    console's cluster and output and mean nothing to the wrapper.
    """
    from sckpt.backend.wrapper import main as wrapper_main

    args = build_parser().parse_args(before)
    if args.as_user is not None:
        raise UsageError("--as-user cannot be used with 'sckpt run': it runs as its own user")
    if args.step is not None:
        raise UsageError("--step opens the console; it cannot be combined with 'run'")
    passed = ["--read-only"] if args.read_only else []
    if args.config is not None:
        passed += ["--config", args.config]
    try:
        return wrapper_main([*passed, *words])
    except SystemExit as done:  # its argparse: --help (0) or a usage error (2)
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 2)


# ---------------------------------------------------------------- running the operations


class NotAttempted(SckptError):
    """A target skipped because Slurm did not answer for an earlier one (exit code 3)."""

    exit_code = EXIT_UNREACHABLE

    def __init__(self, cause: SckptError) -> None:
        super().__init__(f"not attempted: Slurm did not answer for an earlier target ({cause})")


@dataclass
class Outcome:
    """What one target answered: a value, "disabled" (able's No), or an error."""

    target: StepId
    operation: str
    value: AbleResult | CheckpointError | ActionResult | None = None
    disabled: Disabled | None = None
    error: SckptError | None = None

    @property
    def exit_code(self) -> int:
        return self.error.exit_code if self.error is not None else EXIT_OK


def _call(facade: Facade, operation: str, target: StepId, args: argparse.Namespace) -> Outcome:
    """One facade call for one target; Slurm's refusals become the outcome, not an exception."""
    outcome = Outcome(target, operation)
    try:
        if operation == "able":
            outcome.value = facade.able(target)
        elif operation == "error":
            outcome.value = facade.error(target)
        elif operation == "create":
            outcome.value = facade.create(target, max_wait=args.max_wait, image_dir=args.image_dir)
        elif operation == "vacate":
            outcome.value = facade.vacate(
                target,
                max_wait=args.max_wait,
                image_dir=args.image_dir,
                force=getattr(args, "force", False),  # the historical syntax has no --force
            )
        elif operation == "restart":
            outcome.value = facade.restart(target, stick=args.stick, image_dir=args.image_dir)
        elif operation == "enable":
            outcome.value = facade.enable(target)
        elif operation == "disable":
            outcome.value = facade.disable(target)
        elif operation == "complete":
            outcome.value = facade.complete(
                target,
                begin_time=args.begin_time or 0,
                error_code=args.error_code,
                error_msg=args.error_msg,
            )
        elif operation == "tasks":
            outcome.value = facade.tasks(
                target,
                begin_time=args.begin_time or 0,
                image_dir=args.image_dir,
                max_wait=args.max_wait,
                nodelist=args.nodelist,
            )
        else:  # pragma: no cover - the parser only offers ACTIONS
            raise UsageError(f"unknown operation {operation!r}")
    except Disabled as refused:
        if operation != "able":
            outcome.error = refused
        else:
            outcome.disabled = refused
    except SckptError as refused:
        outcome.error = refused
    return outcome


def _outcome_text(outcome: Outcome, *, prefix: bool, historical: bool) -> str | None:
    """The stdout line for a successful outcome (None: print nothing, as scontrol did)."""
    lead = f"{outcome.target}: " if prefix else ""
    value = outcome.value
    if outcome.operation == "able":
        assert value is None or isinstance(value, AbleResult)
        return lead + output.able_line(value)
    if isinstance(value, CheckpointError):
        return lead + output.error_line(value)
    if isinstance(value, ActionResult):
        return None if historical else output.action_line(value)
    return None


def _outcome_json(outcome: Outcome) -> dict[str, Any]:
    data: dict[str, Any] = {
        "target": str(outcome.target),
        "operation": outcome.operation,
        "ok": outcome.error is None,
    }
    value = outcome.value
    if outcome.error is not None:
        data["error"] = output.error_json(outcome.error)
    elif outcome.operation == "able":
        assert value is None or isinstance(value, AbleResult)
        since = value.in_progress_since if value is not None else 0
        data.update(
            able=value is not None,
            in_progress=bool(since),
            in_progress_since=since,
            began_at=output.format_time(since) if since else None,
            text=output.able_line(value),
        )
        if outcome.disabled is not None:
            data["disabled"] = output.error_json(outcome.disabled)
    elif isinstance(value, CheckpointError):
        data.update(
            error_code=value.code,
            error_name=value.name,
            error_message=value.message,
            text=output.error_line(value),
        )
    elif isinstance(value, ActionResult):
        data.update(
            detail=value.detail,
            per_step=[{"step": str(step), "code": code} for step, code in value.per_step],
            text=output.action_line(value),
        )
    return data


def _run_actions(
    facade: Facade,
    operation: str,
    targets: Sequence[StepId],
    args: argparse.Namespace,
    *,
    as_json: bool,
    historical: bool,
) -> int:
    """Act on each target in turn, report each, and return the worst exit code."""
    outcomes = []
    unreachable: SckptError | None = None
    for target in targets:
        if unreachable is not None:
            # Slurm did not answer the previous target: do not make the user wait out the
            # same timeout once per remaining target.
            outcome = Outcome(target, operation, error=NotAttempted(unreachable))
        else:
            outcome = _call(facade, operation, target, args)
            if outcome.exit_code == EXIT_UNREACHABLE:
                unreachable = outcome.error
        outcomes.append(outcome)
        if outcome.error is not None:
            if args.debug:
                traceback.print_exception(outcome.error)
            named = str(outcome.error).startswith(f"{operation} {target}")
            prefix = "" if named else f"{operation} {target}: "
            _err(output.failure_line(prefix, outcome.error))
        elif not as_json:
            line = _outcome_text(outcome, prefix=len(targets) > 1, historical=historical)
            if line is not None:
                _out(line)
    code = max((o.exit_code for o in outcomes), default=EXIT_OK)
    if as_json:
        _out(
            output.dumps(
                {
                    "operation": operation,
                    "engine": facade.engine_name,
                    "read_only": facade.read_only,
                    "exit_code": code,
                    "results": [_outcome_json(o) for o in outcomes],
                }
            )
        )
    return code


# ---------------------------------------------------------------- commands


def _out(text: str, stream: IO[str] | None = None) -> None:
    print(text, file=stream or sys.stdout)


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _load_settings(args: argparse.Namespace) -> Settings:
    """Settings from ``--config``, else ``$SCKPT_CONFIG``, else the XDG path."""
    from sckpt.backend.config import ENV_CONFIG, load_settings

    named = args.config if args.config is not None else os.environ.get(ENV_CONFIG) or None
    if named is not None:
        _regular_file_or_missing(named)
    if args.config is not None:
        return load_settings(args.config)
    return load_settings()


def _regular_file_or_missing(path: str) -> None:
    """Refuse a config that is a device, FIFO or directory (``/dev/zero`` would never end)."""
    import stat

    try:
        mode = Path(path).stat().st_mode
    except (OSError, ValueError):
        return  # missing or unreadable: load_settings says so, naming the file
    if not stat.S_ISREG(mode):
        raise ConfigError(f"config file {path} is not a regular file: expected a TOML file")


def _open(args: argparse.Namespace) -> tuple[Facade, Settings]:
    """The facade the flags ask for; ``--as-user`` is refused on a real engine."""
    from sckpt.backend.facade import open_facade

    settings = _load_settings(args)
    facade = open_facade(
        settings,
        demo=args.demo,
        read_only=True if args.read_only else None,
        as_user=args.as_user,
        engine=args.engine,
    )
    if args.as_user is not None and facade.engine_name != "simulated":
        facade.close()
        raise UsageError(
            f"--as-user works only on the simulated cluster (this is the {facade.engine_name} "
            "engine): on a real cluster run sckpt as that user"
        )
    return facade, settings


def _cmd_actions(args: argparse.Namespace, operation: str, targets: Sequence[StepId]) -> int:
    facade, _settings = _open(args)
    try:
        return _run_actions(
            facade,
            operation,
            targets,
            args,
            as_json=args.json,
            historical=args.command == "checkpoint",
        )
    finally:
        facade.close()


def _cmd_checkpoint(args: argparse.Namespace) -> int:
    """``sckpt checkpoint <op> <jobid>[.<stepid>] [args]``: validated, then as the modern form."""
    request = parse_historical(list(args.words))
    target = arguments.target(request.target)
    args.max_wait = arguments.max_wait(request.max_wait) if request.max_wait is not None else None
    args.image_dir = (
        arguments.image_dir(request.image_dir) if request.image_dir is not None else None
    )
    args.stick = request.stick
    return _cmd_actions(args, request.operation, [target])


def _cmd_ls(args: argparse.Namespace) -> int:
    from .listing import ListFilter, render_json, render_text, select

    def union(values: list[frozenset[Any]] | None) -> frozenset[Any]:
        return frozenset().union(*values) if values else frozenset()

    states = union(args.state)
    if not states and not args.all:
        states = arguments.ACTIVE_STATES
    facade, _settings = _open(args)
    try:
        users: frozenset[str] | None = union(args.user) or None
        if args.mine:  # --mine narrows --user: both given -> the acting user if listed
            me = frozenset({facade.info.acting_user})
            users = users & me if users is not None else me
        wanted = ListFilter(
            users=users,
            states=states,
            job_ids=union(args.job),
            partitions=union(args.partition),
            checkpoint=union(args.ckpt),
        )
        snapshot = facade.snapshot()
        views = select(snapshot.jobs, wanted)
        if args.json:
            # stale: the controller did not answer; asking it again would only wait again
            info = None if snapshot.stale else _info_or_none(facade)
            _out(output.dumps(render_json(views, snapshot, info)))
        elif not (snapshot.stale and not snapshot.taken_at):
            # No answer and no data: an empty table would read as "no jobs"; the error
            # line below comes alone.
            text = render_text(views, snapshot, steps=args.steps, noheader=args.noheader)
            if text:
                _out(text)
        if snapshot.stale:
            _err(output.failure_line("cannot reach Slurm: ", snapshot.error or "no answer"))
            return EXIT_UNREACHABLE
        return EXIT_OK
    finally:
        facade.close()


def _info_or_none(facade: Facade) -> ClusterInfo | None:
    """The cluster facts, or None when the controller cannot say (``ls`` still reports)."""
    try:
        return facade.info
    except SckptError:
        return None


def _cmd_doctor(args: argparse.Namespace) -> int:
    """``sckpt doctor``: the binding's report; exit 0 usable, 2 not (what to fix is printed)."""
    from sckpt.backend.doctor import format_report, run_doctor

    report, code = run_doctor()
    if args.json:
        _out(output.dumps({"exit_code": code, "report": output.to_jsonable(report)}))
    else:
        _out(format_report(report))
    return code


def _cmd_completion(args: argparse.Namespace) -> int:
    import shtab

    _out(
        shtab.complete(build_parser(), shell=args.shell, preamble=_COMPLETION_PREAMBLE[args.shell])
    )
    return EXIT_OK


def _cmd_console(args: argparse.Namespace) -> int:
    facade, settings = _open(args)
    try:
        from sckpt.backend.libslurm import divert_c_stderr

        from ..app import run_console

        # libslurm logs its failures on the C stderr stream, which would land in the middle
        # of the screen; the console shows every error itself (backend/libslurm/_stderr.py).
        divert_c_stderr()

        return int(run_console(facade, settings, focus=args.step))
    finally:
        facade.close()


def _dispatch(args: argparse.Namespace) -> int:
    command: str | None = args.command
    if command is None:
        return _cmd_console(args)
    if args.step is not None:
        raise UsageError(f"--step opens the console; it cannot be combined with '{command}'")
    if command in ACTIONS:
        return _cmd_actions(args, command, args.targets)
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "checkpoint": _cmd_checkpoint,
        "ls": _cmd_ls,
        "doctor": _cmd_doctor,
        "completion": _cmd_completion,
    }
    return handlers[command](args)


def _debug_requested(argv: Sequence[str]) -> bool:
    """``--debug`` anywhere before ``--`` (known even when parsing itself fails)."""
    for word in argv:
        if word == "--":
            return False
        if word == "--debug":
            return True
    return False


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the final flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (the ``sckpt`` script exits with it)."""
    words = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(words)
    try:
        index = _command_index(words)
        if index is not None and words[index] == "run":
            return _cmd_run(words[:index], words[index + 1 :])
        args = build_parser().parse_args(_rewrite(words))
        return _dispatch(args)
    except _ParserExit as done:
        return done.status
    except SckptError as failure:
        if debug:
            traceback.print_exc()
        _err(output.failure_line("", failure))
        return failure.exit_code
    except KeyboardInterrupt:
        _err("sckpt: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_OK
    except Exception as bug:
        if debug:
            traceback.print_exc()
        detail = output.clean(f"{type(bug).__name__}: {bug}")
        _err(f"sckpt: internal error: {detail} (run with --debug for the traceback)")
        return EXIT_INTERNAL
