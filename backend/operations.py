"""The nine checkpoint operations and the four job-control verbs as data: one table that
everything else reads.

Each operation is one ``Operation`` row here, and every place that offers, guards or
dispatches one derives from the table:

* the facade and the ``Engine`` interface have one method per operation, named ``name``,
  whose keyword arguments are exactly ``arguments`` (``tests/test_operations.py`` checks
  it); ``Facade.act(name, target, **values)`` runs any mutating one;
* each argument's rule and bounds (what ``max_wait`` or ``nodelist`` may be) are in
  ``arguments.py``, keyed by ``Argument``: the facade and the command line both check
  with them (this module imports only the standard library, so they live beside it);
* ``mutating`` decides read-only mode's refusal, in the facade and in ``ReadOnlyEngine``
  (``readonly.py``), and the audit line; ``ClustersEngine`` routes every row to the
  target's cluster (``engines/clusters.py``): neither lists the operations again;
* ``whole_job``, ``job_level``, ``completes``, ``own_image_dir``, ``enables``,
  ``ends_step``: each rule that concerns some operations is an attribute of their rows,
  never a comparison of names, in the backend or in the front ends
  (``tests/test_layering.py`` checks both);
* ``force_words``: what the console's second question says when an operation that takes
  ``force`` is refused for lost work (``tui/reports.py`` builds it from them alone);
* the command line offers a subcommand per row, with ``summary`` as its help and an option
  per argument; its historical form matches names by ``scontrol``;
* the console binds ``key`` (``key_help`` in the footer tooltip, help and palette) and asks
  ``confirm`` first;
* the libslurm binding looks up ``symbol`` for each checkpoint row (Slurm <= 19.05).

The job-control verbs (cancel, hold, release, requeue: scancel's and scontrol's) are rows
too, of ``kind`` "job": they are offered, guarded, audited and dispatched exactly like the
checkpoint operations, but no ``slurm_checkpoint_*`` symbol stands behind them (every
release has the calls they use) and ``scontrol checkpoint`` never had them.  So is
``auto``, of ``kind`` "policy": it changes when ``sckpt run`` checkpoints a running step
by itself (``checkpointing/policy.py``), which no Slurm call does either.

Pure data: no I/O, no Slurm, nothing but the standard library imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Argument = Literal[
    "max_wait",
    "image_dir",
    "stick",
    "force",
    "begin_time",
    "error_code",
    "error_msg",
    "nodelist",
    "signal",
    "every",
    "before_end",
    "off",
]
"""An operation's keyword arguments, named as in the seed man page (``slurm_checkpoint_*``);
``signal`` is ``scancel --signal``'s; ``every``, ``before_end`` and ``off`` are ``sckpt
auto``'s (``sckpt run --every/--before-end``'s policy).  Each one's rule: ``arguments.RULES``."""
ARGUMENTS: tuple[Argument, ...] = get_args(Argument)

Kind = Literal["checkpoint", "policy", "job"]
"""A row's family: a checkpoint operation (``slurm_checkpoint_*`` on Slurm <= 19.05, the
engine's own meaning after), a change of a step's automatic-checkpoint policy (``sckpt
run``'s, kept in its record: no Slurm call of any release stands behind it), or a
job-control verb (scancel, scontrol hold/release/requeue) that every release has."""


@dataclass(frozen=True, slots=True)
class ScontrolName:
    """How ``scontrol checkpoint`` (Slurm <= 19.05) recognised an operation's name."""

    prefix: int
    """The shortest abbreviation it accepted, in any case (``d`` is disable, ``en`` enable)."""
    rank: int
    """The name's place in scontrol's chain of comparisons, which is also the order of its
    man page: where two names share an abbreviation the earlier wins (``re`` is requeue,
    rank 5, not restart, rank 7)."""


