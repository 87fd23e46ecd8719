"""What the operator filled in for an action, as the app, the messages and the screens read it.

The forms (``dialogs/form.py``, ``dialogs/policy_form.py``) make an ``ActionParams``; the
screens pass it to the app (``context.ScreenContext.run_operation``), the runner turns it
into the facade's keyword arguments (``actions.ActionRunner.act``), and ``ActionDone``
carries it back so the app can ask again with ``force``.  It lives here, not in a dialog,
so that none of them imports a dialog for its type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sckpt.backend import operations


@dataclass(frozen=True, slots=True)
class ActionParams:
    """What the operator filled in: every argument the console's operations take."""

    max_wait: int | None
    image_dir: str | None
    stick: bool = False
    force: bool = False
    """Vacate even where tasks have no image: set only by the second confirmation."""
    signal: int | None = None
    """cancel's signal: the console sends none (scancel's default, end it); a script
    wanting one uses ``sckpt cancel --signal``."""
    every: int | None = None
    before_end: int | None = None
    off: bool = False
    """``auto``'s: the interval (``arguments.EVERY_AUTO`` for auto) and the time before
    the job's end, None leaving each as it is, or off (``policy_form.PolicyForm``)."""

    def values_for(self, op: operations.Operation) -> dict[str, Any]:
        """The facade's keyword arguments for ``op``: those of its ``arguments`` held here."""
        return {name: getattr(self, name) for name in op.arguments}
