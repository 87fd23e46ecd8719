"""The console's backend: everything that talks to Slurm, and nothing that draws.

Data flows one way: libslurm -> ``libslurm`` shim -> ``engines`` -> ``facade`` -> UI/CLI.
Engines return frozen dataclasses from ``model`` and raise errors from ``errors``; no cffi
object ever leaves ``libslurm``.  Textual must never be imported here (a test enforces it).
"""
