"""The checkpoint mechanism for modern Slurm: ``sckpt run`` on the compute nodes, the state
files it shares with the console, and the cooperative engine that reads and writes them."""
