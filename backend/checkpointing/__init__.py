"""The checkpoint mechanism for modern Slurm: ``sckpt run`` on the compute nodes, the state
files it shares with the console, and the cooperative engine that reads and writes them.

Two sides meet only through files (``protocol.py`` names them and their contents;
``store.py`` reads and writes them safely; ``access.py`` says which paths may be trusted):

* the job's side, ``sckpt run``: ``wrapper.py`` (with ``options.py``) drives one
  ``checkpointer.Checkpointer``, ``signal_checkpointer.py`` or ``transparent.py`` (DMTCP:
  ``dmtcp.py``, ``dmtcp_coordinator.py``), and keeps image generations (``generations.py``).
  It imports neither the console nor libslurm (``tests/test_layering.py``);
* the console's side: ``engine.py`` (the cooperative engine, over the libslurm binding),
  with ``records.py`` (what the records say) and ``restart.py`` (what restart waits for).
"""
