"""Each ``sckpt`` command: from its parsed arguments to the facade's answer, printed.

One handler per command, each taking the parsed ``argparse.Namespace`` and the ``Dependencies``
(``dependencies.py``: the facade factory, the console, the wrapper...).  Opening the facade
(``_open``: the configuration, ``--as-user``, the first-use shim build's progress) is
written once here; what is printed is in ``actions`` (the operations), ``listing``
(``ls``), ``history``, ``job_output`` and ``output``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sckpt.backend.arguments import TOGETHER
from sckpt.backend.errors import ConfigError, SckptError, UsageError
from sckpt.backend.filters import parse_filter
from sckpt.backend.model import ACTIVE_STATES, ClusterInfo, JobState, JobView, Snapshot, StepId
from sckpt.backend.operations import NAMES, Operation, operation
from sckpt.backend.targets import require_whole_job

from sckpt.exit_codes import EXIT_OK, EXIT_UNREACHABLE

from . import arguments, output, terminal
from .actions import report_unopened, run_actions
from .dependencies import Dependencies
from .historical import parse_historical
from .listing import Layout, ListFilter
from .parser import build_parser, completion_script

if TYPE_CHECKING:
    from sckpt.backend.config import Settings
    from sckpt.backend.facade import Facade


def run_command(before: list[str], words: list[str], deps: Dependencies) -> int:
    """``sckpt run``: hand everything after ``run`` to the job-side wrapper, untouched.

    The wrapper has its own options and exits like the program it runs (any status), so the
    words after ``run`` are not parsed here; importing it pulls in neither Textual nor
    libslurm.  The global options given before ``run`` are parsed, so that none is silently
    dropped: ``--read-only`` and ``--config`` are passed on (the wrapper refuses to run in
    read-only mode), ``--as-user``, ``--step`` and ``--demo`` are refused (the wrapper runs
    as whoever started it, opens no console, and runs the program for real); ``--engine``
    and ``--json`` choose the console's engine and output and mean nothing to the wrapper.
    """
    args = build_parser().parse_args(before)
    if args.as_user is not None:
        raise UsageError("--as-user cannot be used with 'sckpt run': it runs as its own user")
    if args.demo:  # it was ignored silently: the program ran for real
        raise UsageError(
            "--demo cannot be used with 'sckpt run': it runs the program in a real Slurm job "
            "(srun sckpt run -- PROGRAM); the demo simulates its jobs itself"
        )
    if args.step is not None:
        raise UsageError("--step opens the console; it cannot be combined with 'run'")
    passed = ["--read-only"] if args.read_only else []
    if args.config is not None:
        passed += ["--config", args.config]
    try:
        return deps.wrapper([*passed, *words])
    except SystemExit as done:  # its argparse: --help (0) or a usage error (2)
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 2)


def _load_settings(args: argparse.Namespace) -> Settings:
    """Settings from ``--config``, else ``$SCKPT_CONFIG``, else the XDG path."""
    from sckpt.backend.config import environment, load_settings

    named = args.config if args.config is not None else environment().config
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


def _announce_shim_build() -> None:
    """On a terminal, say on stderr what the first-use shim build is doing (it takes
    seconds to a minute and looked like a hang); to a pipe or a log, nothing."""
    if not terminal.stderr_is_terminal():
        return
    from sckpt.backend.libslurm import report_build_progress

    report_build_progress(lambda line: output.to_stderr(f"sckpt: {line}"))


def _open(args: argparse.Namespace, deps: Dependencies) -> tuple[Facade, Settings]:
    """The facade the flags ask for (``open_facade`` refuses ``--as-user`` on a real
    engine: the one place that rule is written)."""
    settings = _load_settings(args)
    if not args.demo:
        _announce_shim_build()
    facade = deps.facade_factory(
        settings,
        demo=args.demo,
        read_only=True if args.read_only else None,
        as_user=args.as_user,
        engine=args.engine,
        clusters=args.clusters,
    )
    return facade, settings


def _act(
    args: argparse.Namespace,
    deps: Dependencies,
    op: Operation,
    targets: Sequence[StepId],
    values: Mapping[str, Any],
    *,
    wait: bool = False,
) -> int:
    one = _one_cluster(args.clusters)
    if one:  # sckpt -M NAME vacate JOB.STEP: the targets are on that cluster
        targets = [replace(target, cluster=one) for target in targets]
    try:
        facade, _settings = _open(args, deps)
    except SckptError as failure:
        if not args.json:
            raise
        # --json promises a document: the failure is every target's answer.
        return report_unopened(
            op, targets, failure, read_only=bool(args.read_only), as_json=True, debug=args.debug
        )
    try:
        return run_actions(
            facade,
            op,
            targets,
            values,
            as_json=args.json,
            historical=args.command == "checkpoint",
            debug=args.debug,
            wait=wait,
            timing=deps.wait,
        )
    finally:
        facade.close()


def _one_cluster(clusters: str | None) -> str:
    """The cluster ``-M`` names when it names exactly one (not ``all``), else ""."""
    names = [n.strip() for n in (clusters or "").split(",") if n.strip()]
    return names[0] if len(names) == 1 and names[0].lower() != "all" else ""


def operation_command(args: argparse.Namespace, deps: Dependencies) -> int:
    """``sckpt OPERATION TARGET... [options]``: the parser gave each option its argument's name."""
    op = operation(args.command)
    values: dict[str, Any] = {name: getattr(args, name) for name in op.arguments}
    args.targets = [step for typed in args.targets for step in typed]  # 7_[1-3]: three
    if op.whole_job:  # every target is checked before any is acted on
        for target in args.targets:
            require_whole_job(op.name, target)
    together = TOGETHER.get(op.name)  # auto: off alone, or something to change
    if together is not None:
        together(values)  # bad usage: refused before a facade is opened, like a bad value
    wait = bool(getattr(args, "wait", False))
    if wait and op.starts_checkpoint:
        if values["max_wait"] is not None:
            raise UsageError(
                f"--wait waits with no MaxWait bound and --max-wait sets one: give one of "
                f"them ('sckpt {op.name} --help')"
            )
        values["max_wait"] = 0  # Slurm's "no limit": the checkpoint may take what it needs
    return _act(args, deps, op, args.targets, values, wait=wait)


