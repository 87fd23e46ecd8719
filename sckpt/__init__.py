"""sckpt: a terminal console for Slurm operators that shows and drives job-step checkpoints.

The code lives in sibling packages that the design card keeps at the top of the repository:
``sckpt.backend`` (no Textual, ever), ``sckpt.tui`` (the Textual app), ``sckpt.cli`` (the
``sckpt`` command line, which opens the app only on demand) and ``sckpt.styles`` (Textual
CSS).  This package carries only what both front ends share: the version and the exit codes
(``exit_codes``), so that importing the backend never drags the UI in.
"""

__version__ = "0.1.0"
