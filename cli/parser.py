"""The ``sckpt`` argument parser: every command, its options, and the completion scripts.

This is the one grammar of the command line: ``parse`` reads argv with it, and the two forms
argparse cannot express directly are mapped onto ones it can with what the parser itself
declares (``normalize``): ``sckpt JOB.STEP`` (the console on a step) and scontrol's
abbreviated ``checkpoint`` keyword.  Which options take a value is never written twice: the
command word is located by a lenient twin of the top-level parser built from its own
declared options (``split_command``), and ``ls``'s squeue options whose values start with
``-`` (``-S -t,i``) are marked where they are declared.

argparse here never exits the process: a usage error becomes a one-line ``UsageError`` (exit
code 2) and ``--help``/``--version`` a ``ParserExit`` carrying the status to ``main``.  Every
value is converted (and so validated) by ``arguments`` while argv is parsed.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

from sckpt.backend.arguments import MAX_WAIT_LIMIT
from sckpt.backend.config import ENGINES
from sckpt.backend.errors import UsageError
from sckpt.backend.filters import CHECKPOINT_WORDS
from sckpt.backend.model import JobState
from sckpt.backend.operations import NAMES, OPERATIONS, Argument, Operation
from sckpt.backend.progress import RESUME_WAIT_SECONDS

from sckpt import __version__

from . import arguments
from .historical import is_checkpoint_keyword, prefix_rule

COMMANDS = (
    *NAMES,
    "ls",
    "show",
    "history",
    "output",
    "doctor",
    "completion",
    "checkpoint",
    "run",
)
"""Every command: one per checkpoint operation (the table's order), then the others."""


class ParserExit(Exception):
    """argparse wanted to exit (``--help``, ``--version``): carry the status to ``main``."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def unknown_command(word: str) -> UsageError:
    """The error for a command word sckpt does not have, with the nearest one when any.

    ``craete`` is a typo of ``create``: naming it beats listing every command.
    """
    close = difflib.get_close_matches(word, COMMANDS, n=3)
    if close:
        expected = f"did you mean {' or '.join(close)}?"
    else:
        expected = f"expected one of {', '.join(COMMANDS)}, or JOB[.STEP] to open the console there"
    return UsageError(f"unknown command {word!r}: {expected} (see 'sckpt --help')")


class _Parser(argparse.ArgumentParser):
    """argparse that never calls ``sys.exit``: errors become one-line ``UsageError``s.

    It also remembers its options (``option_names``, its parents' included), so that an
    option it does not know is answered with the nearest one it does (``--maxwait``:
    did you mean ``--max-wait``?); Python 3.11's argparse only says "unrecognized".  It
    keeps the actions it declared (``declared``: ``split_command`` reads which options
    take a value there), and the options whose value may start with ``-``
    (``dash_values``, see ``values_may_start_with_a_dash``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.option_names: list[str] = []  # before argparse's __init__ adds --help
        self.declared: list[argparse.Action] = []
        self.dash_values: dict[str, str] = {}
        super().__init__(*args, **kwargs)
        for parent in kwargs.get("parents", ()):
            self.option_names += getattr(parent, "option_names", [])

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.option_names += action.option_strings
        self.declared.append(action)
        return action

    def values_may_start_with_a_dash(self, *actions: argparse.Action) -> None:
        """Let these options take a value that starts with ``-``, as squeue's do (``-S -t,i``,
        ``-o -%i``): argparse reads such a word as an option, so it is attached to its option
        (``--sort=-t,i``) before parsing."""
        for action in actions:
            long = next(name for name in action.option_strings if name.startswith("--"))
            self.dash_values.update(dict.fromkeys(action.option_strings, long))

    def _attach_dash_values(self, args: list[str]) -> list[str]:
        out: list[str] = []
        index = 0
        while index < len(args):
            word = args[index]
            if word == "--":
                return out + args[index:]
            following = args[index + 1] if index + 1 < len(args) else ""
            if word in self.dash_values and following.startswith("-"):
                out.append(f"{self.dash_values[word]}={following}")
                index += 2
                continue
            out.append(word)
            index += 1
        return out

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if args is not None and self.dash_values:
            args = self._attach_dash_values(list(args))
        parsed, extras = super().parse_known_args(args, namespace)
        for word in extras:
            option = word.partition("=")[0]
            if not option.startswith("--"):
                continue
            # Compared without the dashes every long option shares ("--bogus" is no "--user").
            names = {name.lstrip("-"): name for name in self.option_names}
            close = difflib.get_close_matches(option.lstrip("-"), names, n=1)
            if close:
                self.error(f"unrecognized option {option!r}: did you mean {names[close[0]]!r}?")
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        unknown = re.match(r"argument COMMAND: invalid choice: '(.*?)' \(choose from", message)
        if unknown:
            raise unknown_command(unknown.group(1))
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise ParserExit(status)


# Shell functions completing TARGET with the job and step ids squeue shows (silent when
# squeue is missing or the controller does not answer).  Emitted once, in the preamble.
_TARGET_COMPLETION = {"bash": "_sckpt_targets", "zsh": "_sckpt_targets"}
_STATE_COMPLETION = {"bash": "_sckpt_states", "zsh": "_sckpt_states"}
_CKPT_COMPLETION = {"bash": "_sckpt_ckpt_words", "zsh": "_sckpt_ckpt_words"}
_STATE_WORDS = " ".join(["all", *(s.short for s in JobState), *(s.value for s in JobState)])
"""``ls -t``'s values, completed: squeue's short codes and names, and ``all``."""
_CKPT_WORDS = " ".join([*CHECKPOINT_WORDS, "error"])
"""``ls --ckpt``'s values, completed (``filters.CHECKPOINT_WORDS``)."""


def _words_function(shell: str, name: str, words: str) -> str:
    """A completion function offering fixed ``words`` (one value of a comma list)."""
    if shell == "bash":
        return f'{name}() {{\n  compgen -W "{words}" -- "$1"\n}}\n'
    return f"{name}() {{\n  local -a words\n  words=({words})\n  compadd -a words\n}}\n"


_COMPLETION_PREAMBLE = {
    "bash": (
        "_sckpt_targets() {\n"
        '  compgen -W "$(squeue -h -o %i 2>/dev/null; squeue -h -s -o %i 2>/dev/null)" -- "$1"\n'
        "}\n"
        + _words_function("bash", "_sckpt_states", _STATE_WORDS)
        + _words_function("bash", "_sckpt_ckpt_words", _CKPT_WORDS)
    ),
    "zsh": (
        "_sckpt_targets() {\n"
        "  local -a ids\n"
        '  ids=(${(f)"$(squeue -h -o %i 2>/dev/null; squeue -h -s -o %i 2>/dev/null)"})\n'
        "  compadd -a ids\n"
        "}\n"
        + _words_function("zsh", "_sckpt_states", _STATE_WORDS)
        + _words_function("zsh", "_sckpt_ckpt_words", _CKPT_WORDS)
    ),
}


def _complete_with(action: argparse.Action, spec: object) -> argparse.Action:
    """Tell shtab how to complete an option's value (files, directories; None: nothing)."""
    if spec is not None:
        vars(action)["complete"] = spec
    return action


def _shtab_spec(name: str, completing: bool) -> object:
    """shtab's completion spec ``name`` (``FILE``, ``DIRECTORY``) for a parser that writes a
    completion script; None for one that parses: importing shtab cost every start ~20 ms
    (with ``importlib.metadata``), and only ``sckpt completion`` needs it."""
    if not completing:
        return None
    import shtab

    return getattr(shtab, name)


def _global_options(
    parser: argparse.ArgumentParser, *, suppress: bool, completing: bool = False
) -> None:
    """Options accepted before or after the command (``sckpt --demo ls`` = ``sckpt ls --demo``).

    Sub-parsers get them with SUPPRESS defaults, so a value given before the command is not
    overwritten by the sub-parser's default.
    """

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
        _shtab_spec("FILE", completing),
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default=default(None),
        help="override the engine (default: from the config, normally auto)",
    )
    parser.add_argument(
        "-M",
        "--clusters",
        metavar="NAME,...|all",
        default=default(None),
        help="the clusters registered in slurmdbd to list and act on, as squeue -M (all: "
        "every one); an action goes to one: sckpt -M NAME vacate JOB.STEP",
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


_OPERATION_OPTIONS: dict[Argument, tuple[str, dict[str, Any]]] = {
    "max_wait": (
        "--max-wait",
        {
            "metavar": "SECONDS",
            "type": arguments.max_wait,
            "help": f"seconds the checkpoint may take, 0-{MAX_WAIT_LIMIT} (default: config, 10)",
        },
    ),
    "image_dir": (
        "--image-dir",
        {
            "metavar": "DIR",
            "type": arguments.image_dir,
            "help": "absolute directory for the images (default: config, else per step)",
        },
    ),
    "stick": (
        "--stick",
        {"action": "store_true", "help": "run again on the nodes it used before"},
    ),
    "force": (
        "--force",
        {
            "action": "store_true",
            "help": "vacate: end the job even where tasks have no image (a failed "
            "checkpoint, a step not under sckpt run), or one Slurm cannot requeue (no "
            "batch script: restart cannot bring it back); restart: release it even where "
            "a task's image is missing; those tasks then start from the beginning",
        },
    ),
    "error_code": (
        "--error-code",
        {
            "metavar": "N",
            "type": arguments.error_code,
            "default": 0,
            "help": "the checkpoint's result code (0 = success; only the highest is kept)",
        },
    ),
    "error_msg": (
        "--error-msg",
        {
            "metavar": "TEXT",
            "type": arguments.error_msg,
            "default": "",
            "help": "the message that goes with the error code",
        },
    ),
    "begin_time": (
        "--begin-time",
        {
            "metavar": "TIME",
            "type": arguments.begin_time,
            "default": 0,
            "help": "when the checkpoint began: now, Unix seconds or YYYY-MM-DDTHH:MM[:SS]",
        },
    ),
    "signal": (
        "--signal",
        {
            "metavar": "NAME|NUM",
            "type": arguments.signal,
            "help": "only send this signal (TERM, USR1, 10 ...), as scancel --signal; "
            "default: end it",
        },
    ),
    "every": (
        "--every",
        {
            "metavar": "DURATION|auto",
            "type": arguments.every,
            "help": "checkpoint every DURATION (90s, 30m, 2h; at least 10s), or auto: "
            "the interval Young and Daly's rule works out from the measured checkpoint "
            "time and [auto] mtbf (default: unchanged)",
        },
    ),
    "before_end": (
        "--before-end",
        {
            "metavar": "DURATION",
            "type": arguments.before_end,
            "help": "checkpoint every task this long before the job's end, then requeue "
            "it to continue (batch jobs; default: unchanged)",
        },
    ),
    "off": (
        "--off",
        {
            "action": "store_true",
            "help": "no automatic checkpoints any more (alone: not with --every or "
            "--before-end); an operator's choice outlives the job's requeues",
        },
    ),
    "nodelist": (
        "--nodelist",
        {
            "metavar": "NODES",
            "type": arguments.nodelist,
            "required": True,
            "help": "the nodes whose tasks should checkpoint (a Slurm host list)",
        },
    ),
}
"""The option for each operation argument: its flag and ``add_argument`` keywords.

An operation's subcommand gets the options of its ``arguments`` (``operations.py``), in
this order (the one ``--help`` has always shown); each option's ``dest`` is the
argument's name, so the parsed values are the facade's keyword arguments as they are."""


def _operation_options(completing: bool) -> dict[Argument, tuple[str, dict[str, Any], object]]:
    """``_OPERATION_OPTIONS`` with how shtab completes each value (None: not at all, or not
    ``completing``: ``_shtab_spec``)."""
    completions: dict[Argument, object] = {"image_dir": _shtab_spec("DIRECTORY", completing)}
    return {
        argument: (flag, spec, completions.get(argument))
        for argument, (flag, spec) in _OPERATION_OPTIONS.items()
    }


_OWN_HELP = {
    ("vacate", "--force"): "end the job even where tasks have no image (a failed checkpoint, a "
    "step not under sckpt run), or one Slurm cannot requeue (no batch script: restart "
    "cannot bring it back); those tasks then start from the beginning",
    ("restart", "--force"): "release the job even where a task's image is missing; that task "
    "then starts from the beginning",
}
"""An option whose words differ by command: one ``--force`` text served vacate and restart
(``vacate: ...; restart: ...``) in both commands' help."""


def _target_help(op: Operation) -> str:
    """What a TARGET is for ``op``: a job-control verb acts on the job itself (hold, release
    and requeue on nothing else), a checkpoint operation on every running step of it."""
    steps = "JOB.STEP, JOB.batch, JOB.extern, JOB.interactive"
    arrays = (
        "; an array task ARRAY_TASK (123_4, 123_4.0), tasks 123_[1-5], or the array's "
        "id for all its tasks, as squeue and scontrol write them"
    )
    if op.whole_job:
        return f"JOB (a job id; steps are refused){arrays}"
    if op.resumes:  # restart brings back the job itself: JOB.STEP is refused by Slurm
        return (
            "JOB or JOB.batch (the whole job; one step is refused); an array task 123_4, "
            "tasks 123_[1-5], or the array's id for all its tasks"
        )
    if op.kind == "job":
        return f"JOB (the whole job), {steps}{arrays}"
    return f"JOB (every running step), {steps}{arrays}"


class _Commands(Protocol):
    """The sub-command collection ``add_subparsers`` returns, as the builders below use it."""

    def add_parser(self, name: str, **kwargs: Any) -> _Parser: ...


def build_parser(*, completing: bool = False) -> _Parser:
    """The whole command line (``completing``: with shtab's completion specs, the source of
    the shell completion scripts)."""
    parser = _top_level(completing)
    common = _Parser(add_help=False, allow_abbrev=False)
    _global_options(common, suppress=True, completing=completing)

    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_operation_commands(sub, common, completing)
    _add_ls(sub, common)
    _add_history(sub, common)
    _add_show_and_output(sub, common)
    _add_other_commands(sub, common)
    return parser


def _top_level(completing: bool) -> _Parser:
    """The parser's own options, before any command: all ``split_command`` needs, so it
    does not build the commands' parsers too (a start parsed its command line twice)."""
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
    _global_options(parser, suppress=False, completing=completing)
    parser.add_argument(
        "--step",
        metavar="JOB.STEP",
        type=arguments.target,
        default=None,
        help="open the console on this step (same as 'sckpt JOB.STEP')",
    )
    return parser


def _add_operation_commands(sub: _Commands, common: _Parser, completing: bool) -> None:
    """One command per checkpoint operation, in the table's order: its targets and options."""
    options = _operation_options(completing)
    for op in OPERATIONS:
        action = sub.add_parser(
            op.name,
            parents=[common],
            help=op.summary,
            description=op.description,
            allow_abbrev=False,
        )
        _complete_with(
            action.add_argument(
                "targets",
                metavar="TARGET",
                nargs="+",
                type=arguments.job_targets if op.whole_job else arguments.targets,
                help=_target_help(op),
            ),
            _TARGET_COMPLETION,
        )
        for argument, (flag, spec, completion) in options.items():
            if argument in op.arguments:
                own = _OWN_HELP.get((op.name, flag))
                added = action.add_argument(flag, **({**spec, "help": own} if own else spec))
                _complete_with(added, completion)
        if op.starts_checkpoint:
            action.add_argument(
                "--wait",
                action="store_true",
                help="return when the checkpoint has ended (no MaxWait bound): exit 0 when "
                "it completed, 1 with its recorded error; Ctrl-C stops waiting (exit 130), "
                "not the checkpoint",
            )
        elif op.resumes:
            action.add_argument(
                "--wait",
                action="store_true",
                help="return when the job runs again and its tasks under sckpt run have "
                "said how they started (resumed from which image, or from zero), at most "
                f"{RESUME_WAIT_SECONDS} s: exit 0 when every task resumed, 1 otherwise",
            )


def _add_ls(sub: _Commands, common: _Parser) -> None:
    """``ls``: squeue's selection and layout options, with ``-h`` as its ``--noheader``."""
    ls = sub.add_parser(
        "ls",
        parents=[common],
        help="list jobs (or steps) with their checkpoint state, like squeue",
        description=(
            "List jobs (or, with --steps, steps) and their checkpoint state. Without --state "
            "or --all, only pending, running and suspended jobs are listed, as squeue does. "
            "-o/-O/-S/-h take squeue's field letters and names (%= or Checkpoint is the "
            "CKPT column)."
        ),
        allow_abbrev=False,
        add_help=False,  # -h is squeue's --noheader; --help stays
    )
    ls.add_argument("--help", action="help", help="show this help message and exit")
    ls.add_argument(
        "filter",
        nargs="*",
        metavar="FILTER",
        type=arguments.filter_words,
        help="the console's filter: text or field:value (user:alice state:R ckpt:disabled)",
    )
    _ls_selection_options(ls)
    _ls_layout_options(ls)


def _ls_selection_options(ls: _Parser) -> None:
    """``ls``'s options choosing rows: the filter words and squeue's selections."""
    ls.add_argument("-s", "--steps", action="store_true", help="one row per step")
    ls.add_argument(
        "-u", "--user", type=arguments.names_for("-u/--user"), action="append", help="user(s): a,b"
    )
    _complete_with(
        ls.add_argument(
            "-t",
            "--state",
            type=arguments.states,
            action="append",
            help="job state(s): R,PD or all",
        ),
        _STATE_COMPLETION,
    )
    ls.add_argument(
        "-j", "--job", type=arguments.job_ids, action="append", help="job id(s): 12,34 or 7_3"
    )
    ls.add_argument(
        "-p",
        "--partition",
        type=arguments.names_for("-p/--partition"),
        action="append",
        help="partition(s)",
    )
    ls.add_argument(
        "-n",
        "--name",
        type=arguments.names_for("-n/--name"),
        action="append",
        help="job (with -s: step) name(s)",
    )
    ls.add_argument(
        "-w",
        "--nodelist",
        type=arguments.node_names,
        action="append",
        help="jobs (with -s: steps) on any of these nodes: a host list such as node[1-4]",
    )
    ls.add_argument(
        "-A",
        "--account",
        type=arguments.names_for("-A/--account"),
        action="append",
        help="account(s), any case",
    )
    _complete_with(
        ls.add_argument(
            "--ckpt",
            type=arguments.checkpoint_kinds,
            action="append",
            help="steps whose checkpoint state is one of: able, disabled, in_progress, ...; "
            "failed: steps whose last checkpoint failed (error code not 0)",
        ),
        _CKPT_COMPLETION,
    )
    ls.add_argument("--mine", "--me", action="store_true", help="only the acting user's jobs")


def _ls_layout_options(ls: _Parser) -> None:
    """``ls``'s options shaping the listing: iterate, ``--start``, arrays, squeue's formats."""
    ls.add_argument(
        "-i",
        "--iterate",
        metavar="SECONDS",
        type=arguments.iterate_seconds,
        default=None,
        help="list again every SECONDS, each time under the date, as squeue --iterate "
        "(until Ctrl-C)",
    )
    ls.add_argument(
        "--start",
        action="store_true",
        help="pending jobs and when Slurm expects them to start, as squeue --start: "
        'its columns "%%.18i %%.9P %%.8j %%.8u %%.2t %%.19S %%.6D %%20Y %%R" unless -o '
        "(over -O, as squeue), -S S unless -S, -t PD unless -t",
    )
    ls.add_argument(
        "-r",
        "--array",
        action="store_true",
        help="one row per array task, pending ones too (squeue -r), not 7_[3-50%%2]",
    )
    ls.add_argument("-a", "--all", action="store_true", help="include finished jobs")
    ls.add_argument(
        "-h", "-H", "--noheader", action="store_true", help="no header line (as squeue -h)"
    )
    layout = ls.add_mutually_exclusive_group()
    short_format = layout.add_argument(
        "-o",
        "--format",
        metavar="FORMAT",
        help='squeue -o: "%%.18i %%.2t %%=" (%%[.][size]letter[suffix])',
    )
    long_format = layout.add_argument(
        "-O",
        "--Format",
        dest="long_format",
        metavar="FIELDS",
        help="squeue -O: JobID:10,UserName,State,Checkpoint (Name[:[.][size][suffix]])",
    )
    sort = ls.add_argument(
        "-S", "--sort", metavar="KEYS", help="squeue -S: letters such as -t,i (- descending)"
    )
    ls.values_may_start_with_a_dash(sort, short_format, long_format)
    ls.add_argument(
        "--parsable",
        action="store_true",
        help="fields separated and ended by | (as sacct -p), no padding; header unless -h",
    )


def _add_history(sub: _Commands, common: _Parser) -> None:
    """``history``: a job's accounting records."""
    history = sub.add_parser(
        "history",
        parents=[common],
        help="a job's records from Slurm's accounting (each requeue and restart), like "
        "sacct --duplicates",
        description=(
            "Every accounting record of JOB (slurmdbd keeps one per requeue or restart), "
            "oldest first, with start, end, state, exit code and nodes, and the checkpoint "
            "events of its steps. Needs Slurm accounting (slurmdbd): without it, exit 3."
        ),
        allow_abbrev=False,
    )
    history.add_argument("job_id", metavar="JOB", type=arguments.job_id, help="a job id")
    history.add_argument(
        "--since",
        metavar="WHEN",
        type=arguments.since,
        default=None,
        help="records since: 90m, 12h, 7d, 2w back, or a date such as 2026-11-20 "
        "(default: 30 days)",
    )
    history.add_argument(
        "--limit",
        metavar="N",
        type=arguments.limit,
        default=None,
        help="at most N records, the newest (default: 100)",
    )


def _add_show_and_output(sub: _Commands, common: _Parser) -> None:
    """``show`` (a job's record) and ``output`` (its output file)."""
    show = sub.add_parser(
        "show",
        parents=[common],
        help="a job's record, as scontrol show job (state, times, limit and time left, ...)",
        description=(
            "The job's record as scontrol show job prints the fields sckpt has: state and "
            "reason, priority, QOS, dependency, restarts, run time, time limit and time "
            "left, submit, start and end times, partition, nodes, TRES, work dir, output "
            "files, and the steps' checkpoint summary. --json: ls --json's job, with the "
            "output files and the time left."
        ),
        allow_abbrev=False,
    )
    _complete_with(
        show.add_argument(
            "job", metavar="JOB", type=arguments.target, help="a job id, or an array task 7_3"
        ),
        _TARGET_COMPLETION,
    )

    out = sub.add_parser(
        "output",
        parents=[common],
        help="print a job's output file (its tail, like tail; --follow while it runs)",
        description=(
            "Print the last lines of a job's standard output (or, with --stderr, its error "
            "file), from the path in the job record as scontrol shows it (StdOut=, StdErr=), "
            "read as the acting user would. At most the last 64 KiB are read. Exit 1 when "
            "the file cannot be shown (the reason is printed), 0 otherwise. --json prints "
            "the paths, the job state and whether the file can be read, not the text."
        ),
        allow_abbrev=False,
    )
    _complete_with(
        out.add_argument(
            "job", metavar="JOB", type=arguments.target, help="a job id (JOB.STEP names its job)"
        ),
        _TARGET_COMPLETION,
    )
    out.add_argument("--stderr", action="store_true", help="the error file instead of output")
    out.add_argument(
        "-f", "--follow", action="store_true", help="print what is appended until the job ends"
    )
    out.add_argument(
        "-n",
        "--lines",
        type=arguments.line_count,
        default=10,
        metavar="N",
        help="how many last lines to print first (default 10, as tail)",
    )


def _add_other_commands(sub: _Commands, common: _Parser) -> None:
    """``doctor``, ``completion``, ``run`` (its own parser reads its words) and ``checkpoint``."""
    sub.add_parser(
        "doctor",
        parents=[common],
        help="check libslurm, the shim, the configuration and the controller",
        description=(
            "Check what sckpt needs, one line each: libslurm and its shim, the configuration, "
            "the controller, accounting (slurmdbd) and DMTCP for 'sckpt run --transparent', "
            "saying what to fix. Exit 0 when sckpt can talk to Slurm, 2 when not. With "
            "--demo: the simulated cluster and the demo's audit log instead."
        ),
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
            f"({prefix_rule()}). "
            "requeue is refused: use 'sckpt vacate JOB' then 'sckpt restart JOB'."
        ),
        allow_abbrev=False,
    )
    checkpoint.add_argument(
        "words",
        nargs="*",
        metavar="WORD",
        help="<op> <jobid>[.<stepid>] [MaxWait=N] [ImageDir=DIR] [StickToNodes]",
    )


def completion_script(shell: str) -> str:
    """The bash or zsh completion script, generated from ``build_parser()`` by shtab."""
    import shtab

    parser = build_parser(completing=True)
    return str(shtab.complete(parser, shell=shell, preamble=_COMPLETION_PREAMBLE[shell]))


@dataclass(frozen=True)
class CommandWord:
    """argv around its command word: the options before it, the word, the words after it."""

    before: list[str]
    word: str | None
    """None: no command (the console, ``--help``, or a parse error the parser will report)."""
    after: list[str]


class _Locator(argparse.ArgumentParser):
    """The twin ``split_command`` parses with: it suggests no names and never exits (an
    error only means that the real parser will report one)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


@functools.cache
def _command_locator() -> _Locator:
    """A lenient twin of the top-level parser: the same options, taking values as they do,
    but converting and checking none, and every word from the first positional on kept.

    It answers one question, where the command word is, from the parser's own declarations,
    so that which option takes a value is written once (in ``_top_level``, where
    ``build_parser`` starts).
    """
    twin = _Locator(prog="sckpt", add_help=False, allow_abbrev=False)
    for action in _top_level(completing=False).declared:
        if not action.option_strings:
            continue
        if action.nargs == 0:  # a flag (--demo, --help, --version)
            twin.add_argument(*action.option_strings, dest=action.dest, action="store_true")
        else:
            twin.add_argument(*action.option_strings, dest=action.dest, nargs=action.nargs)
    twin.add_argument("words", nargs=argparse.REMAINDER)
    return twin


def split_command(argv: Sequence[str]) -> CommandWord:
    """Find the command word: the first word that is neither a top-level option nor its
    value (``sckpt --config 12 ls``: ``ls``)."""
    words = list(argv)
    try:
        found, _unknown = _command_locator().parse_known_args(words)
    except UsageError:  # --config with no value: the real parser says so
        return CommandWord(words, None, [])
    rest: list[str] = found.words
    if not rest or rest[0] == "--":
        return CommandWord(words, None, [])
    index = len(words) - len(rest)
    return CommandWord(words[:index], rest[0], rest[1:])


def normalize(argv: Sequence[str]) -> list[str]:
    """Map the forms argparse cannot express onto ones it can.

    ``sckpt JOB.STEP`` becomes ``sckpt --step JOB.STEP``; scontrol's abbreviated, any-case
    ``checkpoint`` keyword (``ch``, ``CHECK``) becomes ``checkpoint``.  Any other word is
    an unknown command, refused here with the nearest command's name.
    """
    split = split_command(argv)
    word = split.word
    if word == "auto":  # --every -5m: refused for its value, not as a missing one
        from sckpt.backend.checkpointing.options import policy_words

        return [*split.before, word, *policy_words(split.after)]
    if word is None or word in COMMANDS:
        return list(argv)
    if is_checkpoint_keyword(word):
        return [*split.before, "checkpoint", *split.after]
    if word[:1].isdigit():
        return [*split.before, "--step", word, *split.after]
    raise unknown_command(word)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """argv read as the command line's grammar says: every value converted and checked."""
    return build_parser().parse_args(normalize(argv))