def checkpoint_command(args: argparse.Namespace, deps: Dependencies) -> int:
    """``sckpt checkpoint <op> <jobid>[.<stepid>] [args]``: validated, then as the modern form."""
    request = parse_historical(list(args.words))
    target = arguments.target(request.target)
    given: dict[str, Any] = {  # all the historical form can express
        "max_wait": None if request.max_wait is None else arguments.max_wait(request.max_wait),
        "image_dir": None if request.image_dir is None else arguments.image_dir(request.image_dir),
        "stick": request.stick,
    }
    op = operation(request.operation)
    values: dict[str, Any] = {name: given[name] for name in op.arguments if name in given}
    return _act(args, deps, op, [target], values)


def ls_command(args: argparse.Namespace, deps: Dependencies) -> int:
    """``sckpt ls``: the jobs (or steps) as squeue lists them, with their checkpoint state."""
    from .listing import START_FORMAT, for_release, layout_from, one_per_task, order, select

    def union(values: list[frozenset[Any]] | None) -> frozenset[Any]:
        return frozenset().union(*values) if values else frozenset()

    if args.json and (args.format is not None or args.long_format is not None or args.parsable):
        raise UsageError(
            "--json prints every field: it cannot be combined with -o, -O or --parsable"
        )
    start = args.start and not args.steps  # squeue ignores --start with -s
    # squeue --start sets its columns unless -o does: it then ignores -O, and so does sckpt
    start_columns = start and args.format is None and not args.json
    layout = layout_from(
        steps=args.steps,
        fmt=START_FORMAT if start_columns else args.format,
        long_fmt=None if start_columns else args.long_format,
        sort="S" if start and args.sort is None else args.sort,
        parsable=args.parsable,
    )
    states = union(args.state)
    if start and not states:
        states = frozenset({JobState.PENDING})
    if not states and not args.all:
        states = ACTIVE_STATES
    try:
        facade, _settings = _open(args, deps)
    except SckptError as failure:
        if failure.exit_code != EXIT_UNREACHABLE:
            raise
        # No Slurm to ask (no slurm.conf, no shim): what a stale, empty snapshot says.
        stale = Snapshot((), 0.0, stale=True, error=str(failure))
        return _report_listing(args, [], ListFilter(), stale, None)
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
            words=parse_filter(" ".join(args.filter)),
            names=union(args.name),
            nodes=union(args.nodelist),
            accounts=frozenset(a.lower() for a in union(args.account)),
            steps=args.steps,
        )

        def once() -> int:
            snapshot = facade.snapshot()
            listed = select(snapshot.jobs, wanted)
            if args.array:
                listed = one_per_task(listed, wanted)
            views = order(listed, layout, snapshot.taken_at)
            # stale: the controller did not answer; asking it again would only wait again
            info = None if snapshot.stale or not args.json else _info_or_none(facade)
            shown = for_release(layout, "" if snapshot.stale else facade.info.slurm_version)
            return _report_listing(args, views, wanted, snapshot, info, shown)

        if args.iterate is None:
            return once()
        while True:  # squeue --iterate: the date, then the listing; Ctrl-C ends it (130)
            if not args.json:
                output.to_stdout(time.ctime())  # as squeue prints it (ctime)
            once()
            sys.stdout.flush()
            deps.wait.sleep(args.iterate)
    finally:
        facade.close()


