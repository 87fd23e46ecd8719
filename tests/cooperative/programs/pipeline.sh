#!/bin/bash
# A pipeline whose children do the work; knows nothing of sckpt or DMTCP.  A subshell counts
# 1, 2, 3 ... into a pipe, `cat` copies it into the file (opened for writing, not
# appending), so a restarted run writes what came after the image again, identically.
out=${1//%t/${SLURM_PROCID:-0}}
( n=0; while true; do n=$((n + 1)); echo "$n"; sleep 0.02; done ) | cat > "$out"
