"""The Textual console, its screens and widgets, and the ``sckpt`` command line."""