def _report_listing(
    args: argparse.Namespace,
    views: list[JobView],
    wanted: ListFilter,
    snapshot: Snapshot,
    info: ClusterInfo | None,
    layout: Layout | None = None,
) -> int:
    """Print what ``ls`` found: the table or the JSON document, and why it may be stale."""
    from .listing import render_json, render_text

    if args.json:
        output.to_stdout(output.dumps(render_json(views, snapshot, info)))
    elif not (snapshot.stale and not snapshot.taken_at):
        # No answer and no data: an empty table would read as "no jobs"; the error
        # line below comes alone.
        text = render_text(
            views, snapshot, wanted, steps=args.steps, noheader=args.noheader, layout=layout
        )
        if not views and not snapshot.stale:
            # A bare header reads like a broken command; say what happened instead.
            output.to_stderr("sckpt: no jobs match")
        elif text:
            output.to_stdout(text)
    if snapshot.stale:
        output.to_stderr(output.failure_line("cannot reach Slurm: ", snapshot.error or "no answer"))
        return EXIT_UNREACHABLE
    down = [c for c in snapshot.clusters if c.stale]
    for cluster in down:  # -M: the others' jobs are listed; this one's are its last known
        output.to_stderr(
            output.failure_line(f"cannot reach cluster {cluster.name}: ", cluster.error)
        )
    return EXIT_UNREACHABLE if down else EXIT_OK


def _info_or_none(facade: Facade) -> ClusterInfo | None:
    """The cluster facts, or None when the controller cannot say (``ls`` still reports)."""
    try:
        return facade.info
    except SckptError:
        return None


def history_command(args: argparse.Namespace, deps: Dependencies) -> int:
    """``sckpt history JOB``: the job's accounting records (``history.py``)."""
    from .history import failure_json, run_history

    try:
        facade, _settings = _open(args, deps)
    except SckptError as failure:
        if not args.json:
            raise
        output.to_stdout(output.dumps(failure_json(args.job_id.job_id, failure)))
        return failure.exit_code
    try:
        return run_history(facade, args.job_id, args.since, args.limit, as_json=args.json)
    finally:
        facade.close()