@dataclass(frozen=True, slots=True)
class ForceWords:
    """What the console's second question says of an operation refused because tasks
    would lose their work (``NeedsForce``), and what No leaves: the row's own words, so a
    new operation that takes ``force`` asks its own question (``tui/reports.force_question``
    only arranges them)."""

    unsaved: str = "Not saved"
    """Why the listed tasks would lose their work (before ", <kept> for now:")."""
    kept: str = "it stays as it is"
    """What the target stays while nobody says Yes, and what No leaves."""
    anyway: str = "goes ahead anyway: these tasks lose their work."
    """What Yes does (after "Yes ")."""
    for_good: str = ""
    """What Yes does when the engine says acting cannot be undone (``NotRequeueable``: a
    vacate of a job Slurm cannot requeue); "" = the operation has no such case."""


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation: what it is called, takes and changes, and how it is offered."""

    name: str
    """The facade's and the engines' method, the command, the audit log's ``operation``."""
    summary: str
    """One line for the command line's help (``sckpt --help``, ``sckpt NAME --help``)."""
    mutating: bool = True
    """Changes something: refused in read-only mode and always audited."""
    arguments: tuple[Argument, ...] = ()
    """The keyword arguments after the target, in the facade's order."""
    key: str | None = None
    """The console's default key (``[keys]`` in the config remaps it); None: not offered."""
    key_help: str = ""
    """What the key does, for the console's help screen, palette and tooltip."""
    confirm: str = ""
    """What the console's confirmation says the operation will do ("" = no confirmation)."""
    scontrol: ScontrolName | None = None
    """Its name in ``scontrol checkpoint``; None: scontrol had no such operation."""
    disabled_is_answer: bool = False
    """ESLURM_DISABLED is this operation's answer (``No``, as scontrol printed), not a
    refusal: ``able`` asks exactly that question."""
    kind: Kind = "checkpoint"
    """``job`` for the job-control verbs, ``policy`` for ``auto``: no checkpoint symbol,
    never in ``scontrol checkpoint``."""
    whole_job: bool = False
    """Acts on a job, never on one step (hold, release, requeue, as scontrol's verbs): a
    ``JOB.STEP`` target is refused as bad usage before Slurm is asked."""
    pending_task_by_name: bool = False
    """Reaches an array task still pending in its array's record by its name
    (``slurm_update_job2`` with ``7_5``, as scontrol: hold, release); the others need the
    task's own job record."""
    starts_checkpoint: bool = False
    """Starts a checkpoint whose outcome is worth watching: the command line's ``--wait``
    and the console's outcome toast (``tasks`` asks slurmd, which reports no outcome)."""
    resumes: bool = False
    """Brings a job's tasks back from their images (restart): ``--wait`` watches the job
    run again and says how each task started (resumed from which image, or from zero)."""
    job_level: bool = False
    """Acts on a job-level target only: the job, or its batch step (both were ``NO_VAL``
    in 19.05).  Another step is the controller's refusal, ESLURM_NOT_SUPPORTED
    (``rules.check_job_level``), not bad usage as for ``whole_job``: ``Facade.act`` gives
    it after read-only mode's refusal and before any engine is asked (``acting.perform``),
    and no engine checks it again.  A JOB target is the job itself, never each of its
    steps (``on_every_step``)."""
    completes: bool = False
    """Reports a checkpoint's end (complete): a success must name a checkpoint that began,
    which the facade checks against the engine's answer (``acting.complete_matching``)."""
    own_image_dir: bool = False
    """An ``image_dir`` left out, with none in the config, is "" (each step's own), not
    None (tasks: slurmd is given a directory for every step it reaches)."""
    enables: bool = False
    """Takes one off the step's disable counter (enable): the console looks again once
    fresh data comes, since a counter above one leaves the step disabled
    (``tui/reports.still_disabled``)."""
    ends_step: bool = False
    """Ends the step it checkpoints (vacate): ``--wait`` seeing the step gone is its
    outcome, not a failure to explain."""
    force_words: ForceWords = ForceWords()
    """The console's words when ``force`` is needed (an operation that takes it)."""

    @property
    def description(self) -> str:
        """The summary as a sentence for ``sckpt NAME --help``: its first letter upper-cased
        and nothing else changed, so the words it quotes keep their case (``Yes``, ``Began
        at <time>``, ``No``, ``Slurm``), which ``str.capitalize`` would lower."""
        return self.summary[:1].upper() + self.summary[1:] + "."

    @property
    def on_every_step(self) -> bool:
        """A JOB target means each of its running steps: the checkpoint operations but
        the job-level ones (restart resubmits the job itself, as the job-control verbs act
        on the job), and ``auto``, whose policy is each step's."""
        return self.kind != "job" and not self.job_level

    @property
    def symbol(self) -> str:
        """The libslurm function of Slurm <= 19.05 behind a checkpoint operation
        (``slurm_checkpoint_able``); ``ValueError`` for a job-control verb or ``auto``,
        which have none."""
        if self.kind != "checkpoint":
            what = "a job-control verb" if self.kind == "job" else "sckpt's own policy"
            raise ValueError(f"{self.name} is {what}: no slurm_checkpoint_ symbol")
        return f"slurm_checkpoint_{self.name}"


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "able",
        "say whether checkpoints can be issued (Yes, Began at <time>, No)",
        mutating=False,
        scontrol=ScontrolName(prefix=1, rank=0),
        disabled_is_answer=True,
    ),
    Operation(
        "error",
        "show the last checkpoint error: error(<code>): <msg>",
        mutating=False,
        scontrol=ScontrolName(prefix=2, rank=8),
    ),
    Operation(
        "create",
        "checkpoint and continue",
        arguments=("max_wait", "image_dir"),
        key="c",
        key_help="checkpoint the selected step (or job) and let it continue",
        scontrol=ScontrolName(prefix=2, rank=4),
        starts_checkpoint=True,
    ),
    Operation(
        "vacate",
        "checkpoint, then end the step (a batch job is requeued held on modern Slurm)",
        arguments=("max_wait", "image_dir", "force"),
        key="v",
        key_help="checkpoint, end the job; r restarts it (asks first)",
        confirm="checkpoint it, then end it until r restarts it: on a modern Slurm the whole "
        "job is requeued and held; on 19.05 the step's tasks are killed after the checkpoint",
        scontrol=ScontrolName(prefix=2, rank=6),
        starts_checkpoint=True,
        ends_step=True,
        force_words=ForceWords(
            unsaved="Not saved",
            kept="it keeps running",
            anyway="ends it anyway: restart then starts these without an image.",
            for_good="ends it anyway, after its checkpoint: restart cannot bring it back. "
            "A create saves an image and leaves it running.",
        ),
    ),
    Operation(
        "restart",
        "resume a checkpointed job under the same job id (the job or its batch step only)",
        arguments=("stick", "image_dir", "force"),
        key="r",
        key_help="restart the selected job from its checkpoint (asks first)",
        confirm="resubmit it from its saved checkpoint under the same job id",
        scontrol=ScontrolName(prefix=2, rank=7),
        resumes=True,
        job_level=True,
        force_words=ForceWords(
            unsaved="No image to resume from",
            kept="it stays as it is",
            anyway="restarts it anyway: these tasks start from the beginning.",
        ),
    ),
    Operation(
        "enable",
        "decrement the step's disable counter (never below zero)",
        key="e",
        key_help="enable checkpoints (counter -1) at once; d undoes it",
        scontrol=ScontrolName(prefix=2, rank=3),
        enables=True,
    ),
    Operation(
        "disable",
        "increment the step's disable counter",
        key="d",
        key_help="disable checkpoints (counter +1) at once; e undoes it",
        scontrol=ScontrolName(prefix=1, rank=2),
    ),
    Operation(
        "complete",
        "report that a checkpoint finished, with its error code and message",
        arguments=("begin_time", "error_code", "error_msg"),
        scontrol=ScontrolName(prefix=2, rank=1),
        completes=True,
    ),
    Operation(
        "tasks",
        "ask the step's tasks on the named nodes to checkpoint themselves",
        arguments=("begin_time", "image_dir", "max_wait", "nodelist"),
        own_image_dir=True,
    ),
    Operation(
        "auto",
        "change a running step's automatic checkpoints (sckpt run's --every, --before-end; "
        "--off: none)",
        arguments=("every", "before_end", "off"),
        key="a",
        key_help="change automatic checkpoints: every, before end, off",
        kind="policy",
    ),
    Operation(
        "cancel",
        "end a job or a step as scancel does (--signal: only send that signal)",
        arguments=("signal",),
        key="K",
        key_help="cancel the selected job or step, as scancel (asks first)",
        confirm="end it as scancel does (its tasks are killed; nothing is checkpointed)",
        kind="job",
    ),
    Operation(
        "hold",
        "hold a job as scontrol hold does (a pending job stays pending)",
        key="H",
        key_help="hold the selected job, as scontrol hold (asks first)",
        confirm="hold it: it will not start until released (a running job keeps running)",
        kind="job",
        whole_job=True,
        pending_task_by_name=True,
    ),
    Operation(
        "release",
        "release a held job as scontrol release does",
        key="L",
        key_help="release the selected held job, as scontrol release (asks first)",
        confirm="release it: it may start again",
        kind="job",
        whole_job=True,
        pending_task_by_name=True,
    ),
    Operation(
        "requeue",
        "requeue a batch job as scontrol requeue does (it ends, then pends again)",
        key="Q",
        key_help="requeue the selected batch job, as scontrol requeue (asks first)",
        confirm="requeue it: its tasks are killed and it goes back to pending, not checkpointed",
        kind="job",
        whole_job=True,
    ),
)
"""The nine operations of the seed man page, in its order of importance (the commands'
order in ``sckpt --help``), then ``auto`` (the policy of ``sckpt run``'s own checkpoints),
then the four job-control verbs."""

NAMES: tuple[str, ...] = tuple(op.name for op in OPERATIONS)
"""The operations' names, in the table's order."""
CHECKPOINT_NAMES: tuple[str, ...] = tuple(op.name for op in OPERATIONS if op.kind == "checkpoint")
"""The nine checkpoint operations (the ``slurm_checkpoint_*`` calls of Slurm <= 19.05)."""
JOB_CONTROL_NAMES: tuple[str, ...] = tuple(op.name for op in OPERATIONS if op.kind == "job")
"""The job-control verbs: cancel, hold, release, requeue."""
MUTATING: frozenset[str] = frozenset(op.name for op in OPERATIONS if op.mutating)
"""The names of the operations that change something (refused in read-only mode, audited)."""
BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}
"""Name -> row: what ``operation`` looks up, and so what the facade, the read-only guard
and the clusters router act on (a test adds a made-up row here for its duration)."""


def operation(name: str) -> Operation:
    """The operation called ``name``; ``ValueError`` when there is none (a caller's bug)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"no operation is called {name!r}: expected one of {', '.join(NAMES)}"
        ) from None
