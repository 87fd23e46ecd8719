"""``python -m sckpt`` runs the same command line as the ``sckpt`` script."""

from sckpt.cli import main

raise SystemExit(main())