def show_command(args: argparse.Namespace, deps: Dependencies) -> int:
    """``sckpt show JOB``: the job's record, as ``scontrol show job`` (``job_record.py``)."""
    from .job_record import show_job

    facade, _settings = _open(args, deps)
    try:
        return show_job(facade, args.job, as_json=args.json)
    finally:
        facade.close()


def output_command(args: argparse.Namespace, deps: Dependencies) -> int:
    """``sckpt output JOB [--stderr] [--follow] [--lines N]``: the job's output file."""
    from .job_output import print_output

    if args.json and args.follow:
        raise UsageError("--json prints the paths once: it cannot be combined with --follow")
    facade, _settings = _open(args, deps)
    try:
        return print_output(
            facade,
            args.job,
            stream="stderr" if args.stderr else "stdout",
            lines=args.lines,
            follow=args.follow,
            as_json=args.json,
        )
    finally:
        facade.close()


def doctor_command(args: argparse.Namespace, deps: Dependencies) -> int:
    """``sckpt doctor``: the binding's report; exit 0 usable, 2 not (what to fix is printed)."""
    from sckpt.backend.config import load_settings
    from sckpt.backend.doctor import format_report, run_demo_doctor

    if args.demo:  # the simulated cluster the user asked about, not this machine's Slurm
        facade, settings = _open(args, deps)
        try:
            report, code = run_demo_doctor(facade, settings)
        finally:
            facade.close()
    else:
        try:  # only for dmtcp_dir: a broken config is reported by every other command
            dmtcp_dir = load_settings(getattr(args, "config", None)).dmtcp_dir
        except SckptError:
            dmtcp_dir = None
        _announce_shim_build()
        report, code = deps.doctor(dmtcp_dir)
    if args.json:
        output.to_stdout(output.dumps({"exit_code": code, "report": output.to_jsonable(report)}))
    else:
        output.to_stdout(format_report(report))
    return code


def completion_command(args: argparse.Namespace, deps: Dependencies) -> int:
    """``sckpt completion bash|zsh``: the script, generated from the parser."""
    output.to_stdout(completion_script(args.shell))
    return EXIT_OK


def console_command(args: argparse.Namespace, deps: Dependencies) -> int:
    """``sckpt`` (``sckpt JOB.STEP``): the console, once a terminal and a facade are there."""
    _load_settings(args)  # an invalid config is named first, as for every command
    problem = deps.missing_terminal()
    if problem:
        raise UsageError(problem)
    facade, settings = _open(args, deps)
    try:
        from sckpt.backend.libslurm import divert_c_stderr

        # libslurm logs its failures on the C stderr stream, which would land in the middle
        # of the screen; the console shows every error itself (backend/libslurm/c_stderr.py).
        divert_c_stderr()

        focus = args.step
        one = _one_cluster(args.clusters)
        if focus is not None and one:  # sckpt -M NAME JOB.STEP: that cluster's step
            focus = replace(focus, cluster=one)
        if focus is not None and focus.unresolved:  # sckpt 7_3.0: task 3's own record
            with contextlib.suppress(SckptError):  # else the console says no job is listed
                focus = facade.resolve(focus)
        return deps.console(facade, settings, focus=focus)
    finally:
        facade.close()


Command = Callable[[argparse.Namespace, Dependencies], int]

COMMAND_HANDLERS: dict[str, Command] = {
    **dict.fromkeys(NAMES, operation_command),
    "checkpoint": checkpoint_command,
    "ls": ls_command,
    "output": output_command,
    "show": show_command,
    "doctor": doctor_command,
    "history": history_command,
    "completion": completion_command,
}
"""The handler of each parsed command (``run`` is handed over before parsing: ``main``)."""


def dispatch(args: argparse.Namespace, deps: Dependencies) -> int:
    """Run the command ``args`` names; none: the console."""
    command: str | None = args.command
    if command is None:
        return console_command(args, deps)
    if args.step is not None:
        raise UsageError(f"--step opens the console; it cannot be combined with '{command}'")
    return COMMAND_HANDLERS[command](args, deps)
