#!/bin/bash
# A pipeline whose children do the work; knows nothing of sckpt or DMTCP.  A subshell counts
# 1, 2, 3 ... into a pipe, `cat` copies it into the file (opened for writing, not
# appending), so a restarted run writes what came after the image again, identically.
# The 20 ms pause is bash's own `read -t` on a pipe that never delivers, not `sleep`: a new
# process 50 times a second races DMTCP 4.2.0's checkpoints (README, "Checkpoint any program").
out=${1//%t/${SLURM_PROCID:-0}}
(
    exec 9< <(exec tail -f /dev/null)
    n=0
    while true; do
        n=$((n + 1))
        echo "$n"
        read -r -t 0.02 -u 9 || true
    done
) | cat > "$out"
