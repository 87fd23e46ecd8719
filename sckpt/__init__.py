"""sckpt: a terminal console for Slurm operators that shows and drives job-step checkpoints.

The code lives in three sibling packages that the design card keeps at the top of the
repository: ``sckpt.backend`` (no Textual, ever), ``sckpt.tui`` (the app and the command
line) and ``sckpt.styles`` (Textual CSS).  This package only carries the version, so that
importing the backend never drags the UI in.
"""

__version__ = "0.1.0"
